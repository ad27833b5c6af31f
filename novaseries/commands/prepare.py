"""``novaseries prepare TARGET``: the target's tree (build/trees/TARGET by
default): the verified sdist extracted and committed as ``base``, then the
series applied with git am (:func:`novaseries.tree.prepare`)."""

from novaseries import tree as tree_mod
from novaseries.commands import common
from novaseries.util import say

HELP = "fetch, verify and extract the sdist, commit it as base, git am the series"


def add_arguments(parser, ctx):
    common.add(parser, common.TARGET,
               (("--upto",), dict(metavar="PATCH", help="apply the series up to this patch "
                                  "(file name, number like 0003, or unique substring)")),
               (("--dest",), dict(help="tree folder (default: build/trees/TARGET)")),
               (("--force",), dict(action="store_true", help="if the tree has commits not "
                                   "in the series, keep them on a backup branch and reset")))


def run(ctx, args):
    tree = tree_mod.prepare(ctx, common.target(ctx, args), args.dest, args.upto, args.force)
    say(f"tree ready: {tree}")
    return 0
