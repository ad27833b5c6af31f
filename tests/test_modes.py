"""Nova's concurrency modes: targets.toml ``[modes]``, Target.in_mode,
testrun.test_modes (per-mode env, suites, exclude lists, labels) and the
main job's per-mode JSON and side-by-side benchmark table."""

import pathlib
import re
import shutil
import tempfile
import unittest
from unittest import mock

from novaseries import (cores, modes as modes_mod, selecting, stestr_run, target_model, targets,
                        testrun, util, venvs)
from novaseries.mainjob import benchreport
from novaseries.outcomes import Outcome
from novaseries.util import HarnessError
from tests import helpers

TOML = '''
[defaults]
interpreter = "python3.11"
unit = ["nova.tests.unit"]
[defaults.env]
PYTHONHASHSEED = "0"
[modes.eventlet.env]
OS_NOVA_DISABLE_EVENTLET_PATCHING = "False"
[modes.threading.env]
OS_NOVA_DISABLE_EVENTLET_PATCHING = "True"
[defaults.modes.eventlet]

[targets.new]
version = "1"
sha256 = "{sha}"
pins = "p.txt"
patches = "patches/new"
[targets.new.modes.eventlet]
[targets.new.modes.threading]
interpreter = "python3.13"
functional_exclude = "excl.txt"

[targets.old]
version = "1"
sha256 = "{sha}"
pins = "p.txt"
patches = "patches/old"
venv = "shared"
[targets.old.modes.eventlet]
[targets.old.modes.threading]
suites = ["unit"]

[targets.plain]
version = "1"
sha256 = "{sha}"
pins = "p.txt"
patches = "patches/plain"
'''


#: Lines of target ``new`` in TOML that :func:`add` puts settings after.
NEW = 'patches = "patches/new"'
EVENTLET = '[targets.new.modes.eventlet]'
THREADING = '[targets.new.modes.threading]'


def add(toml, after, *lines):
    """``toml`` with ``lines`` right after its first line ``after`` (a
    setting or a mode table of target ``new``)."""
    return toml.replace(after + "\n", after + "\n" + "".join(f"{line}\n" for line in lines), 1)


class ModeTableTest(unittest.TestCase):
    """modes.load_modes / default_modes: the modes, what each is, and the
    default, once, in targets.toml [modes]."""

    def ctx(self, text):
        tmp = pathlib.Path(tempfile.mkdtemp(prefix="novaseries-modes-"))
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        (tmp / "targets").mkdir()
        (tmp / "targets" / "targets.toml").write_text(text.replace("{sha}", "0" * 64))
        return util.Context.create(tmp, tmp / "build", tmp / "cache")

    def test_the_projects_modes(self):
        ctx = util.Context.create(helpers.REPO)
        modes = modes_mod.load_modes(ctx)
        self.assertEqual(["eventlet", "threading"], list(modes))  # file order
        self.assertEqual(("threading",), modes_mod.default_modes(ctx))  # nova 34.0.0's
        self.assertTrue(modes["threading"].description.startswith(
            "native threads (OS_NOVA_DISABLE_"))
        self.assertIn("nova 34.0.0's default", modes["threading"].description)
        self.assertTrue(modes["eventlet"].description.startswith("eventlet green threads"))
        self.assertEqual({"OS_NOVA_DISABLE_EVENTLET_PATCHING": "True"}, modes["threading"].env)
        # a target's mode carries the mode's description and default too
        master = targets.get(ctx, "master").modes
        self.assertEqual((modes["threading"].description, True),
                         (master["threading"].description, master["threading"].default))

    def test_default_and_description(self):
        ctx = self.ctx(TOML.replace('[modes.threading.env]', '[modes.threading]\n'
                                    'description = "native"\ndefault = true\n'
                                    '[modes.threading.env]'))
        self.assertEqual(("threading",), modes_mod.default_modes(ctx))
        self.assertEqual("native", modes_mod.load_modes(ctx)["threading"].description)
        self.assertEqual("", modes_mod.load_modes(ctx)["eventlet"].description)

    def test_not_exactly_one_default(self):
        two = TOML.replace('[modes.eventlet.env]', '[modes.eventlet]\ndefault = true\n'
                           '[modes.eventlet.env]').replace(
            '[modes.threading.env]', '[modes.threading]\ndefault = true\n'
            '[modes.threading.env]')
        for text, named in ((TOML, "not none"), (two, "not eventlet, threading")):
            for func in (modes_mod.load_modes, modes_mod.default_modes):
                with self.assertRaises(HarnessError) as caught:
                    func(self.ctx(text))
                self.assertIn("[modes] must mark exactly one mode default = true", str(
                    caught.exception))
                self.assertIn(named, str(caught.exception))

    def test_no_modes(self):
        ctx = self.ctx(TOML.split("[modes.eventlet.env]")[0].replace(
            "[defaults.modes.eventlet]", ""))
        self.assertEqual({}, modes_mod.load_modes(ctx))
        self.assertEqual((), modes_mod.default_modes(ctx))

    def test_only_in_modes(self):
        bad = TOML.replace('[targets.new.modes.eventlet]',
                           '[targets.new.modes.eventlet]\ndefault = true')
        with self.assertRaisesRegex(HarnessError, "unknown settings \\['default'\\]"):
            targets.load(self.ctx(bad))
        wrong = TOML.replace('[modes.threading.env]', '[modes.threading]\ndefault = "yes"\n'
                             '[modes.threading.env]')
        with self.assertRaisesRegex(HarnessError, "default true or false"):
            modes_mod.load_modes(self.ctx(wrong))


class ModesTest(unittest.TestCase):

    def load(self, text=TOML):
        tmp = pathlib.Path(tempfile.mkdtemp(prefix="novaseries-modes-"))
        self.addCleanup(__import__("shutil").rmtree, tmp, ignore_errors=True)
        (tmp / "targets").mkdir()
        (tmp / "targets" / "targets.toml").write_text(text.replace("{sha}", "0" * 64))
        self.ctx = util.Context.create(tmp, tmp / "build", tmp / "cache")
        return targets.load(self.ctx)

    def test_modes_from_the_file(self):
        known = self.load()
        self.assertEqual(["eventlet", "threading"], list(known["new"].modes))
        self.assertEqual(["eventlet"], list(known["plain"].modes))
        threading = known["new"].in_mode("threading")
        self.assertEqual("True", threading.env["OS_NOVA_DISABLE_EVENTLET_PATCHING"])
        self.assertEqual("0", threading.env["PYTHONHASHSEED"])
        self.assertEqual("python3.13", threading.interpreter)
        self.assertEqual("new-py3.13", threading.venv_name)
        self.assertEqual("excl.txt", threading.mode.functional_exclude)
        eventlet = known["new"].in_mode("eventlet")
        self.assertEqual("False", eventlet.env["OS_NOVA_DISABLE_EVENTLET_PATCHING"])
        self.assertEqual(("new", "python3.11"), (eventlet.venv_name, eventlet.interpreter))
        # the target itself is not changed
        self.assertNotIn("OS_NOVA_DISABLE_EVENTLET_PATCHING", known["new"].env)

    def test_the_main_jobs_mode_keeps_the_targets_interpreter(self):
        threading = self.load()["new"].in_mode("threading", interpreter=False)
        self.assertEqual(("new", "python3.11"), (threading.venv_name, threading.interpreter))
        self.assertEqual("True", threading.env["OS_NOVA_DISABLE_EVENTLET_PATCHING"])

    def test_suites_and_shared_venv(self):
        old = self.load()["old"].in_mode("threading")
        self.assertEqual(("unit",), old.mode.suites)
        self.assertEqual("shared", old.venv_name)

    def test_unknown_mode_and_bad_settings_refused(self):
        with self.assertRaisesRegex(util.HarnessError, "does not run in mode 'nosuch'"):
            self.load()["new"].in_mode("nosuch")
        with self.assertRaisesRegex(util.HarnessError, "does not run in mode nosuch"):
            self.load()["new"].only_modes(["nosuch"])
        with self.assertRaisesRegex(util.HarnessError, "unknown mode 'green'"):
            self.load(TOML + "[targets.plain.modes.green]\n")
        with self.assertRaisesRegex(util.HarnessError, "suites"):
            self.load(TOML.replace('suites = ["unit"]', 'suites = ["smoke"]'))
        with self.assertRaisesRegex(util.HarnessError, "unknown settings"):
            self.load(TOML.replace('suites = ["unit"]', 'python = "3.13"'))

    def test_only_modes(self):
        new = self.load()["new"]
        self.assertIs(new, new.only_modes(None))
        self.assertEqual(["threading"], list(new.only_modes(["threading"]).modes))

    def test_ci_target(self):
        new = self.load()["old"]
        self.assertIs(new, new.ci_target())
        toml = TOML.replace('suites = ["unit"]', 'suites = ["unit"]\nci = false')
        left_out = self.load(toml)["old"]
        self.assertEqual(list(new.modes), list(left_out.modes))
        self.assertNotIn("threading", left_out.ci_target().modes)
        self.assertEqual(len(new.modes) - 1, len(left_out.ci_target().modes))

    def test_ci_suites(self):
        # ci may run fewer suites in a mode than the commands do
        toml = TOML.replace('[targets.new.modes.eventlet]\n',
                            '[targets.new.modes.eventlet]\nci_suites = ["unit"]\n')
        new = self.load(toml)["new"]
        self.assertEqual(("unit", "functional"), new.modes["eventlet"].suites)
        self.assertEqual(("unit",), new.ci_target().modes["eventlet"].suites)
        self.assertEqual(new.modes["threading"], new.ci_target().modes["threading"])
        for bad in ('ci_suites = []', 'ci_suites = "unit"', 'ci_suites = ["other"]'):
            with self.assertRaisesRegex(util.HarnessError, "ci_suites must be"):
                self.load(TOML.replace('[targets.new.modes.eventlet]\n',
                                       '[targets.new.modes.eventlet]\n' + bad + '\n'))

    def test_ci_commit_target(self):
        # ci's commits before the last run in commit_modes with the mode's
        # own suites: ci_suites restrict the last commit only
        toml = add(add(TOML, EVENTLET, 'ci_suites = ["unit"]'), NEW, 'commit_modes = ["eventlet"]')
        new = self.load(toml)["new"]
        before_last = new.ci_commit_target()
        self.assertEqual(["eventlet"], list(before_last.modes))
        self.assertEqual(("unit", "functional"), before_last.modes["eventlet"].suites)
        self.assertEqual(("unit",), new.ci_target().modes["eventlet"].suites)
        # no commit_modes: every mode ci runs; a mode ci leaves out is left
        # out before the last commit too
        old = self.load(TOML.replace('suites = ["unit"]', 'suites = ["unit"]\nci = false'))["old"]
        self.assertEqual(list(old.ci_target().modes), list(old.ci_commit_target().modes))
        self.assertNotIn("threading", old.ci_commit_target().modes)
        # commit_modes naming only a mode ci leaves out: the modes ci runs,
        # each with its full suites (not ci_suites)
        only_off = self.load(add(toml.replace('commit_modes = ["eventlet"]',
                                              'commit_modes = ["threading"]'),
                                 THREADING, "ci = false"))["new"]
        before_last = only_off.ci_commit_target()
        self.assertEqual(["eventlet"], list(before_last.modes))
        self.assertEqual(("unit", "functional"), before_last.modes["eventlet"].suites)
        # no mode at all that ci runs: refused
        none = self.load(add(add(toml, EVENTLET, "ci = false"), THREADING, "ci = false"))["new"]
        with self.assertRaisesRegex(HarnessError, "ci runs none of its modes"):
            none.ci_commit_target()

    def test_commit_modes_refused_at_load(self):
        # a misspelt commit mode is refused when the file is read, for
        # check-commits (which keeps only the modes it still runs) as for ci
        for bad, message in (('["threadng"]', "threadng is not one of the target's modes"),
                             ('"eventlet"', "must be a list of mode names")):
            with self.subTest(bad=bad), self.assertRaisesRegex(HarnessError, message):
                self.load(add(TOML, NEW, f'commit_modes = {bad}'))

    def test_commit_target(self):
        # check-commits --mode threading on a target whose commit_modes
        # name eventlet only: the commits before the last run in threading
        toml = add(TOML, NEW, 'commit_modes = ["eventlet"]')
        new = self.load(toml)["new"]
        self.assertEqual(["eventlet"], list(new.commit_target().modes))
        threading = new.only_modes(["threading"])
        self.assertEqual(["threading"], list(threading.commit_target().modes))
        self.assertEqual(list(new.modes),
                         list(self.load()["new"].commit_target().modes))

    def test_ci_check_commits_before_last(self):
        # ci hands check-commits the un-restricted commit modes
        from novaseries import ci, commit_checks, tree as tree_mod
        toml = add(add(TOML, EVENTLET, 'ci_suites = ["unit"]'),
                   NEW, 'commit_modes = ["eventlet"]', "check_commits = true")
        new = self.load(toml)["new"]
        seen = {}

        def check(ctx, target, tree, before_last=None):
            seen.update(last=target, before_last=before_last)
            return []
        with mock.patch.object(target_model.Target, "series_status", return_value=(None, "")), \
                mock.patch.object(tree_mod, "prepare", return_value=self.ctx.root), \
                mock.patch.object(venvs, "ensure_venv", return_value=(self.ctx.root, False)), \
                mock.patch.object(venvs, "mode_interpreter_missing", return_value=""), \
                mock.patch.object(commit_checks, "check_commits", check):
            ci.target_task(mock.Mock(), new, [])
        self.assertEqual(("unit",), seen["last"].modes["eventlet"].suites)
        self.assertEqual(["eventlet"], list(seen["before_last"].modes))
        self.assertEqual(("unit", "functional"), seen["before_last"].modes["eventlet"].suites)

    def test_ci_refuses_a_target_with_no_mode_it_runs(self):
        # every mode ci = false: an error, not a run without any mode's env
        from novaseries import ci
        new = self.load(add(add(TOML, EVENTLET, "ci = false"), THREADING, "ci = false"))["new"]
        with mock.patch.object(target_model.Target, "series_status", return_value=(None, "")):
            with self.assertRaisesRegex(HarnessError, "ci runs none of its modes"):
                ci.target_task(mock.Mock(), new, [])

    def test_mode_functional(self):
        # a mode may name its own functional selections ([]: none); the
        # other keeps the target's; a bad one is refused, naming the mode
        toml = add(add(TOML, NEW, 'functional = ["nova.tests.functional.test_servers.X"]'),
                   EVENTLET, "functional = []")
        new = self.load(toml)["new"]
        self.assertEqual([], new.in_mode("eventlet").functional)
        self.assertEqual(["nova.tests.functional.test_servers.X"],
                         new.in_mode("threading").functional)
        with self.assertRaisesRegex(HarnessError, "new mode eventlet: functional"):
            self.load(toml.replace("functional = []", 'functional = ["nova.tests.unit.x"]'))

    def test_mode_unit(self):
        # a mode may name its own unit selections; the other keeps the
        # target's
        toml = TOML.replace('[targets.new.modes.eventlet]\n',
                            '[targets.new.modes.eventlet]\n'
                            'unit = ["nova.tests.unit.virt"]\n')
        new = self.load(toml)["new"]
        self.assertEqual(["nova.tests.unit.virt"], new.in_mode("eventlet").unit)
        self.assertEqual(["nova.tests.unit"], new.in_mode("threading").unit)
        self.assertEqual(["nova.tests.unit"], new.unit)
        for bad in ('unit = []', 'unit = "nova.tests.unit"', 'unit = [1]'):
            with self.assertRaisesRegex(util.HarnessError, "unit must be"):
                self.load(TOML.replace('[targets.new.modes.eventlet]\n',
                                       '[targets.new.modes.eventlet]\n' + bad +
                                       '\n'))

    def test_functional_workers_per_core(self):
        # a mode may run more functional workers than cores (its tests
        # mostly wait); the other suites and modes keep theirs
        toml = TOML.replace('[modes.threading.env]\n',
                            '[modes.threading]\nfunctional_workers_per_core = 2\n'
                            '[modes.threading.env]\n')
        new = self.load(toml)["new"]
        threading, eventlet = new.in_mode("threading").mode, new.in_mode("eventlet").mode
        self.assertEqual((2, 1), (threading.functional_workers_per_core,
                                  eventlet.functional_workers_per_core))
        self.assertEqual(2, cores.functional_concurrency(threading, 1))
        self.assertEqual(1, cores.functional_concurrency(eventlet, 1))
        self.assertIsNone(cores.functional_concurrency(eventlet, None))
        self.assertIsNone(cores.functional_concurrency(None, None))
        with mock.patch("os.cpu_count", return_value=2):
            self.assertEqual(4, cores.functional_concurrency(threading, None))
        for bad in ('0', '5', '"2"', 'true', '1.5'):
            with self.assertRaisesRegex(util.HarnessError, "functional_workers_per_core"):
                self.load(TOML.replace('[targets.new.modes.threading]\n',
                                       '[targets.new.modes.threading]\n'
                                       'functional_workers_per_core = ' + bad + '\n'))

    def test_real_targets_file(self):
        known = targets.load(util.Context.create(helpers.REPO))
        self.assertEqual(["eventlet"], list(known["2026.1"].ci_target().modes))
        # threading's functional tests wait most of the time
        self.assertEqual(2, known["master"].modes["threading"].functional_workers_per_core)
        master = known["master"]
        self.assertEqual(["eventlet", "threading"], list(master.modes))
        self.assertEqual("python3.13", master.modes["threading"].interpreter)
        # the combination: functional tests in both modes, every unit
        # selection in the one 34.0.0 runs nova-compute in, those of the
        # code only this tree has as shipped (the compute manager's with
        # LP 2169779's change among them) in eventlet mode too
        combined = known["master-all"]
        self.assertEqual(["eventlet", "threading"], list(combined.modes))
        self.assertEqual(("unit", "functional"), combined.modes["eventlet"].suites)
        self.assertEqual(("unit", "functional"), combined.modes["threading"].suites)
        eventlet_unit = combined.in_mode("eventlet").unit
        self.assertIn("nova.tests.unit.compute.test_compute_mgr", eventlet_unit)
        self.assertLess(set(eventlet_unit), set(combined.in_mode("threading").unit))
        self.assertEqual(("unit", "functional"),
                         known["master-rebuild"].modes["threading"].suites)
        self.assertEqual(("unit",), known["2026.1"].modes["threading"].suites)
        # in ci, each master change runs every commit in eventlet mode, all
        # of it; its threading run is the combination's
        for name in ("master", "master-rebuild", "master-unplugvifs", "master-nodeleak"):
            # (master-nodeleak's own variant is in no other target: its last
            # commit in threading mode too)
            self.assertEqual(["eventlet"] + ["threading"] * (name == "master-nodeleak"),
                             list(known[name].ci_target().modes))
            self.assertEqual(("unit", "functional"),
                             known[name].ci_target().modes["eventlet"].suites)
            self.assertEqual(["eventlet"], list(known[name].ci_commit_target().modes))
        self.assertIn("functional", combined.ci_target().modes["eventlet"].suites)
        self.assertEqual(["eventlet", "threading"], list(combined.ci_target().modes))
        # the coverage selections in threading mode only
        self.assertEqual([], combined.in_mode("eventlet").functional)
        self.assertTrue(combined.in_mode("threading").functional)
        self.assertEqual(["eventlet"], list(known["2026.1-rebuild"].modes))
        # 33.x's experimental threading mode: unit tests only, in ci on the
        # tree a packager ships (2026.1-all), not on the backport alone
        stable = known["2026.1-all"].ci_target()
        self.assertEqual(["eventlet", "threading"], list(stable.modes))
        self.assertEqual(("unit",), stable.modes["threading"].suites)
        self.assertEqual("threading_unit_test_excludes.txt",
                         stable.modes["threading"].unit_exclude)
        self.assertEqual(["eventlet"], list(known["2025.2"].modes))
        self.assertEqual(["eventlet"], list(known["2025.1"].modes))
        self.assertEqual(["eventlet"], list(known["pike"].modes))


class FunctionalSelectionTableTest(unittest.TestCase):
    """targets.toml ``functional``: parsed, inherited from [defaults] like
    ``unit``, overridden per target, kept in every mode; a malformed entry
    refused, naming the target."""

    SERVERS = "nova.tests.functional.test_servers.ServerRescheduleTests"
    BUG = "nova.tests.functional.regressions.test_bug_1853009"

    def load(self, text):
        return ModesTest.load(self, text)

    def with_functional(self, defaults=None, new=None):
        text = TOML
        if defaults is not None:
            text = text.replace('[defaults]\n', f'[defaults]\nfunctional = {defaults}\n')
        if new is not None:
            text = text.replace('patches = "patches/new"\n',
                                f'patches = "patches/new"\nfunctional = {new}\n')
        return text

    def test_parse_inherit_override(self):
        known = self.load(self.with_functional(f'["{self.BUG}"]', f'["{self.SERVERS}"]'))
        self.assertEqual([self.SERVERS], known["new"].functional)  # its own
        self.assertEqual([self.BUG], known["old"].functional)  # [defaults]'
        self.assertEqual([self.BUG], known["plain"].functional)
        # every mode, ci's and the commands' own choice of modes keep it
        new = known["new"]
        for moded in (new.in_mode("eventlet"), new.in_mode("threading"),
                      new.ci_target(), new.only_modes(["threading"])):
            self.assertEqual([self.SERVERS], moded.functional)
        # an empty list overrides the defaults' too; none at all: []
        self.assertEqual([], self.load(self.with_functional(f'["{self.BUG}"]', '[]'))[
            "new"].functional)
        self.assertEqual([], self.load(TOML)["new"].functional)

    def test_malformed_entries_refused_naming_the_target(self):
        for bad in ('"nova.tests.functional.test_servers"',  # not a list
                    '["nova.tests.unit.compute.test_claims"]',
                    '["nova.tests.functional"]',
                    '["nova.tests.functional."]',
                    '["nova.tests.functional..test_x"]',
                    '["nova/tests/functional/test_servers.py"]',
                    '["nova.tests.functional.test_servers.Server Tests"]',
                    '["nova.tests.functional.test_servers.*"]',
                    '["xnova.tests.functional.test_servers"]',
                    '[""]', '[1]'):
            with self.subTest(bad=bad):
                with self.assertRaises(HarnessError) as caught:
                    self.load(self.with_functional(new=bad))
                message = str(caught.exception)
                self.assertIn("target new: functional", message)
                self.assertIn("nova.tests.functional", message)
        # one in [defaults] names the first target that inherits it
        with self.assertRaisesRegex(HarnessError, "target new: functional: 'nova.tests.unit'"):
            self.load(self.with_functional(defaults='["nova.tests.unit"]'))

    def test_test_method_refused(self):
        # a method would never match (the name and a dot are the filter)
        method = f"{self.SERVERS}.test_reschedule"
        with self.assertRaisesRegex(HarnessError, "names a test method"):
            self.load(self.with_functional(new=f'["{method}"]'))
        loaded = self.load(self.with_functional(new=f'["{self.SERVERS}"]'))
        self.assertEqual([self.SERVERS], loaded["new"].functional)

    def test_overlapping_entries_refused(self):
        servers = "nova.tests.functional.test_servers"
        for bad in (f'["{self.BUG}", "{self.BUG}"]',
                    f'["{servers}", "{self.SERVERS}"]',
                    f'["{self.SERVERS}", "{servers}"]'):
            with self.subTest(bad=bad):
                with self.assertRaisesRegex(HarnessError, "target new: functional: .* overlap"):
                    self.load(self.with_functional(new=bad))
        # a class and its subclass's name are not nested: both allowed
        nested = f'["{self.SERVERS}", "{self.SERVERS}WithNestedResourcesRequest"]'
        self.assertEqual(2, len(self.load(self.with_functional(new=nested))["new"].functional))

    def test_modes_ci_leaves_to_master_all_are_covered_there(self):
        # a master change whose mode ci leaves out (ci = false: "master-all
        # runs these tests in that mode") has every unit test module its
        # patches touch in master-all's selections of that mode, so that no
        # module it touches drops out of that mode (master-all itself runs
        # only the unit modules its own patches touch beyond them)
        known = targets.load(util.Context.create(helpers.REPO))
        combined = known["master-all"]
        shipped = {pathlib.Path(f).resolve() for f in combined.series()}
        checked = 0
        for name, target in known.items():
            off = [m for m, mode in target.modes.items() if not mode.ci]
            own = [pathlib.Path(f).resolve() for f in target.own_series()]
            if not off or not own or not set(own) <= shipped:
                continue
            touched = {m.group(1).replace("/", ".")
                       for patch in own for m in re.finditer(
                           r"^\+\+\+ b/(nova/tests/unit/\S+)\.py$", patch.read_text(), re.M)}
            for mode in off:
                selections = combined.in_mode(mode).unit
                for module in sorted(touched):
                    with self.subTest(target=name, mode=mode, module=module):
                        self.assertTrue(any(module == s or module.startswith(s + ".") or
                                            s.startswith(module + ".") for s in selections))
                    checked += 1
        self.assertGreaterEqual(checked, 5)  # master's own touch five

    def test_master_all_runs_the_coverage(self):
        # the tree a packager ships runs the Nova modules around the
        # changed code, in the default mode, in ci
        ctx = util.Context.create(helpers.REPO)
        default, = modes_mod.default_modes(ctx)
        shipped = targets.load(ctx)["master-all"].ci_target().in_mode(default)
        self.assertEqual(("unit", "functional"), shipped.mode.suites)
        for module in ("nova.tests.unit.virt.ironic", "nova.tests.unit.compute.test_compute_mgr",
                       "nova.tests.unit.compute.test_resource_tracker",
                       "nova.tests.unit.compute.test_claims",
                       "nova.tests.unit.compute.test_shelve",
                       "nova.tests.unit.compute.test_compute.ComputeTestCase",
                       "nova.tests.unit.compute.test_compute.ComputeInjectedFilesTestCase",
                       "nova.tests.unit.compute.test_compute.ComputeAPITestCase."
                       "test_shutdown_with",
                       "nova.tests.unit.compute.test_compute.ComputeAPITestCase."
                       "test_terminate_",
                       "nova.tests.unit.conductor.tasks",
                       "nova.tests.unit.conductor.test_conductor.ConductorTaskTestCase",
                       "nova.tests.unit.conductor.test_conductor.ConductorTestCase",
                       "nova.tests.unit.conductor.test_conductor.TestConductorTaskManager"):
            with self.subTest(module=module):  # itself, or a package holding it
                self.assertTrue(any(module == s or module.startswith(s + ".")
                                    for s in shipped.unit), shipped.unit)
        # test_compute's compute API tests are left out (no change
        # touches nova/compute/api.py), but those calling the manager
        for api in ("ComputeAPITestCase.test_create_with_too_little_ram",
                    "ComputeAPIAggrTestCase.test_add_host_to_aggregate",
                    "ComputeVolumeTestCase.test_attach_volume_serial"):
            name = f"nova.tests.unit.compute.test_compute.{api}"
            self.assertFalse(any(re.search(s, name) for s in shipped.unit), name)
        # nor the task manager's tests again through the conductor's RPC API
        # and API layers (no change touches nova/conductor/rpcapi.py, api.py)
        for layered in ("ConductorTaskRPCAPITestCase", "ConductorTaskAPITestCase"):
            name = f"nova.tests.unit.conductor.test_conductor.{layered}"
            self.assertFalse(any(re.search(s, name) for s in shipped.unit), name)
        for selection in ("nova.tests.functional.compute.test_resource_tracker",
                          "nova.tests.functional.regressions.test_bug_1853009",
                          "nova.tests.functional.regressions.test_bug_1839560",
                          "nova.tests.functional.test_servers.ServerRescheduleTests",
                          "nova.tests.functional.test_servers.ServerBuildAbortTests",
                          "nova.tests.functional.test_servers.ServerDeleteBuildTests",
                          "nova.tests.functional.test_servers.ServerUnshelveSpawnFailTests"):
            with self.subTest(selection=selection):
                self.assertIn(selection, shipped.functional)

    def test_no_selection_is_swallowed_by_an_earlier_one(self):
        # stestr_run.split_by_filter counts a test under the first selection
        # that matches it: a selection whose name an earlier one matches
        # (test_compute_mgr after test_compute) would count nothing and
        # fail with "ran no tests" at the end of a CI run
        ctx = util.Context.create(helpers.REPO)
        checked = 0
        for name, target in targets.load(ctx).items():
            for mode in list(target.modes) or [None]:
                moded = target.in_mode(mode) if mode else target
                for kind, selections in (("unit", moded.unit),
                                         ("functional", moded.functional)):
                    for later, selection in enumerate(selections):
                        for earlier in selections[:later]:
                            with self.subTest(target=name, mode=mode, kind=kind,
                                              selection=selection):
                                self.assertIsNone(re.search(earlier, selection), earlier)
                            checked += 1
        self.assertGreater(checked, 100)


class PackagerSequenceTest(unittest.TestCase):
    """Every release has one stack target (targets.toml ``stack = true``),
    enabled, whole folders, whose functional tests ci runs: what the
    README's packager table names (tests/test_packager_docs.py)."""

    def test_each_release_has_its_stack_target(self):
        ctx = util.Context.create(helpers.REPO)
        for release in targets.releases(ctx):
            with self.subTest(release=release):
                target = targets.packaged_stack(ctx, release).target
                self.assertTrue(target.stack and target.enabled)
                self.assertIsNone(target.below_upto)
                self.assertTrue(target.own_series(), target.name)
                if release != "pike":
                    self.assertEqual(f"{release}-all", target.name)
                    self.assertIn("functional", target.ci_target().modes["eventlet"].suites)


class TestModesTest(unittest.TestCase):
    """testrun.test_modes: one test_tree per mode, flake8 once, a missing
    mode interpreter skipped (a failure under CI=true)."""

    def setUp(self):
        self.known = ModesTest.load(self, TOML)
        helpers.capture_log(self)

    def _run(self, target, missing="", **kwargs):
        calls = []

        def test_tree(ctx, moded, tree, venv, rev, label, skip_unit, flake8,
                      concurrency, functional_only, touched, functional_since):
            calls.append((moded.mode_name, moded.env["OS_NOVA_DISABLE_EVENTLET_PATCHING"],
                          venv, flake8, concurrency))
            return [Outcome(f"{label} [{moded.mode_name}]", passed=1)]
        with mock.patch.object(testrun, "test_tree", test_tree), \
                mock.patch.object(venvs, "ensure_venv",
                                  lambda ctx, t: (t.venv_name, 0)), \
                mock.patch.object(venvs, "mode_interpreter_missing",
                                  lambda t: missing if t.mode.interpreter else ""):
            return calls, testrun.test_modes(self.ctx, target, "tree", label="x", **kwargs)

    def test_no_flake8_at_all(self):
        # novaseries mutate: flake8 of a mutated tree would judge the mutation
        calls, _ = self._run(self.known["new"], flake8=False)
        self.assertEqual([False, False], [flake8 for _, _, _, flake8, _ in calls])

    def test_each_mode_with_its_venv_flake8_once(self):
        calls, outcomes = self._run(self.known["new"])
        with mock.patch("os.cpu_count", return_value=2):
            calls, outcomes = self._run(self.known["new"])
        # both modes at once, one stestr worker each
        self.assertEqual([("eventlet", "False", "new", True, 1),
                          ("threading", "True", "new-py3.13", False, 1)],
                         sorted(calls))
        self.assertEqual(["x [eventlet]", "x [threading]"], [o.name for o in outcomes])

    def test_missing_mode_interpreter(self):
        with mock.patch.dict("os.environ", {"CI": ""}):
            calls, outcomes = self._run(self.known["new"], "python3.13 not found")
        self.assertEqual(["eventlet"], [c[0] for c in calls])
        self.assertEqual((0, 1), (outcomes[-1].failed, outcomes[-1].skipped))
        with mock.patch.dict("os.environ", {"CI": "true"}):
            _, outcomes = self._run(self.known["new"], "python3.13 not found")
        self.assertEqual(1, outcomes[-1].failed)

    def test_target_without_modes_runs_once(self):
        plain = target_model.Target(**{**self.known["plain"].__dict__, "modes": {}})
        calls = []
        with mock.patch.object(testrun, "test_tree",
                               lambda *a, **k: calls.append(a[1].mode) or []), \
                mock.patch.object(venvs, "ensure_venv", lambda ctx, t: ("v", 0)):
            testrun.test_modes(self.ctx, plain, "tree")
        self.assertEqual([None], calls)


class ExcludeListTest(unittest.TestCase):

    def test_comments_and_blank_lines_dropped(self):
        tmp = pathlib.Path(tempfile.mkdtemp(prefix="novaseries-excl-"))
        self.addCleanup(__import__("shutil").rmtree, tmp, ignore_errors=True)
        (tmp / "excl.txt").write_text("# why\n\nnova.tests.a.B.test_c\n  \nnova.tests.d\n")
        out = stestr_run.exclude_list(tmp, "excl.txt", tmp / "out.txt")
        self.assertEqual("nova.tests.a.B.test_c\nnova.tests.d\n", out.read_text())
        with self.assertRaisesRegex(util.HarnessError, "no exclude list missing.txt"):
            stestr_run.exclude_list(tmp, "missing.txt", tmp / "out2.txt")


class CompareModesTest(unittest.TestCase):

    def _rec(self, tree, wall, mode):
        return {'spec': '2:0:0', 'run': 1, 'n': 2, 's': 0, 'k': 0, 'mode': mode,
                'settled': True, 'outcome': {'ACTIVE': 2}, 'wall_seconds': wall,
                'cpu_seconds': wall, 'torn_down': [], 'stuck_in_build': [],
                'inconsistencies': [], 'ironic_calls_total': 8,
                'healthy': [{'server': s, 'wall_seconds': wall / 2, 'polls': 3,
                             'ironic_calls': 4, 'calls_per_poll': 1.0}
                            for s in 'ab']}

    def test_one_row_per_spec_tree_and_mode(self):
        result = {'modes': ['threading', 'eventlet'], 'by_mode': {
            mode: {tree: {'bench': [self._rec(tree, wall, mode)]}
                   for tree, wall in (('reproducer', w), ('fixed', w))}
            for mode, w in (('threading', 4.0), ('eventlet', 2.0))}}
        lines = benchreport.compare_modes(result)
        rows = [line for line in lines if line.startswith('2:0:0')]
        self.assertEqual(4, len(rows), lines)
        self.assertEqual(['reproducer', 'reproducer', 'fixed', 'fixed'],
                         [r.split()[2] for r in rows])
        self.assertEqual(['threading', 'eventlet'] * 2, [r.split()[3] for r in rows])
        self.assertEqual([], benchreport.compare_modes(
            {'modes': ['threading'], 'by_mode': {'threading': {}}}))


if __name__ == "__main__":
    unittest.main()


class UnitPathsTest(unittest.TestCase):
    """A unit selection with unit_paths runs once the series touches them."""

    def test_selection_follows_the_touched_paths(self):
        # a commit before the last (its own files given): the selections of
        # what it touches; the whole series (HEAD, the last commit): every
        # selection, whatever the series touches
        target = mock.Mock(below_series=mock.Mock(return_value=[]),
                           unit=["nova.tests.unit.virt.ironic",
                                 "nova.tests.unit.compute.test_compute_mgr"],
                           unit_paths={"nova.tests.unit.compute.test_compute_mgr":
                                       ["nova/compute/"]})
        with mock.patch.object(selecting, "test_modules", return_value=[]), \
                mock.patch.object(selecting, "changed_files",
                                  return_value=["nova/virt/ironic/driver.py"]):
            self.assertEqual(["nova.tests.unit.virt.ironic"], selecting.unit_filters(
                target, "tree", "c1", touched=["nova/virt/ironic/driver.py"]))
            self.assertEqual(target.unit, selecting.unit_filters(target, "tree", "c1"))
        self.assertEqual(target.unit, selecting.unit_filters(
            target, "tree", "c2", touched=["nova/compute/manager.py"]))

    def test_selection_of_tests_in_a_module_covers_its_changes(self):
        # node-leak targets: a change adds tests of the compute manager's
        # new-host check; the selection names them, not the whole module
        sanity = ("nova.tests.unit.compute.test_compute_mgr."
                  "ComputeManagerUnitTestCase.test_sanity_check_new_host")
        target = mock.Mock(below_series=mock.Mock(return_value=[]),
                           unit=["nova.tests.unit.virt.ironic", sanity],
                           unit_paths={sanity: ["nova/compute/"]})
        touched = ["nova/compute/manager.py",
                   "nova/tests/unit/compute/test_compute_mgr.py"]
        self.assertEqual(target.unit, selecting.unit_filters(
            target, "tree", "c1", touched=touched))

    def test_touched_follows_the_commits_own_paths(self):
        # check-commits, before the last commit: the series touched the
        # driver earlier, this commit only the compute manager.
        target = mock.Mock(below_series=mock.Mock(return_value=[]),
                           unit=["nova.tests.unit.virt.ironic",
                                 "nova.tests.unit.compute.test_compute_mgr"],
                           unit_paths={"nova.tests.unit.virt.ironic": ["nova/virt/"],
                                       "nova.tests.unit.compute.test_compute_mgr":
                                       ["nova/compute/"]})
        with mock.patch.object(selecting, "test_modules", return_value=[]), \
                mock.patch.object(selecting, "changed_files",
                                  return_value=["nova/virt/ironic/driver.py",
                                                "nova/compute/manager.py"]):
            self.assertEqual(target.unit, selecting.unit_filters(target, "tree", "c3"))
            self.assertEqual(["nova.tests.unit.compute.test_compute_mgr"],
                             selecting.unit_filters(target, "tree", "c3",
                                                    touched=["nova/compute/manager.py", ""]))

    def test_stacked_target_adds_only_its_own_test_modules(self):
        # master-all: the series below touched the compute manager's unit
        # tests, the rebuild change on top only the driver's.
        target = mock.Mock(below_series=mock.Mock(return_value=["p1", "p2"]),
                           unit=["nova.tests.unit.virt.ironic"], unit_paths={})
        with mock.patch.object(selecting.tree_mod, "series_commits",
                               return_value=["c1", "c2", "c3"]), \
                mock.patch.object(selecting, "test_modules",
                                  return_value=[]) as modules:
            self.assertEqual(target.unit, selecting.unit_filters(target, "tree", "c3"))
        modules.assert_called_once_with("tree", "c3", "nova/tests/unit", "c2")
        target.below_series.return_value = []
        with mock.patch.object(selecting, "test_modules",
                               return_value=["nova.tests.unit.test_fixtures"]) as modules:
            self.assertEqual(target.unit + [r"nova\.tests\.unit\.test_fixtures\b"],
                             selecting.unit_filters(target, "tree", "c3"))
        modules.assert_called_once_with("tree", "c3", "nova/tests/unit", "base")

    def test_extra_modules_of_a_commit_before_the_last(self):
        # check-commits before the last commit: the unit test modules
        # outside the selections that the commit itself touches
        target = mock.Mock(below_series=mock.Mock(return_value=[]),
                           unit=["nova.tests.unit.virt.ironic"],
                           unit_paths={"nova.tests.unit.virt.ironic": ["nova/virt/"]})
        with mock.patch.object(selecting, "test_modules") as modules:
            self.assertEqual(
                [], selecting.unit_filters(target, "tree", "c3",
                                           touched=["nova/compute/manager.py"]))
            self.assertEqual(
                [r"nova\.tests\.unit\.fixtures\.test_ironic\b"],
                selecting.unit_filters(target, "tree", "c2", touched=[
                    "nova/tests/fixtures/ironic.py",
                    "nova/tests/unit/fixtures/test_ironic.py",
                    "nova/tests/functional/ironic/test_servers.py"]))
        modules.assert_not_called()

    def test_unit_test_path(self):
        with tempfile.TemporaryDirectory() as tree:
            for path in ("nova/tests/unit/virt/ironic/test_driver.py",
                         "nova/tests/unit/fixtures/test_ironic.py",
                         "nova/tests/unit/test_fixtures.py"):
                pathlib.Path(tree, path).parent.mkdir(parents=True, exist_ok=True)
                pathlib.Path(tree, path).touch()
            self.assertEqual("./nova/tests/unit/virt/ironic",
                             selecting.unit_test_path(tree, ["nova.tests.unit.virt.ironic"]))
            self.assertEqual("./nova/tests/unit/fixtures", selecting.unit_test_path(
                tree, [r"nova\.tests\.unit\.fixtures\.test_ironic\b"]))
            # a class or test in a module: the module's directory
            self.assertEqual("./nova/tests/unit/virt/ironic", selecting.unit_test_path(
                tree, ["nova.tests.unit.virt.ironic.test_driver.Case.test_x"]))
            # several directories: one run per directory
            self.assertEqual(
                [("./nova/tests/unit/virt/ironic",
                  ["nova.tests.unit.virt.ironic",
                   "nova.tests.unit.virt.ironic.test_driver.Case"]),
                 ("./nova/tests/unit/fixtures",
                  [r"nova\.tests\.unit\.fixtures\.test_ironic\b"])],
                selecting.unit_test_groups(tree, [
                    "nova.tests.unit.virt.ironic",
                    r"nova\.tests\.unit\.fixtures\.test_ironic\b",
                    "nova.tests.unit.virt.ironic.test_driver.Case"]))
            # one the tree does not place: one run over the unit tree
            self.assertEqual(
                [(None, ["nova.tests.unit.virt.ironic",
                         "nova.tests.unit.virt.missing.Case"])],
                selecting.unit_test_groups(tree, [
                    "nova.tests.unit.virt.ironic",
                    "nova.tests.unit.virt.missing.Case"]))
            for filters in (["nova.tests.unit.virt.ironic",
                             r"nova\.tests\.unit\.fixtures\.test_ironic\b"],
                            [r"nova\.tests\.unit\.test_fixtures\b"],
                            ["nova.tests.unit.virt.missing"], ["nova.tests.unit"]):
                self.assertIsNone(selecting.unit_test_path(tree, filters), filters)

    def test_real_targets_file(self):
        known = targets.load(util.Context.create(helpers.REPO))
        for name in ("master", "2026.1", "pike"):
            self.assertIn("nova/virt/", known[name].unit_paths[
                "nova.tests.unit.virt.ironic"])
        # a target's own unit_paths add to [defaults.unit_paths]; a driver
        # selection naming a test a later commit adds runs only at commits
        # that touch the driver
        for name in ("2026.1", "2025.2", "2025.1"):
            self.assertIn("nova/virt/", known[name].unit_paths[
                "nova.tests.unit.virt.ironic.test_driver.IronicDriverTestCase."
                "test_ironic_node"])
            self.assertIn("nova/virt/", known[name + "-apiblip"].unit_paths[
                "nova.tests.unit.virt.ironic.test_driver.IronicDriverTestCase."
                "test__poll_node"])
        for name in ("2026.1", "pike"):
            self.assertEqual(["nova/compute/", "nova/tests/unit/compute/"],
                             known[name].unit_paths[
                                 "nova.tests.unit.compute.test_compute_mgr"])
        # every selection of a target whose commits are checked has its
        # paths (one without them would run at every commit)
        for name in ("master", "master-rebuild", "master-nodeleak", "pike"):
            target = known[name]
            self.assertTrue(target.check_commits, name)
            for selection in target.unit:
                self.assertIn(selection, target.unit_paths, name)
                for mode in target.modes:
                    for selection in target.in_mode(mode).unit:
                        self.assertIn(selection, target.unit_paths,
                                      (name, mode))
