"""The main job: :func:`run` (and :func:`run_real`, its ``--ironic real``
form that also gives the run's JSON), one loop over Nova's concurrency
modes with the backend (fake or real Ironic, ``backends.py``) as a
parameter; :func:`play_tree`, one tree of the user's judged as a fixed
tree.
"""

import contextlib
import pathlib
import time

from novaseries import modes as modes_mod, targets as targets_mod, venvs
from novaseries.mainjob import backends, benchreport, judge, report
from novaseries.mainjob import trees as trees_mod
from novaseries.mainjob.report import put
from novaseries.scenarios import bench_table
from novaseries.scenarios.scenario import BENCH_KEY, FIXED, SCENARIOS_KEY
from novaseries.util import LOG, HarnessError, file_lock, say

#: Runs of each benchmark spec unless told otherwise (``--bench-runs``).
BENCH_RUNS = 3


def run(ctx, target_name=targets_mod.DEFAULT_TARGET, scenarios=(), bench=(), json_out=None,
        ironic=backends.FAKE, bench_runs=BENCH_RUNS, modes=None):
    """The main job, in each of ``modes`` (names of ``[modes]`` in
    targets.toml, ``modes.load_modes``; default ``modes.default_modes``),
    one after the other.  Returns the exit status (0: fixed tree all right
    in every mode and, with ``bench``, the benchmark without problems).

    :param ironic: ``fake`` (the series' fake Ironic) or ``real`` (see
        :func:`run_real`; no ``bench`` there).

    The JSON: ``modes`` (in order), ``by_mode`` (``{mode: {reproducer,
    fixed, bench_problems}}``, every observation and benchmark record
    with its ``mode``) and ``bench_problems`` (all modes', each behind
    its mode's name)."""
    return play(ctx, target_name, scenarios, bench, json_out, ironic,
                bench_runs, modes)[0]


def run_real(ctx, target_name=targets_mod.DEFAULT_TARGET, scenarios=(), modes=None,
             json_out=None):
    """``run --ironic real``: the scenarios through Nova's whole stack
    (API, conductor, scheduler, placement, compute with the real
    ``IronicDriver``) against a real Ironic (``pins/ironic.txt``) on 127.0.0.1, one per
    tree, on the reproducer and the fixed tree, in each of ``modes``.

    Each tree's player binds the scenarios to its Ironic
    (``ironic/real_backend.py``): fresh nodes per scenario, enrolled
    through the API and swept after it; every request Nova and the
    operator sent is kept in ``build/results/run/real/<runid>/<tree>.<mode>/
    <scenario>.requests.jsonl``, with the Ironics' logs.  Verdicts, table
    and JSON as the fake run's (``run.json`` there, copied to
    ``build/results/run/run-real.json``).  The Ironics stop when the run
    ends, fails or is interrupted.

    :param json_out: where to copy the run's JSON (default
        ``build/results/run/run-real.json``, the latest run's).
    :returns: ``(exit status, this run's run.json)``; the status is 0 when
        the fixed tree is right in every mode.
    :raises HarnessError: a scenario that is not playable, a player that
        failed without its JSON, an Ironic that did not start.
    """
    return play(ctx, target_name, scenarios, json_out=json_out,
                ironic=backends.REAL, modes=modes)


def play(ctx, target_name=targets_mod.DEFAULT_TARGET, scenarios=(), bench=(), json_out=None,
         ironic=backends.FAKE, bench_runs=BENCH_RUNS, modes=None):
    """:func:`run` with the backend ``ironic`` (``backends.BACKENDS``):
    prepare both trees and the target's venv, start the backend, then in
    each mode play the scenarios (and the benchmark) in both trees, judge,
    print the table; write the JSON.

    :returns: ``(exit status, the path of this run's JSON)``.
    """
    with (owned(ctx) if backends.BACKENDS[ironic].exclusive else contextlib.nullcontext()):
        return _play(ctx, target_name, scenarios, bench, json_out, ironic, bench_runs, modes)


def owned(ctx):
    """Hold the lock of ``build/results/run`` for the block: a run that
    writes its players' results there (the fake Ironic's, ``run --tree``)
    waits for another one, which would overwrite them.  The trees are
    shared (``tree.prepare`` locks each while it builds it)."""
    return file_lock(ctx.build / trees_mod.LOCK,
                     f'the main job (build/results/{trees_mod.RESULTS})')


def _play(ctx, target_name, scenarios, bench, json_out, ironic, bench_runs, modes):
    backend_type = backends.BACKENDS[ironic]
    names = backend_type.scenarios(scenarios, bench)
    modes = tuple(modes or modes_mod.default_modes(ctx))
    known = modes_mod.load_modes(ctx)
    target = targets_mod.get(ctx, target_name)
    start = time.monotonic()
    trees = trees_mod.prepare_trees(ctx, target)
    venv, _ = venvs.ensure_venv(ctx, target)
    result = {report.MODES_KEY: list(modes), report.BY_MODE_KEY: {},
              report.BENCH_PROBLEMS_KEY: []}
    wrong_total, summary = 0, []
    with contextlib.ExitStack() as stack:
        backend = backend_type(ctx, trees, stack)
        result.update(backend.facts())
        for mode in modes:
            moded = targets_mod.mode_target(target, mode)
            if names:
                say(backend.running(mode, len(names), len(trees)))
                data = trees_mod.run_trees(
                    ctx, moded, venv, trees, names, outdir=backend.outdir,
                    extra_args=backend.player_args(moded, trees))
            else:
                data = {label: {SCENARIOS_KEY: []} for label in trees}
            if bench:
                runs = len(bench_table.expand(bench)) * bench_runs
                say(f"{mode} mode: running {runs} benchmark runs in each of "
                    f"{len(trees)} trees (one at a time)...")
                for label, recs in trees_mod.bench_trees(
                        ctx, moded, venv, trees, bench, bench_runs).items():
                    data[label][BENCH_KEY] = recs
            wrong = judge.evaluate(data, released=f"nova {target.version}")
            wrong_total += wrong
            put('')
            put(backend.heading(mode, known[mode].description))
            if data[FIXED][SCENARIOS_KEY]:
                put('')
                for row in report.table(data, interval=backend.interval,
                                        wall=backend.wall):
                    put(row)
            for line in report.unchecked_note(data):
                put(line)
            if backend.bench:
                problems = _bench_report(mode, data)
                data[report.BENCH_PROBLEMS_KEY] = problems
                result[report.BENCH_PROBLEMS_KEY] += [f"{mode} mode: {p}"
                                                      for p in problems]
            result[report.BY_MODE_KEY][mode] = data
            if data[FIXED][SCENARIOS_KEY]:
                summary += judge.mode_summary(mode, data, wrong)
        if bench and len(modes) > 1:
            lines = benchreport.compare_modes(result)
            if lines:
                put('')
                for line in lines:
                    put(line)
    out = backend.save(result, json_out)
    put('; '.join(summary + [f"{time.monotonic() - start:.0f} s"]))
    return (1 if wrong_total or result[report.BENCH_PROBLEMS_KEY] else 0), out


def _bench_report(mode, data):
    """Print the benchmark's section of a mode (if it ran); return its
    problems."""
    lines, problems = benchreport.report(data)
    if lines:
        put('')
        for line in lines:
            put(line)
        for problem in problems:
            LOG.error("benchmark (%s mode): %s", mode, problem)
        put(f"benchmark ({mode} mode): {len(problems) or 'no'} problem(s)")
    return problems


#: What ``run --tree`` looks for in the tree's
#: ``nova/tests/fixtures/ironic.py``: the fake Ironic's poll controls, the
#: last of the series' test fixtures the scenarios use.
FIXTURE_MARKER = 'def on_poll'


def marker_patch(ctx, target_name):
    """The file name of the first patch of target ``target_name``'s series
    that adds :data:`FIXTURE_MARKER`, or ``"the one that adds it"`` when
    none does.

    :raises HarnessError: an unknown target, or its series is missing.
    """
    for patch in targets_mod.get(ctx, target_name).series():
        if any(line.startswith('+') and FIXTURE_MARKER in line
               for line in patch.read_text(errors='replace').splitlines()):
            return patch.name
    return "the one that adds it"


def play_tree(ctx, tree, target_name=targets_mod.DEFAULT_TARGET, scenarios=(),
              json_out=None, modes=None):
    """Run the scenarios in one Nova tree of the user's and judge it as a
    fixed tree (e.g. a distribution's patched Nova), in each of ``modes``
    (default ``modes.default_modes``).

    The tree must contain the series' test fixtures up to the fake
    Ironic's poll events: ``nova/tests/fixtures/ironic.py`` with
    :data:`FIXTURE_MARKER` and ``nova/tests/functional/ironic/base.py``.
    Returns the exit status.

    :raises HarnessError: the tree lacks them (the message names the patch
        of ``target_name``'s series that adds the marker:
        :func:`marker_patch`).
    """
    modes = tuple(modes or modes_mod.default_modes(ctx))
    tree = pathlib.Path(tree).resolve()
    fixture = tree / 'nova' / 'tests' / 'fixtures' / 'ironic.py'
    if not (fixture.exists() and FIXTURE_MARKER in fixture.read_text() and
            (tree / 'nova' / 'tests' / 'functional' / 'ironic' /
             'base.py').exists()):
        raise HarnessError(f"{tree} lacks the fake Ironic and its poll "
                           f"controls ({FIXTURE_MARKER}): apply at least the "
                           "series' commits up to "
                           f"{marker_patch(ctx, target_name)}")
    with owned(ctx):
        return _play_tree(ctx, tree, target_name, scenarios, json_out, modes)


def _play_tree(ctx, tree, target_name, scenarios, json_out, modes):
    known = modes_mod.load_modes(ctx)
    target = targets_mod.get(ctx, target_name)
    venv, _ = venvs.ensure_venv(ctx, target)
    result = {report.MODES_KEY: list(modes), report.BY_MODE_KEY: {}}
    wrong, total = 0, 0
    for mode in modes:
        data = trees_mod.run_trees(ctx, targets_mod.mode_target(target, mode),
                                   venv, {FIXED: tree}, scenarios)
        put(f"\n=== {mode} mode: {known[mode].description}")
        wrong += judge.evaluate(data)
        for obs in data[FIXED][SCENARIOS_KEY]:
            total += 1
            put(f"{obs['scenario']:30} {obs.get('status') or '-':8} "
                f"{obs['verdict']}")
        result[report.BY_MODE_KEY][mode] = data
    out = pathlib.Path(json_out) if json_out else ctx.results(trees_mod.RESULTS) / \
        backends.TREE_JSON
    report.write_json(out, result)
    put(f"\nJSON: {out}\n{tree}: {total - wrong} of {total} scenarios right "
        f"({', '.join(modes)} mode)")
    return 1 if wrong else 0
