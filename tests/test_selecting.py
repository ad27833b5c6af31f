"""What a run selects: the functional test modules a series touches,
the paths that no unit test sees."""

import pathlib
import tempfile
import unittest

from novaseries import selecting, tree
from tests import helpers


class FunctionalModulesTest(helpers.ProjectTestCase):

    def test_functional_modules_and_changed_files(self):
        work = tree.prepare(self.ctx, self.target, self.tmp / "t")
        helpers.sample_series(work)
        helpers.commit(work, {"nova/tests/functional/test_servers.py": "# changed\n",
                              "nova/tests/functional/integrated_helpers.py": "# helper\n"},
                       helpers.message("Touch servers"))
        first = tree.series_commits(work)[0]
        self.assertEqual(selecting.functional_modules(work, first), [])
        self.assertEqual(selecting.functional_modules(work),
                         ["nova.tests.functional.test_bug_NNNNNNN",
                          "nova.tests.functional.test_servers"])
        helpers.commit(work, {"nova/tests/functional/test_servers.py": None},
                       helpers.message("Drop servers"))
        self.assertEqual(selecting.functional_modules(work),
                         ["nova.tests.functional.test_bug_NNNNNNN"])
        self.assertIn("nova/virt/driver.py", tree.changed_files(work))


class UnitRelevanceTest(unittest.TestCase):

    def test_unit_relevant(self):
        self.assertFalse(selecting.unit_relevant([
            "nova/tests/functional/regressions/test_bug_NNNNNNN.py",
            "releasenotes/notes/x.yaml"]))
        self.assertTrue(selecting.unit_relevant([
            "nova/tests/functional/test_x.py", "nova/tests/fixtures/ironic.py"]))
        self.assertTrue(selecting.unit_relevant(["nova/virt/ironic/driver.py"]))

    def test_tests_only(self):
        self.assertTrue(selecting.tests_only([
            "nova/tests/functional/regressions/test_bug_NNNNNNN.py",
            "releasenotes/notes/x.yaml", "doc/source/x.rst"]))
        self.assertFalse(selecting.tests_only([
            "nova/tests/functional/test_x.py",
            "nova/tests/functional/integrated_helpers.py"]))
        self.assertFalse(selecting.tests_only([
            "nova/tests/functional/test_x.py", "nova/tests/unit/test_y.py"]))
        # functional tests read the API samples under doc/
        self.assertFalse(selecting.tests_only([
            "nova/tests/functional/test_x.py",
            "doc/api_samples/servers/server-get-resp.json"]))
        self.assertFalse(selecting.unit_relevant(
            ["doc/api_samples/servers/server-get-resp.json"]))


class TestRootsTest(unittest.TestCase):
    """The modules and packages a run's listing loads (the stestr loader)."""

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.tree = pathlib.Path(tmp.name)
        for path in ("nova/__init__.py", "nova/tests/__init__.py",
                     "nova/tests/unit/__init__.py", "nova/tests/unit/test_fixtures.py",
                     "nova/tests/unit/virt/__init__.py",
                     "nova/tests/unit/virt/ironic/__init__.py",
                     "nova/tests/unit/virt/ironic/test_driver.py",
                     "nova/tests/unit/virt/ironic/test_driver_more.py",
                     "nova/tests/unit/virt/ironic/utils.py",
                     "nova/tests/functional/__init__.py",
                     "nova/tests/functional/regressions/__init__.py",
                     "nova/tests/functional/regressions/test_bug_1.py"):
            (self.tree / path).parent.mkdir(parents=True, exist_ok=True)
            (self.tree / path).write_text("")

    def test_packages_modules_and_what_is_in_them(self):
        roots = selecting.test_roots(self.tree, [
            "nova.tests.unit.virt.ironic.test_driver.IronicDriverTestCase.test_spawn",
            r"nova\.tests\.unit\.test_fixtures\b",
            "nova.tests.unit.virt.ironic"])
        # the module inside the package is the package's
        self.assertEqual(["nova.tests.unit.test_fixtures", "nova.tests.unit.virt.ironic"],
                         roots)
        self.assertEqual(["nova.tests.functional.regressions.test_bug_1"],
                         selecting.test_roots(self.tree, [
                             r"nova\.tests\.functional\.regressions\.test_bug_1\."]))

    def test_an_unanchored_module_takes_the_modules_its_name_begins(self):
        # stestr searches the ids: test_driver matches test_driver_more's too
        self.assertEqual(["nova.tests.unit.virt.ironic.test_driver",
                          "nova.tests.unit.virt.ironic.test_driver_more"],
                         selecting.test_roots(self.tree,
                                              ["nova.tests.unit.virt.ironic.test_driver"]))
        for anchored in (r"nova\.tests\.unit\.virt\.ironic\.test_driver\b",
                         "nova.tests.unit.virt.ironic.test_driver.Case.test_x"):
            self.assertEqual(["nova.tests.unit.virt.ironic.test_driver"],
                             selecting.test_roots(self.tree, [anchored]))
        # a package too: ironic takes ironic_more
        (self.tree / "nova/tests/unit/virt/ironic_more").mkdir()
        (self.tree / "nova/tests/unit/virt/ironic_more/__init__.py").write_text("")
        self.assertEqual(["nova.tests.unit.virt.ironic", "nova.tests.unit.virt.ironic_more"],
                         selecting.test_roots(self.tree, ["nova.tests.unit.virt.ironic"]))
        # a module discovery does not load (not test*.py): discovery
        self.assertIsNone(selecting.test_roots(self.tree,
                                               ["nova.tests.unit.virt.ironic.utils"]))

    def test_a_filter_that_names_nothing(self):
        for name in ("nova.tests.unit.virt.ironic.test_nothing",
                     "nova.tests.unit.nothing.test_x", "other.test_x"):
            self.assertIsNone(selecting.test_roots(self.tree, ["nova.tests.unit", name]))


class ImportsTest(unittest.TestCase):

    def test_imports(self):
        module = "nova.tests.functional.regressions.test_bug_1"
        for source, expected in [
                ("import nova.tests.functional.regressions.test_bug_1\n", True),
                ("from nova.tests.functional.regressions import test_bug_1\n", True),
                ("from nova.tests.functional.regressions.test_bug_1 import Base\n", True),
                ("from . import test_bug_1\n", True),
                ("def broken(:\n", True),
                ('"""The simplest cases: regressions/test_bug_1.py."""\nimport os\n', False),
                ("from nova.tests.functional.regressions import test_bug_10\n", False),
                ("mock.patch('nova.tests.functional.regressions.test_bug_1.Base.x')\n", True),
                ("x = 'nova.tests.functional.regressions.test_bug_10'\n", False),
                ("from .test_bug_1 import Base\n", True),
                ('"""See nova.tests.functional.regressions.test_bug_1."""\n', False),
                ('"""nova.tests.functional.regressions.test_bug_1"""\n', True),
                ("print 'python 2'\n", True)]:
            self.assertEqual(expected, selecting.imports(source, module), source)
