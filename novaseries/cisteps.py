"""The ci steps that come after the targets' tests: :func:`steps`, which
:func:`novaseries.ci.ci` runs in this order:

* ``real Ironic``: the contract tests (the fake Ironic against a real one,
  ``pins/ironic.txt``'s, on 127.0.0.1) and the end-to-end tests of the
  fixed driver against the real Ironic (``novaseries/nova_side/driver_tests``,
  see doc/real-ironic.rst), run on the default release's packaged stack
  (:func:`~novaseries.targets.default_stack_in_mode`) in its venv;
* ``pike against Ironic <pike.IRONIC_VERSION>``: ``novaseries/nova_side/pike_driver_tests`` (pike's
  driver end to end against the pike-era Ironic, ``novaseries.ironic.pike``)
  on the unpatched and the patched pike tree
  (:func:`novaseries.testrun.pike_driver_outcomes`, which ``ironic
  driver-tests --pike`` runs too);
* ``pike whole-stack player compiles (py27)``: what ci keeps of
  ``novaseries run --release pike``, which runs outside ci for ci's
  45-minute budget (doc/ci.rst; :func:`pike_stack_step`);
* ``main job``: ``novaseries run`` (every scenario on the reproducer and the
  fixed tree); each scenario the fixed tree gets right counts as passed;
  and the benchmark's code once (``BENCH_SMOKE``), which passes when the
  reproducer tree leaves exactly its torn-down builds in BUILD and the
  fixed tree's end state is consistent;
* ``main job vs real Ironic``: ``novaseries run --ironic real`` for the
  scenarios of ``scenario_table.REAL_CI``, through Nova's whole stack
  against a real Ironic (``pins/ironic.txt``) per tree;
* ``explorer``: ``novaseries explore`` with its CI seeds in every mode
  (cases generated from the seeds, through Nova's whole stack with the
  fake Ironic on the packaged stack, each judged by
  ``scenarios/universal.py``'s rules);
* ``mypy <release>-all``: the release's pep8 job's mypy on the tree a
  packager ships (:func:`novaseries.pep8job.mypy_run.run_mypy`), once per
  release whose ``[releases.<name>]`` says ``mypy = true``
  (:func:`novaseries.targets.mypy_targets`; the hooks of the job run at
  every commit, in ``testrun.test_tree``).

The real-Ironic and main job steps run in the default mode of
targets.toml ``[modes]`` (:func:`novaseries.modes.default_modes`: the one
the default release's Nova runs nova-compute in, within CI's time;
``ironic driver-tests --mode MODE`` and ``run --mode both`` run the
others); pike's
step in pike's own (eventlet) and the mypy steps in none.
"""

import json
import typing

from novaseries import testrun, venvs
from novaseries.explorer import job as explorer_job
from novaseries.mainjob import backends, job as mainjob_job, judge, pike_job
from novaseries.mainjob.report import BENCH_PROBLEMS_KEY, BY_MODE_KEY, MODES_KEY, RUNID_KEY
from novaseries.scenarios import scenario_table
from novaseries.scenarios.scenario import (
    BENCH_KEY, FIXED, REPRODUCER, SCENARIOS_KEY, TREES)
from novaseries import modes as modes_mod, targets as targets_mod
from novaseries import tree as tree_mod
from novaseries.ironic import driver_runs, layout as ironic_layout, pike, run_env
from novaseries.outcomes import Outcome, unittest_outcome
from novaseries.pep8job import mypy_run
from novaseries.util import say


def real_ironic_step(ctx):
    """Run all of novaseries/nova_side/driver_tests (contract, end-to-end
    and process tests) against the default release's packaged stack
    (:func:`~novaseries.targets.default_stack_in_mode`: every packaged
    change of targets.toml ``[changes]`` for the release of
    :data:`~novaseries.targets.DEFAULT_TARGET`), once in each of its modes
    that is one of :func:`~novaseries.modes.default_modes` (how that
    release's Nova runs nova-compute); one Outcome per mode with unittest's counts
    (:func:`unittest_outcome`: a crash or a run of no test is a failure)."""
    target = targets_mod.default_stack_in_mode(ctx)
    ci_modes = modes_mod.default_modes(ctx)
    tree = tree_mod.prepare(ctx, target)
    venv, _ = venvs.ensure_venv(ctx, target)
    outcomes = []
    for mode in [m for m in target.modes if m in ci_modes]:
        env = venvs.test_env(targets_mod.mode_target(target, mode), venv, tree)
        log_path = ctx.results(ironic_layout.RESULTS) / f"driver-tests.{mode}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "w") as log:
            rc = driver_runs.run(tree, env, venv, build=ctx.build,
                                 expect=run_env.EXPECT_FIXED, log=log,
                                 root=ctx.root, need_fixture=True)
        ran, outcome = unittest_outcome(
            f"real Ironic contract + end-to-end tests [{mode}]", log_path, rc)
        say(f"real Ironic tests [{mode}]: {ran} run, {outcome.failed} failed, "
            f"{outcome.skipped} skipped (log: {log_path})")
        outcomes.append(outcome)
    return outcomes


#: The benchmark's code, run once at a size that measures nothing (the
#: benchmark itself is not part of CI: doc/main-job.rst).
BENCH_SMOKE = "6:2:2:max_concurrent_builds=3"


def _scenario_counts(per_mode):
    """``(the fixed tree's observations, how many it got wrong, how many
    showed the bug on the reproducer tree)`` of one mode of run.json."""
    fixed = per_mode[FIXED][SCENARIOS_KEY]
    # not "ok": wrong, or no verdict at all (the scenario did not happen)
    wrong = sum(1 for obs in fixed if judge.verdict_kind(obs.get("verdict")) != judge.OK)
    shown = sum(1 for obs in per_mode[REPRODUCER][SCENARIOS_KEY]
                if judge.verdict_kind(obs.get("verdict")) == judge.BUG_REPRODUCED)
    return fixed, wrong, shown


def _scenario_problems(per_mode, asked):
    """``(failures, [why])`` of one mode of run.json beyond the fixed
    tree's wrong scenarios: each scenario of ``asked`` (names) that a tree
    did not run, no scenario run at all, each reproducer verdict
    ``unexpected: ...`` (the reproducer tree did not do what its column
    says, so its bug may not show), each reproducer verdict ``error:
    ...`` (no verdict: the player failed, the server did not settle, or a
    step never came) and no ``bug reproduced`` at all.

    (The table does not say which scenarios must show the bug: a control
    is ``as on <release>``, which does not count here; nor does ``not
    playable on <release>: ...``, the verdict of a scenario that declares
    that a step of it never comes on the reproducer tree, which is said
    in ``why``.)"""
    failures, why = 0, []
    for label in (FIXED, REPRODUCER):
        observed = per_mode[label][SCENARIOS_KEY]
        names = {obs.get("scenario") for obs in observed}
        missing = [name for name in asked if name not in names]
        if not observed:
            failures += max(1, len(asked))
            why.append(f"no scenario ran on the {label} tree")
        elif missing:
            failures += len(missing)
            why.append(f"{len(observed)} of {len(asked)} scenarios ran on the {label} "
                       f"tree (missing: {', '.join(missing)})")
    reproducer = per_mode[REPRODUCER][SCENARIOS_KEY]
    unexpected = [obs for obs in reproducer
                  if judge.verdict_kind(obs.get("verdict")) == judge.UNEXPECTED]
    if unexpected:
        failures += len(unexpected)
        why.append("the reproducer tree did not do what its column says: " + "; ".join(
            f"{obs.get('scenario', '?')} ({obs['verdict']})" for obs in unexpected))
    errors = [obs for obs in reproducer if judge.verdict_kind(obs.get("verdict")) == judge.ERROR]
    if errors:
        failures += len(errors)
        why.append("no verdict on the reproducer tree: " + "; ".join(
            f"{obs.get('scenario', '?')} ({obs['verdict']})" for obs in errors))
    unplayable = [obs.get("scenario", "?") for obs in reproducer
                  if judge.verdict_kind(obs.get("verdict")) == judge.NOT_PLAYABLE]
    if unplayable:
        why.append("not playable on the reproducer tree (declared): "
                   + ", ".join(unplayable))
    if reproducer and not any(judge.verdict_kind(obs.get("verdict")) == judge.BUG_REPRODUCED
                              for obs in reproducer):
        failures += 1
        why.append("the reproducer tree showed the bug in no scenario")
    return failures, why


def _wrong_text(fixed):
    """``name (verdict); ...`` of the fixed tree's observations whose
    verdict is not "ok", so that CI's own summary names what failed."""
    return "; ".join(f"{obs.get('scenario', '?')} "
                     f"({obs.get('verdict') or 'no verdict'})"
                     for obs in fixed if judge.verdict_kind(obs.get("verdict")) != judge.OK)


def _scenario_outcome(name, per_mode, asked, note_end=""):
    """The Outcome of one mode of a main job run: the fixed tree's
    scenarios right (passed) and wrong (failed), plus the failures of
    :func:`_scenario_problems` (scenarios of ``asked`` not run, the
    reproducer tree not showing the bug), each said in the note."""
    fixed, wrong, shown = _scenario_counts(per_mode)
    failures, why = _scenario_problems(per_mode, asked)
    note = f"bug shown in {shown} scenarios on the reproducer tree"
    if wrong:
        note += "; wrong on the fixed tree: " + _wrong_text(fixed)
    note = "; ".join([note, *why] + ([note_end] if note_end else []))
    return Outcome(name, passed=len(fixed) - wrong, failed=wrong + failures, note=note)


def pike_stack_step(ctx):
    """What ci keeps of ``run --release pike`` (nova 16.1.8's whole stack
    against the pike-era Ironic, outside ci for ci's 45-minute budget):
    pike's Python 2.7 compiles the player
    (:func:`novaseries.mainjob.pike_job.compiled`); one Outcome."""
    return [pike_job.compiled(ctx)]


def main_job_step(ctx):
    """Run the main job in the default modes
    (:func:`~novaseries.modes.default_modes`); count the fixed tree's
    scenarios per mode (every scenario of the table must run on both
    trees, and the reproducer tree must show the bug:
    :func:`_scenario_problems`); run the benchmark's code once per mode
    (BENCH_SMOKE) and count its problems (a tree without a benchmark
    record is one)."""
    out = backends.fake_json(ctx)
    asked = [sc.name for sc in scenario_table.SCENARIOS]
    mainjob_job.run(ctx, scenarios=asked,
                    json_out=out, bench=[BENCH_SMOKE], bench_runs=1,
                    modes=modes_mod.default_modes(ctx))
    data = json.loads(out.read_text())
    outcomes = []
    for mode in data[MODES_KEY]:
        per_mode = data[BY_MODE_KEY][mode]
        problems = per_mode[BENCH_PROBLEMS_KEY] + [
            f"no benchmark run on the {label} tree"
            for label in TREES if not per_mode[label].get(BENCH_KEY)]
        outcomes += [
            _scenario_outcome(f"main job [{mode}]: scenarios right on the fixed tree",
                              per_mode, asked),
            Outcome(f"benchmark code [{mode}] ({BENCH_SMOKE}, once per tree)",
                    passed=int(not problems), failed=int(bool(problems)),
                    note="; ".join(problems) or "reproducer: the K "
                    "torn-down builds in BUILD; fixed: consistent")]
    return outcomes


def main_job_real_step(ctx):
    """Run the main job's CI subset (``scenario_table.REAL_CI``) through
    Nova's whole stack against a real Ironic (``pins/ironic.txt``) per tree
    (``run --ironic real``) in the default modes
    (:func:`~novaseries.modes.default_modes`); one Outcome per mode
    with the fixed tree's scenarios right and wrong (and, as in
    :func:`main_job_step`, every scenario of REAL_CI run on both trees and
    the bug shown on the reproducer tree)."""
    # (this run's own JSON: another run may write the shared copy)
    asked = list(scenario_table.REAL_CI)
    _, out = mainjob_job.run_real(
        ctx, scenarios=asked, modes=modes_mod.default_modes(ctx))
    data = json.loads(out.read_text())
    outcomes = []
    for mode in data[MODES_KEY]:
        outcomes.append(_scenario_outcome(
            f"main job vs real Ironic [{mode}]: scenarios right on the fixed "
            "tree", data[BY_MODE_KEY][mode], asked,
            f"requests: {backends.real_outdir(ctx, data[RUNID_KEY])}"))
    return outcomes


def explorer_step(ctx):
    """Run the explorer (``novaseries explore``) with its CI seeds
    (``explorer.job.CI_SEEDS``, ``CI_CASES`` cases each) in every mode of
    targets.toml ``[modes]``; one Outcome per mode: the cases that kept
    every rule passed, each failure (a rule broken, shrunk) failed."""
    modes = modes_mod.load_modes(ctx)
    failures, results = explorer_job.explore(
        ctx, targets_mod.DEFAULT_TARGET, explorer_job.CI_SEEDS,
        explorer_job.CI_CASES, tuple(modes))
    outcomes = []
    for mode, by_seed in results.items():
        played = [found.played[k][1] for found in by_seed.values()
                  for k in found.generated]
        broken = [f for f in failures if f.mode == mode]
        outcomes.append(Outcome(
            f"explorer [{mode}]: cases that keep every rule",
            passed=sum(1 for problems in played if not problems),
            failed=len(explorer_job.unexpected(broken)),
            note="; ".join([f"seeds {', '.join(map(str, by_seed))}, "
                            f"{len(played)} cases"] +
                           [f"seed {f.seed}: {f.rule}"
                            + (f" (expected: {f.expected})" if f.expected else "")
                            for f in broken])))
    return outcomes


def mypy_step(name):
    """The step function of mypy on target ``name``'s tree at HEAD (an
    ``-all`` target: its tree and the release's tool venv are then ready):
    one Outcome (:func:`novaseries.pep8job.mypy_run.run_mypy`)."""
    def step(ctx):
        target = targets_mod.get(ctx, name)
        return [mypy_run.run_mypy(ctx, target, tree_mod.prepare(ctx, target))]
    return step


class Step(typing.NamedTuple):
    """One ci step after the targets (a record of :func:`steps`)."""

    #: its name in ci's output and summary
    name: str
    #: ``func(ctx) -> [Outcome]`` (at least one; raising is a failure)
    func: typing.Callable
    #: the targets the step is about: its task waits for theirs
    #: (:class:`novaseries.ci.Task`; their trees and venvs are then ready);
    #: it is skipped when the project lacks one of them, or when ``ci
    #: --target`` names none of them
    targets: tuple = ()
    #: the step mostly waits (on a real service's state changes) rather
    #: than computes: its task runs beside the ``ci --jobs`` tasks that
    #: run at once instead of taking one of their places
    light: bool = False


def standing_steps(ctx):
    """The standing ci steps: those after the targets that run whatever
    targets.toml declares, in order (:func:`steps` adds the mypy steps);
    their targets are the main job's
    (:data:`~novaseries.targets.DEFAULT_TARGET`), its release's packaged
    stack (:func:`~novaseries.targets.default_stack_name`) and
    pike's (:data:`~novaseries.targets.PIKE_TARGET`).  The real Ironics'
    steps mostly wait for the services' state changes: they run beside the
    targets' tests.  ``main job vs real Ironic`` mostly waits for the real
    Ironics too (the scenarios' polls are
    :data:`~novaseries.ironic.real_backend.API_RETRY_INTERVAL` seconds
    apart); it shares the main job's trees and writes a folder of its own,
    so it runs beside ``main job`` (only that one holds
    :func:`novaseries.mainjob.job.owned`)."""
    stack = targets_mod.default_stack_name(ctx)
    return (
        Step("real Ironic", real_ironic_step, targets=(stack,), light=True),
        Step(f"pike against Ironic {pike.IRONIC_VERSION}", testrun.pike_driver_outcomes,
             targets=(targets_mod.PIKE_TARGET,), light=True),
        Step("pike whole-stack player compiles (py27)", pike_stack_step,
             targets=(targets_mod.PIKE_TARGET,), light=True),
        Step("main job", main_job_step, targets=(targets_mod.DEFAULT_TARGET,)),
        Step("main job vs real Ironic", main_job_real_step,
             targets=(targets_mod.DEFAULT_TARGET, stack), light=True),
        Step("explorer", explorer_step, targets=(targets_mod.DEFAULT_TARGET,)),
    )


def steps(ctx):
    """The ci steps after the targets, in order: :func:`standing_steps`, then
    a ``mypy <target>`` step for each of
    :func:`novaseries.targets.mypy_targets` (after that target's job).

    :raises HarnessError: as :func:`~novaseries.targets.mypy_targets`.
    """
    return (*standing_steps(ctx), *(Step(f"mypy {name}", mypy_step(name), targets=(name,))
                                    for name in targets_mod.mypy_targets(ctx)))
