"""``novaseries mutate TARGET``: the functional tests of the series against a
mutated copy of the tree (:mod:`novaseries.mutations`).

The mutation is applied, uncommitted, in a scratch worktree of the target's
tree at HEAD (the tree itself is not touched); then every functional test
module the series touches runs there, in each of the target's modes (or
those ``--mode`` names; a mode that runs no functional tests is refused),
as ``test`` runs it, without the unit selections, the target's
``functional`` selections and flake8.  One ``mutate`` of a target at a
time: a second waits for the first (they would share the results
folder's stestr repositories).  Prints where the mutation went, the
summary and ``N passed, N failed, N skipped``; the exit status is 1 if a
test failed.  For ``extra-read`` (the default) a failure names a
test that depends on how many times the driver reads Ironic."""

import dataclasses

from novaseries import mutations, selecting, testrun
from novaseries import tree as tree_mod
from novaseries.commands import common
from novaseries.outcomes import report
from novaseries.util import HarnessError, file_lock, say

HELP = ("run the series' functional tests against a mutated tree: which tests depend "
        "on how many times the driver reads Ironic")
EPILOG = "mutations:\n" + "\n".join(f"  {m.name}: {m.description}"
                                    for m in mutations.MUTATIONS.values())


def add_arguments(parser, ctx):
    common.add(parser, common.TARGET, common.TREE, common.mode_spec(ctx),
               (("--mutation",), dict(default="extra-read", choices=sorted(mutations.MUTATIONS),
                                      help="which mutation (default: %(default)s)")))


def functional_suite_only(target):
    """``target`` running only the functional modules its series touches:
    in each mode the ``functional`` suite alone and no ``functional``
    selections.

    :raises HarnessError: the target has no concurrency modes (its runs
        would hold the unit selections too), or one of its modes does not
        run functional tests (pass ``--mode`` for the others).
    """
    if not target.modes:
        raise HarnessError(f"target {target.name} has no concurrency modes: mutate runs "
                           "functional tests per mode")
    unit_only = [name for name, mode in target.modes.items() if "functional" not in mode.suites]
    if unit_only:
        raise HarnessError(f"target {target.name}: mode {', '.join(unit_only)} runs no "
                           "functional tests (choose the others with --mode)")
    modes = {name: dataclasses.replace(mode, suites=("functional",), ci_suites=None,
                                       functional=None)
             for name, mode in target.modes.items()}
    return dataclasses.replace(target, modes=modes, functional=[])


def run(ctx, args):
    mutation = mutations.get(args.mutation)
    target = functional_suite_only(common.target(ctx, args).only_modes(args.mode))
    tree = args.tree or ctx.tree(target.name)
    tree_mod.check_tree(tree)
    if not selecting.functional_modules(tree):
        raise HarnessError(f"target {target.name}: the series touches no functional "
                           "test module")
    with file_lock(ctx.results(target.name) / "mutate.lock", f"mutate {target.name}"), \
            tree_mod.scratch_worktree(tree, "HEAD") as work:
        for name, line in mutations.apply(work, mutation):
            say(f"mutation {mutation.name}: {mutation.path}:{line} ({name})")
        outcomes = testrun.test_modes(ctx, target, work, label=f"{target.name} "
                                      f"mutated {mutation.name}", flake8=False)
    return report(outcomes)
