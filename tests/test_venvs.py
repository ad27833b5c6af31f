"""The target's venv: its recipe, its lock, its installer, the test
environment, the byte-compiled tree."""

import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

from novaseries import util, venv_build, venvs
from tests import helpers


class RecipeTest(helpers.ProjectTestCase):

    def test_env_is_novas_tox_env(self):
        self.write_targets()
        (self.root / "targets" / "targets.toml").write_text(
            (self.root / "targets" / "targets.toml").read_text().replace(
                "[defaults]\n", '[defaults]\nenv = {PYTHONHASHSEED = "0", LC_ALL = "C.UTF-8"}\n'))
        from novaseries import targets
        target = targets.get(self.ctx, "fake")
        env = venvs.test_env(target, self.tmp / "venv", self.tmp / "tree")
        self.assertEqual(env["PYTHONHASHSEED"], "0")
        self.assertEqual(env["PYTHONPATH"], str(self.tmp / "tree"))
        self.assertTrue(env["PATH"].startswith(str(self.tmp / "venv" / "bin")))

    def test_recipe_digest_follows_pins(self):
        one = venvs._recipe_digest(self.target, "cpython 3.11.7 x86_64")
        (self.root / "pins" / "fake.txt").write_text("six==1.17.0\n")
        self.assertNotEqual(one, venvs._recipe_digest(self.target, "cpython 3.11.7 x86_64"))

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
        here, there = (venv_build.interpreter_identity(p) for p in (sys.executable, other))
        self.assertEqual(here, there)
        self.assertEqual(f"{sys.implementation.name} {platform.python_version()} "
                         f"{platform.machine()}", here)
        self.assertNotIn("/", here)
        self.assertNotEqual(venvs._recipe_digest(self.target, here),
                            venvs._recipe_digest(self.target, "cpython 2.7.18 x86_64"))


class PinLinesTest(unittest.TestCase):

    def test_name_version_lines_in_order_names_as_pip_compares_them(self):
        with tempfile.TemporaryDirectory() as tmp:
            pins = pathlib.Path(tmp) / "pins.txt"
            pins.write_text("# frozen\n  Oslo_Config == 9.0.0  # note\n"
                            "-r other.txt\npsutil==5.9.8; sys_platform == 'linux'\n"
                            "six>=1.0\nzope.interface==6.1\n")
            self.assertEqual([("oslo-config", "9.0.0"), ("psutil", "5.9.8"),
                              ("zope-interface", "6.1")], util.pin_lines(pins))
            with self.assertRaises(FileNotFoundError):
                util.pin_lines(pathlib.Path(tmp) / "gone.txt")


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


class CompileTreeTest(unittest.TestCase):
    """venvs.compile_tree: Nova's modules compiled once per interpreter."""

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
        venvs.compile_tree(self.venv("python3.11"), self.tree)
        compiled = self.compiled()
        self.assertEqual(2, len(compiled), compiled)
        self.assertTrue(all("/__pycache__/" in p and p.startswith("nova/")
                            for p in compiled), compiled)

    def test_python2_venv_left_alone(self):
        # Python 2 would import a .pyc whose source a later checkout removed
        venvs.compile_tree(self.venv("python2.7"), self.tree)
        self.assertEqual([], self.compiled())

    def test_failure_only_warns(self):
        (self.tree / "nova" / "broken.py").write_text("def (:\n")
        with self.assertLogs(venvs.LOG, level="WARNING") as logs:
            venvs.compile_tree(self.venv("python3.11"), self.tree)
        self.assertIn("compileall", "\n".join(logs.output))
        self.assertIn("nova/virt/__pycache__", "\n".join(self.compiled()))


class BuildVenvInstallerTest(unittest.TestCase):
    """venv_build.build_venv fills a Python 3 venv with uv when the harness has it
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
        with mock.patch.object(venv_build, "run", fake_run), \
                mock.patch.object(venv_build, "uv_binary", return_value=uv), \
                mock.patch.object(venv_build, "say"):
            venv_build.build_venv(tmp / "v", "/usr/bin/python3", [["-r", "pins.txt"]], "d",
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
