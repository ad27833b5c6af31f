"""The Ironic wing (``novaseries/ironic/``): imports point down, none hides
in a function, and the driver tests (``novaseries/nova_side/``) are found by
the path-based runs of ``novaseries ironic driver-tests``, not by the harness's
own discovery; of the rest of the harness, the wing imports only what
novaseries/ironic/__init__.py declares.

No Ironic, no Nova: the driver tests skip themselves without them.
"""

import ast
import os
import subprocess
import sys
import tempfile
import unittest

from novaseries import nova_side
from novaseries.ironic import driver_runs, run_env
from tests import helpers

WING = helpers.REPO / "novaseries" / "ironic"
#: The wing's modules, lowest first: each imports only modules before it.
ORDER = ("run_env", "layout", "service", "venv_setup", "rest", "request_log", "real_deploy",
         "real_operator", "real_backend", "api_proxy", "pike", "driver_runs", "hang_probe_run")
#: What the wing may import of the rest of the harness.
HARNESS = {"novaseries.procs", "novaseries.util", "novaseries.scenarios.scenario"}
#: What its modules that Nova's venv does not import (outside
#: ``nova_side.HARNESS_MODULES``) may import as well.
HARNESS_SIDE = {"novaseries.venv_build"}


def _imports(path):
    """``[(node, inside a function?)]`` of the imports of ``path``."""
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append((child, in_function))
            visit(child, in_function or isinstance(
                child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))
    visit(ast.parse(path.read_text()), False)
    return found


def _names(node):
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    return [f"{node.module}.{a.name}" for a in node.names] + [node.module]


class LayoutTest(unittest.TestCase):

    def test_modules_import_only_lower_ones(self):
        self.assertEqual(set(ORDER), {p.stem for p in WING.glob("*.py")} - {"__init__"})
        for i, name in enumerate(ORDER):
            for node, _ in _imports(WING / f"{name}.py"):
                for imported in _names(node):
                    parts = imported.split(".")
                    if parts[:2] == ["novaseries", "ironic"] and len(parts) > 2:
                        self.assertIn(parts[2], ORDER[:i], f"{name} imports {imported}")

    def test_imports_of_the_harness_only_the_declared_modules(self):
        for path in WING.glob("*.py"):
            module = f"novaseries.ironic.{path.stem}".removesuffix(".__init__")
            allowed = HARNESS | (set() if module in nova_side.HARNESS_MODULES
                                 else HARNESS_SIDE)
            for node, _ in _imports(path):
                if isinstance(node, ast.ImportFrom) and node.module != "novaseries":
                    imported = [node.module]
                elif isinstance(node, ast.ImportFrom):
                    imported = [f"novaseries.{a.name}" for a in node.names]
                else:
                    imported = [a.name for a in node.names]
                for name in imported:
                    if name.split(".")[0] == "novaseries" and \
                            name.split(".")[:2] != ["novaseries", "ironic"]:
                        self.assertIn(name, allowed, f"{module}:{node.lineno}")

    def test_no_import_inside_a_function(self):
        for path in WING.rglob("*.py"):
            inside = [node.lineno for node, in_function in _imports(path) if in_function]
            self.assertEqual([], inside, path)

    def test_the_runs_find_their_tests(self):
        self.assertTrue((driver_runs.DRIVER_TESTS / "test_e2e.py").is_file())
        self.assertTrue((driver_runs.PIKE_DRIVER_TESTS / "test_pike_e2e.py").is_file())
        self.assertFalse((helpers.REPO / "tests" / "realironic").exists())

    def test_driver_tests_run_by_path_skip_without_nova(self):
        """``unittest discover -s <folder> -t <folder>``, as driver_runs.run
        does, without Nova and without an Ironic venv: the modules find
        each other by bare name, everything skips, pike's tests are not
        collected."""
        with tempfile.TemporaryDirectory() as tmp:
            env = dict(os.environ, PYTHONPATH=str(helpers.REPO), NOVASERIES_BUILD=tmp)
            env[run_env.VENV] = os.path.join(tmp, "no-venv")
            env.pop(run_env.REQUIRED, None)
            tests = str(driver_runs.DRIVER_TESTS)
            proc = subprocess.run(
                [sys.executable, "-m", "unittest", "discover", "-v", "-s", tests, "-t", tests],
                cwd=tmp, env=env, capture_output=True, text=True, timeout=120)
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn("test_ironic_service.TestErrors.test_only_loopback", proc.stderr)
        self.assertIn("test_e2e", proc.stderr)  # skipped as a module, not an error
        self.assertNotIn("pike", proc.stderr.lower())
        self.assertNotIn("ERROR", proc.stderr)


if __name__ == "__main__":
    unittest.main()
