"""Builds the Ironics' pinned virtualenvs, in the harness's Python only.

Each Ironic runs from a venv of its own, built from a frozen requirement
set in ``pins/`` (:func:`ensure_venv`: ``pins/ironic.txt`` under
:data:`novaseries.venv_build.TOOLS_PYTHON`; :func:`novaseries.ironic.pike.ensure_venv`:
``pins/ironic-pike.txt`` under Python 2.7).  Both go through
:func:`ironic_venv`, which builds the venv with
:func:`novaseries.venv_build.pinned_venv` (locked, reused while the pins, the
recipe and the interpreter are unchanged).

Not in :mod:`novaseries.ironic.service` or :mod:`novaseries.ironic.layout`:
Nova's test venv imports those (``nova_side.HARNESS_MODULES``), and the
venv builder (:mod:`novaseries.venv_build`) is not for it.
"""

import os
import pathlib
import shutil

from novaseries import procs, util, venv_build
from novaseries.ironic import service
from novaseries.ironic.layout import RESULTS, default_build

#: Bump when the install recipe of the venv of the Ironic of
#: ``pins/ironic.txt`` changes, to rebuild it.
VENV_RECIPE = "2"


def base_python(python=None):
    """The interpreter to build the venv of the Ironic of ``pins/ironic.txt`` from: ``python`` or
    ``$REALIRONIC_PYTHON`` if given, else :data:`novaseries.venv_build.TOOLS_PYTHON`
    as the Nova venvs find it (``novaseries.venv_build.find_interpreter``: the
    running Python if it is that version, else pyenv's, else PATH's); the
    venv's recipe records the interpreter's identity, not this path.

    :raises procs.ServiceError: (``RealIronicError``) no such Python.
    """
    python = python or os.environ.get("REALIRONIC_PYTHON")
    if not python:
        try:
            return str(venv_build.find_interpreter(venv_build.TOOLS_PYTHON))
        except util.HarnessError as exc:
            raise procs.ServiceError(str(exc)) from None
    return str(pathlib.Path(python).resolve()) if os.sep in python else shutil.which(python)


def ironic_venv(venv, python, pins, recipe, pip_args, log_path, what, tool="venv"):
    """An Ironic venv: :func:`novaseries.venv_build.pinned_venv` (``pip install -q
    <pip_args> -r <pins>``) from ``python()``, its errors as
    ``RealIronicError``.

    :param python: a function returning the interpreter (it may raise).
    :returns: the venv path.
    :raises procs.ServiceError: (``RealIronicError``) no interpreter or
        pins file, or venv creation or pip failed (with pip's tail).
    """
    try:
        return venv_build.pinned_venv(venv, python(), pins, recipe, log_path,
                                      pip_args=["-q", *pip_args], tool=tool, what=what)
    except util.HarnessError as exc:
        raise procs.ServiceError(f"{exc}\n{exc.details}".rstrip()) from None


def ensure_venv(build=None, root=None, python=None):
    """Create or reuse the venv of the Ironic of ``pins/ironic.txt``
    (:func:`novaseries.ironic.service.venv_dir`; :func:`ironic_venv`,
    reused while the sha256 of the pins and the interpreter's identity are
    unchanged).

    :param python: the interpreter (default :func:`base_python`'s pick).
    :returns: the venv path (``pathlib.Path``).
    :raises RealIronicError: if venv creation or pip fails (with pip's tail).
    """
    return ironic_venv(
        service.venv_dir(build), lambda: base_python(python),
        util.pins_file(util.project_root(root), service.VENV_NAME), VENV_RECIPE, [],
        util.results_dir(build or default_build(), RESULTS) /
        venv_build.VENV_INSTALL_LOG, f"ironic {service.IRONIC_VERSION} venv")
