"""test_tree and test_modes with a fake ``stestr`` in a fake venv: what a
run's exit status and results count as, the functional selections."""

import json
import pathlib
import shutil
import sys
import tempfile
import unittest
from unittest import mock

from novaseries import flake8_run, selecting, stestr_run, testrun, util, venvs
from tests import helpers


PASSED_CSV = """test,status,start_time,stop_time
nova.tests.unit.virt.ironic.test_driver.T.test_a,success,2026-01-01 00:00:00+00:00,x
nova.tests.unit.virt.ironic.test_driver.T.test_b,success,2026-01-01 00:00:00+00:00,x
"""


def fake_tree_and_venv(test, prefix):
    """``(tmp, tree, venv)`` for a test of testrun.test_tree with a fake
    stestr: a temporary folder (removed after ``test``) holding a tree with
    one unit test module of the ironic driver and an empty venv's bin."""
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=prefix))
    test.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
    tree = tmp / "tree"
    (tree / "nova/tests/unit/virt/ironic").mkdir(parents=True)
    (tree / "nova/tests/unit/virt/ironic/test_driver.py").write_text("")
    venv = tmp / "venv"
    (venv / "bin").mkdir(parents=True)
    return tmp, tree, venv


#: The fake venv's tools (:func:`fake_tools`): ``stestr`` logs its
#: arguments (a JSON list a line) to ``stestr.calls``, its ``PYTHON`` and
#: listing roots to ``stestr.python``; ``stestr init``
#: does nothing else; ``stestr list``
#: prints the ids of ``<kind>.list``, else those of ``<kind>.csv`` (kind:
#: functional when its test path is the functional tree, else unit);
#: ``stestr run`` writes its kind as its "stream" and exits with the number
#: in ``rc`` (0 without it); ``python`` (the venv's, running
#: subunit_status.py) prints the statuses of that kind's CSV as JSON.
FAKE_TOOLS = {
    "stestr": """import json, os, sys
folder = {folder!r}
open(os.path.join(folder, 'stestr.calls'), 'a').write(json.dumps(sys.argv[1:]) + '\\n')
open(os.path.join(folder, 'stestr.python'), 'a').write(
    json.dumps([os.environ.get('PYTHON'), os.environ.get('NOVASERIES_TEST_ROOTS')]) + '\\n')
kind = 'functional' if any('tests/functional' in a for a in sys.argv) else 'unit'
if 'init' in sys.argv:
    sys.exit(0)
if 'list' in sys.argv:
    path = os.path.join(folder, kind + '.list')
    if os.path.exists(path):
        sys.stdout.write(open(path).read())
    else:
        rows = open(os.path.join(folder, kind + '.csv')).read().splitlines()[1:]
        sys.stdout.write(''.join(r.split(',')[0] + '\\n' for r in rows if r))
    sys.exit(0)
sys.stdout.write(kind)
sys.stderr.write('worker killed\\n')
rc = os.path.join(folder, 'rc')
sys.exit(int(open(rc).read()) if os.path.exists(rc) else 0)
""",
    "python": """import json, os, sys
folder = {folder!r}
kind = sys.stdin.read().strip() or 'unit'
rows = open(os.path.join(folder, kind + '.csv')).read().splitlines()[1:]
print(json.dumps(dict(r.split(',')[:2] for r in rows if r)))
""",
}


def fake_tools(venv, folder):
    """Write :data:`FAKE_TOOLS` into ``venv``'s bin, reading and writing
    their files in ``folder``."""
    for name, body in FAKE_TOOLS.items():
        script = venv / "bin" / name
        script.write_text(f"#!{sys.executable}\n" + body.format(folder=str(folder)))
        script.chmod(0o755)


class FakeStestrTreeTest(unittest.TestCase):
    """testrun.test_tree with a fake ``stestr`` and ``python`` in a fake
    venv (:func:`fake_tools`): what a stestr run's exit status and its
    results count as."""

    def setUp(self):
        self.tmp, self.tree, self.venv = fake_tree_and_venv(self, "novaseries-stestr-")
        helpers.capture_log(self)

    def fake(self, rc, csv_text, listed=None):
        """stestr exits ``rc``, its stream's statuses are those of
        ``csv_text``; ``stestr list`` gives ``listed`` (default: the
        CSV's tests)."""
        (self.tmp / "unit.csv").write_text(csv_text)
        (self.tmp / "rc").write_text(str(rc))
        if listed is not None:
            (self.tmp / "unit.list").write_text("".join(t + "\n" for t in listed))
        fake_tools(self.venv, self.tmp)

    def run_tree(self, unit, unit_paths=None, touched=None, changed=()):
        target = mock.Mock(env={}, mode=None, unit=list(unit),
                           unit_paths=dict(unit_paths or {}), functional=[],
                           below_series=mock.Mock(return_value=[]))
        target.name = "t"
        ctx = mock.Mock()
        ctx.results.side_effect = lambda name: self.tmp / "results" / name
        with mock.patch.object(selecting, "changed_files", return_value=list(changed)), \
                mock.patch.object(selecting, "test_modules", return_value=[]), \
                mock.patch.object(selecting, "functional_modules", return_value=[]), \
                mock.patch.object(testrun, "say"):
            return testrun.test_tree(ctx, target, self.tree, self.venv, rev="HEAD",
                                     label="t@HEAD", flake8=False, touched=touched)

    def test_nonzero_exit_without_failed_test_is_a_failure(self):
        # a worker killed between tests: stestr exits 1, the stream holds
        # only passed tests; the tests after the kill are lost
        self.fake(1, PASSED_CSV)
        outcomes = self.run_tree(["nova.tests.unit.virt.ironic"])
        self.assertGreaterEqual(sum(o.failed for o in outcomes), 1, outcomes)
        failed = [o for o in outcomes if o.failed]
        self.assertEqual(["t@HEAD unit stestr run"], [o.name for o in failed])
        self.assertIn("stestr exited 1", failed[0].note)
        self.assertIn("unit.stderr.log", failed[0].note)
        # the tests that did run still count
        self.assertEqual(2, sum(o.passed for o in outcomes))

    def test_zero_exit_with_passed_tests_passes(self):
        self.fake(0, PASSED_CSV)
        outcomes = self.run_tree(["nova.tests.unit.virt.ironic"])
        self.assertEqual((2, 0), (sum(o.passed for o in outcomes),
                                  sum(o.failed for o in outcomes)))

    def test_a_killed_worker_fails_the_run_and_names_the_tests(self):
        # stestr exits 0, but the worker was killed under test_c (in
        # progress) and before test_d (listed, never in the stream)
        prefix = "nova.tests.unit.virt.ironic.test_driver.T."
        self.fake(0, PASSED_CSV + f"{prefix}test_c,inprogress,x,x\n",
                  listed=[prefix + n for n in ("test_a", "test_b", "test_c", "test_d")])
        outcomes = self.run_tree(["nova.tests.unit.virt.ironic"])
        failed = [o for o in outcomes if o.failed]
        self.assertEqual(["t@HEAD unit nova.tests.unit.virt.ironic"], [o.name for o in failed])
        self.assertEqual((2, 2), (failed[0].passed, failed[0].failed))
        self.assertIn("2 tests never ended", failed[0].note)
        self.assertIn(prefix + "test_c", failed[0].note)
        self.assertIn(prefix + "test_d", failed[0].note)
        # the run was given exactly the listed tests
        calls = [json.loads(line) for line in
                 (self.tmp / "stestr.calls").read_text().splitlines()]
        self.assertEqual(["init", "list", "run"],
                         [next(a for a in ("init", "list", "run") if a in c) for c in calls])
        listing = pathlib.Path(calls[2][calls[2].index("--load-list") + 1])
        self.assertEqual(4, len(listing.read_text().split()))

    def test_a_test_id_with_a_space_is_run_and_counted(self):
        # a scenario's test id (testscenarios: "test_x(two words)")
        prefix = "nova.tests.unit.virt.ironic.test_driver.T."
        spaced = prefix + "test_c(two words)"
        self.fake(0, PASSED_CSV + f"{spaced},fail,x,x\n",
                  listed=[prefix + "test_a", prefix + "test_b", spaced])
        outcomes = self.run_tree(["nova.tests.unit.virt.ironic"])
        self.assertEqual((2, 1), (outcomes[0].passed, outcomes[0].failed), outcomes)

    def test_a_selection_whose_tests_all_skip_fails(self):
        prefix = "nova.tests.unit.virt.ironic.test_driver.T."
        self.fake(0, "test,status\n" + "".join(f"{prefix}test_{n},skip,x,x\n" for n in "ab"))
        outcomes = self.run_tree(["nova.tests.unit.virt.ironic"])
        self.assertEqual(1, sum(o.failed for o in outcomes), outcomes)
        self.assertIn("every test skipped", outcomes[0].note)

    def test_every_selection_runs_at_head(self):
        # the series touches only the driver: at HEAD (no ``touched``: the
        # whole series) the compute manager's selection runs all the same
        # and, selecting nothing here, fails with its name
        self.fake(0, PASSED_CSV)
        unit = ["nova.tests.unit.virt.ironic", "nova.tests.unit.compute.test_compute_mgr"]
        paths = {u: ["nova/virt/" if "virt" in u else "nova/compute/"] for u in unit}
        outcomes = self.run_tree(unit, paths, changed=["nova/virt/ironic/driver.py"])
        failed = [o for o in outcomes if o.failed]
        self.assertEqual(["t@HEAD unit nova.tests.unit.compute.test_compute_mgr"],
                         [o.name for o in failed], outcomes)
        self.assertIn("ran no tests", failed[0].note)
        # a commit before the last one (its own files given) may still
        # leave out the selection of code it does not touch
        outcomes = self.run_tree(unit, paths, touched=["nova/virt/ironic/driver.py"])
        self.assertEqual((2, 0), (sum(o.passed for o in outcomes),
                                  sum(o.failed for o in outcomes)), outcomes)

    def test_one_run_through_the_loader_in_a_python3_venv(self):
        # filters in two folders: one stestr run whose processes load the
        # tests' modules (stestr_loader), or, in a Python 2 venv, one run
        # per folder, each discovering it
        (self.tree / "nova/tests/unit/fixtures").mkdir(parents=True)
        (self.tree / "nova/tests/unit/fixtures/test_ironic.py").write_text("")
        for package in ("nova", "nova/tests", "nova/tests/unit", "nova/tests/unit/virt",
                        "nova/tests/unit/virt/ironic", "nova/tests/unit/fixtures"):
            (self.tree / package / "__init__.py").write_text("")
        self.fake(0, PASSED_CSV)
        unit = ["nova.tests.unit.virt.ironic", r"nova\.tests\.unit\.fixtures\.test_ironic\b"]
        for lib, runs in (("python2.7", 2), ("python3.11", 1)):
            (self.venv / "lib" / lib).mkdir(parents=True)
            for name in ("stestr.calls", "stestr.python"):
                (self.tmp / name).unlink(missing_ok=True)
            self.run_tree(unit)
            calls = [json.loads(line) for line in
                     (self.tmp / "stestr.calls").read_text().splitlines()]
            self.assertEqual(runs, sum("list" in call for call in calls), calls)
            python = [json.loads(line) for line in
                      (self.tmp / "stestr.python").read_text().splitlines()]
            if runs == 1:
                self.assertEqual({(f"{self.venv}/bin/python {stestr_run.LOADER}",
                                   "nova.tests.unit.fixtures.test_ironic "
                                   "nova.tests.unit.virt.ironic")}, set(map(tuple, python)))
            else:
                self.assertEqual({(None, None)}, set(map(tuple, python)))

    def test_nothing_selected_at_head_is_a_failure(self):
        # a target whose mode runs unit tests but has no selection at all
        self.fake(0, PASSED_CSV)
        outcomes = self.run_tree([])
        self.assertEqual(1, sum(o.failed for o in outcomes), outcomes)
        self.assertIn("no unit selection", outcomes[0].note)


#: What the fake ``subunit2csv`` of :class:`FunctionalSelectionsTest`
#: prints for a functional run: two tests of the touched module, one of a
#: regression module selected whole, two of a selected class and one of
#: its subclass (which the class's selection must not take), one of
#: another class of the touched module.
FUNCTIONAL_CSV = """test,status,start_time,stop_time
nova.tests.functional.regressions.test_bug_NNNNNNN.T.test_a,success,x,x
nova.tests.functional.regressions.test_bug_NNNNNNN.T.test_b,fail,x,x
nova.tests.functional.regressions.test_bug_1853009.T.test_c,success,x,x
nova.tests.functional.test_servers.ServerRescheduleTests.test_d,success,x,x
nova.tests.functional.test_servers.ServerRescheduleTests.test_e,skip,x,x
nova.tests.functional.test_servers.ServerRescheduleTestsWithNested.test_f,success,x,x
nova.tests.functional.test_servers.ServerBuildAbortTests.test_g,success,x,x
"""
UNIT_CSV = PASSED_CSV
TOUCHED = "nova.tests.functional.regressions.test_bug_NNNNNNN"
BUG = "nova.tests.functional.regressions.test_bug_1853009"
RESCHEDULE = "nova.tests.functional.test_servers.ServerRescheduleTests"


class FunctionalSelectionsTest(unittest.TestCase):
    """A target's ``functional`` selections: at HEAD and at the last commit
    (``functional_only`` None), in the same stestr run as the touched
    functional modules, each counted on its own; not before the last
    commit; not in a mode without the functional suite."""

    def setUp(self):
        self.tmp, self.tree, self.venv = fake_tree_and_venv(self, "novaseries-fsel-")
        self.calls = self.tmp / "stestr.calls"
        (self.tmp / "functional.csv").write_text(FUNCTIONAL_CSV)
        (self.tmp / "unit.csv").write_text(UNIT_CSV)
        fake_tools(self.venv, self.tmp)
        helpers.capture_log(self)

    def stestr_runs(self):
        """The arguments of each stestr run's ``stestr list`` (each run
        lists its tests first: the filters go there)."""
        if not self.calls.exists():
            return []
        calls = [json.loads(line) for line in self.calls.read_text().splitlines()]
        return [args for args in calls if "list" in args]

    def functional_runs(self):
        return [args for args in self.stestr_runs() if "./nova/tests/functional" in args]

    def run_tree(self, functional, touched=(TOUCHED,), functional_only=None, mode=None):
        target = mock.Mock(env={}, mode=mode, unit=["nova.tests.unit.virt.ironic"],
                           unit_paths={}, functional=list(functional),
                           below_series=mock.Mock(return_value=[]))
        target.name = "t"
        ctx = mock.Mock()
        ctx.results.side_effect = lambda name: self.tmp / "results" / name
        with mock.patch.object(selecting, "changed_files", return_value=[]), \
                mock.patch.object(selecting, "test_modules", return_value=[]), \
                mock.patch.object(selecting, "functional_modules", return_value=list(touched)), \
                mock.patch.object(testrun, "say"):
            return testrun.test_tree(ctx, target, self.tree, self.venv, rev="HEAD",
                                     label="t@HEAD", flake8=False,
                                     functional_only=functional_only)

    @staticmethod
    def counts(outcomes, prefix="t@HEAD functional "):
        return {o.name[len(prefix):]: (o.passed, o.failed, o.skipped)
                for o in outcomes if o.name.startswith(prefix)}

    def test_selections_at_head_one_run_counted_each(self):
        outcomes = self.run_tree([BUG, RESCHEDULE])
        # one functional stestr run (one discovery) with the selections and
        # the touched module; the unit run apart, as before
        [run] = self.functional_runs()
        self.assertEqual(2, len(self.stestr_runs()))
        filters = run[run.index("list") + 1:]
        self.assertEqual([r"nova\.tests\.functional\.regressions\.test_bug_1853009\.",
                          r"nova\.tests\.functional\.test_servers\.ServerRescheduleTests\.",
                          r"nova\.tests\.functional\.regressions\.test_bug_NNNNNNN\."],
                         filters)
        # each selection counted on its own; a class's subclass is not its
        # (the fake stream holds tests no filter selects: "(other)")
        counts = self.counts(outcomes)
        self.assertEqual((1, 0, 0), counts[BUG])
        self.assertEqual((1, 0, 1), counts[RESCHEDULE])
        self.assertEqual((1, 1, 0), counts[TOUCHED])
        self.assertEqual((2, 0, 0), counts["(other)"])

    def test_a_selection_that_selects_nothing_fails(self):
        missing = "nova.tests.functional.test_servers.ServerDeleteBuildTests"
        outcomes = self.run_tree([BUG, missing])
        failed = {o.name: o.note for o in outcomes if o.failed}
        self.assertIn(f"t@HEAD functional {missing}", failed)
        self.assertIn("ran no tests", failed[f"t@HEAD functional {missing}"])
        self.assertEqual((1, 0, 0), self.counts(outcomes)[BUG])

    def test_selections_without_a_touched_module(self):
        # the series touches no functional module: the selections run
        outcomes = self.run_tree([BUG], touched=())
        [run] = self.functional_runs()
        self.assertEqual([r"nova\.tests\.functional\.regressions\.test_bug_1853009\."],
                         run[run.index("list") + 1:])
        self.assertEqual((1, 0, 0), self.counts(outcomes)[BUG])

    def test_at_the_last_commit_not_before(self):
        # the last commit (check-commits passes no functional_only, as
        # test at HEAD): the selections with the touched module
        outcomes = self.run_tree([BUG, RESCHEDULE], functional_only=None)
        [run] = self.functional_runs()
        self.assertEqual(3, len(run[run.index("list") + 1:]))
        self.assertEqual((1, 0, 0), self.counts(outcomes)[BUG])
        # a commit before the last (check-commits passes its own modules):
        # only the functional modules it touches, no selection
        self.calls.unlink()
        outcomes = self.run_tree([BUG, RESCHEDULE], functional_only=[TOUCHED])
        [run] = self.functional_runs()
        self.assertEqual([r"nova\.tests\.functional\.regressions\.test_bug_NNNNNNN\."],
                         run[run.index("list") + 1:])
        self.assertNotIn(BUG, self.counts(outcomes))
        self.assertNotIn(RESCHEDULE, self.counts(outcomes))
        # a commit that touches no functional module: no functional run
        self.calls.unlink()
        self.run_tree([BUG, RESCHEDULE], functional_only=[])
        self.assertEqual([], self.functional_runs())

    def test_a_touched_module_a_selection_covers_runs_once(self):
        # the series touches test_servers: the class selection is counted
        # as itself, the rest of the module as the module; a touched
        # module a selection names runs once, under the selection
        servers = "nova.tests.functional.test_servers"
        outcomes = self.run_tree([RESCHEDULE, TOUCHED], touched=(TOUCHED, servers))
        [run] = self.functional_runs()
        self.assertEqual([r"nova\.tests\.functional\.test_servers\.ServerRescheduleTests\.",
                          r"nova\.tests\.functional\.regressions\.test_bug_NNNNNNN\.",
                          r"nova\.tests\.functional\.test_servers\."],
                         run[run.index("list") + 1:])
        counts = self.counts(outcomes)
        self.assertEqual((1, 0, 1), counts[RESCHEDULE])
        self.assertEqual((1, 1, 0), counts[TOUCHED])
        self.assertEqual((2, 0, 0), counts[servers])
        self.assertEqual(0, sum(o.failed for o in outcomes if o.name.endswith(servers)))

    def test_in_a_mode_with_the_functional_suite_only(self):
        from novaseries import modes as modes_mod
        mode = modes_mod.Mode("eventlet")  # unit and functional
        outcomes = self.run_tree([BUG], touched=(), mode=mode)
        self.assertEqual(1, len(self.functional_runs()))
        self.assertEqual((1, 0, 0), self.counts(outcomes, "t@HEAD [eventlet] functional ")[BUG])
        self.calls.unlink()
        mode = modes_mod.Mode("threading", suites=("unit",))
        self.run_tree([BUG, RESCHEDULE], mode=mode)
        self.assertEqual([], self.functional_runs())
        self.assertEqual(1, len(self.stestr_runs()))  # the unit run

    def test_each_mode_that_runs_functional_tests(self):
        # from targets.toml through test_modes: inherited from [defaults],
        # run in the mode with the functional suite, not in the other
        from novaseries import targets
        root = self.tmp / "project"
        (root / "targets").mkdir(parents=True)
        (root / "targets" / "targets.toml").write_text(f"""
[defaults]
interpreter = "python3.11"
unit = ["nova.tests.unit.virt.ironic"]
functional = ["{BUG}"]
[modes.eventlet]
default = true
[modes.threading]
[targets.t]
version = "1"
sha256 = "{"0" * 64}"
pins = "p.txt"
patches = "patches/t"
[targets.t.modes.eventlet]
[targets.t.modes.threading]
suites = ["unit"]
""")
        ctx = util.Context.create(root, self.tmp / "build", self.tmp / "cache")
        target = targets.get(ctx, "t")
        with mock.patch.object(venvs, "ensure_venv", lambda ctx, t: (self.venv, 0)), \
                mock.patch.object(selecting, "changed_files", return_value=[]), \
                mock.patch.object(flake8_run, "changed_files", return_value=[]), \
                mock.patch.object(selecting, "test_modules", return_value=[]), \
                mock.patch.object(selecting, "functional_modules", return_value=[]), \
                mock.patch.object(testrun, "say"):
            outcomes = testrun.test_modes(ctx, target, self.tree, label="t@HEAD")
        self.assertEqual(1, len(self.functional_runs()))
        self.assertEqual({BUG: (1, 0, 0), "(other)": (4, 1, 1)},
                         self.counts(outcomes, "t@HEAD [eventlet] functional "))
        self.assertEqual({}, self.counts(outcomes, "t@HEAD [threading] functional "))
