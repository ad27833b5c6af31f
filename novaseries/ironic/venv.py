"""Where the Ironics' files live, and their pinned virtualenvs.

Both Ironics of the tests run from a virtualenv of their own, built from a
frozen requirement set in ``pins/`` (:func:`novaseries.ironic.service.ensure_venv`:
39.0.0 under Python 3.11 from ``pins/ironic.txt``;
:func:`novaseries.ironic.pike.ensure_venv`: 9.1.7 under Python 2.7 from
``pins/ironic-pike.txt``).  Both go through :func:`pinned_venv`, which
builds the venv with :func:`novaseries.util.build_venv` (locked, reused
while the pins, the recipe and the interpreter are unchanged).

Standard library only (and :mod:`novaseries.util`, :mod:`novaseries.procs`,
which are too): the service modules that import this one are imported in
Nova's test venv as well.  The lowest module of :mod:`novaseries.ironic`: it
imports none of the others.
"""

import os
import pathlib
import re
import shutil

from novaseries import procs, util

_ROOT = pathlib.Path(__file__).resolve().parents[2]


def project_root():
    """The project checkout this module lives in (holds ``pins/``)."""
    return _ROOT


def pinned_version(pins, name):
    """The version pins file ``pins`` gives distribution ``name``: the
    ``VERSION`` of its ``name==VERSION`` line (a pins file is the one
    place that says which release a venv holds).

    :raises util.HarnessError: the file is missing or has not exactly one
        such line.
    """
    try:
        text = pathlib.Path(pins).read_text()
    except FileNotFoundError:
        raise util.HarnessError(f"{pins} is missing: it pins the {name} release") from None
    found = re.findall(rf"^\s*{re.escape(name)}\s*==\s*([^\s;#]+)", text,
                       re.MULTILINE | re.IGNORECASE)
    if len(found) != 1:
        raise util.HarnessError(f"{pins} must have one {name}==VERSION line, not "
                                f"{len(found)}")
    return found[0]


def default_build():
    """Scratch directory: ``$NOVASERIES_BUILD`` or ``<root>/build``
    (:func:`novaseries.util.build_dir`)."""
    return util.build_dir(_ROOT)


def base_python(python=None):
    """The interpreter to build the Ironic 39.0.0 venv from: ``python`` or
    ``$REALIRONIC_PYTHON`` if given, else Python 3.11 as the Nova venvs
    find it (``novaseries.util.find_interpreter``: the running Python if it
    is a 3.11, else pyenv's, else PATH's); the venv's recipe records the
    interpreter's identity, not this path.

    :raises procs.ServiceError: (``RealIronicError``) no Python 3.11.
    """
    python = python or os.environ.get("REALIRONIC_PYTHON")
    if not python:
        try:
            return str(util.find_interpreter("python3.11"))
        except util.HarnessError as exc:
            raise procs.ServiceError(str(exc)) from None
    return str(pathlib.Path(python).resolve()) if os.sep in python else shutil.which(python)


def pinned_venv(venv, python, pins, recipe, pip_args, log_path, what, tool="venv"):
    """An Ironic venv: ``pip install -q <pip_args> -r <pins>`` into ``venv``
    made from ``python()`` (``novaseries.util.build_venv``, which locks
    and reuses it while its stamp, :func:`novaseries.util.recipe_digest`
    of the pins, ``recipe`` and the interpreter's identity, is unchanged).

    :param python: a function returning the interpreter (it may raise).
    :returns: the venv path.
    :raises procs.ServiceError: (``RealIronicError``) no interpreter, or
        venv creation or pip failed (with pip's tail).
    """
    try:
        interpreter = python()
        digest = util.recipe_digest(pins, recipe, util.interpreter_identity(interpreter))
        util.build_venv(venv, interpreter, [["-q", *pip_args, "-r", pins]], digest,
                        log_path, tool=tool, what=what)
    except util.HarnessError as exc:
        raise procs.ServiceError(f"{exc}\n{exc.details}".rstrip()) from None
    return venv
