"""Where the Ironics' files live, and their pinned virtualenvs.

Both Ironics of the tests run from a virtualenv of their own, built from a
frozen requirement set in ``pins/`` (:func:`novaseries.ironic.service.ensure_venv`:
``pins/ironic.txt`` under :data:`novaseries.util.TOOLS_PYTHON`;
:func:`novaseries.ironic.pike.ensure_venv`: ``pins/ironic-pike.txt`` under
Python 2.7); each release is the one its pins name
(:func:`pinned_ironic`).  Both go through :func:`ironic_venv`, which
builds the venv with :func:`novaseries.util.pinned_venv` (locked, reused
while the pins, the recipe and the interpreter are unchanged).  The project
checkout is :func:`novaseries.util.project_root`'s.

Standard library only (and :mod:`novaseries.util`, :mod:`novaseries.procs`,
which are too): the service modules that import this one are imported in
Nova's test venv as well.  It imports none of the other modules of
:mod:`novaseries.ironic`.
"""

import os
import pathlib
import shutil

from novaseries import procs, util

#: The results folder (:func:`novaseries.util.results_dir`) of the Ironic of
#: ``pins/ironic.txt`` (its venv's install log).
RESULTS = "realironic"
#: The results folder of the pike-era Ironic and of pike's driver tests.
PIKE_RESULTS = "pike-realironic"


def pinned_version(pins, name):
    """The version pins file ``pins`` gives distribution ``name``: the
    ``VERSION`` of its ``name==VERSION`` line (a pins file is the one
    place that says which release a venv holds).

    :raises util.HarnessError: the file is missing or has not exactly one
        such line.
    """
    try:
        lines = util.pin_lines(pins)
    except FileNotFoundError:
        raise util.HarnessError(f"{pins} is missing: it pins the {name} release") from None
    found = [version for pin, version in lines if pin == util.canonical(name)]
    if len(found) != 1:
        raise util.HarnessError(f"{pins} must have one {name}==VERSION line, not "
                                f"{len(found)}")
    return found[0]


def default_build():
    """Scratch directory: ``$NOVASERIES_BUILD`` or ``<root>/build``
    (:func:`novaseries.util.build_dir` of :func:`novaseries.util.project_root`)."""
    return util.build_dir(util.project_root())


def workdir(build=None):
    """The parent of both Ironics' run directories:
    ``<build>/realironic`` (``build`` default :func:`default_build`)."""
    return pathlib.Path(build or default_build()) / "realironic"


def pinned_ironic(name):
    """The Ironic release the pins of the Ironic venv ``name`` give (the
    ``VERSION`` of ``ironic==VERSION`` in its pins file,
    :func:`novaseries.util.pins_file`).

    :raises util.HarnessError: the pins file is missing or has not
        exactly one such line (:func:`pinned_version`).
    """
    return pinned_version(util.pins_file(util.project_root(), name), "ironic")


def base_python(python=None):
    """The interpreter to build the venv of the Ironic of ``pins/ironic.txt`` from: ``python`` or
    ``$REALIRONIC_PYTHON`` if given, else :data:`novaseries.util.TOOLS_PYTHON`
    as the Nova venvs find it (``novaseries.util.find_interpreter``: the
    running Python if it is that version, else pyenv's, else PATH's); the
    venv's recipe records the interpreter's identity, not this path.

    :raises procs.ServiceError: (``RealIronicError``) no such Python.
    """
    python = python or os.environ.get("REALIRONIC_PYTHON")
    if not python:
        try:
            return str(util.find_interpreter(util.TOOLS_PYTHON))
        except util.HarnessError as exc:
            raise procs.ServiceError(str(exc)) from None
    return str(pathlib.Path(python).resolve()) if os.sep in python else shutil.which(python)


def ironic_venv(venv, python, pins, recipe, pip_args, log_path, what, tool="venv"):
    """An Ironic venv: :func:`novaseries.util.pinned_venv` (``pip install -q
    <pip_args> -r <pins>``) from ``python()``, its errors as
    ``RealIronicError``.

    :param python: a function returning the interpreter (it may raise).
    :returns: the venv path.
    :raises procs.ServiceError: (``RealIronicError``) no interpreter or
        pins file, or venv creation or pip failed (with pip's tail).
    """
    try:
        return util.pinned_venv(venv, python(), pins, recipe, log_path,
                                pip_args=["-q", *pip_args], tool=tool, what=what)
    except util.HarnessError as exc:
        raise procs.ServiceError(f"{exc}\n{exc.details}".rstrip()) from None
