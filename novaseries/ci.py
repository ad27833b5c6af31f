"""``ci``: the one test command (README, tox -e ci, .ci/run).

Tasks: the harness's own tests (unittest in a child process, a task beside
the others), then for each enabled target: prepare its tree, then check-commits (targets with
``check_commits = true``) or test at HEAD; then the steps of
:func:`novaseries.cisteps.steps` (the real Ironics, the main job, mypy).  Ends
with the line
``N passed, N failed, N skipped`` (real totals) and returns non-zero if
anything failed.
"""

import os
import subprocess
import sys
import threading
import time
import traceback

from novaseries import cisteps, commit_checks, cores, targets as targets_mod, testrun, venvs
from novaseries import tree as tree_mod
from novaseries.outcomes import (Outcome, cannot_run, missing_interpreter, report, totals,
                                 unittest_outcome)
from novaseries.util import LOG, HarnessError, say

#: The name of the harness's own tests (``tests/``) in ``ci``'s output: its
#: task, its times, its Outcome.
HARNESS_TESTS = "harness tests"


def self_tests(ctx):
    """Run ``tests/`` with unittest in a child process (``python -m unittest
    discover -s tests -t .`` from the project root, this interpreter), its
    output in ``build/results/harness-tests.log``; return one Outcome with
    unittest's counts (:func:`novaseries.outcomes.unittest_outcome`: a
    crash or a run of no test is a failure).  A child process, so that ``ci``
    runs it as a task beside the targets: its mocks and its stdout are its
    own."""
    log_path = ctx.results_root / "harness-tests.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "w") as log:
        rc = subprocess.run([sys.executable, "-m", "unittest", "discover", "-s", "tests",
                             "-t", "."], cwd=ctx.root, stdin=subprocess.DEVNULL,
                            stdout=log, stderr=subprocess.STDOUT).returncode
    ran, outcome = unittest_outcome(f"{HARNESS_TESTS} (tests/)", log_path, rc)
    if not ran:
        outcome.note = f"ran no tests; {outcome.note}"
    say(f"{HARNESS_TESTS}: {ran} run, {outcome.failed} failed, {outcome.skipped} skipped "
        f"(log: {log_path})")
    return outcome


def _self_test_task(ctx):
    """The :class:`Task` function of the harness's own tests."""
    def run():
        say(f"=== {HARNESS_TESTS}")
        t0 = time.monotonic()
        try:
            outcome = self_tests(ctx)
        except Exception as exc:  # report, count, go on
            outcome = _failure(HARNESS_TESTS, exc)
        return [outcome], [(HARNESS_TESTS, time.monotonic() - t0)]
    return run


def target_task(ctx, target, timings):
    """Prepare ``target``'s tree, then check-commits or test (in each of
    the target's modes); return Outcomes.  Appends ``(what, seconds)`` for
    prepare, venv installs and tests."""
    _, problem = target.series_status()
    if problem:
        raise HarnessError(problem)
    original, target = target, target.ci_target()
    t0 = time.monotonic()
    tree = tree_mod.prepare(ctx, target)
    timings.append((f"{target.name} prepare (download, extract, git am)", time.monotonic() - t0))
    t0 = time.monotonic()
    for moded in venvs.mode_targets(target):
        if not venvs.mode_interpreter_missing(moded):  # else test_modes says so
            venvs.ensure_venv(ctx, moded)
    timings.append((f"{target.name} venv install ({', '.join(target.modes) or 'no mode'})",
                    time.monotonic() - t0))
    t0 = time.monotonic()
    try:
        if target.check_commits:
            return commit_checks.check_commits(ctx, target, tree,
                                               before_last=original.ci_commit_target())
        return testrun.test_modes(ctx, target, tree)
    finally:
        timings.append((f"{target.name} tests", time.monotonic() - t0))


def _failure(name, exc):
    """Print an error of a ci step and return it as one failed Outcome."""
    if isinstance(exc, HarnessError):
        LOG.error(f"error: {exc}")
        if exc.details:
            LOG.error(exc.details)
    else:
        LOG.error(traceback.format_exc())
    return Outcome(name, failed=1, note=f"error: {exc}")


class Task:
    """One unit of ``ci`` work: a target (prepare, then check-commits or
    test) or a step (:func:`novaseries.cisteps.steps`).

    :param name: the target's or step's name (what ``deps`` name).
    :param func: ``func() -> ([Outcome], [(what, seconds)])``; it reports
        its own errors as failed Outcomes.
    :param deps: names of the tasks that must have ended before this one
        starts (a step waits for the targets it is about: their trees and
        venvs are then ready, and nothing else checks out in them).
    """

    def __init__(self, name, func, deps=(), light=False):
        self.name, self.func, self.deps = name, func, set(deps)
        #: a task that mostly waits (on real services' state changes, on
        #: the processes the harness's own tests start) or takes no time:
        #: :func:`run_tasks` runs it as soon as its deps have ended, beside
        #: the ``parallel`` others, and it does not count in the cores'
        #: sharing-out.
        self.light = light


#: How many tasks ``ci`` runs at once by default where there are that many
#: cores or more (:func:`default_parallel`).
DEFAULT_PARALLEL = 2


def default_parallel():
    """How many tasks ``ci`` runs at once by default:
    :data:`DEFAULT_PARALLEL` where there are that many cores or more (one
    task's single-core phases -- venv installs, test discovery, flake8,
    waits in tests and in the real services -- overlap the other's tests),
    else one."""
    return DEFAULT_PARALLEL if (os.cpu_count() or 1) >= DEFAULT_PARALLEL else 1


def run_tasks(tasks, parallel):
    """Run ``tasks`` (:class:`Task`), ``parallel`` at a time, each as soon as
    its ``deps`` have ended, in list order otherwise; return
    ``{name: (outcomes, timings)}``.

    While tasks run, :func:`novaseries.cores.mode_concurrency` shares the
    cores out between those running (:func:`cores.task_started`).  A task
    that raises is recorded as one failed Outcome; the others go on.

    :raises HarnessError: if a task depends on one that is not in ``tasks``
        (it could never start).
    """
    names = {task.name for task in tasks}
    for task in tasks:
        if not task.deps <= names:
            raise HarnessError(f"ci task {task.name} waits for "
                               f"{', '.join(sorted(task.deps - names))}, which is not run")
    pending = [task for task in tasks if not task.light]
    done, results = set(), {}
    cond = threading.Condition()

    def next_task():
        with cond:
            while pending:
                ready = next((task for task in pending if task.deps <= done), None)
                if ready:
                    pending.remove(ready)
                    return ready
                cond.wait()
            return None

    def run(task, counted=True):
        if counted:
            cores.task_started()
        try:
            results[task.name] = task.func()
        except BaseException as exc:  # the task's own handler missed it
            results[task.name] = ([_failure(task.name, exc)], [])
        finally:
            if counted:
                cores.task_ended()
            with cond:
                done.add(task.name)
                cond.notify_all()

    def worker():
        while True:
            task = next_task()
            if task is None:
                return
            run(task)

    def light_worker(task):
        with cond:
            while not task.deps <= done:
                cond.wait()
        run(task, counted=False)

    heavy = len(pending)
    threads = [threading.Thread(target=worker, name=f"ci-task-{number}", daemon=True)
               for number in range(max(1, min(parallel, heavy))) if heavy]
    threads += [threading.Thread(target=light_worker, args=(task,), name=f"ci-light-{task.name}",
                                 daemon=True) for task in tasks if task.light]
    for thread in threads:
        thread.start()
    for thread in threads:
        while thread.is_alive():  # a timeout keeps Ctrl-C deliverable
            thread.join(timeout=1)
    return results


def start_order(tasks):
    """``tasks`` in the order :func:`run_tasks` should start them: each task
    with deps right after the last of them (in list order otherwise).

    A step (the real Ironics, the main job) is then the next task to start
    once its targets have ended, so that its waits on real services
    overlap the other targets' tests instead of all steps running last.
    """
    position = {task.name: number for number, task in enumerate(tasks)}

    def key(task):
        if not task.deps:
            return (position[task.name], 0, 0)
        return (max(position[dep] for dep in task.deps), 1, position[task.name])
    return sorted(tasks, key=key)


def _target_task(ctx, target):
    """The :class:`Task` function of ``target``."""
    def run():
        timings = []
        say(f"=== {target.name}: nova {target.version}")
        try:
            return target_task(ctx, target, timings), timings
        except Exception as exc:  # report, count, go on with the others
            return [_failure(target.name, exc)], timings
    return run


def _step_task(ctx, step, func):
    """The :class:`Task` function of the step called ``step``."""
    def run():
        say(f"=== {step}")
        t0 = time.monotonic()
        try:
            produced = func(ctx)
            if not produced:
                raise HarnessError(f"step {step} produced no result")
            outcomes = list(produced)
        except (Exception, SystemExit) as exc:  # report, count, go on
            outcomes = [_failure(step, exc)]
        return outcomes, [(step, time.monotonic() - t0)]
    return run


def ci(ctx, names=None, self_test=True, parallel=None, steps=None):
    """Run everything; print the summary; return the exit status.

    The harness's own tests (unless ``self_test`` is false), then each
    enabled target (or the ``names`` given): prepare, then check-commits
    or test; and each of ``steps`` (:class:`novaseries.cisteps.Step`
    records; default :func:`novaseries.cisteps.steps`) whose targets the
    run covers, once those targets have ended: each a :class:`Task`,
    ``parallel`` of them at once (:func:`run_tasks`; default
    :func:`default_parallel`); the summary keeps
    this order whatever order they end in.  Failures: a failed test or
    check, a target or step that raises (or exits), a step that returns
    no Outcome.  A
    step whose targets are not in targets.toml counts as skipped (a
    failure under ``CI=true``).  Prints the summary, the times and, last,
    ``N passed, N failed, N skipped``.

    :returns: 1 if anything failed, else 0.
    """
    start = time.monotonic()
    outcomes, timings = [], []
    known = targets_mod.load(ctx)
    # (name, outcomes known now or None, Task or None), in summary order
    plan = []
    parallel = parallel or default_parallel()
    if self_test:  # beside the targets where two or more run at once (a
        # child process that mostly waits on the git and other processes
        # its tests start: light); else before them, in their one place
        plan.append((HARNESS_TESTS, None, Task(HARNESS_TESTS, _self_test_task(ctx),
                                               light=parallel > 1)))
    for name in names or known:
        if name not in known:
            raise HarnessError(f"unknown target {name!r} (known: {', '.join(known)})")
        target = known[name]
        if not names and not target.enabled:
            why = target.note or "see targets/targets.toml"
            say(f"=== {name}: not enabled ({why}), skipped")
            plan.append((name, [Outcome(f"{name}: not enabled", skipped=1, note=why)], None))
            continue
        skipped = missing_interpreter(target)
        if skipped:
            plan.append((name, [skipped], None))
            continue
        plan.append((name, None, Task(name, _target_task(ctx, target))))
    scheduled = {name for name, _, task in plan if task}
    for step in cisteps.steps(ctx) if steps is None else steps:
        needs = step.targets
        if needs and names and not set(needs) & set(names):
            continue  # ``ci --target`` chose other targets
        if needs and not set(needs) <= set(known):
            missing = ', '.join(sorted(set(needs) - set(known)))
            plan.append((step.name, [cannot_run(
                step.name, f"step {step.name}: targets.toml has no {missing}",
                f"no target {missing}")], None))
            continue
        plan.append((step.name, None, Task(step.name, _step_task(ctx, step.name, step.func),
                                           deps=set(needs) & scheduled, light=step.light)))
    results = run_tasks(start_order([task for _, _, task in plan if task]), parallel)
    for name, known_outcomes, task in plan:
        produced, spent = results[name] if task else (known_outcomes, [])
        outcomes += produced
        timings += spent
    if not any(totals(outcomes)[:2]):  # nothing passed or failed: no result
        outcomes.append(Outcome("ci", failed=1, note="no test or check ran"))
    # The results, printed whatever the log level; CI reads the last line.
    times = [f"time: {what}: {seconds:.0f} s" for what, seconds in timings]
    return report(outcomes, [*times, f"time: total: {time.monotonic() - start:.0f} s "
                                     f"({parallel} tasks at a time)"])
