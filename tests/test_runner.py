"""Result parsing, selections, venv recipe and the test environment."""

import json
import pathlib
import sys
import shutil
import subprocess
import tempfile
import unittest
from unittest import mock

from novaseries import runner, tree, util
from novaseries.outcomes import Outcome, totals_line
from tests import helpers

#: Last subunit status per test, as novaseries/subunit_status.py prints it.
STATUSES = {
    "nova.tests.unit.virt.ironic.test_driver.T.test_a": "success",
    "nova.tests.unit.virt.ironic.test_driver.T.test_b": "fail",
    "nova.tests.unit.virt.ironic.test_driver.T.test_c": "skip",
    "nova.tests.unit.compute.test_compute_mgr.M.test_d": "success",
    "nova.tests.unit.compute.test_compute_mgr.M.test_e": "xfail",
    "nova.tests.unit.compute.test_compute_mgr.M.test_f": "uxsuccess",
    "nova.tests.unit.other.O.test_g": "success",
}
FILTERS = ["nova.tests.unit.virt.ironic", "nova.tests.unit.compute.test_compute_mgr"]


class ParseTest(unittest.TestCase):

    def test_parse_statuses(self):
        results = runner.parse_statuses(STATUSES)
        self.assertEqual(len(results), 7)
        self.assertEqual(results["nova.tests.unit.virt.ironic.test_driver.T.test_b"], "failed")
        self.assertEqual(results["nova.tests.unit.compute.test_compute_mgr.M.test_e"], "xfail")
        self.assertEqual(results["nova.tests.unit.compute.test_compute_mgr.M.test_f"], "failed")

    def test_split_and_count(self):
        groups = runner.split_by_filter(runner.parse_statuses(STATUSES), FILTERS)
        counts = [runner.count(str(f), g) for f, g in groups]
        self.assertEqual([(o.passed, o.failed, o.skipped) for o in counts],
                         [(1, 1, 1), (2, 1, 0), (1, 0, 0)])
        self.assertIsNone(groups[-1][0])

    def test_zero_tests_is_a_failure(self):
        outcome = runner.count("sel", {})
        self.assertEqual((outcome.passed, outcome.failed), (0, 1))
        self.assertIn("ran no tests", outcome.note)
        self.assertEqual(runner.parse_statuses({}), {})

    def test_a_test_that_never_ended_is_a_failure_named(self):
        # a worker killed under test_4 (in progress) and before test_5 and
        # test_6 (listed by the worker, never started) and test_7 (listed
        # by stestr, never in the stream at all)
        ids = [f"nova.tests.unit.x.T.test_{n}" for n in range(1, 8)]
        found = {ids[0]: "success", ids[1]: "success", ids[2]: "success",
                 ids[3]: "inprogress", ids[4]: "exists", ids[5]: "exists"}
        outcome = runner.count("sel", runner.parse_statuses(found, listed=ids))
        self.assertEqual((3, 4), (outcome.passed, outcome.failed))
        self.assertIn("4 tests never ended", outcome.note)
        self.assertIn("nova.tests.unit.x.T.test_4", outcome.note)

    def test_every_test_skipped_is_a_failure(self):
        outcome = runner.count("sel", {"a.T.test_1": "skipped", "a.T.test_2": "skipped"})
        self.assertEqual((0, 1, 2), (outcome.passed, outcome.failed, outcome.skipped))
        self.assertIn("every test skipped", outcome.note)
        outcome = runner.count("sel", {"a.T.test_1": "skipped", "a.T.test_2": "passed"})
        self.assertEqual((1, 0, 1), (outcome.passed, outcome.failed, outcome.skipped))

    def test_expected_failure_in_the_series_own_tests_fails(self):
        results = {"nova.tests.functional.regressions.test_bug_NNNNNNN.T.test_a": "xfail",
                   "nova.tests.functional.test_servers.T.test_b": "xfail",
                   "nova.tests.functional.test_servers.T.test_c": "passed"}
        own = ["nova.tests.functional.regressions.test_bug_NNNNNNN"]
        outcome = runner.count("sel", results, own=own)
        self.assertEqual((2, 1), (outcome.passed, outcome.failed))
        self.assertIn("1 expected failures in the series' own tests", outcome.note)
        self.assertIn("test_bug_NNNNNNN.T.test_a", outcome.note)
        # Nova's own expected failures count as passed
        self.assertEqual((3, 0), (runner.count("sel", results).passed,
                                  runner.count("sel", results).failed))

    def test_totals_line(self):
        outcomes = [Outcome("a", 3, 1, 2), Outcome("b", 4)]
        self.assertEqual(totals_line(outcomes), "7 passed, 1 failed, 2 skipped")
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
        one = runner._recipe_digest(self.target, "cpython 3.11.7 x86_64")
        (self.root / "pins" / "fake.txt").write_text("six==1.17.0\n")
        self.assertNotEqual(one, runner._recipe_digest(self.target, "cpython 3.11.7 x86_64"))

    def test_recipe_does_not_depend_on_the_interpreters_path(self):
        """The harness venv's Python (``.ci/run``) and the Python it was made
        from (``python3 -m novaseries``) give one recipe; another version
        does not."""
        import sys
        from novaseries import util
        base = pathlib.Path(sys.base_prefix) / "bin" / pathlib.Path(sys.executable).name
        if not base.exists() or base.resolve() == pathlib.Path(sys.executable).resolve() \
                and sys.prefix == sys.base_prefix:
            # not in a venv: make one, whose python is another path
            venv = self.tmp / "venv"
            util.run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
            other = venv / "bin" / "python"
        else:
            other = base
        import platform
        here, there = (util.interpreter_identity(p) for p in (sys.executable, other))
        self.assertEqual(here, there)
        self.assertEqual(f"{sys.implementation.name} {platform.python_version()} "
                         f"{platform.machine()}", here)
        self.assertNotIn("/", here)
        self.assertNotEqual(runner._recipe_digest(self.target, here),
                            runner._recipe_digest(self.target, "cpython 2.7.18 x86_64"))


class FileLockTest(unittest.TestCase):
    """Two commands needing one venv take turns."""

    def test_second_holder_waits_for_the_first(self):
        import subprocess
        import sys
        import threading
        from novaseries import util
        tmp = pathlib.Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        lock = tmp / "venvs" / "master.lock"
        child = subprocess.Popen(
            [sys.executable, "-c",
             "import sys; from novaseries import util\n"
             "with util.file_lock(sys.argv[1], 'venv master'):\n"
             "    print('held', flush=True); sys.stdin.readline()\n",
             str(lock)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            cwd=str(helpers.REPO))
        self.addCleanup(child.stdout.close)
        self.addCleanup(child.stdin.close)
        self.addCleanup(child.kill)
        self.assertEqual("held\n", child.stdout.readline())
        acquired, waiting, said = threading.Event(), threading.Event(), []

        def say(message):
            said.append(message)
            waiting.set()

        def second():
            with util.file_lock(lock, "venv master"):
                acquired.set()

        with mock.patch.object(util.LOG, "warning", say):
            thread = threading.Thread(target=second, daemon=True)
            thread.start()
            # it says that it waits, and waits while the child holds the lock
            self.assertTrue(waiting.wait(10))
            self.assertFalse(acquired.is_set())
        self.assertEqual(1, len(said))
        self.assertIn("waiting for venv master", said[0])
        self.assertIn(f"held by pid {child.pid}", said[0])
        child.stdin.write("\n")
        child.stdin.flush()
        self.assertTrue(acquired.wait(10))
        thread.join(10)
        self.assertEqual(0, child.wait(10))

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


def _packet(status, test_id=b"nova.tests.unit.test_x.T.test_y", big=False):
    """A subunit v2 packet: signature, flags (version 2, test id present,
    status in the low 3 bits), total length, test id, fake CRC."""
    body = bytes([len(test_id)]) + test_id
    flags = bytes([0x28, status])
    size = 2 if big else 1
    length = 1 + 2 + size + len(body) + 4
    head = bytes([length]) if not big else bytes([0x40 | (length >> 8), length & 0xFF])
    return b"\xb3" + flags + head + body + b"CRC!"


#: A stream written by python-subunit 1.4's StreamResultToBytes (zlib,
#: base64): t.exists (exists), t.a (inprogress, success), t.b (inprogress,
#: a 70,000-byte attachment, fail), t.c (skip), t.d (success with a
#: 20,000-byte attachment): 3- and 1-byte packet lengths (the 2-byte ones
#: come from _packet below).
REAL_STREAM = (
    "eNrtyCFOA1EARdHAhIY2NbUoKr9pt4DAkEAFQVQyHSZNw6Q09IshQbQbQNYRFoAhfIXCswQEhpCwDChh"
    "CQjEOeq+l8JGZzv2ynoyj/PVy819CpvtLPbyu6fmZwrZT598vB79/qPGw/A4hdNlZ7VerVjWsT+r8sm0"
    "GS/zohzlxfmyM6sBAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    "AAAAAAAAAAAAAAAAAAAAAAAAgD93OH7uptBoZ7E3uu3u7Kewte6iehxep1AsBnvf66wVyzr2Z1U+mWbV"
    "xXgx2L0CAAAAAAAAAAAAAAAAAAAAAAAA4F94zw/evgAAG1ax")


class SubunitProgressTest(unittest.TestCase):

    def test_a_real_stream_with_large_attachments(self):
        import base64
        import zlib
        data = zlib.decompress(base64.b64decode(REAL_STREAM))
        self.assertGreater(len(data), 90000)
        for piece in (1, 7, 4096, len(data)):
            counter = runner.SubunitCounter()
            for i in range(0, len(data), piece):
                counter.feed(data[i:i + piece])
            self.assertEqual({"passed": 2, "failed": 1, "skipped": 1}, counter.counts, piece)
            self.assertEqual(1, counter.listed)
            self.assertEqual(b"", counter._buffer)  # nothing held back at the end

    def test_counts_ended_tests_across_pieces(self):
        stream = (_packet(2) + _packet(3) + _packet(2) + _packet(6, big=True) +
                  _packet(5) + _packet(3, test_id=b"x" * 100, big=True) + _packet(7))
        counter = runner.SubunitCounter()
        for i in range(0, len(stream), 5):  # split anywhere, even in a header
            counter.feed(stream[i:i + 5])
        self.assertEqual({"passed": 3, "failed": 1, "skipped": 1}, counter.counts)
        self.assertEqual(5, counter.done)

    def test_progress_lines_while_running(self):
        import subprocess
        tmp = pathlib.Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        path = tmp / "unit.subunit"
        path.write_bytes(_packet(3))
        ticks = iter([0.0, 15.0, 30.0, 45.0])
        waits = []

        def wait():
            waits.append(1)
            if len(waits) == 1:
                with open(path, "ab") as f:
                    f.write(_packet(6) + _packet(3))
                raise subprocess.TimeoutExpired("stestr", 15)
            if len(waits) == 2:
                raise subprocess.TimeoutExpired("stestr", 15)

        said = []
        with mock.patch.object(runner, "say", said.append):
            counter = runner._watch_progress(path, None, "master@HEAD unit",
                                             clock=lambda: next(ticks), wait=wait)
        self.assertEqual(3, counter.done)
        self.assertEqual(["  [master@HEAD unit] 3 tests done (1 failed, 0 skipped), 15 s",
                          "  [master@HEAD unit] 3 tests done (1 failed, 0 skipped), 30 s"],
                         said)


class CompileTreeTest(unittest.TestCase):
    """runner.compile_tree: Nova's modules compiled once per interpreter."""

    def setUp(self):
        self.tmp = pathlib.Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp)
        self.tree = self.tmp / "tree"
        (self.tree / "nova" / "virt").mkdir(parents=True)
        (self.tree / "nova" / "__init__.py").write_text("")
        (self.tree / "nova" / "virt" / "driver.py").write_text("X = 1\n")
        (self.tree / "setup.py").write_text("")

    def venv(self, lib):
        venv = self.tmp / lib
        (venv / "lib" / lib).mkdir(parents=True)
        (venv / "bin").mkdir()
        (venv / "bin" / "python").symlink_to(sys.executable)
        return venv

    def compiled(self):
        return sorted(p.relative_to(self.tree).as_posix()
                      for p in self.tree.rglob("*.pyc"))

    def test_python3_venv(self):
        runner.compile_tree(self.venv("python3.11"), self.tree)
        compiled = self.compiled()
        self.assertEqual(2, len(compiled), compiled)
        self.assertTrue(all("/__pycache__/" in p and p.startswith("nova/")
                            for p in compiled), compiled)

    def test_python2_venv_left_alone(self):
        # Python 2 would import a .pyc whose source a later checkout removed
        runner.compile_tree(self.venv("python2.7"), self.tree)
        self.assertEqual([], self.compiled())

    def test_failure_only_warns(self):
        (self.tree / "nova" / "broken.py").write_text("def (:\n")
        with self.assertLogs(runner.LOG, level="WARNING") as logs:
            runner.compile_tree(self.venv("python3.11"), self.tree)
        self.assertIn("compileall", "\n".join(logs.output))
        self.assertIn("nova/virt/__pycache__", "\n".join(self.compiled()))


class Flake8FilesTest(unittest.TestCase):
    """runner.run_flake8: the series' Python files, or a commit's own."""

    def setUp(self):
        self.tree = pathlib.Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tree)
        for name in ("nova/a.py", "nova/b.py", "nova/c.txt"):
            (self.tree / name).parent.mkdir(parents=True, exist_ok=True)
            (self.tree / name).write_text("")

    def _files(self, touched):
        seen = []

        def run(cmd, **kwargs):
            seen.append([str(c) for c in cmd[1:]])
            return mock.Mock(returncode=0, stdout="", stderr="")
        target = mock.Mock(env={})
        with mock.patch.object(runner, "run", run), \
                mock.patch.object(runner, "changed_files",
                                  return_value=["nova/a.py", "nova/b.py", "nova/c.txt"]):
            outcome = runner.run_flake8(pathlib.Path("/venv"), target, self.tree, "HEAD",
                                        "x", touched=touched)
        return seen, outcome

    def test_series_files_by_default(self):
        seen, outcome = self._files(None)
        self.assertEqual([["nova/a.py", "nova/b.py"]], seen)
        self.assertEqual(1, outcome.passed)

    def test_commit_files(self):
        # a commit's own files; one it deleted is not checked
        seen, _ = self._files(["nova/b.py", "nova/gone.py", "nova/c.txt", ""])
        self.assertEqual([["nova/b.py"]], seen)
        seen, outcome = self._files(["releasenotes/notes/x.yaml"])
        self.assertEqual([], seen)
        self.assertIn("no Python files", outcome.note)


class BuildVenvInstallerTest(unittest.TestCase):
    """util.build_venv fills a Python 3 venv with uv when the harness has it
    (the ``uv`` extra), else with the venv's pip; a virtualenv (Python 2.7)
    always with its pip."""

    def build(self, tool, uv):
        tmp = pathlib.Path(tempfile.mkdtemp(prefix="novaseries-venv-"))
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        commands = []

        def fake_run(cmd, **kwargs):
            commands.append([str(c) for c in cmd])
            (tmp / "v").mkdir(exist_ok=True)  # as the venv's creation does
            return subprocess.CompletedProcess(cmd, 0, "", "")
        with mock.patch.object(util, "run", fake_run), \
                mock.patch.object(util, "uv_binary", return_value=uv), \
                mock.patch("novaseries.util.say"):
            util.build_venv(tmp / "v", "/usr/bin/python3", [["-r", "pins.txt"]], "d",
                            tmp / "log", tool=tool)
        return commands[1:]  # after the venv's creation

    def test_uv_when_the_harness_has_it(self):
        [install] = self.build("venv", "/h/bin/uv")
        self.assertEqual(["/h/bin/uv", "pip", "install", "--python"], install[:4])
        self.assertTrue(install[4].endswith("/v/bin/python"))
        self.assertEqual(["-r", "pins.txt"], install[5:])

    def test_pip_without_uv(self):
        [install] = self.build("venv", None)
        self.assertTrue(install[0].endswith("/v/bin/python"))
        self.assertEqual(["-m", "pip", "install"], install[1:4])

    def test_python2_virtualenv_always_pip(self):
        # (the first command made checks that virtualenv is there)
        [install] = self.build("virtualenv", "/h/bin/uv")[1:]
        self.assertEqual(["-m", "pip", "install"], install[1:4])


PASSED_CSV = """test,status,start_time,stop_time
nova.tests.unit.virt.ironic.test_driver.T.test_a,success,2026-01-01 00:00:00+00:00,x
nova.tests.unit.virt.ironic.test_driver.T.test_b,success,2026-01-01 00:00:00+00:00,x
"""


def fake_tree_and_venv(test, prefix):
    """``(tmp, tree, venv)`` for a test of runner.test_tree with a fake
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
#: arguments (a JSON list a line) to ``stestr.calls``; ``stestr init``
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
    """runner.test_tree with a fake ``stestr`` and ``python`` in a fake
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
        with mock.patch.object(runner, "changed_files", return_value=list(changed)), \
                mock.patch.object(runner, "test_modules", return_value=[]), \
                mock.patch.object(runner, "functional_modules", return_value=[]), \
                mock.patch.object(runner, "say"):
            return runner.test_tree(ctx, target, self.tree, self.venv, rev="HEAD",
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
        with mock.patch.object(runner, "changed_files", return_value=[]), \
                mock.patch.object(runner, "test_modules", return_value=[]), \
                mock.patch.object(runner, "functional_modules", return_value=list(touched)), \
                mock.patch.object(runner, "say"):
            return runner.test_tree(ctx, target, self.tree, self.venv, rev="HEAD",
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
        from novaseries import targets
        mode = targets.Mode("eventlet")  # unit and functional
        outcomes = self.run_tree([BUG], touched=(), mode=mode)
        self.assertEqual(1, len(self.functional_runs()))
        self.assertEqual((1, 0, 0), self.counts(outcomes, "t@HEAD [eventlet] functional ")[BUG])
        self.calls.unlink()
        mode = targets.Mode("threading", suites=("unit",))
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
        with mock.patch.object(runner, "ensure_venv", lambda ctx, t: (self.venv, 0)), \
                mock.patch.object(runner, "changed_files", return_value=[]), \
                mock.patch.object(runner, "test_modules", return_value=[]), \
                mock.patch.object(runner, "functional_modules", return_value=[]), \
                mock.patch.object(runner, "say"):
            outcomes = runner.test_modes(ctx, target, self.tree, label="t@HEAD")
        self.assertEqual(1, len(self.functional_runs()))
        self.assertEqual({BUG: (1, 0, 0), "(other)": (4, 1, 1)},
                         self.counts(outcomes, "t@HEAD [eventlet] functional "))
        self.assertEqual({}, self.counts(outcomes, "t@HEAD [threading] functional "))
