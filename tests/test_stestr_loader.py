"""stestr's ``PYTHON`` for a run (nova_side/stestr_loader.py): what a
listing and a worker load, and the same tests as discovery finds."""

import json
import os
import pathlib
import subprocess
import sys
import tempfile
import unittest
import uuid

from novaseries import stestr_run
from novaseries.nova_side import stestr_loader

TEST = """import unittest


class {name}(unittest.TestCase):
    def test_a(self):
        pass

    def test_b(self):
        pass
"""


class LoaderTest(unittest.TestCase):

    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.top = pathlib.Path(tmp.name)
        # a package name of its own (unittest imports it)
        self.pkg = f"pkg{uuid.uuid4().hex[:8]}"
        for path, text in {
                "__init__.py": "", "test_top.py": TEST.format(name="TopTest"),
                "helpers.py": "X = 1\n",
                "sub/__init__.py": "", "sub/test_one.py": TEST.format(name="OneTest"),
                "sub/deeper/__init__.py": "",
                "sub/deeper/test_two.py": TEST.format(name="TwoTest"),
                "other/__init__.py": "", "other/test_three.py": TEST.format(name="ThreeTest"),
                "broken/__init__.py": "", "broken/test_raises.py": "raise RuntimeError('x')\n",
                "broken/test_skips.py": "import unittest\nraise unittest.SkipTest('no x')\n",
        }.items():
            file = self.top / self.pkg / path
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(text)
        sys.path.insert(0, str(self.top))
        self.addCleanup(sys.path.remove, str(self.top))

    def ids(self, suite):
        found = []
        for test in suite:
            found += self.ids(test) if isinstance(test, unittest.TestSuite) else [test.id()]
        return sorted(found)

    def test_module_of(self):
        pkg, top = self.pkg, str(self.top)
        self.assertEqual(f"{pkg}.sub.test_one",
                         stestr_loader.module_of(f"{pkg}.sub.test_one.OneTest.test_a", top))
        # a scenario's name after the test
        self.assertEqual(f"{pkg}.test_top",
                         stestr_loader.module_of(f"{pkg}.test_top.TopTest.test_a(x.y)", top))
        self.assertEqual(f"{pkg}.test_top",
                         stestr_loader.module_of(f"{pkg}.test_top.TopTest.test_a [x.y]", top))
        # a ddt test's name
        self.assertEqual(f"{pkg}.test_top",
                         stestr_loader.module_of(f"{pkg}.test_top.TopTest.test_a_1___x_y__", top))
        for nothing in (f"{pkg}.sub.test_none.Case.test_x", f"{pkg}.sub", "nothere.x.Y.test"):
            self.assertIsNone(stestr_loader.module_of(nothing, top), nothing)

    def test_roots_load_what_discovery_finds_under_them(self):
        pkg = self.pkg
        whole = [i for i in self.ids(unittest.TestLoader().discover(
            str(self.top / pkg), top_level_dir=str(self.top))) if i.startswith(pkg)]
        self.assertEqual(8, len(whole))  # (and the broken module's failure)
        loader = stestr_loader.RootsLoader(str(self.top))
        roots = [f"{pkg}.sub", f"{pkg}.test_top"]
        self.assertEqual([i for i in whole if i.startswith(tuple(r + "." for r in roots))],
                         self.ids(loader.loadTestsFromNames(roots)))
        self.assertEqual([], loader.errors)
        # a name that is not there fails as unittest fails it: a failed
        # test, which stestr's listing reports as an import error
        failed = self.ids(loader.loadTestsFromNames([f"{pkg}.sub.test_none"]))
        self.assertEqual(["unittest.loader._FailedTest.test_none"], failed)
        # and so does one that raises anything else, as in discovery: a
        # failed test and an error (stestr's listing then fails)
        loader = stestr_loader.RootsLoader(str(self.top))
        failed = self.ids(loader.loadTestsFromNames([f"{pkg}.broken.test_raises"]))
        self.assertEqual([f"unittest.loader._FailedTest.{pkg}.broken.test_raises"], failed)
        self.assertIn("RuntimeError: x", loader.errors[0])
        # one that raises SkipTest: a skipped test, as in discovery
        loader = stestr_loader.RootsLoader(str(self.top))
        result = unittest.TestResult()
        loader.loadTestsFromNames([f"{pkg}.broken.test_skips"]).run(result)
        self.assertEqual((1, [], []), (len(result.skipped), loader.errors, result.errors))

    def test_plan(self):
        pkg = self.pkg
        top = str(self.top)
        head = ["-m", "stestr.subunit_runner.run", "discover", "-t", top, f"{top}/{pkg}"]
        env = {stestr_loader.ROOTS_ENV: f"{pkg}.sub {pkg}.test_top"}
        self.assertEqual((top, [f"{pkg}.sub", f"{pkg}.test_top"], ["--list"]),
                         stestr_loader.plan(head + ["--list"], env))
        ids = self.top / "ids.txt"
        ids.write_text(f"{pkg}.sub.deeper.test_two.TwoTest.test_a\n"
                       f"{pkg}.test_top.TopTest.test_b\n{pkg}.test_top.TopTest.test_a\n\n")
        self.assertEqual((top, [f"{pkg}.sub.deeper.test_two", f"{pkg}.test_top"],
                          ["--load-list", str(ids)]),
                         stestr_loader.plan(head + ["--load-list", str(ids)], {}))
        # as given: no roots for a listing, a test no module defines,
        # another command
        self.assertIsNone(stestr_loader.plan(head + ["--list"], {}))
        ids.write_text(f"{pkg}.test_top.TopTest.test_a\n{pkg}.gone.Case.test_a\n")
        self.assertIsNone(stestr_loader.plan(head + ["--load-list", str(ids)], {}))
        self.assertIsNone(stestr_loader.plan(["-c", "print(1)"], env))
        self.assertIsNone(stestr_loader.plan(head + ["--list", "--failfast"], env))
        # a root outside the test path: discovery would not find it
        narrow = head[:5] + [f"{top}/{pkg}/sub"]
        self.assertEqual((top, [f"{pkg}.sub"], ["--list"]),
                         stestr_loader.plan(narrow + ["--list"],
                                            {stestr_loader.ROOTS_ENV: f"{pkg}.sub"}))
        self.assertIsNone(stestr_loader.plan(narrow + ["--list"], env))

    def test_main_runs_stestrs_runner_on_the_roots(self):
        # a stand-in for stestr's runner (the harness's Python has no
        # stestr): what TestProgram gets, and the tests its loader loads
        fake = self.top / "fake"
        (fake / "stestr" / "subunit_runner").mkdir(parents=True)
        (fake / "stestr" / "__init__.py").write_text("")
        (fake / "stestr" / "subunit_runner" / "__init__.py").write_text("")
        (fake / "stestr" / "subunit_runner" / "run.py").write_text(
            "class SubunitTestRunner:\n    def __init__(self, stdout=None):\n        pass\n")
        (fake / "stestr" / "subunit_runner" / "program.py").write_text(
            "import json, sys\n"
            "def ids(suite):\n"
            "    return [i for t in suite for i in (ids(t) if hasattr(t, '__iter__')"
            " else [t.id()])]\n"
            "class TestProgram:\n"
            "    def __init__(self, module, argv, testRunner, testLoader):\n"
            "        loaded = ids(testLoader.loadTestsFromNames(argv[2:]))\n"
            "        print(json.dumps([argv, sorted(loaded), sys.path[0]]))\n")
        env = dict(os.environ, PYTHONPATH=f"{fake}{os.pathsep}{self.top}",
                   **{stestr_loader.ROOTS_ENV: f"{self.pkg}.sub"})
        proc = subprocess.run(
            [sys.executable, stestr_run.LOADER, "-m", "stestr.subunit_runner.run", "discover",
             "-t", str(self.top), str(self.top), "--list"],
            capture_output=True, text=True, env=env, cwd=self.top, check=True)
        argv, loaded, first = json.loads(proc.stdout)
        self.assertEqual(["stestr.subunit_runner.run", "--list", f"{self.pkg}.sub"], argv)
        self.assertEqual(4, len(loaded))
        self.assertTrue(all(i.startswith(f"{self.pkg}.sub.") for i in loaded), loaded)
        # as under ``python -m``: the working folder first, not the loader's
        self.assertEqual(str(self.top), first)

    def test_another_command_runs_as_given(self):
        proc = subprocess.run([sys.executable, stestr_run.LOADER, "-c", "print('as given')"],
                              capture_output=True, text=True, check=True)
        self.assertEqual("as given\n", proc.stdout)


class LoaderEnvTest(unittest.TestCase):

    def test_one_name_on_both_sides(self):
        self.assertEqual(stestr_loader.ROOTS_ENV, stestr_run.ROOTS_ENV)

    def test_python3_venv_with_roots(self):
        with tempfile.TemporaryDirectory() as tmp:
            venv = pathlib.Path(tmp, "venv")
            (venv / "lib" / "python2.7").mkdir(parents=True)
            env = {"A": "1"}
            # Python 2: stestr's own interpreter and discovery
            self.assertIs(env, stestr_run.loader_env(env, venv, ["nova.tests.unit.x"]))
            (venv / "lib" / "python3.11").mkdir()
            self.assertIs(env, stestr_run.loader_env(env, venv, None))
            got = stestr_run.loader_env(env, venv, ["nova.tests.unit.x", "nova.tests.unit.y"])
            self.assertEqual(f"{venv}/bin/python {stestr_run.LOADER}", got["PYTHON"])
            self.assertEqual("nova.tests.unit.x nova.tests.unit.y",
                             got[stestr_run.ROOTS_ENV])
            self.assertEqual({"A": "1"}, env)
            spaced = pathlib.Path(tmp, "a venv")
            (spaced / "lib" / "python3.11").mkdir(parents=True)
            with self.assertRaisesRegex(Exception, "space"):
                stestr_run.loader_env(env, spaced, ["nova.tests.unit.x"])


if __name__ == "__main__":
    unittest.main()
