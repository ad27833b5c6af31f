"""Where the Ironics' files live, and which release their pins give.

Both Ironics of the tests run from a virtualenv of their own, built from a
frozen requirement set in ``pins/`` (:mod:`novaseries.ironic.venv_setup`);
each release is the one its pins name (:func:`pinned_ironic`).  The project
checkout is :func:`novaseries.util.project_root`'s.

Standard library only (and :mod:`novaseries.util`, which is too): the
service modules that import this one are imported in Nova's test venv as
well.  It imports none of the other modules of :mod:`novaseries.ironic`.
"""

import pathlib

from novaseries import util

#: The results folder (:func:`novaseries.util.results_dir`) of the Ironic of
#: ``pins/ironic.txt``: its venv's install log, the driver tests' logs.
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
