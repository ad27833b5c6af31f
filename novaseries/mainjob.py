"""``run``: the main job -- the bug and the fix side by side on real Nova.

Prepares two trees of the master target from its series:

* ``reproducer``: the series up to and including the reproducer commit
  (the first patch that adds a test under
  ``nova/tests/functional/regressions/``): Nova as released, plus the test
  fixtures the series adds;
* ``fixed``: what a packager ships: target ``master-all``, the whole
  series with the separate rebuild change (``patches/rebuild/master``,
  bug KKKKKKK) stacked on it;

then runs every scenario of ``scenarios/nova_scenarios.py`` in each tree, in
Nova's functional-test environment (real API, conductor, scheduler,
placement, compute with the real ``ironic.IronicDriver``) against the fake
Ironic (``nova.tests.fixtures.IronicFixture``), judges each observation
against what the tree is expected to do (the checks of each scenario in
``scenarios/scenario_table.py``), prints a table and writes everything as
JSON.

Exit status: 0 when the fixed tree gets every scenario right, 1 otherwise.
The reproducer tree is expected to show the bug; its verdicts are reported,
not enforced.
"""

import contextlib
import json
import os
import pathlib
import shutil
import re
import signal
import subprocess
import textwrap
import threading
import time

from novaseries import benchreport, procs, runner, targets as targets_mod
from novaseries.scenarios import bench_table, checks, real_backend, scenario_table
from novaseries import tree as tree_mod
from novaseries.util import LOG, HarnessError, say

INNER = pathlib.Path(__file__).with_name("scenarios") / "nova_scenarios.py"
TREES = scenario_table.TREES
#: ``[ironic] api_retry_interval`` default, seconds: one driver poll.
POLL_INTERVAL = 2

#: Nova's concurrency modes the main job runs in (``[modes]`` of
#: targets.toml), what each means, and the default: the mode nova 34.0.0
#: runs nova-compute and nova-conductor in.
MODES = {
    'threading': 'native threads (OS_NOVA_DISABLE_EVENTLET_PATCHING=True), '
                 "nova 34.0.0's default for nova-compute and nova-conductor",
    'eventlet': 'eventlet green threads (OS_NOVA_DISABLE_EVENTLET_PATCHING='
                'False), the other mode',
}
DEFAULT_MODES = ('threading',)

#: Every scenario, what each tree must show, and which real-Ironic test
#: plays it: ``novaseries/scenarios/scenario_table.py``.
SCENARIOS = scenario_table.SCENARIOS


def put(text=''):
    """A line of the command's result (the verdict table, the scenario
    list, the summary): printed whatever the log level (``-q``)."""
    print(text, flush=True)


def judge(name, tree, obs, outcome_only=False):
    """:func:`scenario_table.judge`, with an unknown scenario as a
    HarnessError."""
    if name not in scenario_table.BY_NAME:
        raise HarnessError(f"scenario {name} is not in "
                           "novaseries/scenarios/scenario_table.py")
    return scenario_table.judge(name, tree, obs, outcome_only)


# -- running ----------------------------------------------------------------

def reproducer_patch(target):
    """The series' reproducer commit: the first patch adding a regression
    test (``nova/tests/functional/regressions/test_bug_*.py``).

    :raises HarnessError: if the series has none.
    """
    patches, problem = target.series_status()
    if problem:
        raise HarnessError(problem)
    for patch in patches:
        text = patch.read_text(errors='replace')
        if '+++ b/nova/tests/functional/regressions/test_bug_' in text:
            return patch
    raise HarnessError(f"{target.name}: no patch in the series adds a "
                       "regression test; cannot make the reproducer tree")


def _stream(proc, label, lines):
    for line in proc.stdout:
        line = line.rstrip('\n')
        lines.append(line)
        if line.startswith('  ['):
            say(f"  {label:10}{line.strip()}")


def _stem(label, target):
    """File name stem of a tree's results: ``<label>`` or, for a target
    in a mode, ``<label>.<mode>``."""
    return f"{label}.{target.mode_name}" if target.mode_name else label


def run_trees(ctx, target, venv, trees, scenarios=(), outdir=None,
              extra_args=None):
    """Run the inner runner in each tree (in parallel); return {tree: data}.

    :param target: the target in the mode to run in (its env).
    :param trees: {label: tree path}.
    :param outdir: where each tree's JSON and logs go (default
        ``build/results/run``).
    :param extra_args: {label: more runner arguments} (``--ironic real``:
        the runner then also imports ``novaseries`` from this checkout).
    :raises HarnessError: if a runner process fails without writing JSON.
    """
    outdir = pathlib.Path(outdir or ctx.results('run'))
    outdir.mkdir(parents=True, exist_ok=True)
    running = {}
    for label, tree in trees.items():
        out = outdir / f"{_stem(label, target)}.json"
        if out.exists():
            out.unlink()
        cmd = [str(venv / 'bin' / 'python'), str(INNER), '--out', str(out)]
        for name in scenarios:
            cmd += ['--scenario', name]
        cmd += (extra_args or {}).get(label, [])
        env = runner.test_env(target, venv, tree)
        env['OS_DEBUG'] = '0'
        if extra_args:
            env['PYTHONPATH'] = os.pathsep.join([str(tree), str(ctx.root)])
        log = open(outdir / f"{_stem(label, target)}.log", 'w')
        # (the runner dies with the harness, even when it is SIGKILLed)
        proc = subprocess.Popen(cmd, cwd=tree, env=env, text=True,
                                stdout=subprocess.PIPE, stderr=log,
                                stdin=subprocess.DEVNULL,
                                preexec_fn=procs.die_with_parent())
        lines = []
        thread = threading.Thread(target=_stream, args=(
            proc, f"{label}/{target.mode_name}" if target.mode_name else label,
            lines))
        thread.start()
        running[label] = (proc, thread, out, log, lines)
    try:
        for proc, *_ in running.values():
            proc.wait()
    finally:
        # interrupted (Ctrl-C, SIGTERM): no runner outlives the command
        for proc, *_ in running.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    data = {}
    for label, (proc, thread, out, log, lines) in running.items():
        rc = proc.wait()
        thread.join()
        log.close()
        stem = _stem(label, target)
        if not out.exists():
            # Nova's test fixtures send some output to stdout: keep both.
            (outdir / f"{stem}.stdout.log").write_text('\n'.join(lines))
            tail = (outdir / f"{stem}.log").read_text(
                errors='replace').splitlines()[-20:]
            raise HarnessError(f"scenario runner for {label} failed (exit "
                               f"{rc}); logs: {outdir / (stem + '.log')}, "
                               f"{outdir / (stem + '.stdout.log')}",
                               '\n'.join(lines[-20:] + ['--- stderr:'] + tail))
        data[label] = json.loads(out.read_text())
        for obs in data[label].get('scenarios', []):
            obs['mode'] = target.mode_name
    return data


#: Seconds one benchmark run may take (a 100:20:20 run took about 45 in
#: eventlet mode, 283 in threading mode on a loaded 2-core machine).
BENCH_TIMEOUT = 600
#: Seconds before BENCH_TIMEOUT at which a run that has not ended dumps its
#: threads and lock holders to its log and writes a record with its error
#: (the runner's ``--deadline``); then SIGUSR1 (faulthandler) before the kill.
BENCH_DUMP_MARGIN = 30


def bench_trees(ctx, target, venv, trees, bench, runs):
    """Run the benchmark: each spec ``runs`` times in each tree.

    One process per run and one at a time, so that a run has the machine
    to itself: run i of both trees back to back (the pair whose ratio the
    report takes), the reproducer first for odd i and the fixed tree first
    for even i. Each process's log is appended to
    ``build/results/run/<tree>.bench.log``; a process gets BENCH_TIMEOUT
    seconds.

    :param trees: {label: tree path}.
    :param bench: specs or suite names (``bench_table.expand``).
    :returns: {label: [record, ...]} (keys: ``bench_table.RECORD``); a run
        that wrote no record gives one with its ``error``.
    """
    outdir = ctx.results('run')
    outdir.mkdir(parents=True, exist_ok=True)
    records = {label: [] for label in trees}
    logs = {label: outdir / f"{_stem(label, target)}.bench.log" for label in trees}
    for path in logs.values():
        path.write_text('')
    for spec in bench_table.expand(bench):
        for i in range(1, runs + 1):
            order = list(trees) if i % 2 else list(reversed(list(trees)))
            for label in order:
                out = outdir / f"{_stem(label, target)}.bench.json"
                out.unlink(missing_ok=True)
                with open(logs[label], 'a') as log:
                    rc = _bench_process(
                        [str(venv / 'bin' / 'python'), str(INNER),
                         '--out', str(out), '--bench', spec.text, str(i),
                         '--deadline', str(BENCH_TIMEOUT - BENCH_DUMP_MARGIN)],
                        trees[label], log,
                        # the runner's --deadline is the run's budget, not
                        # the suites' per-test timeout (OS_TEST_TIMEOUT)
                        dict(runner.test_env(target, venv, trees[label]),
                             OS_DEBUG='0', OS_TEST_TIMEOUT='0'))
                try:
                    rec = json.loads(out.read_text())['bench'][0]
                except (OSError, ValueError, IndexError, KeyError):
                    rec = {'spec': spec.text, 'run': i, 'n': spec.n,
                           's': spec.s, 'k': spec.k,
                           'error': f"benchmark process exited {rc} without "
                           f"a record; its log: {logs[label]}"}
                if rc != 0 and not rec.get('error'):
                    rec['error'] = (f"benchmark process exited {rc} after "
                                    f"writing its record; its log: "
                                    f"{logs[label]}")
                rec['mode'] = target.mode_name
                records[label].append(rec)
                outcome = ', '.join(f"{n} {s}" for s, n in
                                    sorted(rec.get('outcome', {}).items()))
                mode = f" {target.mode_name}" if target.mode_name else ""
                say(f"  {label:10}[bench{mode} {spec.text} run {i}/{runs}] "
                    f"{outcome or 'no outcome'}, "
                    f"{rec.get('wall_seconds', '?')} s"
                    f"{' ERROR IN RUNNER' if rec.get('error') else ''}")
    return records


def _bench_process(cmd, cwd, log, env):
    """Run one benchmark process with BENCH_TIMEOUT; return its exit
    status, or ``"killed after N s"``.  Before the kill, SIGUSR1 makes the
    runner's faulthandler write every thread's stack to the log."""
    proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL,
                            stdout=log, stderr=log, env=env)
    try:
        return proc.wait(timeout=BENCH_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        proc.kill()
        proc.wait()
        return f"killed after {BENCH_TIMEOUT} s"


def prepare_trees(ctx, target):
    """Prepare build/run/{reproducer,fixed}; return {label: path}.

    reproducer: the target's series up to its reproducer commit; fixed:
    everything a packager ships, i.e. target ``<target>-all`` (the series
    with the separate changes stacked on it) if there is one, else the
    whole series.
    """
    repro = reproducer_patch(target)
    fixed = targets_mod.load(ctx).get(f'{target.name}-all', target)
    base = ctx.build / 'run'
    trees = {}
    for label, tgt, upto in (('reproducer', target, repro.name),
                             ('fixed', fixed, None)):
        dest = base / label
        say(f"tree {label}: target {tgt.name}, series "
            f"{'up to ' + upto if upto else 'complete'}")
        trees[label] = tree_mod.prepare(ctx, tgt, dest, upto, force=True)
    return trees


#: A server left in one of these never ends (the bug).
STUCK = ('BUILD', 'REBUILD')


def _wait_text(obs, interval=POLL_INTERVAL):
    if obs.get('status') in STUCK:
        return 'never'
    polls = obs.get('polls_after_action')
    if polls is None:
        return '-'
    return f"{polls} ({polls * interval}s)"


def _wall_text(obs):
    """Wall time from the action to the end at api_retry_interval = 0."""
    if obs.get('status') in STUCK:
        return 'never'
    wall = obs.get('wall_seconds_after_action')
    return '-' if wall is None else f"{wall:.1f}s"


#: Width of the fault and log lines under a row (they are wrapped, not cut).
TEXT_WIDTH = 100
#: Column where those lines start.
TEXT_INDENT = 41


def table(data, interval=POLL_INTERVAL, wall='wall@0'):
    """Rows of the verdict table, as a list of strings.

    One row per scenario and tree: status/task, the first node's state,
    polls and wall time after the action, calls per poll, how many things
    the server left behind (``leftovers``: "none", or "N (below)") and the
    verdict with its reason.  Under it, wrapped, never cut: what was left
    (placement usage, allocations, nodes not ``available`` or keeping the
    instance, its instance_info or VIFs, a port still bound), the fault in
    full and the ironic driver's WARNING lines.

    :param interval: seconds per poll for ``polls (wait)``: the default
        ``[ironic] api_retry_interval`` for the fake run (which polls at
        0), the real run's own interval for ``--ironic real``.
    :param wall: the wall-time column's title (``wall@0``: at interval 0).
    """
    rows = []
    head = (f"{'scenario':30} {'tree':10} {'status/task':16} "
            f"{'node state':11} {'polls (wait)':13} {wall:7} "
            f"{'calls/poll':10} {'leftovers':10} {'verdict'}")
    rows.append(head)
    rows.append('-' * len(head))
    names = [o['scenario'] for o in data['fixed']['scenarios']]
    for name in names:
        for label in TREES:
            obs = _find(data[label], name)
            first = next((n for n in obs.get('nodes', [])
                          if n['id'] == obs.get('first_node')), {})
            node_state = ('deleted' if first.get('deleted')
                          else first.get('provision_state', '?'))
            st = f"{obs.get('status')}/{obs.get('task_state') or '-'}"
            left = _leftovers(obs)
            rows.append(f"{name if label == 'reproducer' else '':30} "
                        f"{label:10} {st:16} {node_state:11} "
                        f"{_wait_text(obs, interval):13} "
                        f"{_wall_text(obs):7} "
                        f"{str(obs.get('calls_per_poll')):10} "
                        f"{f'{len(left)} (below)' if left else 'none':10} "
                        f"{obs['verdict']}")
            if left:
                rows += _wrapped('left:  ', '; '.join(left))
            if obs.get('fault'):
                rows += _wrapped('fault: ', obs['fault'])
            for line in obs.get('driver_warnings') or []:
                # what Ironic showed, for the operator (compute log)
                rows += _wrapped('log:   ', _no_instance(line))
    return rows


def _leftovers(obs):
    """``scenario_table.leftovers`` of an observation (none for a scenario
    that did not run)."""
    return [] if obs.get('error') else checks.leftovers(obs)


def _wrapped(prefix, text):
    """``text`` under a row: ``prefix`` on the first line, wrapped at
    :data:`TEXT_WIDTH` and indented, never cut."""
    lines = textwrap.wrap(text, TEXT_WIDTH - len(prefix), break_long_words=True,
                          break_on_hyphens=False) or ['']
    pad = ' ' * TEXT_INDENT
    more = [pad + ' ' * len(prefix) + line for line in lines[1:]]
    return [pad + prefix + lines[0]] + more


def _no_instance(line):
    """A log message without oslo.log's ``[instance: <uuid>] `` prefix."""
    return re.sub(r'^\[instance: [0-9a-f-]+\] ', '', line)


def _find(tree_data, name):
    for obs in tree_data['scenarios']:
        if obs['scenario'] == name:
            return obs
    return {'scenario': name, 'error': 'not run', 'verdict': 'not run'}


def evaluate(data, released='the release'):
    """Add ``problems`` and ``verdict`` to each observation; return the
    number of scenarios the fixed tree got wrong.

    Fixed tree: ``ok`` or ``WRONG: <problems>``.  Reproducer tree (Nova as
    released): ``unexpected: <problems>`` when it did not do what its
    column says; otherwise ``bug reproduced: <why>`` (the first fixed-tree
    outcome check that fails on it, e.g. ``status BUILD, expected ERROR``)
    or ``as on <released>: the fixed tree's checks hold too``.  On either
    tree, an observation that is no verdict (the runner failed, the server
    did not settle, a step never happened: ``scenario_table.
    scenario_error``) is ``error: <why>``; on the fixed tree it counts as
    wrong.  Against a real Ironic, ``unchecked`` lists what the fixed
    tree's checks could not check (``scenario_table.unchecked``).

    :param released: what the reproducer tree is, e.g. ``nova 34.0.0``.
    """
    wrong = 0
    for label in TREES:
        for obs in data[label]['scenarios']:
            problems = judge(obs['scenario'], label, obs)
            obs['problems'] = problems
            broken = scenario_table.scenario_error(obs)
            unchecked = scenario_table.unchecked(obs['scenario'], obs)
            if unchecked:
                obs['unchecked'] = unchecked
            if broken:
                obs['verdict'] = 'error: ' + broken
                wrong += label == 'fixed'
            elif label == 'fixed':
                obs['verdict'] = 'ok' if not problems else 'WRONG: ' + \
                    '; '.join(problems)
                wrong += bool(problems)
            elif problems:
                obs['verdict'] = 'unexpected: ' + '; '.join(problems)
            else:
                bug = _bug_reasons(obs)
                obs['verdict'] = (f"bug reproduced: {bug[0]}" if bug else
                                  f"as on {released}: the fixed tree's checks "
                                  "hold too")
    return wrong


def _unchecked_note(data):
    """Lines saying what the checks could not check (``--ironic real``),
    once for all scenarios: a heading and each text (none against the
    fake Ironic)."""
    seen = []
    for obs in data['fixed']['scenarios']:
        for text in obs.get('unchecked') or ():
            if text not in seen:
                seen.append(text)
    return ['not checked against a real Ironic:'] + [
        '  - ' + text for text in seen] if seen else []


def _mode_summary(mode, data, wrong):
    """The summary's lines for one mode of a run: how many of the fixed
    tree's scenarios are right (``wrong``: :func:`evaluate`'s count), and
    the reproducer's observations that are no verdict, if any."""
    fixed = len(data['fixed']['scenarios'])
    lines = [f"{mode} mode: fixed tree {fixed - wrong} of {fixed} scenarios right"]
    errors = [o['scenario'] for o in data['reproducer']['scenarios']
              if o.get('verdict', '').startswith('error: ')]
    if errors:
        lines.append(f"reproducer tree: {len(errors)} scenario(s) with no verdict "
                     f"({', '.join(errors)})")
    return lines


def _bug_reasons(obs):
    """The fixed tree's outcome checks (not log lines) that fail on this
    observation: why it shows the bug (empty: it does not)."""
    return judge(obs['scenario'], 'fixed', obs, outcome_only=True)


def check_tree(ctx, tree, target_name='master', scenarios=(),
               json_out=None, modes=DEFAULT_MODES):
    """Run the scenarios in one Nova tree of the user's and judge it as a
    fixed tree (e.g. a distribution's patched Nova), in each of ``modes``.

    The tree must contain the series' test fixtures (both fake Ironic
    commits: ``nova/tests/fixtures/ironic.py`` with its teardown controls
    and ``nova/tests/functional/ironic/base.py``). Returns the exit status.
    """
    tree = pathlib.Path(tree).resolve()
    fixture = tree / 'nova' / 'tests' / 'fixtures' / 'ironic.py'
    if not (fixture.exists() and 'def after_polls' in fixture.read_text() and
            (tree / 'nova' / 'tests' / 'functional' / 'ironic' /
             'base.py').exists()):
        raise HarnessError(f"{tree} lacks the fake Ironic and its teardown "
                           "controls: apply at least the series' first "
                           "three commits")
    target = targets_mod.get(ctx, target_name)
    venv, _ = runner.ensure_venv(ctx, target)
    result = {'modes': list(modes), 'by_mode': {}}
    wrong, total = 0, 0
    for mode in modes:
        data = run_trees(ctx, mode_target(target, mode), venv, {'fixed': tree},
                         scenarios)
        put(f"\n=== {mode} mode: {MODES[mode]}")
        for obs in data['fixed']['scenarios']:
            problems = judge(obs['scenario'], 'fixed', obs)
            obs['problems'] = problems
            wrong += bool(problems)
            total += 1
            put(f"{obs['scenario']:30} {obs.get('status') or '-':8} "
                f"{'ok' if not problems else 'WRONG: ' + '; '.join(problems)}")
        result['by_mode'][mode] = data
    out = pathlib.Path(json_out) if json_out else ctx.results('run') / \
        'tree.json'
    out.write_text(json.dumps(result, indent=1, sort_keys=True))
    put(f"\nJSON: {out}\n{tree}: {total - wrong} of {total} scenarios right "
        f"({', '.join(modes)} mode)")
    return 1 if wrong else 0


#: ``[fake]`` options of the real Ironic of ``run --ironic real``: 2 s per
#: fake power and boot action (``deploying`` and ``deleting`` last several
#: driver polls at ``[ironic] api_retry_interval`` = 1 s; with 1 s,
#: ``deleting`` (about 4.1 s) ended within ``deleting-outlasts-retries``'
#: two retries under CI's load) and 2 s per call of the ``fake`` deploy
#: interface (a node that deploys with it goes ``active`` after about 4 s).
REAL_FAKE_DELAYS = 2
REAL_EXTRA_CONF = '[fake]\ndeploy_delay = 2\n'


def real_scenarios(names=()):
    """The scenarios ``run --ironic real`` plays: ``names`` (each must be
    playable) or every playable one.

    :raises HarnessError: a scenario a real Ironic cannot play, with why.
    """
    if not names:
        return [s.name for s in SCENARIOS if s.real is True]
    refused = [f"{n}: {scenario_table.BY_NAME[n].real}" for n in names
               if scenario_table.BY_NAME[n].real is not True]
    if refused:
        raise HarnessError("--ironic real cannot play " + '; '.join(refused))
    return list(names)


def run_real(ctx, target_name='master', scenarios=(), modes=None,
             json_out=None):
    """:func:`play_real`; returns its exit status."""
    return play_real(ctx, target_name, scenarios, modes, json_out)[0]


def play_real(ctx, target_name='master', scenarios=(), modes=None,
              json_out=None):
    """``run --ironic real``: the scenarios through Nova's whole stack
    (API, conductor, scheduler, placement, compute with the real
    ``IronicDriver``) against a real Ironic 39.0.0 on 127.0.0.1, one per
    tree, on the reproducer and the fixed tree, in each of ``modes``.

    Each tree's runner binds the scenarios to its Ironic
    (``scenarios/real_backend.py``): fresh nodes per scenario, enrolled
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
    :raises HarnessError: a scenario that is not playable, a runner that
        failed without its JSON, an Ironic that did not start.
    """
    from novaseries import realironic
    names = real_scenarios(scenarios)
    modes = modes or DEFAULT_MODES
    target = targets_mod.get(ctx, target_name)
    start = time.monotonic()
    trees = prepare_trees(ctx, target)
    venv, _ = runner.ensure_venv(ctx, target)
    ironic_venv = realironic.ensure_venv(ctx.build, ctx.root)
    runid = f"{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
    outdir = ctx.results('run') / 'real' / runid
    outdir.mkdir(parents=True)
    result = {'modes': list(modes), 'by_mode': {}, 'bench_problems': [],
              'ironic': 'real', 'runid': runid}
    wrong_total, summary = 0, []
    with contextlib.ExitStack() as stack:
        ironics = {}
        for label in trees:
            ironic = realironic.RealIronic(
                venv=ironic_venv, workdir=ctx.build / 'realironic',
                fake_delays=REAL_FAKE_DELAYS, extra_conf=REAL_EXTRA_CONF)
            stack.enter_context(ironic)
            stack.callback(_keep_log, ironic, outdir / f"ironic-{label}.log")
            say(f"real Ironic for {label}: {ironic.url} "
                f"(started in {ironic.start_seconds:.1f} s)")
            info = outdir / f"ironic-{label}.json"
            info.write_text(json.dumps({
                'url': ironic.url, 'image_url': ironic.image_url,
                'missing_image_url': ironic.missing_image_url,
                'image_sha256': ironic.image_sha256}))
            ironics[label] = info
        for mode in modes:
            moded = mode_target(target, mode)
            extra = {}
            for label in trees:
                requests = outdir / f"{_stem(label, moded)}"
                requests.mkdir()
                extra[label] = ['--ironic', 'real', '--ironic-info',
                                str(ironics[label]), '--requests-dir',
                                str(requests)]
            say(f"{mode} mode: running {len(names)} scenarios against real "
                f"Ironics in {len(trees)} trees (in parallel)...")
            data = run_trees(ctx, moded, venv, trees, names, outdir=outdir,
                             extra_args=extra)
            wrong = evaluate(data, released=f"nova {target.version}")
            wrong_total += wrong
            put('')
            put(f"=== {mode} mode, real Ironic {realironic.IRONIC_VERSION}: "
                f"{MODES[mode]}")
            put('')
            for row in table(data, interval=real_backend_interval(),
                             wall='wall'):
                put(row)
            for line in _unchecked_note(data):
                put(line)
            result['by_mode'][mode] = data
            summary += _mode_summary(mode, data, wrong)
    own = outdir / 'run.json'
    _write_json(own, result)
    out = pathlib.Path(json_out) if json_out else ctx.results('run') / \
        'run-real.json'
    _write_json(out, result)
    put(f"\nJSON: {own} (copied to {out}); requests and Ironic logs: {outdir}")
    put('; '.join(summary + [f"{time.monotonic() - start:.0f} s"]))
    return (1 if wrong_total else 0), own


def real_backend_interval():
    """``[ironic] api_retry_interval`` of a real run (s): the scenario
    runner's ``real_backend.POLL_INTERVAL``."""
    return real_backend.POLL_INTERVAL


def _keep_log(ironic, dest):
    """Copy a RealIronic's log into the results (before its stop)."""
    if ironic.log_path and ironic.log_path.exists():
        shutil.copyfile(ironic.log_path, dest)


def _write_json(path, data):
    """Write JSON through a temporary file and a rename: a reader never
    sees half of it, and two runs never mix theirs."""
    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    os.replace(tmp, path)


#: Runs of each benchmark spec unless told otherwise (``--bench-runs``).
BENCH_RUNS = 3


def mode_target(target, mode):
    """``target`` in ``mode`` for the main job: the mode's environment
    with the target's own interpreter and venv, so that the two modes'
    results differ in nothing else."""
    return target.in_mode(mode, interpreter=False)


def run(ctx, target_name='master', scenarios=(), bench=(), json_out=None,
        ironic='fake', bench_runs=BENCH_RUNS, modes=DEFAULT_MODES):
    """The main job, in each of ``modes`` (names of :data:`MODES`), one
    after the other.  Returns the exit status (0: fixed tree all right in
    every mode and, with ``bench``, the benchmark without problems).

    The JSON: ``modes`` (in order), ``by_mode`` (``{mode: {reproducer,
    fixed, bench_problems}}``, every observation and benchmark record
    with its ``mode``) and ``bench_problems`` (all modes', each behind
    its mode's name)."""
    if ironic == 'real':
        return run_real(ctx, target_name, scenarios, modes, json_out)
    target = targets_mod.get(ctx, target_name)
    start = time.monotonic()
    trees = prepare_trees(ctx, target)
    venv, _ = runner.ensure_venv(ctx, target)
    names = list(scenarios) or ([] if bench else [s.name for s in SCENARIOS])
    result = {'modes': list(modes), 'by_mode': {}, 'bench_problems': []}
    wrong_total, summary = 0, []
    for mode in modes:
        moded = mode_target(target, mode)
        if names:
            say(f"{mode} mode: running {len(names)} scenarios in {len(trees)} "
                "trees (in parallel)...")
            data = run_trees(ctx, moded, venv, trees, names)
        else:
            data = {label: {'scenarios': []} for label in trees}
        if bench:
            runs = len(bench_table.expand(bench)) * bench_runs
            say(f"{mode} mode: running {runs} benchmark runs in each of "
                f"{len(trees)} trees (one at a time)...")
            for label, recs in bench_trees(ctx, moded, venv, trees, bench,
                                           bench_runs).items():
                data[label]['bench'] = recs
        wrong = evaluate(data, released=f"nova {target.version}")
        wrong_total += wrong
        put('')
        put(f"=== {mode} mode: {MODES[mode]}")
        if data['fixed']['scenarios']:
            put('')
            for row in table(data):
                put(row)
        lines, problems = benchreport.report(data)
        if lines:
            put('')
            for line in lines:
                put(line)
            for problem in problems:
                LOG.error("benchmark (%s mode): %s", mode, problem)
            put(f"benchmark ({mode} mode): {len(problems) or 'no'} problem(s)")
        data['bench_problems'] = problems
        result['by_mode'][mode] = data
        result['bench_problems'] += [f"{mode} mode: {p}" for p in problems]
        if data['fixed']['scenarios']:
            summary += _mode_summary(mode, data, wrong)
    if bench and len(modes) > 1:
        lines = benchreport.compare_modes(result)
        if lines:
            put('')
            for line in lines:
                put(line)
    out = pathlib.Path(json_out) if json_out else ctx.results('run') / \
        'run.json'
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, sort_keys=True))
    put(f"\nJSON: {out}")
    put('; '.join(summary + [f"{time.monotonic() - start:.0f} s"]))
    return 1 if wrong_total or result['bench_problems'] else 0


def scenario_list():
    """``run --list``: every scenario, what it does, what the fixed tree must
    show, and the real-Ironic test that also plays it (lines of text)."""
    lines = []
    for sc in SCENARIOS:
        lines.append(f"{sc.name}: {sc.title}")
        lines.append(f"    fixed tree must: {'; '.join(sc.expectations('fixed'))}")
        lines.append(f"    as released: {'; '.join(sc.expectations('reproducer'))}")
        lines.append("    real Ironic (run --ironic real): " + (
            'plays it' if sc.real is True else f"not played: {sc.real}"))
        if sc.real_ironic:
            lines.append("    real Ironic, driver level (ironic selftest): "
                         f"tests/realironic/test_e2e.py {sc.real_ironic}")
    return lines


def _bench_spec(spec):
    """argparse type of ``--bench``: ``N:S:K[:option=value,...]`` (see
    ``bench_table.parse``) or a suite name (``bench_table.SUITES``)."""
    import argparse
    if spec in bench_table.SUITES:
        return spec
    try:
        return bench_table.parse(spec).text
    except ValueError as e:
        raise argparse.ArgumentTypeError(
            f"{e}; or a suite: {', '.join(bench_table.SUITES)}")


def _runs(text):
    """argparse type of ``--bench-runs``: an integer >= 1."""
    import argparse
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a number >= 1")
    return int(text)


def _modes(choice):
    """The modes of ``--mode CHOICE`` (None: :data:`DEFAULT_MODES`)."""
    if choice is None:
        return DEFAULT_MODES
    return tuple(MODES) if choice == 'both' else (choice,)


def _register():
    from novaseries import cli

    @cli.command('run', 'the main job: every scenario on the reproducer and '
                 'the fixed tree, verdict table + JSON')
    @cli.arguments(
        (('--target',), dict(default='master')),
        (('--scenario',), dict(action='append', default=[], metavar='NAME',
                               choices=list(scenario_table.BY_NAME),
                               help='only this scenario (repeatable; the '
                               'names are listed below)')),
        (('--list',), dict(action='store_true', help='list the scenarios with '
                           'what each tree must show, and stop')),
        (('--bench',), dict(action='append', default=[],
                            metavar='N:S:K[:option=value,...]|SUITE',
                            type=_bench_spec,
                            help='benchmark (repeatable): N concurrent '
                            'builds on N+S nodes, K undeployed in wait '
                            'call-back, Nova options '
                            f"{', '.join(bench_table.OPTIONS)}; or a suite: "
                            f"{', '.join(bench_table.SUITES)} "
                            '(doc/main-job.rst)')),
        (('--bench-runs',), dict(type=_runs, default=None, metavar='R',
                                 help='runs of each benchmark spec (default '
                                 f'{BENCH_RUNS}; the report gives medians)')),
        (('--json',), dict(help='where to write the JSON (default: '
                           'build/results/run/run.json; with --ironic real '
                           'run-real.json)')),
        (('--ironic',), dict(choices=('fake', 'real'), default='fake',
                             help='fake: the fake Ironic of the series '
                             '(default); real: a real Ironic 39.0.0 on '
                             '127.0.0.1 per tree, through the whole Nova '
                             'stack, for the scenarios it can play '
                             '(--list says which)')),
        (('--mode',), dict(choices=(*MODES, 'both'), default=None,
                           help="Nova's concurrency mode: threading (nova "
                           "34.0.0's default, the default here), eventlet, "
                           'or both (threading, then eventlet)')),
        (('--tree',), dict(help='instead: judge this Nova tree (with the '
                           "series' fake Ironic) as a fixed tree")))
    def cmd_run(ctx, args):
        if args.list:
            given = [opt for opt, used in (
                ('--tree', args.tree), ('--scenario', args.scenario),
                ('--bench', args.bench), ('--json', args.json),
                ('--bench-runs', args.bench_runs is not None),
                ('--ironic', args.ironic != 'fake'),
                ('--mode', args.mode),
                ('--target', args.target != 'master')) if used]
            if given:
                raise HarnessError(f"--list lists the scenarios; it does not take "
                                   f"{', '.join(given)}")
            for line in scenario_list():
                put(line)
            return 0
        if args.tree:
            ignored = [opt for opt, used in (('--bench', args.bench),
                                             ('--bench-runs', args.bench_runs is not None),
                                             ('--ironic real', args.ironic == 'real'))
                       if used]
            if ignored:
                raise HarnessError(f"--tree judges one tree with the fake Ironic; "
                                   f"it does not take {' or '.join(ignored)}")
            return check_tree(ctx, args.tree, args.target, args.scenario,
                              args.json, _modes(args.mode))
        if args.bench_runs is not None and not args.bench:
            raise HarnessError("--bench-runs needs --bench")
        if args.bench and args.ironic == 'real':
            raise HarnessError("--bench runs on the fake Ironic; it does not "
                               "take --ironic real")
        return run(ctx, args.target, args.scenario, args.bench, args.json,
                   args.ironic, args.bench_runs or BENCH_RUNS,
                   _modes(args.mode))

    cmd_run.epilog = 'scenarios (novaseries/scenarios/scenario_table.py):\n' + \
        '\n'.join(f"  {sc.name:30} {sc.title}" for sc in SCENARIOS)


_register()
