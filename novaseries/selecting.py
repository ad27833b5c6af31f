"""Which of Nova's tests a run selects: the target's unit selections, the
test modules the series touches, the functional selections, the modules
and packages a run's processes load (:func:`test_roots`) and, where those
cannot be used, the narrowest ``stestr --test-path`` for them.
"""

import ast
import os
import pathlib
import re

from novaseries import tree as tree_mod
from novaseries.tree import BASE_TAG, changed_files
from novaseries.util import git

#: The folder of Nova's functional tests, in a tree.
FUNCTIONAL_TESTS = "nova/tests/functional"
#: The functional tests' ``stestr --test-path``.
FUNCTIONAL_PATH = f"./{FUNCTIONAL_TESTS}"
#: Paths that no test imports or reads: the docs' sources and release
#: notes (not all of ``doc/``: functional tests read its API and
#: notification samples and API schemas).
DOCS = ("releasenotes/", "doc/source/", "api-guide/", "api-ref/")
#: Paths no unit test imports or reads: a commit touching only these cannot
#: change unit results, so check-commits does not re-run the unit selections.
UNIT_IRRELEVANT = (f"{FUNCTIONAL_TESTS}/", "doc/") + DOCS


def test_module(path):
    """The dotted module name of a ``test_*.py`` file's path, else None."""
    name = pathlib.PurePosixPath(path)
    if name.suffix == ".py" and name.name.startswith("test_"):
        return ".".join(name.with_suffix("").parts)
    return None


def test_modules(tree, rev="HEAD", under=FUNCTIONAL_TESTS, since=BASE_TAG):
    """Test modules (``test_*.py`` under ``under``) the series adds or
    touches in ``since..rev``, as dotted module names."""
    return [m for m in map(test_module, changed_files(tree, rev, (under,), since)) if m]


def unit_filters(target, tree, rev="HEAD", touched=None):
    """The target's unit selections that the series up to ``rev`` targets,
    plus the unit test modules it touches that they do not cover (e.g.
    nova.tests.unit.test_fixtures).

    ``touched``: the files of a commit before the last one (check-commits
    passes a commit's own files there): a selection with ``unit_paths``
    (targets.toml) runs at such a commit only when it touches one of those
    paths (the code it tests, its own tests), one without runs always (a
    commit that changes none of the code a selection tests cannot change
    its result).  Without ``touched`` (the whole series up to ``rev``:
    ``test`` at HEAD, check-commits' last commit) every selection runs,
    whatever the series touches, so that none is left out of the final
    run (one that selects nothing there fails: ``ran no tests``).
    The unit test modules outside the selections run at the commits that
    touch them (``touched`` given), else when the series touches them.  A
    target stacked on another series (``below``, e.g. master-all) adds
    only the modules its own patches touch: those of the series below ran
    in that series' target, and the patches on top do not change the code
    they test unless they touch it (then the selections cover it).
    """
    if touched is not None:
        modules = [m for m in map(test_module, touched)
                   if m and m.startswith("nova.tests.unit.")]
    else:
        below = target.below_series()
        since = tree_mod.series_commits(tree, rev)[len(below) - 1] if below else BASE_TAG
        modules = test_modules(tree, rev, "nova/tests/unit", since)
    selected = [u for u in target.unit
                if touched is None or u not in target.unit_paths or
                any(f.startswith(tuple(target.unit_paths[u])) for f in touched)]
    # (a selection naming tests in a module, ``module.Case.test_x``,
    # covers that module's changes: it names the tests a change adds)
    extra = [m for m in modules
             if not any(m == u or m.startswith(u + ".") or u.startswith(m + ".")
                        for u in target.unit)]
    return selected + [re.escape(m) + r"\b" for m in extra]


def _filter_target(tree, pattern):
    """What one stestr filter (``nova.tests.unit.x``,
    ``nova\\.tests\\.unit\\.x\\b``, ``nova\\.tests\\.functional\\.x\\.``, a class
    or test in a module) names in ``tree``: ``(parts, end, path)``, the
    filter's dotted parts, how many of them name ``path``, and ``path``,
    the folder all of them name or else the module file its longest
    prefix names; None when a folder in between has no such module, or
    nothing matches."""
    parts = pattern.replace("\\b", "").replace("\\", "").rstrip(".").split(".")
    path = pathlib.Path(tree, *parts)
    if path.is_dir():
        return parts, len(parts), path
    for end in range(len(parts), 0, -1):
        module = pathlib.Path(tree, *parts[:end]).with_suffix(".py")
        if module.is_file():
            return parts, end, module
        if pathlib.Path(tree, *parts[:end]).is_dir():
            return None
    return None


def _filter_dir(tree, pattern):
    """The directory of what one unit filter names: the package itself, or
    the directory of the module, also when the filter names a class or a
    test in it (``nova.tests.unit.x.test_y.Case.test_z``); None if it
    names nothing in the tree."""
    named = _filter_target(tree, pattern)
    if named is None:
        return None
    path = named[2]
    return path if path.is_dir() else path.parent


def unit_test_groups(tree, filters):
    """``[(test_path, filters)]``: the unit ``filters`` as stestr runs, each
    with the narrowest ``--test-path`` (:func:`unit_test_path`) -- one run
    when one directory below nova/tests/unit holds them all, else one per
    directory of the filters (so that stestr does not import every unit
    test module of Nova to list a few hundred), or one run over the whole
    unit tree when a filter names nothing it can place."""
    path = unit_test_path(tree, filters)
    if path is not None:
        return [(path, list(filters))]
    groups = {}
    for pattern in filters:
        one = unit_test_path(tree, [pattern])
        if one is None:
            return [(None, list(filters))]
        groups.setdefault(one, []).append(pattern)
    return list(groups.items())


def unit_test_path(tree, filters):
    """The narrowest directory under nova/tests/unit that holds every
    module or package the unit ``filters`` name (``nova.tests.unit.x`` or
    ``nova\\.tests\\.unit\\.x\\b``), for ``stestr --test-path``; None for
    nova/tests/unit itself or a filter that names none.

    stestr imports every test module under its test path to list the tests
    and again in each worker: for the ironic driver's unit tests alone that
    is a few hundred modules fewer.
    """
    dirs = []
    for pattern in filters:
        path = _filter_dir(tree, pattern)
        if path is None:
            return None
        dirs.append(path)
    unit = pathlib.Path(tree, "nova", "tests", "unit")
    common = pathlib.Path(os.path.commonpath(dirs)) if dirs else unit
    if common == unit or unit not in common.parents:
        return None
    return "./" + common.relative_to(tree).as_posix()


def _discovered(path):
    """True for what unittest's discovery loads: a ``test*.py`` module or
    a package (a folder with ``__init__.py``)."""
    if path.suffix == ".py":
        return path.name.startswith("test") and path.is_file()
    return (path / "__init__.py").is_file()


def test_roots(tree, filters):
    """The dotted modules and packages that hold every test the stestr
    ``filters`` name (``nova.tests.unit.x``, ``nova\\.tests\\.unit\\.x\\b``,
    ``nova\\.tests\\.functional\\.x\\.``, a class or test in a module),
    none inside another: each filter's package, or the module it names or
    names a class or test of.  stestr searches the ids for a filter, so
    one that ends at a module's or package's own name, unanchored (no
    ``\\b``, ``\\.``), also takes the modules and packages beside it whose
    names begin with that name (``test_compute`` takes
    ``test_compute_mgr``).  None when a filter names nothing in ``tree``,
    or a module discovery would not load (not ``test*.py``): the run then
    discovers its whole test path.  What a run's listing loads instead of
    discovering (``nova_side/stestr_loader.py``).
    """
    roots = set()
    for pattern in filters:
        named = _filter_target(tree, pattern)
        if named is None:
            return None
        parts, end, path = named
        found = [path]
        if end == len(parts) and not pattern.endswith(("\\b", "\\.")):
            stem = path.name.removesuffix(".py")
            found += [p for p in path.parent.iterdir()
                      if p.name.startswith(stem) and p != path and _discovered(p)]
        if not all(map(_discovered, found)):
            return None
        roots.update(".".join([*parts[:end - 1], p.name.removesuffix(".py")]) for p in found)
    return sorted(r for r in roots if not any(r.startswith(o + ".") for o in roots))


def functional_modules(tree, rev="HEAD", since=BASE_TAG):
    """Functional test modules the series adds or touches in
    ``since..rev`` (and that exist at ``rev``)."""
    return test_modules(tree, rev, FUNCTIONAL_TESTS, since)


def functional_selections(target, tree, rev="HEAD", functional_only=None, since=BASE_TAG):
    """``(modules, selections)``: what a functional run of ``target`` at
    ``rev`` runs.  ``modules``: the functional test modules the series
    touches in ``since..rev`` (:func:`functional_modules`), only those of
    ``functional_only`` when given (check-commits before the last commit);
    ``selections``: the target's ``functional``
    selections (targets.toml), at HEAD and at the last commit only
    (``functional_only`` None), with the touched modules a selection
    names or holds left to it (each test is counted once, under its
    selection)."""
    modules = functional_modules(tree, rev, since)
    if functional_only is not None:
        return [m for m in modules if m in functional_only], []
    selections = list(target.functional)
    modules = [m for m in modules
               if not any(m == s or m.startswith(s + ".") for s in selections)]
    return modules, selections


def unit_relevant(files):
    """True unless every path in ``files`` is under :data:`UNIT_IRRELEVANT`."""
    return any(not f.startswith(UNIT_IRRELEVANT) for f in files)


def tests_only(files):
    """True when every path in ``files`` is a functional test module
    (``test_*.py`` under :data:`FUNCTIONAL_TESTS`) or under :data:`DOCS`:
    a commit of only these (a reproducer, a release note) leaves every
    line of Nova's code, and every other test, as the commit before it
    has them (a functional helper or fixture is not one of these: other
    tests import it)."""
    return all(f.startswith(DOCS) or
               (f.startswith(FUNCTIONAL_TESTS + "/") and test_module(f) is not None)
               for f in files)


def imports(source, module):
    """True when the Python ``source`` (text) may load ``module`` (dotted):
    it imports the module or something in it; it imports relatively a
    name that is the module's last; a string is the module's name or
    begins with it and a dot (``mock.patch("<module>.Base.x")`` imports
    it); or it cannot be parsed.  Not found: an attribute of an imported
    package (``regressions.test_bug_1`` after ``from ... import
    regressions``), which Nova's tests do not use for test modules."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return True
    last = module.rpartition(".")[2]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            named = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:
            if last in [*(node.module or "").split("."), *(a.name for a in node.names)]:
                return True
            continue
        elif isinstance(node, ast.ImportFrom):
            named = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            named = [node.value]
        else:
            continue
        if any(n == module or n.startswith(module + ".") for n in named):
            return True
    return False


def imported_elsewhere(tree, rev, files):
    """The functional test modules among ``files`` that another Python
    file under ``nova/`` imports at ``rev`` (:func:`imports`; e.g.
    ``nova.tests.functional.test_servers``, whose classes other tests
    subclass): a change to one can change those tests' results.  The
    files that mention the module's last name as a whole word are read;
    one that only names it in a sentence or as a path (a docstring's
    ``regressions/test_bug_1.py``) does not count."""
    found = []
    for path in files:
        module = test_module(path)
        if module is None or not path.startswith(FUNCTIONAL_TESTS + "/"):
            continue
        name = pathlib.PurePosixPath(path).stem
        proc = git(tree, "grep", "-l", "-w", "-F", name, rev, "--", "nova/", check=False)
        hits = [line.partition(":")[2] for line in proc.stdout.splitlines()]
        if any(hit != path and hit.endswith(".py") and
               imports(git(tree, "show", f"{rev}:{hit}"), module) for hit in hits):
            found.append(path)
    return found
