"""prepare: reproducible commits, never losing local work, failing patches."""

from unittest import mock

from novaseries import export, tree
from novaseries.util import HarnessError, git
from tests import helpers


class PrepareTest(helpers.ProjectTestCase):

    def make_series(self):
        """Write a two-patch series into patches/fake via a scratch tree."""
        work = tree.prepare(self.ctx, self.target, self.tmp / "authoring")
        helpers.sample_series(work)
        export.export(self.target, work)
        return self.target.series()

    def test_base_commit_fixed(self):
        one = tree.prepare(self.ctx, self.target, self.tmp / "one")
        self.assertEqual(git(one, "log", "-1", "--format=%an <%ae> %aI %cn <%ce> %cI %s"),
                         "novaseries <novaseries@localhost> 2000-01-01T00:00:00+00:00 "
                         "novaseries <novaseries@localhost> 2000-01-01T00:00:00+00:00 "
                         "Import nova 0.0.1 (pristine sdist)")
        self.assertEqual(git(one, "rev-parse", "HEAD"), git(one, "rev-parse", "base"))
        exclude = (one / ".git" / "info" / "exclude").read_text()
        for entry in ("instances/", ".stestr/", "__pycache__/"):
            self.assertIn(entry, exclude)

    def test_commit_ids_identical_across_prepares(self):
        self.make_series()
        one = tree.prepare(self.ctx, self.target, self.tmp / "one")
        two = tree.prepare(self.ctx, self.target, self.tmp / "two")
        ids = git(one, "rev-list", "HEAD")
        self.assertEqual(len(ids.split()), 3)
        self.assertEqual(ids, git(two, "rev-list", "HEAD"))
        self.assertEqual(git(one, "log", "-1", "--format=%cn %cI"),
                         "novaseries 2026-01-02T04:00:00+01:00")

    def test_upto(self):
        self.make_series()
        part = tree.prepare(self.ctx, self.target, self.tmp / "part", upto="0001")
        self.assertEqual(git(part, "log", "--format=%s", "base..HEAD"), "Fix the driver")

    def test_rerun_fast_forwards_a_prefix_and_is_idempotent(self):
        self.make_series()
        part = tree.prepare(self.ctx, self.target, self.tmp / "t", upto="0001")
        full = tree.prepare(self.ctx, self.target, self.tmp / "t")
        self.assertEqual(part, full)
        ref = tree.prepare(self.ctx, self.target, self.tmp / "ref")
        self.assertEqual(git(full, "rev-parse", "HEAD"), git(ref, "rev-parse", "HEAD"))
        tree.prepare(self.ctx, self.target, self.tmp / "t")  # no-op
        self.assertEqual(git(full, "rev-parse", "HEAD"), git(ref, "rev-parse", "HEAD"))

    def test_rerun_refuses_with_local_commits_and_keeps_them(self):
        self.make_series()
        work = tree.prepare(self.ctx, self.target, self.tmp / "t")
        mine = helpers.commit(work, {"nova/new.py": "x = 1\n"}, helpers.message("Mine"))
        proc = self.cli("prepare", "fake", "--dest", str(work))
        self.assertEqual(proc.returncode, 1)
        self.assertIn("commits that are not in the series", proc.stderr)
        self.assertIn("Mine", proc.stderr)
        self.assertEqual(git(work, "rev-parse", "HEAD"), mine)
        # --force keeps them on a backup branch
        proc = self.cli("prepare", "fake", "--dest", str(work), "--force")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("novaseries-backup-", proc.stdout)
        self.assertEqual(git(work, "rev-parse", f"novaseries-backup-{mine[:12]}"), mine)
        self.assertNotEqual(git(work, "rev-parse", "HEAD"), mine)

    def test_rerun_accepts_the_same_series_recommitted(self):
        # Edit-then-export with no real change: the commits are the series
        # but carry another committer and date.
        self.make_series()
        work = tree.prepare(self.ctx, self.target, self.tmp / "t")
        want = git(work, "rev-parse", "HEAD")
        import subprocess
        subprocess.run(["git", "-C", str(work), "-c", "user.name=Dev", "-c",
                        "user.email=dev@x", "commit", "-q", "--amend", "--no-edit",
                        "--date=2001-01-01T00:00:00+0000"], check=True,
                       env={**__import__("os").environ,
                            "GIT_COMMITTER_DATE": "2002-02-02T00:00:00+0000"})
        self.assertNotEqual(git(work, "rev-parse", "HEAD"), want)
        proc = self.cli("prepare", "fake", "--dest", str(work))
        self.assertEqual(proc.returncode, 1)  # the author date differs: not the same
        subprocess.run(["git", "-C", str(work), "reset", "-q", "--hard", want], check=True)
        subprocess.run(["git", "-C", str(work), "-c", "user.name=Dev", "-c",
                        "user.email=dev@x", "commit", "-q", "--amend", "--no-edit"],
                       check=True)
        self.assertNotEqual(git(work, "rev-parse", "HEAD"), want)
        proc = self.cli("prepare", "fake", "--dest", str(work))
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("same series", proc.stdout)
        self.assertEqual(git(work, "rev-parse", "HEAD"), want)

    def test_rerun_keeps_a_hunk_moved_between_commits(self):
        # Same final tree and messages, but the split differs: local work.
        self.make_series()
        work = tree.prepare(self.ctx, self.target, self.tmp / "t")
        want = git(work, "rev-parse", "HEAD")
        first, second = git(work, "rev-list", "--reverse", "base..HEAD").split()
        import subprocess

        def run(*args):
            subprocess.run(["git", "-C", str(work), *args], check=True,
                           capture_output=True)
        # squash both commits' changes into the first, keep the second's
        # message on an empty commit
        run("reset", "-q", "--soft", "base")
        run("-c", "user.name=Dev", "-c", "user.email=dev@x", "commit", "-q",
            "-C", first)
        run("-c", "user.name=Dev", "-c", "user.email=dev@x", "commit", "-q",
            "--allow-empty", "-C", second)
        mine = git(work, "rev-parse", "HEAD")
        self.assertEqual(git(work, "rev-parse", "HEAD^{tree}"),
                         git(work, "rev-parse", f"{want}^{{tree}}"))
        proc = self.cli("prepare", "fake", "--dest", str(work))
        self.assertEqual(proc.returncode, 1)
        self.assertIn("commits that are not in the series", proc.stderr)
        self.assertEqual(git(work, "rev-parse", "HEAD"), mine)

    def test_rerun_refuses_with_uncommitted_changes(self):
        work = tree.prepare(self.ctx, self.target, self.tmp / "t")
        (work / "nova" / "virt" / "driver.py").write_text("edited\n")
        (work / "untracked.txt").write_text("new\n")
        for force in ((), ("--force",)):
            proc = self.cli("prepare", "fake", "--dest", str(work), *force)
            self.assertEqual(proc.returncode, 1)
            self.assertIn("uncommitted changes", proc.stderr)
            self.assertIn("nova/virt/driver.py", proc.stderr)
        self.assertEqual((work / "nova" / "virt" / "driver.py").read_text(), "edited\n")
        self.assertEqual((work / "untracked.txt").read_text(), "new\n")

    def test_test_artefacts_do_not_count_as_changes(self):
        work = tree.prepare(self.ctx, self.target, self.tmp / "t")
        (work / "instances" / "x").mkdir(parents=True)
        (work / ".stestr").mkdir()
        (work / "nova" / "__pycache__").mkdir()
        self.assertEqual(tree.status(work), [])

    def test_artefacts_left_out_where_info_exclude_lacks_them(self):
        # a tree prepared before a pattern joined tree.EXCLUDES
        work = tree.prepare(self.ctx, self.target, self.tmp / "t")
        (work / ".git" / "info" / "exclude").write_text("")
        for path in ("instances/x/disk", ".stestr/0", "nova/__pycache__/a.pyc",
                     "nova/b.pyc", "nova/c.tmp"):
            (work / path).parent.mkdir(parents=True, exist_ok=True)
            (work / path).write_text("x")
        self.assertEqual(["?? nova/c.tmp"], tree.status(work))
        with mock.patch.object(tree, "EXCLUDES", (*tree.EXCLUDES, "*.tmp")):
            self.assertEqual([], tree.status(work))

    def test_patch_that_does_not_apply(self):
        patches = self.make_series()
        text = patches[0].read_text().replace(" line 11: original driver code",
                                              " line 11: something else")
        patches[0].write_text(text)
        dest = self.tmp / "t"
        proc = self.cli("prepare", "fake", "--dest", str(dest))
        self.assertEqual(proc.returncode, 1)
        first = proc.stderr.splitlines()[0]
        self.assertIn(patches[0].name, first)
        self.assertIn("nova/virt/driver.py", first)
        self.assertIn("hunk @@ -7,7 +7,7 @@", first)
        self.assertIn("am --continue", proc.stderr)
        self.assertIn("am --abort", proc.stderr)
        self.assertTrue((dest / ".git" / "rebase-apply").is_dir(), "git am state is kept")
        # a re-run refuses while git am is stopped
        proc = self.cli("prepare", "fake", "--dest", str(dest))
        self.assertIn("git am is in progress", proc.stderr)

    def test_series_that_no_longer_applies_on_existing_tree(self):
        patches = self.make_series()
        work = tree.prepare(self.ctx, self.target, self.tmp / "t", upto="0001")
        text = patches[0].read_text().replace(" line 11: original", " line 11: changed")
        patches[0].write_text(text)  # the series changed: its first patch no longer applies
        before = git(work, "rev-parse", "HEAD")
        with self.assertRaises(HarnessError) as caught:
            tree.prepare(self.ctx, self.target, work)
        self.assertIn(patches[0].name, str(caught.exception))
        self.assertIn("was not touched", caught.exception.details)
        self.assertEqual(git(work, "rev-parse", "HEAD"), before)
        self.assertEqual(tree.status(work), [])

    def test_tree_of_another_release_refused(self):
        work = tree.prepare(self.ctx, self.target, self.tmp / "t")
        self.target.version = "0.0.2"
        with self.assertRaises(HarnessError) as caught:
            tree.prepare(self.ctx, self.target, work)
        self.assertIn("another release", str(caught.exception))

    def test_folder_that_is_not_a_tree_refused(self):
        (self.tmp / "t").mkdir()
        (self.tmp / "t" / "file").write_text("x")
        with self.assertRaises(HarnessError) as caught:
            tree.prepare(self.ctx, self.target, self.tmp / "t")
        self.assertIn("not a prepared tree", str(caught.exception))
