"""Small local inputs for the harness tests: a fake Nova sdist, a throwaway
project (targets.toml, patches, pins) and helpers to commit in a tree.

Nothing here touches the network or the real project's build folder.
"""

import hashlib
import io
import logging
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

from novaseries import targets, util

REPO = pathlib.Path(__file__).resolve().parent.parent
VERSION = "0.0.1"

DRIVER = "".join(f"line {i}: original driver code\n" for i in range(1, 41))
FILES = {
    "PKG-INFO": f"Metadata-Version: 1.1\nName: nova\nVersion: {VERSION}\n",
    "setup.cfg": "[metadata]\nname = nova\n",
    "nova/__init__.py": "",
    "nova/virt/__init__.py": "",
    "nova/virt/driver.py": DRIVER,
    "nova/tests/__init__.py": "",
    "nova/tests/functional/__init__.py": "",
    "nova/tests/functional/test_servers.py": "# servers\n",
    "tools/run.sh": "#!/bin/sh\necho hi\n",
}

CHANGE_ID = "I" + "0123456789abcdef" * 2 + "01234567"


def make_sdist(folder, files=FILES, version=VERSION):
    """Write ``nova-<version>.tar.gz`` into ``folder``; return (path, sha256)."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"nova-{version}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for name, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(f"nova-{version}/{name}")
            info.size = len(data)
            info.mtime = 946684800
            info.mode = 0o755 if name.endswith(".sh") else 0o644
            tar.addfile(info, io.BytesIO(data))
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def message(summary, body="Explain the change.", footer="Closes-Bug: #NNNNNNN"):
    """A commit message that passes the lint."""
    return f"{summary}\n\n{body}\n\n{footer}\nChange-Id: {CHANGE_ID}\n"


def capture_log(test, stream=None):
    """Send the harness's logger (``novaseries``) to ``stream`` (a new
    StringIO by default) for the rest of ``test``, and only there; the
    handlers, level and propagation it had come back at the test's
    clean-up (inside ``ci``, the CLI's handler).  Returns the stream."""
    log = util.LOG
    saved = (log.handlers[:], log.level, log.propagate)
    stream = stream if stream is not None else io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    log.handlers[:] = [handler]
    log.setLevel(logging.INFO)
    log.propagate = False

    def restore():
        log.handlers[:] = saved[0]
        log.setLevel(saved[1])
        log.propagate = saved[2]
    test.addCleanup(restore)
    return stream


class ProjectTestCase(unittest.TestCase):
    """A temporary project with target ``fake`` (nova 0.0.1 from a fake sdist,
    pre-seeded in the sdist cache) and an empty ``patches/fake/series``."""

    interpreter = "python3.11"

    def setUp(self):
        self.log = capture_log(self)  # the harness's progress lines and warnings
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="novaseries-test-"))
        self.addCleanup(shutil.rmtree, self.tmp, ignore_errors=True)
        self.root = self.tmp / "project"
        self.cache = self.tmp / "cache"
        self.sdist, self.sha = make_sdist(self.cache)
        (self.root / "targets").mkdir(parents=True)
        (self.root / "pins").mkdir()
        (self.root / "pins" / "fake.txt").write_text("# nothing\n")
        self.patches = self.root / "patches" / "fake"
        self.patches.mkdir(parents=True)
        (self.patches / "series").write_text("")
        self.write_targets()
        self.ctx = util.Context.create(self.root, self.tmp / "build", self.cache)
        self.target = targets.get(self.ctx, "fake")

    def write_targets(self, **overrides):
        """(Re)write targets.toml for target ``fake`` (and ``other``, no patches)."""
        fields = dict(version=VERSION, sha256=self.sha, interpreter=self.interpreter,
                      pins="pins/fake.txt", patches="patches/fake")
        fields.update(overrides)
        body = "\n".join(f'{k} = "{v}"' for k, v in fields.items())
        (self.root / "targets" / "targets.toml").write_text(
            '[bugs]\nmain = "NNNNNNN"\nuserdelete = "MMMMMMM"\n\n'
            '[defaults]\ninterpreter = "python3.11"\nunit = ["nova.tests.unit"]\n\n'
            f"[targets.fake]\n{body}\n\n"
            f'[targets.other]\nversion = "9.9.9"\nsha256 = "{"0" * 64}"\n'
            'pins = "pins/other.txt"\npatches = "patches/other"\nenabled = false\n')

    def cli(self, *args, env=None):
        """Run ``python -m novaseries --root ... args``; return CompletedProcess."""
        full_env = dict(os.environ, PYTHONPATH=str(REPO), NOVASERIES_SDIST_CACHE=str(self.cache),
                        NOVASERIES_BUILD=str(self.tmp / "build"))
        full_env.update(env or {})
        return subprocess.run([sys.executable, "-m", "novaseries", "--root", str(self.root),
                               *args], capture_output=True, text=True, env=full_env,
                              stdin=subprocess.DEVNULL)


def commit(tree, files, msg, date="2026-01-02T03:04:05+0000", author="Dev <dev@example.org>"):
    """Write ``files`` ({path: text or None to delete}) in ``tree`` and commit
    them as a developer would (own identity, given date)."""
    tree = pathlib.Path(tree)
    for name, text in files.items():
        path = tree / name
        if text is None:
            path.unlink()
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    name, email = author[:-1].split(" <")
    env = {"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_AUTHOR_DATE": date,
           "GIT_COMMITTER_DATE": date}
    util.git(tree, "add", "--all", ".")
    util.git(tree, "commit", "-q", "-m", msg, env=env)
    return util.git(tree, "rev-parse", "HEAD")


def sample_series(tree):
    """Two commits on ``tree``: a driver change, then a regression test file
    named after the main bug placeholder plus a reno-like note."""
    commit(tree, {"nova/virt/driver.py": DRIVER.replace("line 10: original", "line 10: fixed")},
           message("Fix the driver"))
    commit(tree, {"nova/tests/functional/test_bug_NNNNNNN.py":
                  "# Regression test for bug NNNNNNN\n# see MMMMMMM\n",
                  "releasenotes/notes/bug-NNNNNNN-0123.yaml":
                  "fixes:\n  - https://bugs.launchpad.net/nova/+bug/NNNNNNN\n"},
           message("Add a regression test", footer="Related-Bug: #NNNNNNN"),
           date="2026-01-02T04:00:00+0100")
