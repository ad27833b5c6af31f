"""Nova's targeted tests and flake8 on a tree, in each of the target's
modes, as a list of :class:`~novaseries.outcomes.Outcome` (for ``test``,
check-commits, ``ci``, ``mutate``); pike's driver end to end against
the pike-era Ironic on its unpatched and patched tree
(:func:`pike_driver_outcomes`).

The parts: the venvs (:mod:`novaseries.venvs`), what runs
(:mod:`novaseries.selecting`), one stestr run and its counts
(:mod:`novaseries.stestr_run`), flake8 (:mod:`novaseries.flake8_run`) and
the rest of the pep8 job (:mod:`novaseries.pep8job`), the cores' share
(:mod:`novaseries.cores`).
"""

import concurrent.futures
import pathlib
import re
import shutil
import time

from novaseries import cores, flake8_run, modes, pep8job, selecting, stestr_run, venvs
from novaseries import targets as targets_mod, tree as tree_mod
from novaseries.ironic import driver_runs, layout as ironic_layout, pike, run_env
from novaseries.outcomes import Outcome, cannot_run, missing_interpreter, unittest_outcome
from novaseries.util import say


def test_modes(ctx, target, tree, rev="HEAD", label=None, skip_unit="",
               functional_only=None, touched=None, flake8=True,
               functional_since=tree_mod.BASE_TAG):
    """:func:`test_tree` in each of the target's modes (its venv for the
    mode's interpreter made or reused first); flake8 runs once, in the
    first mode.  The modes run at the same time, each stestr with one
    worker per core it gets (:func:`~novaseries.cores.mode_concurrency`) and a repository of
    its own, so that one mode's test discovery and waits overlap the
    other's tests.  A mode whose own interpreter is missing is skipped
    with a warning (a failure under ``CI=true``); a missing target
    interpreter is an error.  ``functional_only``, ``touched``,
    ``functional_since``: see :func:`test_tree`; ``flake8``: false for no flake8 at all.
    Returns the Outcomes, in mode order."""
    label = label or f"{target.name}@{rev}"
    runs, outcomes = [], {}
    for number, moded in enumerate(venvs.mode_targets(target)):
        missing = venvs.mode_interpreter_missing(moded)
        if missing:
            outcomes[number] = [cannot_run(f"{label} [{moded.mode_name}]", missing,
                                           "mode not tested")]
            continue
        venv, _ = venvs.ensure_venv(ctx, moded)
        runs.append((number, moded, venv))
    concurrency = cores.mode_concurrency(len(runs))

    def one(number, moded, venv):
        outcomes[number] = test_tree(ctx, moded, tree, venv, rev=rev, label=label,
                                     skip_unit=skip_unit, flake8=flake8 and number == 0,
                                     concurrency=concurrency,
                                     functional_only=functional_only,
                                     functional_since=functional_since,
                                     touched=touched)
    if len(runs) > 1:
        with concurrent.futures.ThreadPoolExecutor(len(runs)) as pool:
            for future in [pool.submit(one, *args) for args in runs]:
                future.result()
    else:
        for args in runs:
            one(*args)
    shutil.rmtree(pathlib.Path(tree) / "instances", ignore_errors=True)
    return [o for number in sorted(outcomes) for o in outcomes[number]]


def test_tree(ctx, target, tree, venv, rev="HEAD", label=None, skip_unit="", flake8=True,
              concurrency=None, functional_only=None, touched=None,
              functional_since=tree_mod.BASE_TAG):
    """Run the unit selections, the touched functional modules (with the
    target's ``functional`` selections when ``functional_only`` is None:
    HEAD, check-commits' last commit;
    :func:`~novaseries.selecting.functional_selections`) and
    flake8 on ``tree`` (checked out at ``rev``); return a list of Outcomes.

    ``target`` may be in a mode (:meth:`~novaseries.target_model.Target.in_mode`):
    its env, the mode's suites and exclude lists, and ``[mode]`` in every
    name.  ``skip_unit``: a reason not to run the unit selections
    (check-commits passes one when the commit cannot change their result);
    ``flake8``: false to leave flake8 to another mode's run;
    ``concurrency``: stestr's workers (None: one per core);
    ``functional_only``: run only these of the touched functional modules
    (None: all of them); ``functional_since``: the touched functional
    modules are those of ``functional_since..rev`` (check-commits: the
    target's own commits, not those of the series it stacks on);
    ``touched``: see :func:`~novaseries.selecting.unit_filters` (without it, every unit
    selection runs: none at all is a failure)."""
    label = label or f"{target.name}@{rev}"
    mode = target.mode
    if mode is not None:
        label = f"{label} [{mode.name}]"
    suites = mode.suites if mode is not None else modes.TEST_SUITES
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", label)
    outdir = ctx.results(target.name) / safe
    outcomes = []
    start = time.monotonic()
    venvs.compile_tree(venv, tree)  # (every mode runs at least one suite)
    own = selecting.test_modules(tree, rev, "nova/tests")  # the series' own tests
    if "unit" not in suites:
        say(f"[{label}] unit: not run in this mode (targets.toml)")
    elif skip_unit:
        say(f"[{label}] unit: not re-run ({skip_unit})")
        outcomes.append(Outcome(f"{label} unit", note=f"not re-run: {skip_unit}"))
    elif not (filters := selecting.unit_filters(target, tree, rev, touched=touched)):
        # (stestr without filters would run every unit test)
        say(f"[{label}] unit: no unit selection targets this commit")
        # the whole series (no ``touched``) runs every selection: none
        # there is a failure
        outcomes.append(Outcome(f"{label} unit", failed=int(touched is None),
                                note="no unit selection targets it"))
    else:
        results, notes = {}, []
        # one run whose processes import only the tests' own modules, or
        # one per directory of the filters (a Python 2 venv)
        roots = selecting.test_roots(tree, filters)
        groups = ([(None, list(filters))] if stestr_run.uses_loader(venv, roots)
                  else selecting.unit_test_groups(tree, filters))
        for number, (test_path, group) in enumerate(groups):
            say(f"[{label}] unit: stestr run {' '.join(group)}")
            found, note = stestr_run.run_stestr(target, venv, tree, group, outdir,
                                                "unit" if number == 0 else f"unit-{number}",
                                                test_path=test_path,
                                                progress=f"{label} unit",
                                                exclude=mode and mode.unit_exclude,
                                                concurrency=concurrency, roots=roots)
            results.update(found)
            notes.append(note)
        note = "; ".join(n for n in notes if n)
        for pattern, group in stestr_run.split_by_filter(results, filters):
            name = pattern.replace("\\b", "").replace("\\", "") if pattern else "(other)"
            outcomes.append(stestr_run.count(f"{label} unit {name}", group, note, own))
        outcomes += filter(None, (stestr_run.stestr_failure(f"{label} unit stestr run", n)
                                  for n in notes))
    modules, selections = selecting.functional_selections(target, tree, rev, functional_only,
                                                          functional_since)
    if "functional" not in suites:
        say(f"[{label}] functional: not run in this mode (targets.toml)")
    elif modules or selections:
        say(f"[{label}] functional: {', '.join(selections + modules)}")
        # one run; each test counted under the first filter it matches: a
        # selection first (a class of a touched module counts as itself)
        filters = [re.escape(m) + r"\." for m in selections + modules]
        results, note = stestr_run.run_stestr(
            target, venv, tree, filters, outdir, "functional",
            test_path=selecting.FUNCTIONAL_PATH, progress=f"{label} functional",
            exclude=mode and mode.functional_exclude,
            concurrency=cores.functional_concurrency(mode, concurrency),
            roots=selecting.test_roots(tree, filters))
        for pattern, group in stestr_run.split_by_filter(results, filters):
            module = pattern[:-2].replace("\\", "") if pattern else "(other)"
            outcomes.append(stestr_run.count(f"{label} functional {module}", group, note, own))
        outcomes += filter(None, [stestr_run.stestr_failure(
            f"{label} functional stestr run", note)])
        if mode is None:
            shutil.rmtree(pathlib.Path(tree) / "instances", ignore_errors=True)
    elif functional_only is not None:
        say(f"[{label}] functional: no functional test module to run at this commit "
            "(its target's commits up to it touch none, or it touches none and its "
            "code is the previous commit's)")
    else:
        say(f"[{label}] functional: the series touches no functional test module "
            "and the target names no functional selection")
    if flake8:  # with the rest of the release's pep8 job (novaseries.pep8job)
        outcomes.append(flake8_run.run_flake8(venv, target, tree, rev, label, touched=touched))
        outcomes += pep8job.run(ctx, target, tree, venv, rev=rev, label=label, touched=touched)
    for outcome in outcomes:
        say("  " + outcome.line())
    say(f"[{label}] {time.monotonic() - start:.0f} s")
    return outcomes


def pike_driver_outcomes(ctx):
    """Pike's driver end to end against the pike-era Ironic
    (:func:`~novaseries.ironic.driver_runs.run_pike`) on the unpatched
    pike tree (the bug must show) and on the patched one; one Outcome per
    tree.

    Skipped like the pike target when Python 2.7 is missing (a failure
    under ``CI=true``); RabbitMQ missing is an error (``.ci/run`` installs
    it).
    """
    target = targets_mod.get(ctx, targets_mod.PIKE_TARGET)
    missing = missing_interpreter(target)
    if missing:
        return [missing]
    tree = tree_mod.prepare(ctx, target)
    venv, _ = venvs.ensure_venv(ctx, target)
    log_dir = ctx.results(ironic_layout.PIKE_RESULTS)
    outcomes = []
    with tree_mod.scratch_worktree(tree, tree_mod.BASE_TAG,
                                   ctx.tree("pike-unpatched")) as unpatched:
        results = driver_runs.run_pike(
            [("unpatched", unpatched, run_env.EXPECT_BUG),
             ("patched", tree, run_env.EXPECT_FIXED)],
            venvs.test_env(target, venv, tree), venv, build=ctx.build, log_dir=log_dir,
            root=ctx.root)
    for label, rc, log_path in results:
        what = ("the bug shown" if label == "unpatched" else "the fix")
        outcomes.append(unittest_outcome(
            f"pike {label} tree vs Ironic {pike.IRONIC_VERSION} end to end ({what})",
            log_path, rc)[1])
    return outcomes
