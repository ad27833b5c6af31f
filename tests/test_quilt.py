"""quilt: a release's packaged stack as one quilt series with DEP-3
headers -- names, headers, bug numbers, the folders' diffs byte for byte,
the check on the sdist, refusals (the packagers' docs: test_packager_docs)."""

import re
import shutil
import unittest
from unittest import mock

from novaseries import export, quilt, targets, tree
from novaseries.util import HarnessError
from tests import helpers

CHANGE = "I" + "c" * 40
TOP = "I" + "d" * 40
REVIEW = "https://review.opendev.org/c/openstack/nova/+/999999"

#: The change folder's commit: a body of two paragraphs, one line indented,
#: a real bug number and a placeholder, an author mail headers encode.
CHANGE_MESSAGE = ("Fix the driver\n\nFirst paragraph.\n\nSecond paragraph,\n  indented.\n\n"
                  f"Closes-Bug: #2169776\nRelated-Bug: #MMMMMMM\nChange-Id: {CHANGE}\n")
CHANGE_HEADER = f"""\
Description: Fix the driver
 First paragraph.
 .
 Second paragraph,
   indented.
 .
 Closes-Bug: #2169776
 Related-Bug: #MMMMMMM
 Change-Id: {CHANGE}
Author: Jöhn Q. Dœ <j.doe@example.org>
Bug: https://bugs.launchpad.net/nova/+bug/2169776
Forwarded: no
Last-Update: 2026-03-04
---
"""

#: The series of the fake release's stack: patches/fake (its own folder:
#: "teardown"), patches/change/fake, patches/top/fake.
SERIES = ["0001-teardown-0001-Fix-the-driver.patch",
          "0002-teardown-0002-Add-a-regression-test.patch",
          "0003-change-0001-Fix-the-driver.patch",
          "0004-top-0001-Add-a-package.patch"]


def tail(data):
    """What follows the first ``---`` line (format-patch's message end,
    the quilt patch's header end)."""
    return data[data.index(b"\n---\n") + 5:]


class QuiltTest(helpers.ProjectTestCase):
    """A fake release whose ``fake-all`` target stacks patches/fake,
    patches/change/fake and patches/top/fake; the first two hold a file of
    the same name."""

    def setUp(self):
        super().setUp()
        main = tree.prepare(self.ctx, self.target, self.tmp / "main")
        helpers.sample_series(main)
        export.export(self.target, main)
        self._stack("change", '"patches/fake"',
                    {"nova/virt/driver.py": helpers.DRIVER.replace("line 20: original",
                                                                   "line 20: changed")},
                    CHANGE_MESSAGE, date="2026-03-04T00:30:00+0100",
                    author="Jöhn Q. Dœ <j.doe@example.org>")
        self._stack("fake-all", '["patches/fake", "patches/change/fake"]',
                    {"nova/virt/pkg/__init__.py": "", "nova/virt/pkg/mod.py": "x = 1\n"},
                    f"Add a package\n\nA package.\n\nChange-Id: {TOP}\n", folder="top",
                    stack=True)
        self.stack = targets.packaged_stack(self.ctx, "fake")
        self.out = self.tmp / "quilt"

    def _stack(self, name, below, files, msg, folder=None, stack=False, **commit):
        """A target ``name`` on ``below`` (TOML) whose own folder,
        patches/<folder or name>/fake, gets one commit; with ``stack``,
        the packaged stack of release fake."""
        patches = self.root / "patches" / (folder or name) / "fake"
        patches.mkdir(parents=True)
        (patches / "series").write_text("")
        toml = self.root / "targets" / "targets.toml"
        toml.write_text(toml.read_text() + (
            f'\n[targets.{name}]\nversion = "{helpers.VERSION}"\nsha256 = "{self.sha}"\n'
            f'pins = "pins/fake.txt"\npatches = "{patches.relative_to(self.root)}"\n'
            f'below = {below}\nvenv = "fake"\n' + ("stack = true\n" if stack else "")))
        target = targets.get(self.ctx, name)
        work = tree.prepare(self.ctx, target, self.tmp / name)
        helpers.commit(work, files, msg, **commit)
        export.export(target, work)

    def written(self, name):
        return (self.out / name).read_bytes()

    def test_series_is_the_stack_in_order_names_unique(self):
        quilt.quilt(self.ctx, self.stack, self.out)
        self.assertEqual(SERIES, (self.out / "series").read_text().splitlines())
        self.assertEqual(sorted(SERIES + ["series"]), sorted(p.name for p in self.out.iterdir()))
        # the folders' own names collide; the quilt names do not
        self.assertEqual((self.root / "patches/fake/0001-Fix-the-driver.patch").name,
                         (self.root / "patches/change/fake/0001-Fix-the-driver.patch").name)
        self.assertEqual(len(SERIES), len(set(SERIES)))
        self.assertEqual([self.root / f for f in ("patches/fake", "patches/change/fake",
                                                  "patches/top/fake")],
                         list(self.stack.folders))

    def test_diffs_byte_identical(self):
        quilt.quilt(self.ctx, self.stack, self.out)
        sources = [path for _, paths in self.stack.series() for path in paths]
        self.assertEqual(len(SERIES), len(sources))
        for name, source in zip(SERIES, sources):
            with self.subTest(name=name):
                self.assertEqual(tail(source.read_bytes()), tail(self.written(name)))
                self.assertTrue(self.written(name).endswith(tail(source.read_bytes())))
                self.assertIn(b"\ndiff --git ", tail(self.written(name)))

    def test_dep3_headers_in_order(self):
        quilt.quilt(self.ctx, self.stack, self.out)
        data = self.written(SERIES[2]).decode()
        self.assertEqual(CHANGE_HEADER, data[:data.index("\n---\n") + 5])
        top = self.written(SERIES[3]).decode()
        self.assertTrue(top.startswith(f"Description: Add a package\n A package.\n .\n "
                                       f"Change-Id: {TOP}\nAuthor: Dev <dev@example.org>\n"
                                       "Forwarded: no\nLast-Update: 2026-01-02\n---\n "),
                        top[:400])
        for name in SERIES:
            fields = re.findall(r"^([A-Za-z-]+):", self.written(name).decode().split(
                "\n---\n")[0], re.M)
            self.assertEqual(["Description", "Author"], fields[:2], name)
            self.assertEqual(["Forwarded", "Last-Update"], fields[-2:], name)

    def test_placeholders_left_warn_and_get_no_bug_header(self):
        quilt.quilt(self.ctx, self.stack, self.out, known=targets.placeholders(self.ctx))
        log = self.log.getvalue()
        self.assertIn("bug placeholder NNNNNNN left in 2 patch(es) "
                      f"({SERIES[0]}, ...)", log)
        self.assertIn("give its number with --bug main=NUMBER", log)
        # (in a message's footer, or only in a diff: SERIES[1]'s test)
        self.assertIn(f"bug placeholder MMMMMMM left in 2 patch(es) ({SERIES[1]}, ...)", log)
        self.assertIn("--bug userdelete=NUMBER", log)
        first = self.written(SERIES[0]).decode()
        self.assertNotIn("\nBug", first.split("\n---\n")[0])
        self.assertIn(" Closes-Bug: #NNNNNNN\n", first)

    def test_bug_option_as_export(self):
        proc = self.cli("quilt", "fake", "--out", str(self.out), "--bug", "main=1234567")
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertNotIn("placeholder NNNNNNN", proc.stdout)
        self.assertIn("placeholder MMMMMMM", proc.stdout)
        first = self.written(SERIES[0]).decode()
        self.assertIn("\n Closes-Bug: #1234567\n", first)
        self.assertIn("\nBug: https://bugs.launchpad.net/nova/+bug/1234567\nForwarded: no\n",
                      first)
        second = self.written(SERIES[1]).decode()
        self.assertIn("\nBug: https://bugs.launchpad.net/nova/+bug/1234567\n", second)
        # the diff gets the numbers too (file names, contents), as export's
        self.assertIn("+++ b/nova/tests/functional/test_bug_1234567.py", second)
        self.assertNotIn("NNNNNNN", "".join(self.written(n).decode() for n in SERIES))
        bad = self.cli("quilt", "fake", "--out", str(self.tmp / "bad"), "--bug", "main=x")
        self.assertEqual((1, 1), (bad.returncode, bad.stderr.count("\n")), bad.stderr)
        self.assertFalse((self.tmp / "bad").exists())

    def test_bug_option_for_no_patch_warns(self):
        proc = self.cli("quilt", "fake", "--out", str(self.out), "--bug", "main=1234567",
                        "--bug", "userdelete=7654321", "--bug", "main=1")
        self.assertEqual(1, proc.returncode)
        self.assertIn("main is given twice", proc.stderr)
        text = (self.root / "targets" / "targets.toml").read_text()
        (self.root / "targets" / "targets.toml").write_text(
            text.replace('[bugs]\n', '[bugs]\nrebuild = "KKKKKKK"\n'))
        proc = self.cli("quilt", "fake", "--out", str(self.out), "--bug", "rebuild=1234567")
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn("warning: --bug rebuild=...: no patch of fake's stack carries KKKKKKK",
                      proc.stdout + proc.stderr)

    def test_stray_patch_refused(self):
        (self.root / "patches" / "fake" / "0009-left-out.patch").write_text("x\n")
        with self.assertRaisesRegex(HarnessError, "holds 0009-left-out.patch, which its "
                                    "series does not list"):
            quilt.build(self.ctx.root, self.stack)

    def test_forwarded(self):
        proc = self.cli("quilt", "fake", "--out", str(self.out), "--forwarded",
                        f"{TOP}={REVIEW}")
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn(f"\nForwarded: {REVIEW}\nLast-Update: ", self.written(SERIES[3]).decode())
        for name in SERIES[:3]:
            self.assertIn("\nForwarded: no\n", self.written(name).decode(), name)
        for value, error in ((f"{'I' + 'e' * 40}={REVIEW}", "no patch of fake's stack has "
                              "Change-Id"),
                             (f"{TOP}=review", "expected CHANGE-ID=URL"),
                             (REVIEW, "expected CHANGE-ID=URL")):
            other = self.tmp / "other"
            proc = self.cli("quilt", "fake", "--out", str(other), "--forwarded", value)
            self.assertEqual(1, proc.returncode, value)
            self.assertIn(error, proc.stderr)
            self.assertFalse(other.exists())

    def test_non_empty_out_refused_untouched(self):
        self.out.mkdir()
        (self.out / "keep.patch").write_text("mine\n")
        beside = sorted(p.name for p in self.tmp.iterdir())
        proc = self.cli("quilt", "fake", "--out", str(self.out))
        self.assertEqual(1, proc.returncode)
        self.assertIn("exists and is not an empty folder", proc.stderr)
        self.assertEqual(["keep.patch"], [p.name for p in self.out.iterdir()])
        self.assertEqual("mine\n", (self.out / "keep.patch").read_text())
        self.assertEqual(beside, sorted(p.name for p in self.tmp.iterdir()))
        # an empty folder is fine
        (self.out / "keep.patch").unlink()
        self.assertEqual(0, self.cli("quilt", "fake", "--out", str(self.out)).returncode)
        self.assertEqual(SERIES, (self.out / "series").read_text().splitlines())

    def test_unknown_release_refused(self):
        for release in ("nosuch", "fake-all", "change"):
            proc = self.cli("quilt", release, "--out", str(self.out))
            self.assertEqual(1, proc.returncode, release)
            self.assertEqual(1, proc.stderr.count("\n"), proc.stderr)
            self.assertIn(f"unknown release {release!r} (releases: fake, other)", proc.stderr)
            self.assertFalse(self.out.exists())

    def test_empty_new_file_warned(self):
        quilt.quilt(self.ctx, self.stack, self.out)
        self.assertIn(f"{SERIES[3]} creates the empty file nova/virt/pkg/__init__.py",
                      self.log.getvalue())
        self.assertEqual(1, self.log.getvalue().count("creates the empty file"))

    def test_check_applies_to_the_sdist_as_git_am(self):
        proc = self.cli("quilt", "fake", "--out", str(self.out), "--check")
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn("check: 4 patches applied with patch -p1 --fuzz=0 "
                      "--no-backup-if-mismatch to nova 0.0.1's sdist: the tree git am of "
                      "the 3 folders gives", proc.stdout)
        if shutil.which("dpkg-source"):
            self.assertIn("check: a 3.0 (quilt) source package nova_0.0.1-1 with the series "
                          "as debian/patches builds (dpkg-source -b) and extracts "
                          "(dpkg-source -x) to the same tree, but for the empty file(s) it "
                          "leaves out (patch -E): nova/virt/pkg/__init__.py", proc.stdout)
        self.assertEqual(SERIES, (self.out / "series").read_text().splitlines())

    def test_check_with_bug_numbers(self):
        # the reference tree gets the same numbers: the check passes, and
        # the files that carried a placeholder in their name are there
        proc = self.cli("quilt", "fake", "--out", str(self.out), "--check",
                        "--bug", "main=1234567", "--bug", "userdelete=7654321")
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn("check: 4 patches applied with patch -p1", proc.stdout)
        self.assertIn("test_bug_1234567.py", self.written(SERIES[1]).decode())

    def test_check_failure_leaves_nothing(self):
        entries = quilt.build(self.ctx.root, self.stack)
        wrong = [quilt.Entry(e.name, e.source, e.data.replace(b"+x = 1", b"+x = 2"))
                 for e in entries]
        with self.assertRaisesRegex(HarnessError, r"patch -p1 --fuzz=0 "
                                    r"--no-backup-if-mismatch's tree differs .* \(1 files\)") \
                as caught:
            quilt.write(wrong, self.out, lambda f: quilt.check(self.ctx, self.stack, f))
        self.assertEqual("content differs: nova/virt/pkg/mod.py", caught.exception.details)
        self.assertFalse(self.out.exists())
        self.assertEqual([], [p.name for p in self.tmp.iterdir() if "quilt" in p.name])
        # a patch that does not apply: named
        broken = [quilt.Entry(e.name, e.source, e.data.replace(b"\n line 19: original",
                                                               b"\n line 19: other"))
                  for e in entries]
        with self.assertRaisesRegex(HarnessError, f"{SERIES[2]} does not apply"):
            quilt.write(broken, self.out, lambda f: quilt.check(self.ctx, self.stack, f))
        self.assertFalse(self.out.exists())

    def test_below_upto_is_not_a_packaged_stack(self):
        toml = self.root / "targets" / "targets.toml"
        toml.write_text(toml.read_text().replace(
            'below = ["patches/fake", "patches/change/fake"]',
            'below = ["patches/fake", "patches/change/fake"]\nbelow_upto = "0001"'))
        with self.assertRaisesRegex(HarnessError, "packagers apply whole folders"):
            targets.packaged_stack(self.ctx, "fake")


class ReadFormatPatchTest(unittest.TestCase):

    def test_folded_and_encoded_headers(self):
        data = ("From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
                "From: Seed maintainers\n <m@example.org>\n"
                "Date: Wed, 2 Dec 2026 23:30:00 -0100\n"
                "Subject: [PATCH] A subject long enough\n to be folded\n\n"
                "---\n x | 1 +\n\ndiff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
        with mock.patch("pathlib.Path.read_bytes", return_value=data.encode()):
            patch = quilt.read_format_patch("x.patch")
        self.assertEqual(("A subject long enough to be folded", "", "Seed maintainers "
                          "<m@example.org>", "2026-12-02", None),
                         (patch.subject, patch.body, patch.author, patch.date, patch.change_id))
        self.assertEqual(b" x | 1 +\n\ndiff --git a/x b/x\n", patch.tail[:29])
        self.assertEqual("Description: A subject long enough to be folded",
                         quilt.description(patch.subject, patch.body))

    def test_not_a_format_patch(self):
        for data in (b"diff --git a/x b/x\n", b"From: a@b\nDate: x\nSubject: s\n\nno diff\n"):
            with mock.patch("pathlib.Path.read_bytes", return_value=data), \
                    self.assertRaises(HarnessError):
                quilt.read_format_patch("x.patch")
