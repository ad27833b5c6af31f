"""backport: a stable tree's commits with their ``(cherry picked from
commit ...)`` lines, looked up by Change-Id in a fake upstream Nova (master,
stable/2026.1, stable/2025.2), written as a branch of the tree; the
refusals; ``[gerrit_branches]`` of targets.toml."""

from novaseries import backport, targets, tree, util
from novaseries.util import HarnessError, git
from tests import helpers

A = "I" + "a" * 40
B = "I" + "b" * 40
C = "I" + "c" * 40  # stable-only: in no master folder
L = "I" + "d" * 40  # the change a stacked target's changes stand on
SUBJECTS = {A: "Fix the driver", B: "Add a regression test", C: "Fix a stable-only thing",
            L: "Fix what the others need"}

BRANCHES = ('[gerrit_branches]\nmaster = "master"\n"2026.1" = "stable/2026.1"\n'
            '"2025.2" = "stable/2025.2"\n"2025.1" = "unmaintained/2025.1"\npike = "eol"\n')


def msg(cid):
    return f"{SUBJECTS[cid]}\n\nExplain the change.\n\nCloses-Bug: #NNNNNNN\nChange-Id: {cid}\n"


def lines_of(message):
    return [line for line in message.splitlines() if line.startswith("(cherry picked")]


class BackportTest(helpers.ProjectTestCase):
    """Targets master, 2026.1, 2025.2, 2025.1 and pike of the fake sdist;
    patches/master holds the changes A and B (not C)."""

    def setUp(self):
        super().setUp()
        self.write_project()
        self.trees = {}

    def write_project(self, branches=BRANCHES):
        entries = ""
        for name in ("master", "2026.1", "2025.2", "2025.1", "pike"):
            folder = self.root / "patches" / name
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "series").write_text("")
            entries += (f'[targets."{name}"]\nversion = "{helpers.VERSION}"\n'
                        f'sha256 = "{self.sha}"\npins = "pins/fake.txt"\n'
                        f'patches = "patches/{name}"\n\n')
        for i, cid in enumerate((A, B), 1):
            (self.root / "patches" / "master" / f"000{i}-x.patch").write_text(
                f"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
                f"Subject: [PATCH] {msg(cid)}---\n x | 1 +\n")
        (self.root / "patches" / "master" / "series").write_text("0001-x.patch\n0002-x.patch\n")
        # 2026.1-x stacks A and B (patches/x/2026.1) on L (patches/low/2026.1)
        for folder, ids in (("low", (L,)), ("x", (A, B))):
            path = self.root / "patches" / folder / "2026.1"
            path.mkdir(parents=True, exist_ok=True)
            for i, cid in enumerate(ids, 1):
                (path / f"000{i}-x.patch").write_text(
                    f"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
                    f"Subject: [PATCH] {msg(cid)}---\n x | 1 +\n")
            (path / "series").write_text("".join(f"000{i}-x.patch\n"
                                                 for i in range(1, len(ids) + 1)))
        entries += (f'[targets."2026.1-x"]\nversion = "{helpers.VERSION}"\n'
                    f'sha256 = "{self.sha}"\npins = "pins/fake.txt"\nvenv = "2026.1"\n'
                    f'below = ["patches/low/2026.1"]\npatches = "patches/x/2026.1"\n\n')
        (self.root / "targets" / "targets.toml").write_text(
            '[bugs]\nmain = "NNNNNNN"\n\n' + branches +
            '\n[defaults]\nunit = ["nova.tests.unit"]\n\n' + entries)

    def upstream(self, master=(A, B), stable_2026_1=(A, B), stable_2025_2=(A, B), clone=False):
        """A fake upstream Nova: master with the changes ``master``, and
        stable/2026.1 and stable/2025.2 forked before them, each with its
        backports.  ``{branch: {change_id: sha}}`` is kept in
        ``self.merged``; ``clone``: return a clone (branches as
        ``origin/...``)."""
        up = self.tmp / "origin"
        git(self.tmp, "init", "-q", "--initial-branch=master", str(up))
        fork = helpers.commit(up, {"README": "nova\n"}, "Initial import\n")
        self.merged = {}
        for branch, ids in (("master", master), ("stable/2026.1", stable_2026_1),
                            ("stable/2025.2", stable_2025_2)):
            if branch != "master":
                git(up, "checkout", "-q", "-b", branch, fork)
            for cid in ids:
                helpers.commit(up, {f"{cid}-{branch.replace('/', '-')}": cid}, msg(cid))
                self.merged.setdefault(branch, {})[cid] = git(up, "rev-parse", "HEAD")
        git(up, "checkout", "-q", "master")
        # patches/master and patches/x/2026.1 hold what merged (a change
        # a branch lacks keeps its stub): backport compares the lines each
        # adds and removes
        for branch, folder in (("master", "master"), ("stable/2026.1", "x/2026.1")):
            for i, cid in enumerate((A, B), 1):
                if cid in self.merged.get(branch, {}):
                    (self.root / "patches" / folder / f"000{i}-x.patch").write_text(git(
                        up, "format-patch", "-1", "--stdout", self.merged[branch][cid]) + "\n")
        if clone:
            git(self.tmp, "clone", "-q", str(up), str(self.tmp / "clone"))
            return self.tmp / "clone"
        return up

    def tree(self, name, ids=(A, B)):
        """Target ``name``'s tree: base and one commit per change of ``ids``."""
        work = tree.prepare(self.ctx, targets.get(self.ctx, name), self.tmp / f"tree-{name}")
        for i, cid in enumerate(ids):
            helpers.commit(work, {f"nova/change{i}.py": f"# {cid}\n"}, msg(cid),
                           date=f"2026-01-0{i + 2}T03:04:05+0100",
                           author="Ann Author <ann@example.org>")
        self.trees[name] = work
        return work

    def run_backport(self, name, upstream, **kwargs):
        work = self.trees.get(name) or self.tree(name)
        return backport.backport(self.ctx, targets.get(self.ctx, name), work, upstream, **kwargs)

    def branch_messages(self, work, branch, start="base"):
        """The exact messages of ``start..branch``, oldest first."""
        return [git(work, "cat-file", "commit", sha, check=False).stdout.partition("\n\n")[2]
                for sha in git(work, "rev-list", "--reverse", f"{start}..{branch}").split()]

    def test_2025_2_gets_master_then_2026_1_after_the_footer(self):
        up = self.upstream()
        work = self.tree("2025.2")
        originals = self.branch_messages(work, "HEAD")
        result = self.run_backport("2025.2", up)
        self.assertEqual(("backport/stable-2025.2", "stable/2025.2"),
                         (result.branch, result.gerrit_branch))
        for cid, old, new in zip((A, B), originals, self.branch_messages(work, result.branch)):
            self.assertEqual(old + f"(cherry picked from commit {self.merged['master'][cid]})\n"
                             f"(cherry picked from commit {self.merged['stable/2026.1'][cid]})\n",
                             new)
            self.assertTrue(old.endswith(f"Change-Id: {cid}\n"))

    def test_2026_1_gets_master_only(self):
        up = self.upstream()
        work = self.tree("2026.1")
        result = self.run_backport("2026.1", up)
        self.assertEqual("backport/stable-2026.1", result.branch)
        messages = self.branch_messages(work, result.branch)
        self.assertEqual([[f"(cherry picked from commit {self.merged['master'][cid]})"]
                          for cid in (A, B)], [lines_of(m) for m in messages])
        self.assertTrue(messages[0].endswith(f"Change-Id: {A}\n(cherry picked from commit "
                                             f"{self.merged['master'][A]})\n"))

    def test_trees_authors_dates_kept_and_the_trees_branch_untouched(self):
        up = self.upstream()
        work = self.tree("2025.2")
        head, branch = git(work, "rev-parse", "HEAD"), git(work, "symbolic-ref", "HEAD")
        result = self.run_backport("2025.2", up)
        fmt = "--format=%T|%an <%ae> %ad|%cn <%ce> %cd"
        self.assertEqual(git(work, "log", fmt, "base..HEAD"),
                         git(work, "log", fmt, f"base..{result.branch}"))
        self.assertEqual(git(work, "rev-parse", "base"),
                         git(work, "rev-parse", f"{result.branch}~2"))
        self.assertEqual((head, branch, ""), (git(work, "rev-parse", "HEAD"),
                                              git(work, "symbolic-ref", "HEAD"),
                                              git(work, "status", "--porcelain")))
        self.assertEqual(0, len(lines_of("\n".join(self.branch_messages(work, "HEAD")))))

    def assert_nothing_written(self, work):
        self.assertEqual("", git(work, "branch", "--list", "backport/*"))

    def test_refused_when_master_lacks_a_change(self):
        up = self.upstream(master=(A,))
        work = self.tree("2026.1")
        with self.assertRaises(HarnessError) as caught:
            self.run_backport("2026.1", up)
        text = str(caught.exception)
        for part in ("Add a regression test", B, "has not merged on master yet",
                     "stable policy: it merges on master first"):
            self.assertIn(part, text)
        self.assertNotIn(A, text)
        self.assert_nothing_written(work)

    def test_refused_when_stable_2026_1_lacks_a_change_for_2025_2(self):
        up = self.upstream(stable_2026_1=(B,))
        work = self.tree("2025.2")
        with self.assertRaises(HarnessError) as caught:
            self.run_backport("2025.2", up)
        text = str(caught.exception)
        for part in ("Fix the driver", A, "has not merged on stable/2026.1 yet",
                     "stable policy: it merges on stable/2026.1 first"):
            self.assertIn(part, text)
        self.assert_nothing_written(work)
        # the same upstream is enough for 2026.1's own backport
        self.assertEqual(2, len(self.run_backport("2026.1", up).commits))

    def test_stable_branch_is_searched_among_its_own_commits(self):
        # stable/2026.1 forked after A merged on master: it has master's
        # commit, not a backport of it
        up = self.upstream(master=(A,), stable_2026_1=(B,))
        git(up, "checkout", "-q", "stable/2026.1")
        git(up, "merge", "-q", "--no-edit", "master")
        git(up, "checkout", "-q", "master")
        helpers.commit(up, {"b": "b"}, msg(B))
        with self.assertRaises(HarnessError) as caught:
            self.run_backport("2025.2", up)
        self.assertIn(f"(Change-Id {A}) has not merged on stable/2026.1", str(caught.exception))

    def test_refused_when_master_merged_other_lines(self):
        # master merged a later version of A than the folders hold
        up = self.upstream()
        patch = self.root / "patches" / "master" / "0001-x.patch"
        patch.write_text(patch.read_text().replace(f"+{A}", "+an earlier version"))
        work = self.tree("2026.1")
        with self.assertRaises(HarnessError) as caught:
            self.run_backport("2026.1", up)
        text = str(caught.exception)
        for part in ("Fix the driver", f"merged on master as {self.merged['master'][A][:12]}",
                     "other lines than 0001-x.patch", "export the merged version first"):
            self.assertIn(part, text)
        self.assertNotIn("Add a regression test", text)
        self.assert_nothing_written(work)
        # line numbers and hunk headers may differ between branch and folder
        patch.write_text(patch.read_text().replace("+an earlier version", f"+{A}")
                         .replace("@@ -0,0 +1 @@", "@@ -0,0 +1 @@ def context():"))
        self.assertEqual(2, len(self.run_backport("2026.1", up).commits))

    def stacked_tree(self):
        """2026.1-x's tree: L (its below folder's), then A and B."""
        work = self.tree("2026.1", ids=(L, A, B))
        self.trees["2026.1-x"] = work
        return work

    def test_stacked_target_refused_until_its_below_change_merged(self):
        up = self.upstream()
        work = self.stacked_tree()
        with self.assertRaises(HarnessError) as caught:
            self.run_backport("2026.1-x", up)
        self.assertIn(f"'Fix what the others need' (Change-Id {L}) of patches/low/2026.1 has "
                      "not merged on stable/2026.1: target 2026.1-x's commits stand on it; "
                      "propose patches/low/2026.1 first", str(caught.exception))
        self.assert_nothing_written(work)

    def test_stacked_target_proposes_its_own_commits_only(self):
        up = self.upstream(stable_2026_1=(L, A, B), clone=True)
        work = self.stacked_tree()
        low = git(work, "rev-parse", "HEAD~2")
        proc = self.cli("backport", "2026.1-x", "--tree", str(work), "--upstream", str(up))
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertEqual(low, git(work, "rev-parse", "backport/stable-2026.1~2"))
        self.assertEqual([[f"(cherry picked from commit {self.merged['master'][cid]})"]
                          for cid in (A, B)],
                         [lines_of(m) for m in self.branch_messages(
                             work, "backport/stable-2026.1", start=low)])
        out = proc.stdout.splitlines()
        self.assertEqual(2, sum(" -> " in line for line in out))
        self.assertIn(f"format-patch --stdout {low}..backport/stable-2026.1 | ", out[-1])
        # upstream's stable/2026.1 has L (and, here, A and B): take them
        # off to land A and B again with the printed command
        git(up, "branch", "-q", "-f", "stable-l", "origin/stable/2026.1~2")
        git(up, "update-ref", "refs/remotes/origin/stable/2026.1", "stable-l")
        command = out[-1].removeprefix("next: ").rsplit(" && ", 1)[0]
        done = util.run(["bash", "-o", "pipefail", "-c", command], env=util.git_env(),
                        check=False)
        self.assertEqual(0, done.returncode, done.stderr)
        self.assertEqual([msg(A), msg(B)], [
            git(up, "log", "-1", "--format=%B", sha).split("(cherry")[0].rstrip("\n") + "\n"
            for sha in git(up, "rev-list", "--reverse", "stable-l..HEAD").split()])

    def test_refused_when_merged_twice_on_a_branch(self):
        up = self.upstream()
        helpers.commit(up, {"again": "x"}, msg(A))
        again = git(up, "rev-parse", "HEAD")
        self.tree("2026.1")
        with self.assertRaises(HarnessError) as caught:
            self.run_backport("2026.1", up)
        self.assertIn(f"{self.merged['master'][A]}, {again}", caught.exception.details)
        self.assertIn("merged more than once on master", str(caught.exception))

    def test_stable_only_commit_gets_no_line(self):
        up = self.upstream()
        work = self.tree("2026.1", ids=(A, C, B))
        proc = self.cli("backport", "2026.1", "--tree", str(work), "--upstream", str(up))
        self.assertEqual(0, proc.returncode, proc.stderr)
        messages = self.branch_messages(work, "backport/stable-2026.1")
        self.assertEqual(msg(C), messages[1])
        self.assertEqual([1, 0, 1], [len(lines_of(m)) for m in messages])
        out = proc.stdout.splitlines()
        self.assertIn("Fix a stable-only thing: stable-only (its Change-Id is in no master "
                      "folder): no cherry-pick line", out[1])
        self.assertIn(f"Fix the driver: cherry picked from master "
                      f"{self.merged['master'][A][:12]}", out[0])
        self.assertEqual(f"next: git -C {up} checkout -b backport/stable-2026.1 "
                         f"origin/stable/2026.1 && git -C {work} format-patch --stdout "
                         f"base..backport/stable-2026.1 | git -C {up} am -3 && "
                         f"git -C {up} review stable/2026.1", out[-1])

    def test_the_next_command_puts_the_commits_on_the_gerrit_branch(self):
        # the printed command, but for its git review, run in a clone: the
        # commits land on upstream's stable/2026.1 with their lines, and
        # the sdist's base commit does not
        up = self.upstream(clone=True)
        work = self.tree("2026.1")
        proc = self.cli("backport", "2026.1", "--tree", str(work), "--upstream", str(up))
        self.assertEqual(0, proc.returncode, proc.stderr)
        command = proc.stdout.splitlines()[-1].removeprefix("next: ")
        command, review = command.rsplit(" && ", 1)
        self.assertEqual(f"git -C {up} review stable/2026.1", review)
        done = util.run(["bash", "-o", "pipefail", "-c", command], env=util.git_env(),
                        check=False)
        self.assertEqual(0, done.returncode, done.stderr)
        landed = git(up, "rev-list", "--reverse", "origin/stable/2026.1..HEAD").split()
        self.assertEqual(self.branch_messages(work, "backport/stable-2026.1"),
                         [git(up, "log", "-1", "--format=%B", sha).rstrip("\n") + "\n"
                          for sha in landed])
        self.assertEqual("backport/stable-2026.1", git(up, "branch", "--show-current"))

    def test_2025_1_goes_to_unmaintained_through_every_newer_branch(self):
        up = self.upstream()
        work = self.tree("2025.1")
        proc = self.cli("backport", "2025.1", "--tree", str(work), "--upstream", str(up))
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn("checkout -b backport/unmaintained-2025.1 origin/unmaintained/2025.1 && ",
                      proc.stdout)
        self.assertTrue(proc.stdout.endswith(" review unmaintained/2025.1\n"), proc.stdout)
        messages = self.branch_messages(work, "backport/unmaintained-2025.1")
        self.assertEqual([f"(cherry picked from commit {self.merged[b][A]})"
                          for b in ("master", "stable/2026.1", "stable/2025.2")],
                         lines_of(messages[0]))

    def test_pike_and_master_refused(self):
        up = self.upstream()
        work = self.tree("2026.1")
        for name, reason in (("pike", "release pike is end of life: its branch is deleted"),
                             ("master", "release master is master: its commits are proposed "
                              "as they are, not backported")):
            proc = self.cli("backport", name, "--tree", str(work), "--upstream", str(up))
            self.assertEqual(1, proc.returncode)
            self.assertEqual(1, proc.stderr.count("\n"), proc.stderr)
            self.assertIn(reason, proc.stderr)
            self.assert_nothing_written(work)

    def test_remote_branches_before_local_ones(self):
        up = self.upstream(clone=True)
        # the clone's local master is behind: origin/master has the changes
        git(up, "reset", "-q", "--hard", "HEAD~2")
        work = self.tree("2025.2")
        self.run_backport("2025.2", up)
        self.assertEqual(2, len(lines_of(self.branch_messages(work, "backport/stable-2025.2")[0])))
        git(up, "remote", "rename", "origin", "opendev")
        with self.assertRaises(HarnessError) as caught:
            self.run_backport("2025.2", up, branch="other")
        self.assertIn(f"--upstream {up} has no branch stable/2026.1 (neither "
                      "origin/stable/2026.1 nor a local stable/2026.1)", str(caught.exception))
        self.assertEqual(2, len(self.run_backport("2025.2", up, remote="opendev",
                                                  branch="other").commits))

    def test_second_run_keeps_the_same_branch_and_never_replaces_another(self):
        up = self.upstream()
        work = self.tree("2026.1")
        first = self.run_backport("2026.1", up)
        written = git(work, "rev-parse", first.branch)
        self.assertTrue(self.run_backport("2026.1", up).unchanged)
        self.assertEqual(written, git(work, "rev-parse", first.branch))
        git(work, "branch", "-f", first.branch, f"{first.branch}~1")
        with self.assertRaises(HarnessError) as caught:
            self.run_backport("2026.1", up)
        self.assertIn("already has a branch backport/stable-2026.1 with other commits",
                      str(caught.exception))
        self.assertEqual(git(work, "rev-parse", f"{written}~1"),
                         git(work, "rev-parse", first.branch))

    def test_refused_on_its_own_output(self):
        up = self.upstream()
        work = self.tree("2026.1")
        result = self.run_backport("2026.1", up)
        git(work, "checkout", "-q", result.branch)
        with self.assertRaises(HarnessError) as caught:
            self.run_backport("2026.1", up, branch="again")
        self.assertIn("already has a (cherry picked from commit ...) line", str(caught.exception))


class GerritBranchesTest(helpers.ProjectTestCase):

    def test_bad_values_are_one_clear_error(self):
        toml = self.root / "targets" / "targets.toml"
        text = toml.read_text()
        for table, wanted in (
                ('"2026.1" = "stable/2026.1"\n', '"2026.1" = \'stable/2026.1\': expected '
                 '"master" (the first entry'),
                ('master = "master"\n"2026.1" = "stable/2025.2"\n',
                 '"2026.1" = \'stable/2025.2\': expected "stable/2026.1" or '
                 '"unmaintained/2026.1" or "eol"'),
                ('master = "master"\npike = "deleted"\n', "pike = 'deleted'")):
            toml.write_text(text + "\n[gerrit_branches]\n" + table)
            with self.assertRaises(HarnessError) as caught:
                targets.gerrit_branches(self.ctx)
            self.assertIn("[gerrit_branches]: " + wanted.replace('"2026.1" =', "2026.1 ="),
                          str(caught.exception))

    def test_the_projects_releases_and_branches(self):
        ctx = util.Context.create(helpers.REPO)
        branches = targets.gerrit_branches(ctx)
        self.assertEqual({"master": "master", "2026.1": "stable/2026.1",
                          "2025.2": "stable/2025.2", "2025.1": "unmaintained/2025.1",
                          "pike": None}, branches)
        self.assertEqual(list(branches), ["master", "2026.1", "2025.2", "2025.1", "pike"])
        releases = {t.name: t.release for t in targets.load(ctx).values()}
        self.assertLessEqual(set(releases.values()), set(branches))
        self.assertEqual(("2025.1", "2026.1", "pike", "master"),
                         (releases["2025.1-all"], releases["2026.1-apiblip"],
                          releases["pike"], releases["master-all"]))
        self.assertEqual(("stable/2025.2", ["master", "stable/2026.1"]),
                         backport.chain(branches, "2025.2"))
        self.assertEqual(("unmaintained/2025.1", ["master", "stable/2026.1", "stable/2025.2"]),
                         backport.chain(branches, "2025.1"))

    def test_end_of_life_branches_are_left_out_of_the_chain(self):
        branches = {"master": "master", "2026.1": "stable/2026.1", "2025.2": None,
                    "2025.1": "unmaintained/2025.1"}
        self.assertEqual(("unmaintained/2025.1", ["master", "stable/2026.1"]),
                         backport.chain(branches, "2025.1"))
        with self.assertRaises(HarnessError) as caught:
            backport.chain(branches, "2024.2")
        self.assertIn("release 2024.2 has no Gerrit branch in targets.toml [gerrit_branches]",
                      str(caught.exception))
