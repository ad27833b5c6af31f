"""``novaseries ironic ACTION``: the real Ironics of the tests, by hand::

    novaseries ironic install [--pike]        # build/venvs/ironic (pins/ironic.txt) or
                                              # ironic-pike (pins/ironic-pike.txt)
    novaseries ironic start [--pike] [--port P] [--fake-delays N]
                                              # start one, print its URLs, stop on Enter/SIGTERM
    novaseries ironic sweep                   # kill what killed test runs left behind
    novaseries ironic driver-tests [--tree T] [--nova-venv V] [-k PATTERN]
                                   [--expect auto|fixed|bug] [--mode MODE]
                                              # Nova's ironic driver against the Ironic of
                                              # pins/ironic.txt:
                                              # contract + end-to-end tests
                                              # (novaseries/nova_side/driver_tests)
    novaseries ironic driver-tests --pike     # pike's driver against the pike-era Ironic, on the
                                              # unpatched and the patched pike tree
    novaseries ironic hang-probe [--tree T] [--nova-venv V] [--mode MODE] [--timeout T]
                                 [--retries N] [--unset-for S]
                                              # a hung Bare Metal API and [ironic] timeout
                                              # (novaseries/ironic/hang_probe_run.py)

Both run, unless told, on the tree ci's real-Ironic step tests: the
packaged stack of :data:`~novaseries.targets.DEFAULT_TARGET`'s release
(:func:`novaseries.targets.default_stack_in_mode`, master-all), in its
venv and the environment of its mode.

Each action takes only its own options (argparse refuses the others);
``driver-tests --pike`` takes none of driver-tests' other options and
``start --pike`` no ``--fake-delays`` (HarnessError).  ``driver-tests
--mode`` is one of targets.toml ``[modes]`` (default: its default mode,
:func:`novaseries.modes.default_modes`).  The main CLI's
``--build-dir`` says where venvs and run directories go.  A
RealIronicError (venv, RabbitMQ or Ironic could not be set up) is a
HarnessError (one line, exit 1).
"""

import argparse
import contextlib
import os
import signal
import sys

from novaseries.ironic import (driver_runs, hang_probe_run, layout as ironic_layout, pike,
                               service)
from novaseries.ironic import run_env, venv_setup
from novaseries import modes as modes_mod, outcomes as outcomes_mod, targets as targets_mod
from novaseries import testrun, venvs
from novaseries.commands import common
from novaseries.util import HarnessError, say

#: The ``args`` attribute holding driver-tests' options that ``driver-tests
#: --pike`` does not take, as ``{dest: (flag, default)}`` (``--pike``
#: refuses a value other than the default).
_NOT_PIKE = "not_pike_options"
#: The default Nova tree and venv of driver-tests and hang-probe.
_TREE_DEFAULT = (f"(default: $REALIRONIC_NOVA_TREE, else the tree of target "
                 f"{targets_mod.DEFAULT_TARGET}'s packaged stack, which ci's real-Ironic "
                 "step tests; `novaseries prepare` it first)")
_VENV_HELP = ("Nova's test venv (default: $REALIRONIC_NOVA_VENV, else the venv of the "
              "default tree's target)")


def _pike(parser):
    parser.add_argument("--pike", action="store_true", help="the pike-era Ironic "
                        f"{pike.IRONIC_VERSION} (Python 2.7, RabbitMQ) instead of "
                        f"{service.IRONIC_VERSION}")


def add_arguments(parser, ctx):
    sub = parser.add_subparsers(dest="action", title="actions", required=True)
    parsers = {name: sub.add_parser(name, help=text) for name, (_, text) in _ACTIONS.items()}
    _pike(parsers["install"])
    start = parsers["start"]
    _pike(start)
    start.add_argument("--port", type=int, help="the API port (default: a free one)")
    start.add_argument("--fake-delays", type=int, default=0, metavar="SECONDS",
                       help="[fake] power_delay/boot_delay")
    tests = parsers["driver-tests"]
    _pike(tests)
    not_pike = [
        tests.add_argument("--tree", help="a Nova tree with the series " + _TREE_DEFAULT),
        tests.add_argument("--nova-venv", help=_VENV_HELP),
        tests.add_argument("-k", dest="pattern", help="only tests matching this"),
        tests.add_argument("--expect", choices=run_env.EXPECTATIONS, default=run_env.EXPECT_AUTO,
                           help="what spawn() must raise in the end-to-end tests "
                           "(default: detected from the tree)"),
        _mode(tests, ctx)]
    tests.set_defaults(**{_NOT_PIKE: {a.dest: (a.option_strings[0], a.default)
                                      for a in not_pike}})
    probe = parsers["hang-probe"]
    probe.add_argument("--tree", help="a Nova tree " + _TREE_DEFAULT)
    probe.add_argument("--nova-venv", help=_VENV_HELP)
    probe.add_argument("--timeout", type=_seconds, default=hang_probe_run.TIMEOUT,
                       metavar="SECONDS",
                       help="[ironic] timeout of the timed cases (default %(default)s)")
    probe.add_argument("--retries", type=int, default=hang_probe_run.RETRIES,
                       choices=range(0, 6), metavar="N",
                       help="[ironic] connect_retries and status_code_retries of the "
                       "second timed case (default %(default)s; 0: no second case)")
    probe.add_argument("--unset-for", type=float, default=hang_probe_run.UNSET_FOR,
                       metavar="SECONDS",
                       help="without [ironic] timeout, check that the read still waits "
                       "after this long (default %(default)s; 0: not checked; 300 for "
                       "the doc)")
    _mode(probe, ctx)


def _seconds(text):
    """argparse type: a number of seconds above 0."""
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"{text}: not above 0")
    return value


def _mode(parser, ctx):
    """Add ``--mode`` to ``parser``; return its argparse action."""
    modes = modes_mod.load_modes(ctx)
    default = next(iter(modes_mod.default_modes(ctx)), None)
    return parser.add_argument(
        "--mode", choices=common.mode_names(ctx), default=default,
        help="Nova's concurrency mode (targets.toml [modes]; "
        f"default {default}: {modes[default].description})"
        if default else "Nova's concurrency mode (targets.toml [modes])")


def _refuse_pike_options(args):
    """HarnessError for the options ``--pike`` does not go with."""
    if not getattr(args, "pike", False):
        return
    unused = []
    if args.action == "driver-tests":
        unused = [flag for dest, (flag, default) in getattr(args, _NOT_PIKE).items()
                  if getattr(args, dest) != default]
    if args.action == "start" and args.fake_delays:
        unused.append("--fake-delays (the pike-era Ironic has none)")
    if unused:
        raise HarnessError(f"ironic {args.action} --pike does not take {', '.join(unused)}")


def _install(ctx, args):
    venv = (pike.ensure_venv(ctx.build, ctx.root) if args.pike
            else venv_setup.ensure_venv(ctx.build, ctx.root))
    print(f"ironic venv: {venv}")
    return 0


def _start(ctx, args):
    if args.pike:
        ironic = pike.PikeIronic(pike.ensure_venv(ctx.build, ctx.root),
                                 ironic_layout.workdir(ctx.build), port=args.port,
                                 log=say)
    else:
        ironic = service.RealIronic(venv_setup.ensure_venv(ctx.build, ctx.root),
                                    ironic_layout.workdir(ctx.build), port=args.port,
                                    fake_delays=args.fake_delays, log=say)
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))
    with ironic:
        lines = [f"url={ironic.url}", f"image_url={ironic.image_url}",
                 f"image_sha256={ironic.image_sha256}"]
        if args.pike:
            lines += [f"image_md5={ironic.image_md5}", f"neutron={ironic.neutron.url}"]
        print("\n".join(lines + [f"log={ironic.log_path}", "press Enter to stop"]),
              flush=True)
        with contextlib.suppress(KeyboardInterrupt, EOFError):
            input()
    return 0


def _sweep(ctx, args):
    n = service.sweep(ironic_layout.workdir(ctx.build), log=say)
    print(f"{n} leftover process group(s) killed")
    return 0


def _nova_tree_env(ctx, args):
    """``(tree, Nova's test environment, venv)`` of driver-tests and
    hang-probe: ``--tree``, ``--nova-venv`` or their variables, else those
    of :func:`~novaseries.targets.default_stack_in_mode` in ``--mode``, and
    that target's test environment in ``--mode``
    (:func:`novaseries.venvs.test_env`), as ci's step.

    :raises HarnessError: the tree is not a Nova tree, or no such target.
    """
    def nova_tree(tree, name):
        if not (os.path.isdir(os.path.join(tree, "nova"))):
            raise HarnessError(f"{tree} is not a Nova tree (--tree, $REALIRONIC_NOVA_TREE, "
                               f"or `novaseries prepare {name}` first)")
        return tree

    given = args.tree or os.environ.get("REALIRONIC_NOVA_TREE")
    name = targets_mod.default_stack_name(ctx)
    tree = nova_tree(given, name) if given else None
    target = targets_mod.default_stack_in_mode(ctx, args.mode)
    tree = tree or nova_tree(ctx.tree(name), name)
    venv = os.path.abspath(args.nova_venv or os.environ.get("REALIRONIC_NOVA_VENV")
                           or ctx.venv(target.venv_name))
    return tree, venvs.test_env(target, venv, tree), venv


def _driver_tests(ctx, args):
    if args.pike:
        outcomes = testrun.pike_driver_outcomes(ctx)
        return outcomes_mod.report(outcomes) if outcomes else 1
    tree, env, venv = _nova_tree_env(ctx, args)
    return driver_runs.run(tree, env, venv, build=ctx.build, pattern=args.pattern,
                           expect=args.expect, root=ctx.root)


def _hang_probe(ctx, args):
    tree, env, venv = _nova_tree_env(ctx, args)
    return hang_probe_run.run(tree, env, venv, args.timeout, retries=args.retries,
                              unset_for=args.unset_for, build=ctx.build, root=ctx.root)


#: The actions, in the order of the help: ``name: (func(ctx, args) -> exit
#: status, its help)``.
_ACTIONS = {
    "install": (_install, "install the Ironic's pinned venv, print its path"),
    "start": (_start, "start an Ironic on 127.0.0.1, print its URLs, stop on Enter or SIGTERM"),
    "sweep": (_sweep, "kill the Ironics and image servers that killed test runs left behind"),
    "driver-tests": (_driver_tests, "Nova's ironic driver tests (contract, end to end; "
                     "novaseries/nova_side/driver_tests) in Nova's venv against a real Ironic"),
    "hang-probe": (_hang_probe, "a read of Nova's ironic driver against a real Ironic behind "
                   "a proxy that never answers, with [ironic] timeout set and unset "
                   "(doc/operators.rst)"),
}

HELP = f"the real Ironics of the tests: {', '.join(_ACTIONS)} (see doc/real-ironic.rst)"


def run(ctx, args):
    """Run ``args.action``; returns the exit status (driver-tests: the test
    run's)."""
    _refuse_pike_options(args)
    try:
        return _ACTIONS[args.action][0](ctx, args)
    except service.RealIronicError as exc:
        raise HarnessError(str(exc)) from None
