"""Result parsing, selections, venv recipe and the test environment."""

import unittest

from novaseries import runner, tree
from tests import helpers

CSV = """test,status,start_time,stop_time
nova.tests.unit.virt.ironic.test_driver.T.test_a,success,2026-01-01 00:00:00+00:00,x
nova.tests.unit.virt.ironic.test_driver.T.test_b,fail,2026-01-01 00:00:00+00:00,x
nova.tests.unit.virt.ironic.test_driver.T.test_c,skip,2026-01-01 00:00:00+00:00,x
nova.tests.unit.compute.test_compute_mgr.M.test_d,success,2026-01-01 00:00:00+00:00,x
nova.tests.unit.compute.test_compute_mgr.M.test_e,xfail,2026-01-01 00:00:00+00:00,x
nova.tests.unit.compute.test_compute_mgr.M.test_f,uxsuccess,2026-01-01 00:00:00+00:00,x
nova.tests.unit.other.O.test_g,success,2026-01-01 00:00:00+00:00,x
"""
FILTERS = ["nova.tests.unit.virt.ironic", "nova.tests.unit.compute.test_compute_mgr"]


class ParseTest(unittest.TestCase):

    def test_parse_csv(self):
        results = runner.parse_csv(CSV)
        self.assertEqual(len(results), 7)
        self.assertEqual(results["nova.tests.unit.virt.ironic.test_driver.T.test_b"], "failed")
        self.assertEqual(results["nova.tests.unit.compute.test_compute_mgr.M.test_e"], "passed")
        self.assertEqual(results["nova.tests.unit.compute.test_compute_mgr.M.test_f"], "failed")

    def test_split_and_count(self):
        groups = runner.split_by_filter(runner.parse_csv(CSV), FILTERS)
        counts = [runner.count(str(f), g) for f, g in groups]
        self.assertEqual([(o.passed, o.failed, o.skipped) for o in counts],
                         [(1, 1, 1), (2, 1, 0), (1, 0, 0)])
        self.assertIsNone(groups[-1][0])

    def test_zero_tests_is_a_failure(self):
        outcome = runner.count("sel", {})
        self.assertEqual((outcome.passed, outcome.failed), (0, 1))
        self.assertIn("ran no tests", outcome.note)
        self.assertEqual(runner.parse_csv("test,status,start_time,stop_time\n"), {})

    def test_totals_line(self):
        outcomes = [runner.Outcome("a", 3, 1, 2), runner.Outcome("b", 4)]
        self.assertEqual(runner.totals_line(outcomes), "7 passed, 1 failed, 2 skipped")
        self.assertEqual(outcomes[0].line(), "FAIL a: 3 passed, 1 failed, 2 skipped")


class TreeSelectionTest(helpers.ProjectTestCase):

    def test_functional_modules_and_changed_files(self):
        work = tree.prepare(self.ctx, self.target, self.tmp / "t")
        helpers.sample_series(work)
        helpers.commit(work, {"nova/tests/functional/test_servers.py": "# changed\n",
                              "nova/tests/functional/integrated_helpers.py": "# helper\n"},
                       helpers.message("Touch servers"))
        first = tree.series_commits(work)[0]
        self.assertEqual(runner.functional_modules(work, first), [])
        self.assertEqual(runner.functional_modules(work),
                         ["nova.tests.functional.test_bug_NNNNNNN",
                          "nova.tests.functional.test_servers"])
        helpers.commit(work, {"nova/tests/functional/test_servers.py": None},
                       helpers.message("Drop servers"))
        self.assertEqual(runner.functional_modules(work),
                         ["nova.tests.functional.test_bug_NNNNNNN"])
        self.assertIn("nova/virt/driver.py", runner.changed_files(work))

    def test_env_is_novas_tox_env(self):
        self.write_targets()
        (self.root / "targets" / "targets.toml").write_text(
            (self.root / "targets" / "targets.toml").read_text().replace(
                "[defaults]\n", '[defaults]\nenv = {PYTHONHASHSEED = "0", LC_ALL = "C.UTF-8"}\n'))
        from novaseries import targets
        target = targets.get(self.ctx, "fake")
        env = runner.test_env(target, self.tmp / "venv", self.tmp / "tree")
        self.assertEqual(env["PYTHONHASHSEED"], "0")
        self.assertEqual(env["PYTHONPATH"], str(self.tmp / "tree"))
        self.assertTrue(env["PATH"].startswith(str(self.tmp / "venv" / "bin")))

    def test_recipe_digest_follows_pins(self):
        one = runner._recipe_digest(self.target, "/usr/bin/python3.11")
        (self.root / "pins" / "fake.txt").write_text("six==1.17.0\n")
        self.assertNotEqual(one, runner._recipe_digest(self.target, "/usr/bin/python3.11"))

    def test_real_targets_file_loads(self):
        from novaseries import targets, util
        ctx = util.Context.create(helpers.REPO)
        known = targets.load(ctx)
        self.assertIn("master", known)
        self.assertEqual(known["master"].env["PYTHONHASHSEED"], "0")
        self.assertTrue(known["master"].check_commits)
        self.assertEqual(known["pike"].interpreter, "python2.7")


class UnitRelevanceTest(unittest.TestCase):

    def test_unit_relevant(self):
        self.assertFalse(runner.unit_relevant([
            "nova/tests/functional/regressions/test_bug_NNNNNNN.py",
            "releasenotes/notes/x.yaml"]))
        self.assertTrue(runner.unit_relevant([
            "nova/tests/functional/test_x.py", "nova/tests/fixtures/ironic.py"]))
        self.assertTrue(runner.unit_relevant(["nova/virt/ironic/driver.py"]))
