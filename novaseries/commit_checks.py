"""``check-commits``: every commit of the series must stand on its own.

For each commit of ``base..HEAD`` (oldest first; for a target stacked on
another folder's series, its own commits only) the commit message is
linted (:mod:`novaseries.lint`), then the commit is checked out in a
separate detached worktree (``build/check/TARGET``; the user's tree is not
touched) and the targeted tests and flake8 run there, in each of the
target's concurrency modes (:func:`testrun.test_modes`).
Before the last commit, a commit runs the unit selections of the code it
touches and every functional test module of the target's own commits
present at that commit (as Nova's gate runs every test at every change: a
commit that breaks an earlier commit's test fails there, not only at the
end), and the unit selections are not re-run at a commit that only
touches paths no unit test can see (:data:`selecting.UNIT_IRRELEVANT`).
A commit (but the first and the last) that touches only functional test
modules, docs and release notes (:func:`selecting.tests_only`: a
reproducer on its own), none of them a module other tests import
(:func:`selecting.imported_elsewhere`), runs only the functional modules it touches: its
code and every other test are the previous commit's, which ran them in
the same modes.  The
last commit's run is that of ``novaseries test`` at HEAD: every unit
selection of the target (whatever the series touches: one that selects
nothing fails), every functional module of the target's own commits and
the target's ``functional`` selections (the commits before the last do
not run those).  A target stacked on another folder's series (``below``)
leaves that series' functional modules to the target that owns it and to
the combined target that runs them all on the whole stack (``-all``).
"""

from novaseries import lint, selecting, testrun
from novaseries import tree as tree_mod
from novaseries.outcomes import Outcome
from novaseries.util import LOG, git, say


def lint_commits(tree, commits):
    """Lint each commit message; return Outcomes (one check per commit)."""
    messages = [(c, git(tree, "log", "-1", "--format=%B", c)) for c in commits]
    outcomes = []
    for commit, (errors, warnings) in lint.lint_series(messages).items():
        subject = git(tree, "log", "-1", "--format=%s", commit)
        name = f"commit-msg {commit[:12]} {subject}"
        for warning in warnings:
            LOG.warning(f"  warning: {commit[:12]}: {warning}")
        for error in errors:
            LOG.error(f"  error: {commit[:12]}: {error}")
        outcomes.append(Outcome(name, passed=0 if errors else 1,
                                failed=1 if errors else 0,
                                note="; ".join(errors)))
    return outcomes


def check_commits(ctx, target, tree, run_tests=True, before_last=None):
    """Lint every commit message and (unless ``run_tests`` is false) test every
    commit in a scratch worktree: the commits before the last in
    ``before_last``'s modes (a Target; default: ``target`` in the modes of
    its ``commit_modes`` it runs, every mode when none is left), the last
    one in every mode of ``target``.  Returns a list of Outcomes."""
    tree_mod.check_tree(tree)
    # The commits of the series a target stacks on (``below``) are checked
    # by the target that owns them.
    commits = tree_mod.series_commits(tree)[len(target.below_series()):]
    if not commits:
        return [Outcome(f"{target.name} check-commits", failed=1,
                        note=f"{tree} has no commits since base")]
    if tree_mod.status(tree):
        LOG.warning(f"warning: {tree} has uncommitted changes; only commits are checked")
    say(f"check-commits: {len(commits)} commits in {tree}")
    outcomes = lint_commits(tree, commits)
    if not run_tests:
        return outcomes
    since = f"{commits[0]}~1"  # the target's own commits: since..commit
    with tree_mod.scratch_worktree(tree, commits[0],
                                   path=ctx.build / "check" / target.name) as work:
        for number, commit in enumerate(commits, start=1):
            git(work, "checkout", "-q", "--detach", commit)
            subject = git(work, "log", "-1", "--format=%s")
            label = f"{target.name} {number}/{len(commits)} {commit[:7]}"
            say(f"=== {label} {subject}")
            skip, only, touched = "", None, None
            files = git(work, "diff", "--name-only", f"{commit}~1", commit).split("\n")
            if 1 < number < len(commits) and not selecting.unit_relevant(files):
                skip = "this commit only touches functional tests, docs or release notes"
            if number < len(commits):
                # before the last commit: every functional module of the
                # target's commits up to this one (no functional
                # selection), the unit selections of what it touches
                only = selecting.functional_modules(work, commit, since)
                touched = files
            if skip and selecting.tests_only(files) and \
                    not selecting.imported_elsewhere(work, commit, files):
                # code and the other tests as at the commit before, which
                # ran them in these modes: only the modules it touches
                only = selecting.functional_modules(work, commit, f"{commit}~1")
            # every mode at the last commit; before it, before_last's (the
            # target's commit_modes, all if it names none)
            if number == len(commits):
                moded = target
            else:
                moded = before_last or target.commit_target()
            outcomes += testrun.test_modes(ctx, moded, work, rev=commit, label=label,
                                           skip_unit=skip, functional_only=only,
                                           touched=touched, functional_since=since)
    return outcomes
