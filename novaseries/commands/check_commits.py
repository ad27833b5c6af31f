"""``novaseries check-commits TARGET``: lint every commit message of the
series and test every commit (:func:`novaseries.commit_checks.check_commits`);
prints the summary and ``N passed, N failed, N skipped``."""

from novaseries import commit_checks
from novaseries.commands import common
from novaseries.outcomes import report

HELP = "lint every commit message and test every commit of the series"


def add_arguments(parser, ctx):
    common.add(parser, common.TARGET, common.TREE, common.mode_spec(ctx),
               (("--lint-only",), dict(action="store_true", help="only lint the messages")))


def run(ctx, args):
    target = common.target(ctx, args).only_modes(args.mode)
    tree = args.tree or ctx.tree(target.name)
    return report(commit_checks.check_commits(ctx, target, tree,
                                              run_tests=not args.lint_only))
