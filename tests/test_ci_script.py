"""``.ci/run``'s own arguments: --help answers, anything else is refused
before anything is installed or run."""

import subprocess
import unittest

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

    def test_unknown_arguments_refused(self):
        for args in (("--bogus",), ("pike",), ("--help", "x"), ("",)):
            proc = _run(*args)
            self.assertEqual(2, proc.returncode, args)
            self.assertIn("ci: ", proc.stderr)
            self.assertIn("usage: bash .ci/run", proc.stderr)
            self.assertEqual("", proc.stdout)
