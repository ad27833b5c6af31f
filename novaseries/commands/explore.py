"""``novaseries explore``: the explorer (:mod:`novaseries.explorer`):
cases generated from seeds, played through Nova's whole stack with the
fake Ironic on the fixed tree (the packaged stack, as the main job's),
each judged by the rules every case must keep
(``scenarios/universal.py``); a failure is shrunk to a minimal case and
printed with the command that replays it.  ``--replay`` plays one case.
Exit status 1 if a rule broke (but for ``explorer.job.EXPECTED``'s).

Hypothesis is the ``explore`` extra of pyproject.toml (``pip install -e
'.[explore]'``); the command says so when it is missing.
"""

import json

from novaseries import mutations, targets as targets_mod
from novaseries.commands import common
from novaseries.commands.run import chosen_modes
from novaseries.explorer import job
from novaseries.util import HarnessError

HELP = ("the explorer: generated schedules of operator, user and API events "
        "through Nova's whole stack, judged by the rules every case keeps")


def add_arguments(parser, ctx):
    parser.add_argument("--target", default=targets_mod.DEFAULT_TARGET,
                        help="whose release's packaged stack to explore "
                        "(default: %(default)s)")
    parser.add_argument("--seed", type=int, action="append", default=[],
                        help="a seed (repeatable; default: 1)")
    parser.add_argument("--cases", type=common.positive, default=30,
                        help="cases generated per seed and mode (default: "
                        "%(default)s); shrinking a failure plays more")
    parser.add_argument("--shrink-cases", type=common.not_negative, default=None,
                        metavar="N",
                        help="cases shrinking may play per seed (default: "
                        "explorer.search.SHRINK_CASES)")
    parser.add_argument("--mode", choices=(*common.mode_names(ctx), "both"),
                        default=None, help="Nova's concurrency mode, or both "
                        "(default: the default mode)")
    parser.add_argument("--mutation", choices=sorted(mutations.MUTATIONS),
                        help="explore a copy of the tree with this mutation "
                        "(novaseries mutate --help lists them)")
    parser.add_argument("--replay", metavar="CASE_JSON",
                        help="instead: play this case (as a failure prints "
                        "it) once and judge it")
    parser.add_argument("--json", help="where to write the run's JSON "
                        "(default: build/explore/explore.json)")


def run(ctx, args):
    modes = chosen_modes(ctx, args.mode)
    if args.replay:
        if args.seed or len(modes) > 1:
            raise HarnessError("--replay plays one case in one mode; it takes "
                               "no --seed nor --mode both")
        try:
            case = json.loads(args.replay)
        except ValueError as e:
            raise HarnessError(f"--replay: not JSON: {e}") from None
        if not isinstance(case, dict):
            raise HarnessError("--replay: not a JSON object")
        return 1 if job.replay(ctx, args.target, case, modes[0], args.mutation) else 0
    shrink = (job.search_mod.SHRINK_CASES if args.shrink_cases is None
              else args.shrink_cases)
    failures, _ = job.explore(ctx, args.target, args.seed or [1], args.cases,
                              modes, args.mutation, shrink, args.json)
    return 1 if job.unexpected(failures) else 0
