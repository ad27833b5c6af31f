"""Preparing and running the main job's trees: the reproducer and the fixed
tree of a target (:func:`prepare_trees`), the scenario player in each
(:func:`run_trees`, in parallel) and the benchmark's runs
(:func:`bench_trees`, one at a time), in a concurrency mode
(:func:`novaseries.targets.mode_target`).

The player runs in the target's venv as ``python -m`` :data:`PLAYER`, in
the tree, with ``PYTHONPATH`` the tree and this checkout
(:func:`player_env`).
"""

import json
import pathlib
import signal
import subprocess
import threading

from novaseries import procs, targets as targets_mod, venvs
from novaseries import tree as tree_mod
from novaseries.scenarios import bench_table
from novaseries.scenarios.scenario import BENCH_KEY, PROGRESS_PREFIX, SCENARIOS_KEY, TREES
from novaseries.util import LOG_TAIL_LINES, HarnessError, nova_side_pythonpath, say

#: The scenario player, run as ``python -m PLAYER`` in Nova's venv.
PLAYER = 'novaseries.nova_side.player.play'
#: The main job's results folder: ``build/results/RESULTS``.
RESULTS = 'run'
#: The folder of the main job's trees: ``build/TREES_DIR/<tree label>``.
TREES_DIR = 'run'
#: The lock file of the main job's results: ``build/LOCK``.
LOCK = 'run.lock'


def player_env(target, venv, tree):
    """The environment of the player in ``tree``: the target's test
    environment (its mode's too), ``PYTHONPATH`` the tree and the
    harness's code (:func:`~novaseries.util.nova_side_pythonpath`, for
    ``novaseries.scenarios``), ``OS_DEBUG=0`` (Nova's test logging at
    INFO whatever the caller's environment says)."""
    env = venvs.test_env(target, venv, tree)
    env['OS_DEBUG'] = '0'
    env['PYTHONPATH'] = nova_side_pythonpath(tree)
    return env


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
        if line.startswith(PROGRESS_PREFIX):
            say(f"  {label:10}{line.strip()}")


def result_stem(label, target):
    """File name stem of a tree's results: ``<label>`` or, for a target
    in a mode, ``<label>.<mode>``."""
    return f"{label}.{target.mode_name}" if target.mode_name else label


def run_trees(ctx, target, venv, trees, scenarios=(), outdir=None,
              extra_args=None):
    """Run the scenario player in each tree (in parallel); return {tree: data}.

    :param target: the target in the mode to run in (its env).
    :param trees: {label: tree path}.
    :param outdir: where each tree's JSON and logs go (default
        ``build/results/run``).
    :param extra_args: {label: more player arguments} (``--ironic real``).
    :raises HarnessError: if a player process fails without writing JSON.
    """
    outdir = pathlib.Path(outdir or ctx.results(RESULTS))
    outdir.mkdir(parents=True, exist_ok=True)
    running = {}
    for label, tree in trees.items():
        out = outdir / f"{result_stem(label, target)}.json"
        if out.exists():
            out.unlink()
        cmd = [str(venv / 'bin' / 'python'), '-m', PLAYER, '--out', str(out)]
        for name in scenarios:
            cmd += ['--scenario', name]
        cmd += (extra_args or {}).get(label, [])
        env = player_env(target, venv, tree)
        log = open(outdir / f"{result_stem(label, target)}.log", 'w')
        # (the player dies with the harness, even when it is SIGKILLed)
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
        # interrupted (Ctrl-C, SIGTERM): no player outlives the command
        for proc, *_ in running.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    data = {}
    for label, (proc, thread, out, log, lines) in running.items():
        rc = proc.wait()
        thread.join()
        log.close()
        stem = result_stem(label, target)
        if not out.exists():
            # Nova's test fixtures send some output to stdout: keep both.
            (outdir / f"{stem}.stdout.log").write_text('\n'.join(lines))
            tail = (outdir / f"{stem}.log").read_text(
                errors='replace').splitlines()[-LOG_TAIL_LINES:]
            raise HarnessError(f"scenario player for {label} failed (exit "
                               f"{rc}); logs: {outdir / (stem + '.log')}, "
                               f"{outdir / (stem + '.stdout.log')}",
                               '\n'.join(lines[-LOG_TAIL_LINES:] + ['--- stderr:'] + tail))
        data[label] = json.loads(out.read_text())
        for obs in data[label].get(SCENARIOS_KEY, []):
            obs['mode'] = target.mode_name
    return data


#: Seconds one benchmark run may take: room for the largest spec of
#: ``bench_table.BENCH_SUITES`` in threading mode, the slower one, on a
#: loaded machine.
BENCH_TIMEOUT = 600
#: Seconds before BENCH_TIMEOUT at which a run that has not ended dumps its
#: threads and lock holders to its log and writes a record with its error
#: (the player's ``--deadline``); then SIGUSR1 (faulthandler) before the kill.
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
    outdir = ctx.results(RESULTS)
    outdir.mkdir(parents=True, exist_ok=True)
    records = {label: [] for label in trees}
    logs = {label: outdir / f"{result_stem(label, target)}.bench.log" for label in trees}
    for path in logs.values():
        path.write_text('')
    for spec in bench_table.expand(bench):
        for i in range(1, runs + 1):
            order = list(trees) if i % 2 else list(reversed(list(trees)))
            for label in order:
                out = outdir / f"{result_stem(label, target)}.bench.json"
                out.unlink(missing_ok=True)
                with open(logs[label], 'a') as log:
                    rc = _bench_process(
                        [str(venv / 'bin' / 'python'), '-m', PLAYER,
                         '--out', str(out), '--bench', spec.text, str(i),
                         '--deadline', str(BENCH_TIMEOUT - BENCH_DUMP_MARGIN)],
                        trees[label], log,
                        # the player's --deadline is the run's budget, not
                        # the suites' per-test timeout (OS_TEST_TIMEOUT)
                        dict(player_env(target, venv, trees[label]),
                             OS_TEST_TIMEOUT='0'))
                try:
                    rec = json.loads(out.read_text())[BENCH_KEY][0]
                except (OSError, ValueError, IndexError, KeyError):
                    rec = {**bench_table.record_head(spec, i),
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
                    f"{' ERROR IN PLAYER' if rec.get('error') else ''}")
    return records


def _bench_process(cmd, cwd, log, env):
    """Run one benchmark process with BENCH_TIMEOUT; return its exit
    status, or ``"killed after N s"``.  Before the kill, SIGUSR1 makes the
    player's faulthandler write every thread's stack to the log."""
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
    """Prepare build/run/{reproducer,fixed}; return {label: path}, the
    labels of ``scenario.TREES``.

    reproducer: the target's series up to its reproducer commit; fixed:
    everything a packager ships, i.e. the packaged stack of the target's
    release (:func:`novaseries.targets.stack_target`: the series with the
    separate changes stacked on it).

    :raises HarnessError: the series has no reproducer commit, or the
        release no target with ``stack = true``.
    """
    repro = reproducer_patch(target)
    fixed = targets_mod.stack_target(ctx, target.release)
    base = ctx.build / TREES_DIR
    trees = {}
    repro_label, fixed_label = TREES
    for label, tgt, upto in ((repro_label, target, repro.name),
                             (fixed_label, fixed, None)):
        dest = base / label
        say(f"tree {label}: target {tgt.name}, series "
            f"{'up to ' + upto if upto else 'complete'}")
        trees[label] = tree_mod.prepare(ctx, tgt, dest, upto, force=True)
    return trees
