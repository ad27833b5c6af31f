"""``novaseries ci``: the one test command (:func:`novaseries.ci.ci`):
the harness's tests, each enabled target, the steps of
:func:`novaseries.cisteps.steps`; ends with ``N passed, N failed, N
skipped``."""

from novaseries import ci
from novaseries.commands import common

HELP = ("the test command: harness tests, prepare + check-commits/test of each "
        "enabled target, the steps after them; prints N passed, N failed")


def add_arguments(parser, ctx):
    common.add(parser,
               (("--target",), dict(action="append", dest="targets", metavar="TARGET",
                                    help="only these targets (default: all enabled)")),
               (("--no-self-tests",), dict(action="store_true",
                                           help="skip the harness's own tests")),
               (("--jobs",), dict(type=common.positive, metavar="N",
                                  help="targets and steps run at once (default: "
                                  f"{ci.DEFAULT_PARALLEL} with {ci.DEFAULT_PARALLEL} "
                                  "cores or more, else 1)")))


def run(ctx, args):
    return ci.ci(ctx, args.targets, self_test=not args.no_self_tests,
                 parallel=args.jobs)
