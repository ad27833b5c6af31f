"""``novaseries test TARGET``: the target's unit selections, the functional
test modules the series touches with the target's functional selections,
and flake8, at the tree's HEAD, in each of
the target's concurrency modes (:func:`novaseries.testrun.test_modes`);
prints the summary and ``N passed, N failed, N skipped``."""

from novaseries import testrun
from novaseries import tree as tree_mod
from novaseries.commands import common
from novaseries.outcomes import report

HELP = "run the unit selections, touched functional modules and flake8 at HEAD"


def add_arguments(parser, ctx):
    common.add(parser, common.TARGET, common.TREE, common.mode_spec(ctx))


def run(ctx, args):
    target = common.target(ctx, args).only_modes(args.mode)
    tree = args.tree or ctx.tree(target.name)
    tree_mod.check_tree(tree)
    return report(testrun.test_modes(ctx, target, tree))
