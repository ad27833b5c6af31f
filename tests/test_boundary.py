"""Where code runs: ``novaseries/nova_side/`` runs inside a venv of Nova's,
everything else in the harness's own Python.

* Outside ``nova_side``: standard library only (``psutil`` and ``uv`` only
  where an ``ImportError`` is caught), and never ``nova_side`` itself.
* Inside: of the harness, only ``nova_side.HARNESS_MODULES``, each of which
  imports only the standard library and modules of that list.
* Every module of the harness (``novaseries/``, ``nova_side`` included)
  at most :data:`MODULE_LINES` lines; the harness's own tests (``tests/``)
  are outside the rule.
* ``nova_side.PYTHON27``: parsed by Python 2.7 (pike's venv), importing
  nothing of the harness.
"""

import ast
import json
import subprocess
import sys
import unittest

from novaseries import nova_side, util, venv_build
from tests import helpers

PACKAGE = helpers.REPO / "novaseries"
NOVA_SIDE = PACKAGE / "nova_side"
#: Not standard library, imported where an ImportError is caught: the
#: harness runs without them.
OPTIONAL = {"psutil", "uv", "hypothesis"}
#: Lists the imports of files given as arguments, as JSON; run by Python 2.7.
PY27_IMPORTS = """
import ast, json, sys
out = {}
for f in sys.argv[1:]:
    names = []
    for n in ast.walk(ast.parse(open(f).read(), f)):
        if isinstance(n, ast.Import):
            names.extend(a.name for a in n.names)
        elif isinstance(n, ast.ImportFrom):
            names.extend([n.module] + [n.module + '.' + a.name for a in n.names])
    out[f] = names
print(json.dumps(out))
"""


def _module(path):
    parts = path.relative_to(helpers.REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path):
    """``[(lineno, module, guarded)]``: each import of ``path``; a ``from``
    import gives its module and each ``module.name``; guarded: inside a
    ``try`` that catches ImportError."""
    found = []

    def visit(node, guarded):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend((child.lineno, a.name, guarded) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                assert not child.level, f"{path}:{child.lineno}: relative import"
                found.append((child.lineno, child.module, guarded))
                found.extend((child.lineno, f"{child.module}.{a.name}", guarded)
                             for a in child.names)
            if isinstance(child, ast.Try):
                catches = any(isinstance(h.type, ast.Name) and h.type.id == "ImportError"
                              for h in child.handlers)
                for stmt in child.body:
                    visit(ast.Module(body=[stmt], type_ignores=[]), guarded or catches)
                for rest in (child.handlers, child.orelse, child.finalbody):
                    for stmt in rest:
                        visit(ast.Module(body=[stmt], type_ignores=[]), guarded)
            else:
                visit(child, guarded)
    visit(ast.parse(path.read_text()), False)
    return found


def _python27_files():
    files = []
    for name in nova_side.PYTHON27:
        path = NOVA_SIDE / name
        files.extend(sorted(path.glob("*.py")) if path.is_dir() else [path])
    return files


def _harness_modules(packages=False):
    """Every module of ``novaseries`` outside ``nova_side``: {name: path};
    with the packages' ``__init__`` if ``packages``."""
    return {_module(p): p for p in PACKAGE.rglob("*.py")
            if NOVA_SIDE not in p.parents and "__pycache__" not in p.parts
            and (packages or p.name != "__init__.py")}


class BoundaryTest(unittest.TestCase):

    def test_nothing_outside_imports_nova_or_the_nova_side(self):
        for name, path in _harness_modules(packages=True).items():
            for line, imported, guarded in _imports(path):
                top = imported.split(".")[0]
                where = f"{path.relative_to(helpers.REPO)}:{line} imports {imported}"
                if top == "novaseries":
                    self.assertFalse(imported.startswith("novaseries.nova_side"), where)
                elif top in OPTIONAL:
                    self.assertTrue(guarded, where + " without catching ImportError")
                else:
                    self.assertTrue(top in sys.stdlib_module_names, where)

    def test_nova_side_imports_only_the_declared_harness_modules(self):
        harness = _harness_modules()
        allowed = set(nova_side.HARNESS_MODULES)
        self.assertLessEqual(allowed, set(harness))
        seen = set()
        py27 = set(_python27_files())
        for path in NOVA_SIDE.rglob("*.py"):
            if path in py27 or "__pycache__" in path.parts:
                continue
            for line, imported, _ in _imports(path):
                if imported in harness:
                    seen.add(imported)
                    self.assertIn(imported, allowed,
                                  f"{path.relative_to(helpers.REPO)}:{line} imports {imported}")
        # a declared module that nothing imports directly must be imported
        # by another declared one (the list says what Nova's venv loads)
        for name in sorted(allowed):
            for line, imported, guarded in _imports(harness[name]):
                top = imported.split(".")[0]
                if imported in harness:
                    seen.add(imported)
                    self.assertIn(imported, allowed, f"{name}:{line} imports {imported}")
                elif top == "novaseries":
                    continue  # a package, whose __init__ is checked below
                elif not guarded:
                    self.assertTrue(top in sys.stdlib_module_names,
                                    f"{name}:{line} imports {imported}")
        self.assertEqual(sorted(allowed), sorted(seen & allowed))
        # the packages they are in run their __init__ first
        for name in allowed:
            parts = name.split(".")
            for i in range(1, len(parts)):
                init = PACKAGE.parent.joinpath(*parts[:i], "__init__.py")
                self.assertEqual([], _imports(init), init)

    def test_python27_code_imports_nothing_of_the_harness(self):
        # pike's run has only the pike tree on PYTHONPATH
        files = _python27_files()
        self.assertTrue(files)
        for path in files:
            for line, imported, _ in _imports(path):
                self.assertNotEqual("novaseries", imported.split(".")[0], (path, line))

    def test_python27_code_parses_as_python27(self):
        try:
            python27 = venv_build.find_interpreter("python2.7")
        except util.HarnessError as exc:
            self.skipTest(str(exc))
        files = [str(p) for p in _python27_files()]
        proc = subprocess.run([str(python27), "-c", PY27_IMPORTS, *files],
                              capture_output=True, text=True)
        self.assertEqual(0, proc.returncode, proc.stderr)
        found = json.loads(proc.stdout)
        self.assertEqual(sorted(files), sorted(found))
        for f, names in found.items():
            self.assertEqual([], [n for n in names if n.split(".")[0] == "novaseries"], f)


#: Lines a module of the harness may have (docstrings and comments count).
MODULE_LINES = 500


class ModuleSizeTest(unittest.TestCase):
    """No module under ``novaseries/`` is over :data:`MODULE_LINES` lines;
    ``tests/`` is not checked: the rule is for the harness's modules."""

    def test_no_module_over_its_size(self):
        long = {str(path.relative_to(PACKAGE)): length for path in PACKAGE.rglob("*.py")
                if (length := len(path.read_text().splitlines())) > MODULE_LINES}
        self.assertEqual({}, long)


if __name__ == "__main__":
    unittest.main()
