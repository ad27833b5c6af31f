"""What several commands share: argument specs, the target lookup."""

import argparse

from novaseries import modes as modes_mod, targets as targets_mod

#: argparse ``(flags, kwargs)`` specs (:func:`add`).
TARGET = (("target",), dict(help="target name (see `novaseries targets`)"))
TREE = (("--tree",), dict(help="tree to use (default: build/trees/TARGET)"))


def mode_spec(ctx):
    """The ``--mode`` spec of ``test`` and ``check-commits``: the mode
    names of targets.toml ``[modes]`` (:func:`novaseries.modes.load_modes`)
    in its help."""
    names = ", ".join(modes_mod.load_modes(ctx)) or "none in targets.toml"
    return (("--mode",), dict(action="append", metavar="MODE",
                              help=f"only this concurrency mode of the target ({names}; "
                              "repeatable; default: every mode targets.toml gives it)"))


def mode_names(ctx):
    """targets.toml's mode names, the default one(s) first
    (:func:`novaseries.modes.default_modes`), then the others in file
    order: the order of the ``--mode`` choices, and of ``run --mode both``
    (the default mode, then the others)."""
    defaults = modes_mod.default_modes(ctx)
    return (*defaults, *[name for name in modes_mod.load_modes(ctx) if name not in defaults])


def add(parser, *specs):
    """Add the ``(flags, kwargs)`` ``specs`` to ``parser``."""
    for flags, kwargs in specs:
        parser.add_argument(*flags, **kwargs)


def target(ctx, args):
    """The target ``args.target`` names; HarnessError (one line) if unknown."""
    return targets_mod.get(ctx, args.target)


def at_least(least):
    """An argparse type: an integer of at least ``least``."""
    def integer(text):
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if value < least:
            raise argparse.ArgumentTypeError(f"must be at least {least}: {text}")
        return value
    return integer


#: argparse types: an integer of at least 1, of at least 0.
positive = at_least(1)
not_negative = at_least(0)
