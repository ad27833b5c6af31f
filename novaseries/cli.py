"""The ``novaseries`` command line: the top floor.

:data:`COMMANDS` lists the subcommands' modules (:mod:`novaseries.commands`),
imported by name; :func:`build_parser` gives each its subparser, named
after the module (``check_commits`` -> ``check-commits``), with the
module's ``HELP``, ``EPILOG`` and ``add_arguments(parser, ctx)``, and
:func:`main` calls the chosen module's ``run(ctx, args)``.  Nothing
imports this module but ``novaseries.__main__`` (and the ``novaseries``
console script).
"""

import argparse
import os
import select
import signal
import sys

from novaseries import __version__
from novaseries.commands import (backport, check_commits, ci, explore, export, ironic,
                                 mutate, prepare, quilt, run, targets, test)
from novaseries.util import Context, HarnessError, setup_logging

#: The subcommands, in the order ``novaseries --help`` lists them.
COMMANDS = (targets, prepare, export, backport, quilt, test, check_commits, ci, run,
            explore, ironic, mutate)


def command_name(module):
    """The subcommand of a module of :data:`COMMANDS`: its name, with
    dashes (``novaseries.commands.check_commits`` -> ``check-commits``)."""
    return module.__name__.rpartition(".")[2].replace("_", "-")


def _global_options(parser):
    parser.add_argument("--root", help="project root (default: found from the cwd)")
    parser.add_argument("--build-dir", help="scratch folder (default: ROOT/build)")
    parser.add_argument("--sdist-cache", help="sdist cache (default: BUILD/sdists); "
                        "a verified file there is used instead of downloading")


def context(argv=None):
    """The :class:`~novaseries.util.Context` the options of ``argv`` (``--root``,
    ``--build-dir``, ``--sdist-cache``; the rest is left to
    :func:`build_parser`'s parser) and the environment give."""
    early = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    _global_options(early)
    args, _ = early.parse_known_args(argv)
    return Context.create(args.root, args.build_dir, args.sdist_cache)


def build_parser(ctx=None):
    """The argparse parser with every command of :data:`COMMANDS`.

    ``ctx`` (default: :func:`context` of no arguments): the project whose
    targets.toml gives the choices some options have (the concurrency
    modes of ``[modes]``).

    :raises HarnessError: the targets file cannot be read, or its
        ``[modes]`` are wrong (:func:`novaseries.modes.load_modes`).
    """
    ctx = ctx or context([])
    parser = argparse.ArgumentParser(
        prog="novaseries", description="Materialise, test and export a patch series "
        "against pinned Nova releases.")
    parser.add_argument("--version", action="version", version=__version__)
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more output (debug lines)")
    parser.add_argument("-q", "--quiet", action="count", default=0,
                        help="only warnings, errors and the results")
    _global_options(parser)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMANDS:
        child = sub.add_parser(command_name(module), help=module.HELP,
                               description=module.HELP,
                               epilog=getattr(module, "EPILOG", None),
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(child, ctx)
        child.set_defaults(func=module.run)
    return parser


def _stdout_gone():
    """True when stdout's reader went away (``run --list | head``): a
    flush fails, or, the failed write's data being gone with it, the pipe
    reports an error (POLLERR: no reader)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        return True
    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError):  # not a file descriptor that can be polled
        return False


def _terminated(signum, frame):
    # a second SIGTERM must not cut the clean-ups short
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("novaseries: terminated", file=sys.stderr, flush=True)
    raise SystemExit(128 + signum)


def main(argv=None):
    """Entry point; returns the exit status.  HarnessError -> one line, exit 1."""
    try:
        ctx = context(argv)
        parser = build_parser(ctx)
    except HarnessError as exc:  # targets.toml, which gives some choices
        print(f"novaseries: error: {exc}", file=sys.stderr, flush=True)
        return 1
    args = parser.parse_args(argv)
    setup_logging(args.verbose - args.quiet)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        # SIGTERM (a CI runner's timeout, kill) unwinds the main thread
        # like Ctrl-C: its clean-ups run (run --ironic real stops its
        # Ironics and players); exit status 143.  (ci's steps run in
        # other threads: their processes die with the harness instead,
        # PDEATHSIG, and the next start sweeps their run directories.)
        signal.signal(signal.SIGTERM, _terminated)
    try:
        return args.func(ctx, args)
    except HarnessError as exc:
        print(f"novaseries: error: {exc}", file=sys.stderr, flush=True)
        if exc.details:
            print(exc.details.rstrip(), file=sys.stderr, flush=True)
        return 1
    except KeyboardInterrupt:
        print("novaseries: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        if _stdout_gone():  # stdout's reader went away: `run --list | head`
            # what the Python docs advise: no further writes to the closed pipe
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            # not 0: a command (ci) whose summary nobody read has not passed;
            # a shell pipeline's status is its last command's (head's)
            return 141
        raise  # a broken pipe elsewhere is an error
