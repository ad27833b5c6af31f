"""stestr's ``PYTHON`` for a run of some of Nova's tests: each of the run's
processes imports the test modules the run needs, not every test module
under stestr's test path.

stestr starts the process that lists a run's tests as ``$PYTHON -m
stestr.subunit_runner.run discover -t TOP PATH --list`` and each worker as
``... --load-list FILE``; with ``PYTHON`` unset, ``$PYTHON`` is stestr's
own interpreter, and discovery imports every test module under PATH
(Nova's unit tree: several CPU seconds per process) to run a few hundred
tests.  As Nova's tox ``cover`` env sets ``PYTHON`` to ``coverage run``,
the harness sets it to ``<venv python> <this file>``
(:func:`novaseries.stestr_run.run_stestr`).  The listing then loads the
modules and discovers the packages that ``NOVASERIES_TEST_ROOTS`` names
(the run's filters' own, :func:`novaseries.selecting.test_roots`); a
worker loads the modules that define its tests (:func:`module_of`, by
the files under the test path's top).  The
rest -- filtering by the ids, the subunit stream, import errors failing
the listing -- is stestr's own runner.  Any other command line, or one
whose tests it cannot place, runs exactly as stestr gave it.

Python 3 and the standard library only (stestr is imported to run).
"""

import functools
import os
import re
import sys
import unittest

#: The dotted modules and packages whose tests a listing loads (spaces
#: between them); set by the harness (a worker loads by its ids instead).
ROOTS_ENV = "NOVASERIES_TEST_ROOTS"
#: What stestr runs (``python -m ...``) before ``-t TOP PATH``.
STESTR_RUNNER = ("-m", "stestr.subunit_runner.run", "discover")


def _kind(top, name):
    """What the dotted ``name`` is under the folder ``top``: "module" (a
    ``.py`` file), "package" (a folder with ``__init__.py``) or None."""
    path = os.path.join(top, *name.split("."))
    if os.path.isfile(path + ".py"):
        return "module"
    if os.path.isfile(os.path.join(path, "__init__.py")):
        return "package"
    return None


def module_of(test_id, top):
    """The module under ``top`` that defines ``test_id``
    (``pkg.module.Class.test``, a scenario's name after it in parentheses
    or a space): its shortest prefix that is a module, not a package; None
    when no prefix is one."""
    parts = re.split(r"[\s(]", test_id, maxsplit=1)[0].split(".")
    for end in range(1, len(parts)):
        kind = _kind(top, ".".join(parts[:end]))
        if kind is None:
            return None
        if kind == "module":
            return ".".join(parts[:end])
    return None


class RootsLoader(unittest.TestLoader):
    """A loader of dotted names under the folder ``top``: a module's tests
    (``loadTestsFromName``) or, for a package, those unittest's discovery
    finds in its folder (as discovery of the whole test path would find
    them there).  A module that fails to import, with any exception, is
    a failed test and an entry of ``errors``, as in discovery (stestr's
    listing then fails, naming it); one that raises SkipTest, a skipped
    test."""

    def __init__(self, top):
        super().__init__()
        self.top = top

    def loadTestsFromNames(self, names, module=None):
        suites = []
        for name in names:
            if _kind(self.top, name) == "package":
                start = os.path.join(self.top, *name.split("."))
                suites.append(self.discover(start, top_level_dir=self.top))
                continue
            try:  # a module (an unknown one fails as unittest fails it)
                suites.append(self.loadTestsFromName(name))
            except unittest.SkipTest as skip:  # as discovery: a skipped test
                suites.append(unittest.loader._make_skipped_test(name, skip, self.suiteClass))
            except Exception:  # as discovery records a module that raises
                failed, error = unittest.loader._make_failed_import_test(name, self.suiteClass)
                self.errors.append(error)
                suites.append(failed)
        return self.suiteClass(suites)


def _inside(top, name, path):
    """True when the dotted ``name``'s file or folder under ``top`` is in
    the folder ``path`` (where discovery would look for it)."""
    where = os.path.abspath(os.path.join(top, *name.split(".")))
    path = os.path.abspath(path)
    return os.path.commonpath([where, path]) == path


def plan(argv, environ):
    """``(top, names, options)`` for stestr's command line ``argv`` (the
    arguments after the interpreter): the test path's top, the modules or
    packages to load, and the runner's own options (``--list`` or
    ``--load-list FILE``); None to run ``argv`` as given: another command
    line, a listing without :data:`ROOTS_ENV`, a test no module defines,
    a name outside the test path (discovery would not find it)."""
    if tuple(argv[:3]) != STESTR_RUNNER or len(argv) < 7 or argv[3] != "-t":
        return None
    top, path, options = argv[4], argv[5], list(argv[6:])
    if options == ["--list"]:
        names = environ.get(ROOTS_ENV, "").split()
    elif len(options) == 2 and options[0] == "--load-list":
        with open(options[1], encoding="utf-8") as ids:
            modules = {module_of(line.strip(), top) for line in ids if line.strip()}
        names = [] if None in modules else sorted(modules)
    else:
        return None
    if not names or not all(_inside(top, name, path) for name in names):
        return None
    return top, names, options


def main(argv):
    """Run stestr's runner on what :func:`plan` loads, or ``argv`` as given."""
    # as under ``python -m``: the current directory first on sys.path
    # (unless safe_path), not this file's folder
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    if not getattr(sys.flags, "safe_path", False):
        sys.path.insert(0, os.getcwd())
    planned = plan(argv, os.environ)
    if planned is None:
        if tuple(argv[:3]) == STESTR_RUNNER:  # (a slower run: say why)
            sys.stderr.write("stestr_loader: discovering the whole test path "
                             "(no roots, or a test it cannot place)\n")
        os.execv(sys.executable, [sys.executable, *argv])
    top, names, options = planned
    from stestr.subunit_runner import program, run
    program.TestProgram(module=None, argv=[STESTR_RUNNER[1], *options, *names],
                        testRunner=functools.partial(run.SubunitTestRunner, stdout=sys.stdout),
                        testLoader=RootsLoader(top))


if __name__ == "__main__":
    main(sys.argv[1:])
