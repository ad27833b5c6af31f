"""export: byte-identical round trip, refusal on dirty trees, bug numbers,
trailers."""

from novaseries import export, tree
from novaseries.util import HarnessError, git
from tests import helpers


def snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.is_file()}


class ExportTest(helpers.ProjectTestCase):

    def setUp(self):
        super().setUp()
        self.work = tree.prepare(self.ctx, self.target, self.tmp / "authoring")
        helpers.sample_series(self.work)

    def test_round_trip_byte_identical(self):
        export.export(self.target, self.work)
        before = snapshot(self.patches)
        self.assertEqual(before["series"],
                         b"0001-Fix-the-driver.patch\n0002-Add-a-regression-test.patch\n")
        fresh = tree.prepare(self.ctx, self.target, self.tmp / "fresh")
        out = self.tmp / "out"
        export.export(self.target, fresh, out=out)
        self.assertEqual(snapshot(out), before)
        export.export(self.target, fresh)  # back onto patches/fake
        self.assertEqual(snapshot(self.patches), before)
        text = before["0001-Fix-the-driver.patch"].decode()
        self.assertTrue(text.startswith("From 0000000000000000000000000000000000000000 "))
        self.assertNotIn("\n-- \n", text, "no version signature")

    def test_index_lines_do_not_follow_core_abbrev(self):
        # A tree whose repository has grown (or a user's core.abbrev) must
        # not rewrite every index line of an unchanged series.
        export.export(self.target, self.work)
        before = snapshot(self.patches)
        git(self.work, "config", "core.abbrev", "12")
        export.export(self.target, self.work)
        self.assertEqual(snapshot(self.patches), before)
        index = [line for line in before["0001-Fix-the-driver.patch"].decode().splitlines()
                 if line.startswith("index ")]
        self.assertTrue(index)
        for line in index:
            old, new = line.split()[1].split("..")
            self.assertEqual((7, 7), (len(old), len(new)), line)

    def test_reexport_leaves_git_status_clean(self):
        export.export(self.target, self.work)
        git(self.root, "init", "-q")
        git(self.root, "add", ".")
        git(self.root, "commit", "-q", "-m", "series")
        fresh = tree.prepare(self.ctx, self.target, self.tmp / "fresh")
        export.export(self.target, fresh)
        self.assertEqual(git(self.root, "status", "--porcelain"), "")

    def test_export_refuses_uncommitted_changes_and_loses_nothing(self):
        export.export(self.target, self.work)
        before = snapshot(self.patches)
        driver = self.work / "nova" / "virt" / "driver.py"
        driver.write_text("work in progress\n")
        proc = self.cli("export", "fake", "--tree", str(self.work))
        self.assertEqual(proc.returncode, 1)
        self.assertIn("uncommitted changes", proc.stderr)
        self.assertIn("nova/virt/driver.py", proc.stderr)
        self.assertEqual(driver.read_text(), "work in progress\n")
        self.assertEqual(snapshot(self.patches), before)

    def test_export_refuses_untracked_files(self):
        (self.work / "nova" / "forgotten.py").write_text("x = 1\n")
        with self.assertRaises(HarnessError):
            export.export(self.target, self.work)
        self.assertEqual(snapshot(self.patches), {"series": b""})

    def test_removed_commit_drops_its_patch(self):
        export.export(self.target, self.work)
        git(self.work, "reset", "-q", "--hard", "HEAD~1")
        export.export(self.target, self.work)
        self.assertEqual(sorted(snapshot(self.patches)), ["0001-Fix-the-driver.patch", "series"])

    def test_bug_numbers_in_contents_and_file_names(self):
        out = self.tmp / "out"
        proc = self.cli("export", "fake", "--tree", str(self.work), "--out", str(out),
                        "--bug", "main=1234567", "--bug", "userdelete=7654321")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        text = (out / "0002-Add-a-regression-test.patch").read_text()
        self.assertNotIn("NNNNNNN", text)
        self.assertNotIn("MMMMMMM", text)
        self.assertIn("nova/tests/functional/test_bug_1234567.py", text)
        self.assertIn("releasenotes/notes/bug-1234567-0123.yaml", text)
        self.assertIn("+bug/1234567", text)
        self.assertIn("see 7654321", text)
        self.assertIn("Related-Bug: #1234567", text)
        self.assertIn("Closes-Bug: #1234567",
                      (out / "0001-Fix-the-driver.patch").read_text())
        # the exported series applies to a pristine tree and gives real names
        self.write_targets(patches=str(out.relative_to(self.root)) if out.is_relative_to(
            self.root) else str(out))
        check = tree.prepare(self.ctx, self.target, self.tmp / "check")
        tree.apply_series(check, [out / n for n in (out / "series").read_text().split()])
        self.assertTrue((check / "nova/tests/functional/test_bug_1234567.py").is_file())
        # the tree itself still has the placeholders
        self.assertTrue((self.work / "nova/tests/functional/test_bug_NNNNNNN.py").is_file())

    def test_placeholder_left_warns(self):
        out = self.tmp / "out"
        proc = self.cli("export", "fake", "--tree", str(self.work), "--out", str(out),
                        "--bug", "main=1234567")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("MMMMMMM", (out / "0002-Add-a-regression-test.patch").read_text())
        self.assertIn("warning: bug placeholder MMMMMMM left in 1 patch(es) "
                      "(0002-Add-a-regression-test.patch): give its number with "
                      "--bug userdelete=NUMBER", proc.stderr + proc.stdout)
        self.assertNotIn("NNNNNNN left", proc.stderr + proc.stdout)

    def test_bad_bug_option(self):
        for value in ("nosuch=1", "main=abc", "main"):
            proc = self.cli("export", "fake", "--tree", str(self.work), "--bug", value)
            self.assertEqual(proc.returncode, 1, value)
            self.assertEqual(proc.stderr.count("\n"), 1)

    def test_trailers_and_signoff_only_at_export(self):
        out = self.tmp / "out"
        env = {"GIT_CONFIG_GLOBAL": str(self.tmp / "gitconfig")}
        (self.tmp / "gitconfig").write_text("[user]\n\tname = Sub Mitter\n"
                                            "\temail = sub@example.org\n")
        proc = self.cli("export", "fake", "--tree", str(self.work), "--out", str(out),
                        "--signoff", "--trailer", "Assisted-By: sometool", env=env)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        text = (out / "0001-Fix-the-driver.patch").read_text()
        message = text.split("\n---\n")[0]
        self.assertTrue(message.endswith(f"Change-Id: {helpers.CHANGE_ID}\n"
                                         "Assisted-By: sometool\n"
                                         "Signed-off-by: Sub Mitter <sub@example.org>"),
                        message)
        self.assertNotIn("Signed-off-by", git(self.work, "log", "--format=%B"))

    def test_submission_options_never_rewrite_the_series(self):
        before = {p.name: p.read_bytes() for p in self.target.patches.iterdir()}
        proc = self.cli("export", "fake", "--tree", str(self.work), "--trailer",
                        "Assisted-By: sometool")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        after = {p.name: p.read_bytes() for p in self.target.patches.iterdir()}
        self.assertEqual(before, after)
        copy = self.ctx.build / "export" / "fake"
        self.assertIn("Assisted-By: sometool",
                      (copy / "0001-Fix-the-driver.patch").read_text())

    def test_author_only_in_the_submission_copy(self):
        export.export(self.target, self.work)
        before = snapshot(self.patches)
        proc = self.cli("export", "fake", "--tree", str(self.work),
                        "--author", "Sub Mitter <sub@example.org>")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(snapshot(self.patches), before)  # patches/ untouched
        copy = self.ctx.build / "export" / "fake"
        for name in ("0001-Fix-the-driver.patch", "0002-Add-a-regression-test.patch"):
            self.assertIn("\nFrom: Sub Mitter <sub@example.org>\n",
                          (copy / name).read_text())
            self.assertIn("\nFrom: Dev <dev@example.org>\n", before[name].decode())
            # the rest of the patch is as it was
            self.assertEqual(before[name].decode().replace("Dev <dev@example.org>",
                                                           "Sub Mitter <sub@example.org>"),
                             (copy / name).read_text())
        self.assertNotIn("Sub Mitter", git(self.work, "log", "--format=%an %ae"))

    def test_author_with_bugs_applies_back_exactly(self):
        out = self.tmp / "out"
        author = ("Jöhn Q. Dœ", "j.doe@example.org")
        export.export(self.target, self.work, out=out, bugs={"NNNNNNN": "1234567"},
                      author=author)
        text = (out / "0002-Add-a-regression-test.patch").read_text()
        self.assertIn("test_bug_1234567.py", text)
        check = tree.prepare(self.ctx, self.target, self.tmp / "check")
        tree.apply_series(check, [out / n for n in (out / "series").read_text().split()])
        self.assertEqual(["Jöhn Q. Dœ <j.doe@example.org>"] * 2,
                         git(check, "log", "--format=%an <%ae>", "base..HEAD").splitlines())
        # the author's date stays the commit's own
        self.assertEqual(git(self.work, "log", "--format=%aI", "base..HEAD"),
                         git(check, "log", "--format=%aI", "base..HEAD"))

    def test_malformed_author_refused(self):
        for value in ("Sub Mitter", "sub@example.org", "<sub@example.org>",
                      "Sub Mitter <sub>", "Sub Mitter <sub@example.org> x", ""):
            proc = self.cli("export", "fake", "--tree", str(self.work), "--author", value)
            self.assertEqual(proc.returncode, 1, value)
            self.assertEqual(proc.stderr.count("\n"), 1, proc.stderr)
            self.assertIn("expected 'Name <email@example.org>'", proc.stderr)
        self.assertFalse((self.ctx.build / "export").exists())
        with self.assertRaises(HarnessError):
            export.parse_author("Sub\nMitter <sub@example.org>")
