"""``novaseries run``: the main job (:mod:`novaseries.mainjob`): every
scenario on the reproducer and the fixed tree, the verdict table and the
JSON; or ``--list`` the scenarios, or ``--tree`` judge one tree; or
``--release pike`` pike's scenarios through nova 16.1.8's whole stack
against the pike-era Ironic (:mod:`novaseries.mainjob.pike_job`).

Options a variant would ignore are refused (HarnessError) before any tree
or Ironic is prepared.  ``--mode`` chooses among targets.toml ``[modes]``
(:func:`novaseries.modes.load_modes`); without it the job runs in the
default mode (:func:`novaseries.modes.default_modes`).
"""

import argparse

from novaseries import modes as modes_mod, targets as targets_mod
from novaseries.commands import common
from novaseries.ironic import service
from novaseries.mainjob import backends, job, pike_job, report
from novaseries.scenarios import bench_table, pike_table, scenario_table
from novaseries.util import HarnessError

HELP = ("the main job: every scenario on the reproducer and the fixed tree, verdict "
        "table + JSON")

EPILOG = "scenarios (novaseries/scenarios/scenario_table.py):\n" + "\n".join(
    f"  {sc.name:30} {sc.title}" for sc in scenario_table.SCENARIOS) + (
    "\n--release pike's (novaseries/scenarios/pike_table.py):\n") + "\n".join(
    f"  {sc.name:30} {sc.title}" for sc in pike_table.SCENARIOS)

#: ``--release``: the main job's release (nova 34.0.0), or pike.
RELEASES = ("master", "pike")


def bench_spec(spec):
    """argparse type of ``--bench``: ``N:S:K[:option=value,...]`` (see
    ``bench_table.parse``) or a suite name (``bench_table.BENCH_SUITES``)."""
    if spec in bench_table.BENCH_SUITES:
        return spec
    try:
        return bench_table.parse(spec).text
    except ValueError as e:
        raise argparse.ArgumentTypeError(
            f"{e}; or a suite: {', '.join(bench_table.BENCH_SUITES)}")


def chosen_modes(ctx, choice):
    """The modes of ``--mode CHOICE``: ``both``: every mode
    (:func:`~novaseries.commands.common.mode_names`); None:
    :func:`novaseries.modes.default_modes`."""
    if choice is None:
        return modes_mod.default_modes(ctx)
    return common.mode_names(ctx) if choice == "both" else (choice,)


def _mode_help(ctx):
    modes = modes_mod.load_modes(ctx)
    described = "; ".join(f"{name}: {modes[name].description}"
                          + (" (the default here)" if modes[name].default else "")
                          for name in common.mode_names(ctx))
    return (f"Nova's concurrency mode (targets.toml [modes]): {described}; or both "
            f"({', then '.join(common.mode_names(ctx))})")


#: The ``args`` attribute holding the options' defaults: ``{flag:
#: (dest, default)}``, in the parser's order (:func:`_given`).
_DEFAULTS = "run_defaults"


def add_arguments(parser, ctx):
    defaults = {}

    def option(*names, **kwargs):
        action = parser.add_argument(*names, **kwargs)
        defaults[action.option_strings[0]] = (action.dest, action.default)
    option("--target", default=targets_mod.DEFAULT_TARGET)
    option("--release", choices=RELEASES, default=RELEASES[0],
           help="master: the main job on nova 34.0.0 (default); pike: pike's "
           "scenarios through nova 16.1.8's whole stack against the pike-era "
           f"Ironic {pike_job.pike.IRONIC_VERSION} (Python 2.7, RabbitMQ), "
           "pristine and with patches/pike")
    option("--scenario", action="append", default=[], metavar="NAME",
           choices=sorted({*scenario_table.BY_NAME, *pike_table.BY_NAME}),
           help="only this scenario (repeatable; the names are listed below)")
    option("--list", action="store_true", help="list the scenarios with what "
           "each tree must show, and stop")
    option("--bench", action="append", default=[],
           metavar="N:S:K[:option=value,...]|SUITE", type=bench_spec,
           help="benchmark (repeatable): N concurrent builds on N+S nodes, "
           "K undeployed in wait call-back, Nova options "
           f"{', '.join(bench_table.OPTIONS)}; or a suite: "
           f"{', '.join(bench_table.BENCH_SUITES)} (doc/main-job.rst)")
    option("--bench-runs", type=common.positive, default=None, metavar="R",
           help=f"runs of each benchmark spec (default {job.BENCH_RUNS}; "
           "the report gives medians)")
    option("--json", help="where to write the JSON (default: "
           f"build/results/run/{backends.RUN_JSON}; with --ironic real "
           f"{backends.REAL_RUN_JSON}; with --tree {backends.TREE_JSON})")
    option("--ironic", choices=list(backends.BACKENDS), default=backends.FAKE,
           help="fake: the fake Ironic of the series (default); real: a real "
           f"Ironic {service.IRONIC_VERSION} on 127.0.0.1 per tree, through the "
           "whole Nova stack, for the scenarios it can play (--list says which)")
    option("--mode", choices=(*common.mode_names(ctx), "both"), default=None,
           help=_mode_help(ctx))
    option("--tree", help="instead: judge this Nova tree (with the series' "
           "fake Ironic) as a fixed tree")
    parser.set_defaults(**{_DEFAULTS: defaults})


def _given(args, flags):
    """Those of the options ``flags`` given other values than their
    defaults, in the parser's order."""
    return [flag for flag, (dest, default) in getattr(args, _DEFAULTS).items()
            if flag in flags and getattr(args, dest) != default]


def run(ctx, args):
    if args.release == "pike":
        given = _given(args, set(getattr(args, _DEFAULTS)) -
                       {"--release", "--scenario", "--json", "--list"})
        if given:
            raise HarnessError(f"--release pike plays pike's scenarios; it does "
                               f"not take {', '.join(given)}")
        if args.list:
            for line in report.scenario_list(pike_table.SCENARIOS):
                print(line, flush=True)
            return 0
        return pike_job.run(ctx, args.scenario, args.json)
    unknown = sorted(set(args.scenario) - set(scenario_table.BY_NAME))
    if unknown:
        raise HarnessError(f"no scenario {', '.join(unknown)} on master (pike's "
                           "are played with --release pike)")
    if args.list:
        given = _given(args, set(getattr(args, _DEFAULTS)) - {"--list"})
        if given:
            raise HarnessError(f"--list lists the scenarios; it does not take "
                               f"{', '.join(given)}")
        for line in report.scenario_list():
            print(line, flush=True)  # the result: whatever the log level
        return 0
    if args.tree:
        ignored = _given(args, ("--bench", "--bench-runs"))
        if _given(args, ("--ironic",)):  # (--tree plays on its default, the fake)
            ignored.append(f"--ironic {args.ironic}")
        if ignored:
            raise HarnessError(f"--tree judges one tree with the fake Ironic; "
                               f"it does not take {' or '.join(ignored)}")
        return job.play_tree(ctx, args.tree, args.target, args.scenario,
                             args.json, chosen_modes(ctx, args.mode))
    if args.bench_runs is not None and not args.bench:
        raise HarnessError("--bench-runs needs --bench")
    if args.bench and not backends.BACKENDS[args.ironic].bench:
        raise HarnessError("--bench runs on the fake Ironic; it does not "
                           f"take --ironic {args.ironic}")
    return job.run(ctx, args.target, args.scenario, args.bench, args.json,
                   args.ironic, args.bench_runs or job.BENCH_RUNS,
                   chosen_modes(ctx, args.mode))
