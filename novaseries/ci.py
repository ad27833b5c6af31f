"""``ci``: the one test command (README, tox -e ci, .ci/run).

Steps: the harness's own tests (in-process unittest), then for each enabled
target: prepare its tree, then check-commits (targets with
``check_commits = true``) or test at HEAD; then every step registered in
:data:`EXTRA_STEPS` (e.g. the scenario job).  Ends with the line
``N passed, N failed, N skipped`` (real totals) and returns non-zero if
anything failed.
"""

import sys
import time
import traceback
import unittest

from novaseries import checks, runner, targets as targets_mod
from novaseries import tree as tree_mod
from novaseries.util import LOG, HarnessError, find_interpreter, say

#: Later jobs register themselves here: ``name -> callable(ctx) -> [Outcome]``.
EXTRA_STEPS = {}

#: Plugin modules that failed to import (``module -> reason``), filled by
#: :func:`novaseries.cli.load_plugins`: each is a failure of ``ci``, since
#: the steps it would have registered did not run.
PLUGIN_ERRORS = {}


def register_step(name, func, targets=None):
    """Add a ci step (run after the targets, in registration order).

    :param targets: names of the targets the step is about; it is skipped
        when the project lacks one of them, or when ``ci --target`` names
        none of them.
    """
    if targets:
        func.targets = tuple(targets)
    EXTRA_STEPS[name] = func


def self_tests(ctx):
    """Run ``tests/`` with unittest in this process; return one Outcome."""
    start_dir = ctx.root / "tests"
    loader = unittest.TestLoader()
    sys.path.insert(0, str(ctx.root))
    try:
        suite = loader.discover(str(start_dir), top_level_dir=str(ctx.root))
    finally:
        sys.path.remove(str(ctx.root))
    result = unittest.TextTestRunner(stream=sys.stdout, verbosity=1).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    skipped = len(result.skipped)
    outcome = runner.Outcome("harness tests (tests/)", passed=result.testsRun - failed - skipped,
                             failed=failed, skipped=skipped)
    if result.testsRun == 0:
        outcome.failed += 1
        outcome.note = "ran no tests"
    return outcome


def target_job(ctx, target, timings):
    """Prepare ``target``'s tree, then check-commits or test (in each of
    the target's modes); return Outcomes.  Appends ``(what, seconds)`` for
    prepare, venv installs and tests."""
    _, problem = target.series_status()
    if problem:
        raise HarnessError(problem)
    t0 = time.monotonic()
    tree = tree_mod.prepare(ctx, target)
    timings.append((f"{target.name} prepare (download, extract, git am)", time.monotonic() - t0))
    t0 = time.monotonic()
    for moded in runner.modes(target):
        if not runner.mode_interpreter_missing(moded):  # else test_modes says so
            runner.ensure_venv(ctx, moded)
    timings.append((f"{target.name} venv install ({', '.join(target.modes) or 'no mode'})",
                    time.monotonic() - t0))
    t0 = time.monotonic()
    try:
        if target.check_commits:
            return checks.check_commits(ctx, target, tree)
        return runner.test_modes(ctx, target, tree)
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
    return runner.Outcome(name, failed=1, note=f"error: {exc}")


def _missing_interpreter(target):
    """An Outcome when ``target``'s interpreter is missing and the target
    allows that (``optional_interpreter``), else None.

    Outside CI the target is skipped with a message; under ``CI=true`` (the
    CI machine image has every interpreter) it is a failure.
    """
    if not target.optional_interpreter:
        return None
    try:
        find_interpreter(target.interpreter)
    except HarnessError as exc:
        return runner.cannot_run(f"{target.name}: {target.interpreter} missing",
                                 f"{exc}: target {target.name}", "target not tested")
    return None


def ci(ctx, names=None, self_test=True):
    """Run everything; print the summary; return the exit status.

    The harness's own tests (unless ``self_test`` is false), then each
    enabled target (or the ``names`` given): prepare, then check-commits
    or test; then each step of :data:`EXTRA_STEPS` whose targets the run
    covers.  Failures: a failed test or check, a target or step that
    raises (or exits), a step that returns no Outcome, a plugin that did
    not load (:data:`PLUGIN_ERRORS`).  A step whose targets are not in
    targets.toml counts as skipped (a failure under ``CI=true``).  Prints
    the summary, the times and, last, ``N passed, N failed, N skipped``.

    :returns: 1 if anything failed, else 0.
    """
    start = time.monotonic()
    outcomes, timings = [], []
    if self_test:
        say("=== harness tests")
        t0 = time.monotonic()
        outcomes.append(self_tests(ctx))
        timings.append(("harness tests", time.monotonic() - t0))
    known = targets_mod.load(ctx)
    for name in names or known:
        if name not in known:
            raise HarnessError(f"unknown target {name!r} (known: {', '.join(known)})")
        target = known[name]
        if not names and not target.enabled:
            say(f"=== {name}: not enabled ({target.note or 'see targets/targets.toml'}), skipped")
            continue
        say(f"=== {name}: nova {target.version}")
        skipped = _missing_interpreter(target)
        if skipped:
            outcomes.append(skipped)
            continue
        try:
            outcomes += target_job(ctx, target, timings)
        except Exception as exc:  # report, count, go on with the next step
            outcomes.append(_failure(name, exc))
    for module, reason in PLUGIN_ERRORS.items():
        LOG.error(f"error: {reason}: its ci steps cannot run")
        outcomes.append(runner.Outcome(f"plugin {module}", failed=1,
                                       note=f"error: {reason}"))
    for step, func in EXTRA_STEPS.items():
        needs = getattr(func, "targets", None)
        if needs and names and not set(needs) & set(names):
            continue  # ``ci --target`` chose other targets
        if needs and not set(needs) <= set(known):
            missing = ', '.join(sorted(set(needs) - set(known)))
            outcomes.append(runner.cannot_run(
                step, f"step {step}: targets.toml has no {missing}", f"no target {missing}"))
            continue
        say(f"=== {step}")
        t0 = time.monotonic()
        try:
            produced = func(ctx)
            if not produced:
                raise HarnessError(f"step {step} produced no result")
            outcomes += produced
        except (Exception, SystemExit) as exc:  # report, count, go on
            outcomes.append(_failure(step, exc))
        timings.append((step, time.monotonic() - t0))
    # The results, printed whatever the log level.
    print("\n=== summary")
    for outcome in outcomes:
        print(outcome.line())
    for what, seconds in timings:
        print(f"time: {what}: {seconds:.0f} s")
    print(f"time: total: {time.monotonic() - start:.0f} s")
    # CI reads this last line.
    print(runner.totals_line(outcomes), flush=True)
    return 1 if runner.totals(outcomes)[1] else 0
