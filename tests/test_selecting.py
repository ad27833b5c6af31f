"""What a run selects: the functional test modules a series touches,
the paths that no unit test sees."""

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
