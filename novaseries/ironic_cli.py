"""``novaseries ironic ...``: the real Ironics of the tests, by hand.

A plugin of the CLI (:data:`novaseries.cli.PLUGINS`)::

    novaseries ironic install [--pike]        # build/venvs/ironic (39.0.0) or ironic-pike (9.1.7)
    novaseries ironic start [--pike] [--port P] [--fake-delays N]
                                              # start one, print its URLs, stop on Enter/SIGTERM
    novaseries ironic sweep                   # kill what killed test runs left behind
    novaseries ironic selftest [--tree T] [--nova-venv V] [-k PATTERN] [--expect auto|fixed|bug]
                               [--mode threading|eventlet]
                                              # contract + end-to-end tests
                                              # (novaseries/ironic/driver_tests)
    novaseries ironic selftest --pike         # pike's driver against Ironic 9.1.7, on the
                                              # unpatched and the patched pike tree

The main CLI's ``--build-dir`` says where venvs and run directories go.
An option that the action does not take is refused.
"""

import contextlib
import os
import signal
import sys

from novaseries import cli
from novaseries import targets as targets_mod
from novaseries.ironic import pike, selftest, service
from novaseries.util import HarnessError, say

ACTIONS = ("install", "start", "sweep", "selftest")

#: Which options each action takes (argparse dest -> actions).
_TAKES = {
    "pike": {"install", "start", "selftest"},
    "port": {"start"},
    "fake_delays": {"start"},
    "tree": {"selftest"},
    "nova_venv": {"selftest"},
    "pattern": {"selftest"},
    "expect": {"selftest"},
    "mode": {"selftest"},
}
_DEFAULTS = {"pike": False, "port": None, "fake_delays": 0, "tree": None,
             "nova_venv": None, "pattern": None, "expect": "auto", "mode": "threading"}
_FLAGS = {"pike": "--pike", "port": "--port", "fake_delays": "--fake-delays",
          "tree": "--tree", "nova_venv": "--nova-venv", "pattern": "-k",
          "expect": "--expect", "mode": "--mode"}


def _refuse_unused(args):
    unused = [_FLAGS[dest] for dest, actions in _TAKES.items()
              if args.action not in actions and getattr(args, dest) != _DEFAULTS[dest]]
    if args.pike and args.action == "selftest":
        unused += [_FLAGS[d] for d in ("tree", "nova_venv", "pattern", "expect", "mode")
                   if getattr(args, d) != _DEFAULTS[d]]
    if args.pike and args.action == "start" and args.fake_delays:
        unused.append("--fake-delays (Ironic 9.1 has none)")
    if unused:
        raise HarnessError(f"ironic {args.action}{' --pike' if args.pike else ''} does "
                           f"not take {', '.join(unused)}")


def _start(ctx, args):
    if args.pike:
        ironic = pike.PikeIronic(pike.ensure_venv(ctx.build, ctx.root),
                                 ctx.build / "realironic", port=args.port,
                                 log=say)
    else:
        ironic = service.RealIronic(service.ensure_venv(ctx.build, ctx.root),
                                    ctx.build / "realironic", port=args.port,
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


def _selftest_pike(ctx):
    from novaseries import cisteps
    outcomes = cisteps.pike_real_ironic_step(ctx)
    return cli._report(outcomes) if outcomes else 1


def _tree(ctx, arg):
    tree = arg or os.environ.get("REALIRONIC_NOVA_TREE") or ctx.tree("master")
    if not (os.path.isdir(os.path.join(tree, "nova"))):
        raise HarnessError(f"{tree} is not a Nova tree (--tree, $REALIRONIC_NOVA_TREE, or "
                           "`novaseries prepare master` first)")
    return tree


@cli.command("ironic", "the real Ironics of the tests: install, start, sweep, selftest "
             "(see doc/real-ironic.rst)")
@cli.arguments(
    (("action",), dict(choices=ACTIONS, help="what to do")),
    (("--pike",), dict(action="store_true", help="the pike-era Ironic "
                       f"{pike.IRONIC_VERSION} (Python 2.7, RabbitMQ) instead of "
                       f"{service.IRONIC_VERSION}")),
    (("--port",), dict(type=int, help="start: the API port (default: a free one)")),
    (("--fake-delays",), dict(type=int, default=0, metavar="SECONDS",
                              help="start: [fake] power_delay/boot_delay")),
    (("--tree",), dict(help="selftest: a Nova tree with the series (default: "
                       "$REALIRONIC_NOVA_TREE or build/trees/master)")),
    (("--nova-venv",), dict(help="selftest: Nova's test venv (default build/venvs/master)")),
    (("-k",), dict(dest="pattern", help="selftest: only tests matching this")),
    (("--expect",), dict(choices=("auto", "fixed", "bug"), default="auto",
                         help="selftest: what spawn() must raise in the end-to-end tests "
                         "(default: detected from the tree)")),
    (("--mode",), dict(choices=("threading", "eventlet"), default="threading",
                       help="selftest: Nova's concurrency mode (targets.toml [modes]; "
                       "default threading, as nova 34.0.0 runs nova-compute)")))
def cmd_ironic(ctx, args):
    """``novaseries ironic ACTION``: see the module docstring.  Returns the
    exit status (selftest: the test run's); an option the action does not
    take, or a RealIronicError (venv, RabbitMQ or Ironic could not be set
    up), is a HarnessError (one line, exit 1)."""
    _refuse_unused(args)
    try:
        if args.action == "install":
            venv = (pike.ensure_venv(ctx.build, ctx.root) if args.pike
                    else service.ensure_venv(ctx.build, ctx.root))
            print(f"ironic venv: {venv}")
            return 0
        if args.action == "sweep":
            n = service.sweep(ctx.build / "realironic", log=say)
            print(f"{n} leftover process group(s) killed")
            return 0
        if args.action == "start":
            return _start(ctx, args)
        if args.pike:
            return _selftest_pike(ctx)
        tree = _tree(ctx, args.tree)
        mode = targets_mod.get(ctx, "master").in_mode(args.mode, interpreter=False)
        return selftest.run(tree, args.nova_venv, ctx.build,
                            args.pattern, expect=args.expect, root=ctx.root,
                            nova_env=mode.mode.env)
    except service.RealIronicError as exc:
        raise HarnessError(str(exc)) from None
