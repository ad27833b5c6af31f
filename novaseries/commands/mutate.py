"""``novaseries mutate TARGET``: the functional tests of the series against a
mutated copy of the tree (:mod:`novaseries.mutations`).

The mutation is applied, uncommitted, in a scratch worktree of the target's
tree at HEAD (the tree itself is not touched); then every functional test
module the series touches runs there, in each of the target's modes (or the
``--mode`` given), as ``test`` runs it, without the unit selections, the
target's ``functional`` selections and flake8.  Prints where the mutation
went, the summary and ``N passed, N failed, N skipped``; the exit status is
1 if a test failed.  For ``extra-read`` (issue 39's yardstick) a failure
names a test that depends on how many times the driver reads Ironic."""

import dataclasses

from novaseries import mutations, runner
from novaseries import tree as tree_mod
from novaseries.commands import common
from novaseries.util import HarnessError, say

HELP = "run the series' functional tests against a mutated tree (issue 39's yardstick)"
EPILOG = "mutations:\n" + "\n".join(f"  {m.name}: {m.description}"
                                    for m in mutations.MUTATIONS.values())


def add_arguments(parser, ctx):
    common.add(parser, common.TARGET, common.TREE, common.mode_spec(ctx),
               (("--mutation",), dict(default="extra-read", choices=sorted(mutations.MUTATIONS),
                                      help="which mutation (default: extra-read)")))


def functional_only(target):
    """``target`` running only the functional modules its series touches:
    in each mode the ``functional`` suite alone (where the mode runs it)
    and no ``functional`` selections.

    :raises HarnessError: none of the target's modes runs functional tests.
    """
    modes = {name: dataclasses.replace(mode, suites=("functional",), ci_suites=None,
                                       functional=None)
             for name, mode in target.modes.items() if "functional" in mode.suites}
    if target.modes and not modes:
        raise HarnessError(f"target {target.name}: none of its modes "
                           f"({', '.join(target.modes)}) runs functional tests")
    return dataclasses.replace(target, modes=modes, functional=[])


def run(ctx, args):
    mutation = mutations.get(args.mutation)
    target = functional_only(common.target(ctx, args).only_modes(args.mode))
    tree = args.tree or ctx.tree(target.name)
    tree_mod.check_tree(tree)
    with tree_mod.scratch_worktree(tree, "HEAD") as work:
        for name, line in mutations.apply(work, mutation):
            say(f"mutation {mutation.name}: {mutation.path}:{line} ({name})")
        if not runner.functional_modules(work):
            raise HarnessError(f"target {target.name}: the series touches no functional "
                               "test module")
        outcomes = runner.test_modes(ctx, target, work, label=f"{target.name} "
                                     f"mutated {mutation.name}", flake8=False)
    return common.report(outcomes)
