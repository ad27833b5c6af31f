"""``.ci/run``'s own arguments: --help answers, anything else is refused
before anything is installed or run; it runs ``novaseries ci`` under
``CI=true``, where what the machine cannot run is a failure."""

import re
import subprocess
import unittest
from unittest import mock

from novaseries import outcomes
from tests import helpers

SCRIPT = helpers.REPO / ".ci" / "run"


def _run(*args):
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=30)


class CiScriptTest(unittest.TestCase):

    def test_help(self):
        for flag in ("-h", "--help"):
            proc = _run(flag)
            self.assertEqual(0, proc.returncode, proc.stderr)
            self.assertTrue(proc.stdout.startswith("usage: bash .ci/run"), proc.stdout)
            self.assertNotIn("ci: harness installed", proc.stdout)
            # what a local run (without CI=true) does instead
            text = " ".join(proc.stdout.split())
            self.assertIn("exports CI=true", text)
            self.assertIn("A local run without CI=true", text)
            self.assertIn("skips such a target with a message", text)

    def test_unknown_arguments_refused(self):
        for args in (("--bogus",), ("pike",), ("--help", "x"), ("",)):
            proc = _run(*args)
            self.assertEqual(2, proc.returncode, args)
            self.assertIn("ci: ", proc.stderr)
            self.assertIn("usage: bash .ci/run", proc.stderr)
            self.assertEqual("", proc.stdout)

    def test_exports_ci_true_before_running_novaseries(self):
        # CI's machine may not set CI=true itself: the script must, or a
        # missing interpreter is only a skip
        lines = [line.strip() for line in SCRIPT.read_text().splitlines()
                 if line.strip() and not line.strip().startswith("#")]
        run = next(number for number, line in enumerate(lines)
                   if re.search(r"novaseries\"? ci\b", line) and "exec" in line)
        export = [number for number, line in enumerate(lines)
                  if re.fullmatch(r"export CI=(true|\"true\"|'true')", line)]
        self.assertTrue(export, "no `export CI=true` in .ci/run")
        self.assertLess(export[0], run)


class MissingInterpreterTest(unittest.TestCase):
    """A target's optional interpreter missing: skipped with a message
    outside CI, a failure under CI=true."""

    def _target(self):
        target = mock.Mock(optional_interpreter=True,
                           interpreter="python-novaseries-nosuch2.7")
        target.name = "pike"
        return target

    def test_skipped_outside_ci(self):
        log = helpers.capture_log(self)
        with mock.patch.dict("os.environ", {"CI": ""}):
            outcome = outcomes.missing_interpreter(self._target())
        self.assertEqual((0, 1), (outcome.failed, outcome.skipped))
        self.assertIn("warning:", log.getvalue())
        self.assertIn("skipped", log.getvalue())

    def test_failure_under_ci(self):
        log = helpers.capture_log(self)
        with mock.patch.dict("os.environ", {"CI": "true"}):
            outcome = outcomes.missing_interpreter(self._target())
        self.assertEqual((1, 0), (outcome.failed, outcome.skipped))
        self.assertIn("cannot run under CI=true", log.getvalue())
