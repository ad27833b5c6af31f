"""The ``novaseries`` command line.

Subcommands are registered with :func:`command`; modules listed in
:data:`PLUGINS` are imported at start-up so they can register more (the
main scenario job adds ``run`` this way, and may add a ci step with
:func:`novaseries.ci.register_step`).
"""

import argparse
import importlib
import os
import signal
import sys

from novaseries import __version__, checks, ci, export, runner, targets as targets_mod
from novaseries import tree as tree_mod
from novaseries.util import Context, HarnessError, say, setup_logging

#: Modules imported at start-up that register commands (:func:`command`)
#: or ci steps, with the commands each provides.  One that fails to import
#: makes ``ci`` fail (:data:`novaseries.ci.PLUGIN_ERRORS`) and its commands
#: answer with the reason.
PLUGINS = {"novaseries.mainjob": ["run"], "novaseries.cisteps": [],
           "novaseries.ironic_cli": ["ironic"]}

COMMANDS = {}


def command(name, help):
    """Decorator: register ``func(ctx, args) -> exit status`` as a subcommand.

    Its arguments come from :func:`arguments` (put it below ``@command``).
    """
    def wrap(func):
        COMMANDS[name] = (help, func)
        return func
    return wrap


def arguments(*specs):
    """Decorator storing argparse ``(args, kwargs)`` specs on a command."""
    def wrap(func):
        func.arguments = specs
        return func
    return wrap


def _target(ctx, args):
    return targets_mod.get(ctx, args.target)


def _report(outcomes):
    print("\n=== summary")
    for outcome in outcomes:
        print(outcome.line())
    print(runner.totals_line(outcomes), flush=True)
    return 1 if runner.totals(outcomes)[1] else 0


def _positive(text):
    """argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1: {text}")
    return value


TARGET = (("target",), dict(help="target name (see `novaseries targets`)"))
TREE = (("--tree",), dict(help="tree to use (default: build/trees/TARGET)"))
MODE = (("--mode",), dict(action="append", metavar="MODE",
                          help="only this concurrency mode of the target (eventlet, "
                          "threading; repeatable; default: every mode targets.toml "
                          "gives it)"))


@command("targets", "list the targets and the state of their series")
def cmd_targets(ctx, args):
    for name, target in targets_mod.load(ctx).items():
        patches, problem = target.series_status()
        state = "enabled" if target.enabled else f"not enabled: {target.note or '-'}"
        series = f"{len(patches)} patches" if patches else problem
        print(f"{name:8} nova {target.version:8} {target.interpreter:10} {state}; {series}")
    return 0


@command("prepare", "fetch, verify and extract the sdist, commit it as base, git am the series")
@arguments(TARGET,
           (("--upto",), dict(metavar="PATCH", help="apply the series up to this patch "
                              "(file name, number like 0003, or unique substring)")),
           (("--dest",), dict(help="tree folder (default: build/trees/TARGET)")),
           (("--force",), dict(action="store_true", help="if the tree has commits not in "
                               "the series, keep them on a backup branch and reset")))
def cmd_prepare(ctx, args):
    tree = tree_mod.prepare(ctx, _target(ctx, args), args.dest, args.upto, args.force)
    say(f"tree ready: {tree}")
    return 0


@command("export", "write the tree's commits since base to patches/TARGET and its series")
@arguments(TARGET, TREE,
           (("--out",), dict(help="folder to write (default: the target's patches folder)")),
           (("--bug",), dict(action="append", default=[], metavar="NAME=NUMBER",
                             help="replace a bug placeholder, e.g. main=1234567 "
                             "(names: targets.toml [bugs])")),
           (("--signoff",), dict(action="store_true", help="add Signed-off-by: <your git "
                                 "identity> to each exported patch")),
           (("--trailer",), dict(action="append", default=[], metavar="'KEY: VALUE'",
                                 help="add a trailer to each exported patch")))
def cmd_export(ctx, args):
    target = _target(ctx, args)
    bugs = export.parse_bugs(args.bug, targets_mod.placeholders(ctx))
    out = args.out
    if out is None and (bugs or args.signoff or args.trailer):
        # Real bug numbers and the submitter's trailers are for a
        # submission, never for the series kept in patches/.
        out = ctx.build / "export" / target.name
        say(f"export: --bug/--signoff/--trailer given: writing to {out} "
            f"(patches/{target.name} is left as it is; --out to choose)")
    export.export(target, args.tree or ctx.tree(target.name), out, bugs,
                  args.signoff, args.trailer)
    return 0


@command("test", "run the unit selections, touched functional modules and flake8 at HEAD")
@arguments(TARGET, TREE, MODE)
def cmd_test(ctx, args):
    target = _target(ctx, args).only_modes(args.mode)
    tree = args.tree or ctx.tree(target.name)
    tree_mod.check_tree(tree)
    return _report(runner.test_modes(ctx, target, tree))


@command("check-commits", "lint every commit message and test every commit of the series")
@arguments(TARGET, TREE, MODE,
           (("--lint-only",), dict(action="store_true", help="only lint the messages")))
def cmd_check_commits(ctx, args):
    target = _target(ctx, args).only_modes(args.mode)
    tree = args.tree or ctx.tree(target.name)
    return _report(checks.check_commits(ctx, target, tree, run_tests=not args.lint_only))


@command("ci", "the test command: harness tests, prepare + check-commits/test of each "
         "enabled target, registered steps; prints N passed, N failed")
@arguments((("--target",), dict(action="append", dest="targets", metavar="TARGET",
                                help="only these targets (default: all enabled)")),
           (("--no-self-tests",), dict(action="store_true",
                                       help="skip the harness's own tests")),
           (("--jobs",), dict(type=_positive, metavar="N",
                              help="targets and steps run at once (default: 2 "
                              "with 2 cores or more, else 1)")))
def cmd_ci(ctx, args):
    return ci.ci(ctx, args.targets, self_test=not args.no_self_tests, jobs=args.jobs)


def build_parser():
    """The argparse parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="novaseries", description="Materialise, test and export a patch series "
        "against pinned Nova releases.")
    parser.add_argument("--version", action="version", version=__version__)
    parser.add_argument("-v", "--verbose", action="count", default=0,
                        help="more output (debug lines)")
    parser.add_argument("-q", "--quiet", action="count", default=0,
                        help="only warnings, errors and the results")
    parser.add_argument("--root", help="project root (default: found from the cwd)")
    parser.add_argument("--build-dir", help="scratch folder (default: ROOT/build)")
    parser.add_argument("--sdist-cache", help="sdist cache (default: BUILD/sdists); "
                        "a verified file there is used instead of downloading")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (help_text, func) in COMMANDS.items():
        child = sub.add_parser(name, help=help_text, description=help_text,
                               epilog=getattr(func, "epilog", None),
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        for flags, kwargs in getattr(func, "arguments", ()):
            child.add_argument(*flags, **kwargs)
        child.set_defaults(func=func)
    return parser


def load_plugins(plugins=None):
    """Import the plugin modules; record the failures in
    :data:`novaseries.ci.PLUGIN_ERRORS` (``ci`` fails on any) and register
    the commands of a failed plugin as commands that say why they are
    unavailable."""
    for module, commands in (plugins or PLUGINS).items():
        if module in ci.PLUGIN_ERRORS:
            continue
        try:
            importlib.import_module(module)
        except Exception as exc:  # one broken plugin must not take the others down
            reason = f"{module} failed to load: {exc!r}"
            ci.PLUGIN_ERRORS[module] = reason
            print(f"novaseries: warning: {reason}", file=sys.stderr)
            for name in commands:
                if name not in COMMANDS:
                    command(name, f"(unavailable: {reason})")(_unavailable(name, reason))


def _unavailable(name, reason):
    def func(ctx, args):
        raise HarnessError(f"command {name!r} is unavailable: {reason}")
    func.unavailable = True  # main() ignores the arguments it is given
    return func


def _terminated(signum, frame):
    # a second SIGTERM must not cut the clean-ups short
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("novaseries: terminated", file=sys.stderr, flush=True)
    raise SystemExit(128 + signum)


def main(argv=None):
    """Entry point; returns the exit status.  HarnessError -> one line, exit 1."""
    load_plugins()
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and not getattr(args.func, "unavailable", False):
        parser.parse_args(argv)  # argparse's own error for the extra arguments
    setup_logging(args.verbose - args.quiet)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
        # SIGTERM (a CI runner's timeout, kill) unwinds the main thread
        # like Ctrl-C: its clean-ups run (run --ironic real stops its
        # Ironics and runners); exit status 143.  (ci's steps run in
        # other threads: their processes die with the harness instead,
        # PDEATHSIG, and the next start sweeps their run directories.)
        signal.signal(signal.SIGTERM, _terminated)
    try:
        ctx = Context.create(args.root, args.build_dir, args.sdist_cache)
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
        try:
            sys.stdout.flush()
        except BrokenPipeError:  # stdout's reader went away: `run --list | head`
            # what the Python docs advise: no further writes to the closed pipe
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return 0
        raise  # a broken pipe elsewhere is an error
