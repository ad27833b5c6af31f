"""flake8 on the files a series or a commit touches."""

import pathlib
import shutil
import tempfile
import unittest
from unittest import mock

from novaseries import flake8_run


class Flake8FilesTest(unittest.TestCase):
    """flake8_run.run_flake8: the series' Python files, or a commit's own."""

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
        with mock.patch.object(flake8_run, "run", run), \
                mock.patch.object(flake8_run, "changed_files",
                                  return_value=["nova/a.py", "nova/b.py", "nova/c.txt"]):
            outcome = flake8_run.run_flake8(pathlib.Path("/venv"), target, self.tree, "HEAD",
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
