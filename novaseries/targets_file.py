"""Where the targets file is (``targets/targets.toml`` under the project
root) and reading it: the lowest of the modules that read it
(:mod:`novaseries.modes`, :mod:`novaseries.release_changes`,
:mod:`novaseries.targets`)."""

import pathlib
import tomllib

from novaseries.util import TARGETS_FILE, HarnessError


def path(ctx, given=None):
    """The targets file to read: ``given`` (a path) or the project's
    :data:`TARGETS_FILE` under ``ctx.root``."""
    return pathlib.Path(given or ctx.root / TARGETS_FILE)


def read(file):
    """The targets file at ``file`` as a dict.

    :raises HarnessError: (one line) it is missing or not TOML.
    """
    try:
        return tomllib.loads(file.read_text())
    except FileNotFoundError:
        raise HarnessError(f"targets file {file} not found")
    except tomllib.TOMLDecodeError as exc:
        raise HarnessError(f"targets file {file}: {exc}")
