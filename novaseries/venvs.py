"""The target's venv (``build/venvs/NAME``), one per mode interpreter, and
the environment Nova's tests run in.

The venv gets the target's pins, then the Nova sdist itself with
``--no-deps`` (only for its metadata and entry points); the code under test
is the tree's, via cwd + PYTHONPATH (:func:`test_env`).  The venv is reused
while a digest of its recipe (pins file, Nova version, interpreter, pip
arguments) is unchanged.
"""

import os
import pathlib
import subprocess

from novaseries import sdist as sdist_mod
from novaseries.util import LOG, HarnessError
from novaseries.venv_build import (VENV_INSTALL_LOG, build_venv, find_interpreter,
                                   interpreter_identity, recipe_digest)


#: Bump when the install recipe below changes, to rebuild existing venvs.
RECIPE = "2"

#: The variables that tie a Python to the harness's own environment:
#: dropped before a run in another venv (Nova's, a pep8 tool's).
PYTHON_ENV_VARS = ("VIRTUAL_ENV", "PYTHONHOME", "PYTHONPATH", "PYTHONSTARTUP")


def _recipe_digest(target, identity):
    """What the venv is made of: the pins, the Nova sdist, the venv tool and
    pip arguments, and the interpreter's identity (implementation, version,
    machine: :func:`~novaseries.venv_build.interpreter_identity`), not its path,
    so that a venv made by ``.ci/run`` (harness venv's Python) is reused by
    ``python3 -m novaseries`` (the system's) and the other way round."""
    return recipe_digest(target.pins, RECIPE, target.version, target.sha256,
                         target.interpreter, identity, target.venv_tool, *target.pip_args)


def ensure_venv(ctx, target):
    """Create or reuse ``build/venvs/NAME`` (the target's
    :attr:`~novaseries.target_model.Target.venv_name`: its release's); return
    ``(path, seconds spent)``.

    :func:`novaseries.venv_build.build_venv` holds ``build/venvs/NAME.lock``
    meanwhile: a second command that needs the same venv waits for the
    first (and then reuses what it built)."""
    interpreter = find_interpreter(target.interpreter)
    if not target.pins.is_file():
        raise HarnessError(f"target {target.name}: pins file {target.pins} is missing")
    venv = ctx.venv(target.venv_name)

    def installs():  # the pins, then Nova's sdist without its dependencies
        sdist = sdist_mod.fetch(target, ctx.sdist_cache)
        return [[*target.pip_args, "-r", target.pins], ["--no-deps", sdist]]
    return build_venv(venv, interpreter, installs,
                      _recipe_digest(target, interpreter_identity(interpreter)),
                      ctx.results(target.name) / VENV_INSTALL_LOG,
                      tool=target.venv_tool)


def test_env(target, venv, tree):
    """Nova's tox environment for a run from ``tree`` with ``venv``: the
    harness's environment without :data:`PYTHON_ENV_VARS`, the target's
    ``env`` (its mode's too), ``venv`` first on PATH, ``PYTHONPATH`` the
    tree."""
    env = {k: v for k, v in os.environ.items() if k not in PYTHON_ENV_VARS}
    env.update(target.env)
    env["PATH"] = f"{venv}/bin{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    env["PYTHONPATH"] = str(tree)
    return env


def is_python3(venv):
    """True for a venv of a Python 3 interpreter (``lib/python3*``)."""
    return any(pathlib.Path(venv, "lib").glob("python3*"))


def compile_tree(venv, tree):
    """Byte-compile ``tree``'s ``nova`` package for ``venv``'s interpreter.

    Nova's test environment sets ``PYTHONDONTWRITEBYTECODE=1``, so without
    this every stestr process (its test discovery and each worker) compiles
    every Nova module it imports from source again: a few CPU seconds per
    process, for about seventy stestr runs in ``ci``.  Python 3 keeps the
    compiled files in ``__pycache__`` per interpreter (``cpython-311``,
    ``cpython-313``), checks each against its source's mtime and size
    before using it and ignores those without a source, so a checkout of
    another commit only recompiles what it changed.  Nothing for a Python 2
    venv (pike): Python 2 writes ``.pyc`` beside the source and imports one
    whose source is gone.  Git ignores the files (``__pycache__`` in the
    tree's exclude list).  A failure only costs that time, never the run.
    """
    if not is_python3(venv):
        return
    proc = subprocess.run([str(pathlib.Path(venv, "bin", "python")), "-m", "compileall",
                           "-q", "-j", "0", "nova"], cwd=tree, stdin=subprocess.DEVNULL,
                          capture_output=True)
    if proc.returncode:
        LOG.warning(f"warning: compileall in {tree} exited {proc.returncode}: "
                    f"{proc.stdout.decode(errors='replace')[-500:]}")


def mode_targets(target):
    """The target in each of its concurrency modes, in order (``[target]``
    itself when it lists none)."""
    return [target.in_mode(name) for name in target.modes] or [target]


def mode_interpreter_missing(target):
    """Why the interpreter of ``target``'s mode (a mode with one of its
    own) cannot be found, or ""."""
    if target.mode is None or not target.mode.interpreter:
        return ""
    try:
        find_interpreter(target.mode.interpreter)
    except HarnessError as exc:
        return f"{exc}: mode {target.mode.name} of {target.name}"
    return ""
