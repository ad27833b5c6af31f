"""backport: a stable target's own folder with the ``(cherry picked from
commit ...)`` lines and real bug numbers of a backport, looked up by
Change-Id in a fake upstream Nova (master, stable/2026.1, stable/2025.2)
and checked against our folders; the refusals; ``[gerrit_branches]`` of
targets.toml."""

import shutil

from novaseries import backport, targets, util
from novaseries.util import HarnessError, git
from tests import helpers

A = "I" + "a" * 40
B = "I" + "b" * 40
C = "I" + "c" * 40  # stable-only: in no master folder
L = "I" + "d" * 40  # the change a stacked target's changes stand on
SUBJECTS = {A: "Fix the driver", B: "Add a regression test", C: "Fix a stable-only thing",
            L: "Fix what the others need"}
REAL = "1234567"  # bug NNNNNNN's number
BUGS = {"NNNNNNN": REAL}

BRANCHES = ('[gerrit_branches]\nmaster = "master"\n"2026.1" = "stable/2026.1"\n'
            '"2025.2" = "stable/2025.2"\n"2025.1" = "unmaintained/2025.1"\npike = "eol"\n')

#: target: (its folder, its below folder or None, the changes of its folder)
FOLDERS = {"master": ("master", None, (A, B)), "2026.1": ("2026.1", None, (A, B)),
           "2025.2": ("2025.2", None, (A, B)), "2025.1": ("2025.1", None, (A, B)),
           "pike": ("pike", None, ()), "2026.1-c": ("c/2026.1", None, (A, C, B)),
           "2026.1-x": ("x/2026.1", "low/2026.1", (A, B))}


def msg(cid, bug="NNNNNNN"):
    return f"{SUBJECTS[cid]}\n\nExplain the change.\n\nCloses-Bug: #{bug}\nChange-Id: {cid}\n"


def content(cid, bug="NNNNNNN"):
    """What change ``cid`` writes to its file ``f-<cid>`` (A names its bug)."""
    return f"{cid}\n" + (f"    bug {bug}\n" if cid == A else "")


def lines_of(message):
    return [line for line in message.splitlines() if line.startswith("(cherry picked")]


class BackportTest(helpers.ProjectTestCase):
    """Targets of FOLDERS on the fake sdist, their folders written from a
    scratch repository (``self.src``) as format-patch files that name the
    placeholder NNNNNNN; the fake upstream merges the same changes with
    the real number."""

    def setUp(self):
        super().setUp()
        self.src = self.tmp / "src"
        git(self.tmp, "init", "-q", "--initial-branch=master", str(self.src))
        self.fork = helpers.commit(self.src, {"README": "nova\n"}, "Initial import\n")
        self.write_project()

    def write_folder(self, folder, ids, changed=None):
        """``patches/<folder>``: one format-patch file per change of ``ids``
        (``changed``: ``{cid: content}`` instead of :func:`content`)."""
        path = self.root / "patches" / folder
        path.mkdir(parents=True, exist_ok=True)
        for old in path.glob("*.patch"):
            old.unlink()
        git(self.src, "checkout", "-q", "--detach", self.fork)
        names = []
        for i, cid in enumerate(ids, 1):
            data = (changed or {}).get(cid, content(cid))
            sha = helpers.commit(self.src, {f"f-{cid}": data}, msg(cid))
            name = f"000{i}-{SUBJECTS[cid].replace(' ', '-')}.patch"
            (path / name).write_text(git(self.src, "format-patch", "-1", "--stdout",
                                         "--no-signature", sha) + "\n")
            names.append(name)
        (path / "series").write_text("".join(f"{n}\n" for n in names))

    def write_project(self, branches=BRANCHES):
        entries = ""
        for name, (folder, below, ids) in FOLDERS.items():
            self.write_folder(folder, ids)
            release = name.split("-")[0]
            entries += (f'[targets."{name}"]\nversion = "{helpers.VERSION}"\n'
                        f'sha256 = "{self.sha}"\npins = "pins/fake.txt"\n'
                        f'venv = "{release}"\npatches = "patches/{folder}"\n'
                        + (f'below = ["patches/{below}"]\n' if below else "") + "\n")
        self.write_folder("low/2026.1", (L,))
        (self.root / "targets" / "targets.toml").write_text(
            '[bugs]\nmain = "NNNNNNN"\n\n' + branches +
            '\n[defaults]\ninterpreter = "python3.11"\nunit = ["nova.tests.unit"]\n\n' + entries)

    def upstream(self, master=(A, B), stable_2026_1=(A, B), stable_2025_2=(A, B), clone=False,
                 changed=None, more=()):
        """A fake upstream Nova: master with the changes ``master``, and
        stable/2026.1 and stable/2025.2 forked before them, each with its
        backports, all with the real bug number (``changed``: ``{(branch,
        cid): content}`` merged instead; ``more``: other ``(branch, ids)``).
        ``{branch: {change_id: sha}}``
        is kept in ``self.merged``; ``clone``: return a clone (branches as
        ``origin/...``)."""
        up = self.tmp / "origin"
        shutil.rmtree(up, ignore_errors=True)
        shutil.rmtree(self.tmp / "clone", ignore_errors=True)
        git(self.tmp, "clone", "-q", "--no-checkout", str(self.src), str(up))
        git(up, "checkout", "-q", "-B", "master", self.fork)
        git(up, "remote", "remove", "origin")
        self.merged = {}
        for branch, ids in (("master", master), *more, ("stable/2026.1", stable_2026_1),
                            ("stable/2025.2", stable_2025_2)):
            git(up, "checkout", "-q", "-B" if branch == "master" else "-b", branch, self.fork)
            for cid in ids:
                data = (changed or {}).get((branch, cid), content(cid, REAL))
                # each branch's own commit (a backport is another commit)
                helpers.commit(up, {f"f-{cid}": data}, msg(cid, REAL),
                               date=f"2026-0{3 + len(self.merged)}-02T03:04:05+0000")
                self.merged.setdefault(branch, {})[cid] = git(up, "rev-parse", "HEAD")
        git(up, "checkout", "-q", "master")
        if clone:
            git(self.tmp, "clone", "-q", str(up), str(self.tmp / "clone"))
            return self.tmp / "clone"
        return up

    def run_backport(self, name, upstream, bugs=BUGS, out=None, **kwargs):
        out = out or self.tmp / f"out-{name}"
        return backport.backport(self.ctx, targets.get(self.ctx, name), upstream, out,
                                 bugs=bugs, **kwargs)

    def cli_backport(self, name, upstream, *more):
        return self.cli("backport", name, "--upstream", str(upstream), "--out",
                        str(self.tmp / f"out-{name}"), "--bug", f"main={REAL}", *more)

    def written(self, name):
        """``{patch name: text}`` of what backport wrote for ``name``."""
        out = self.tmp / f"out-{name}"
        return {n: (out / n).read_text() for n in
                (out / "series").read_text().split()}

    def refused(self, name, up, *parts, **kwargs):
        kwargs.setdefault("out", self.tmp / f"out-{name}")
        with self.assertRaises(HarnessError) as caught:
            self.run_backport(name, up, **kwargs)
        text = str(caught.exception) + "\n" + (caught.exception.details or "")
        for part in parts:
            self.assertIn(part, text)
        self.assertFalse(kwargs["out"].exists())
        return text

    def test_2025_2_gets_master_then_2026_1_after_the_footer(self):
        up = self.upstream(stable_2025_2=())
        result = self.run_backport("2025.2", up)
        self.assertEqual(("stable/2025.2", "stable/2025.2"), (result.gerrit_branch, result.ref))
        for (name, text), cid in zip(self.written("2025.2").items(), (A, B)):
            folder = (self.root / "patches" / "2025.2" / name).read_text()
            self.assertEqual(folder.replace("NNNNNNN", REAL).replace(
                f"Change-Id: {cid}\n---\n",
                f"Change-Id: {cid}\n(cherry picked from commit {self.merged['master'][cid]})\n"
                f"(cherry picked from commit {self.merged['stable/2026.1'][cid]})\n---\n"),
                text)

    def test_2026_1_gets_master_only_and_the_real_bug_number(self):
        up = self.upstream(stable_2026_1=())
        self.run_backport("2026.1", up)
        texts = list(self.written("2026.1").values())
        self.assertEqual([[f"(cherry picked from commit {self.merged['master'][cid]})"]
                          for cid in (A, B)], [lines_of(t) for t in texts])
        self.assertNotIn("NNNNNNN", "".join(texts))
        self.assertIn(f"+    bug {REAL}", texts[0])

    def test_refused_while_a_placeholder_is_left(self):
        up = self.upstream(stable_2026_1=())
        self.refused("2026.1", up, "0001-Fix-the-driver.patch names the bug placeholder "
                     "NNNNNNN: give the real number (--bug main=NUMBER)", bugs={})

    def test_refused_when_already_merged_on_the_gerrit_branch(self):
        up = self.upstream()
        self.refused("2026.1", up, f"(Change-Id {A}) has merged on stable/2026.1 already, as "
                     f"{self.merged['stable/2026.1'][A][:12]}")

    def test_a_branch_above_is_checked_against_the_folders_that_hold_it(self):
        # stable/2026.2 above stable/2026.1: no folder of 2026.2 (refused)
        # until [gerrit_folders] says the master folders hold its changes
        branches = BRANCHES.replace('master = "master"\n',
                                    'master = "master"\n"2026.2" = "stable/2026.2"\n')
        self.write_project(branches)
        up = self.upstream(stable_2026_1=(), more=(("stable/2026.2", (A, B)),))
        self.refused("2026.1", up, "merged on stable/2026.2 as", "no folder of release 2026.2 "
                     "holds it to check that against (targets.toml [gerrit_folders])")
        self.write_project(branches + '\n[gerrit_folders]\n"2026.2" = "master"\n')
        self.run_backport("2026.1", up)
        self.assertEqual([f"(cherry picked from commit {self.merged[b][A]})"
                          for b in ("master", "stable/2026.2")],
                         lines_of(list(self.written("2026.1").values())[0]))
        # what merged there is checked against the master folders
        up = self.upstream(stable_2026_1=(), more=(("stable/2026.2", (A, B)),),
                           changed={("stable/2026.2", A): f"{A}\nother\n"})
        self.refused("2026.1", up, "merged on stable/2026.2 as", "other lines than "
                     "patches/master/0001-Fix-the-driver.patch", out=self.tmp / "o2")

    def test_refused_when_master_lacks_a_change(self):
        up = self.upstream(master=(A,), stable_2026_1=())
        text = self.refused("2026.1", up, "Add a regression test", B,
                            "has not merged on master yet",
                            "stable policy: it merges on master first")
        self.assertNotIn(f"{A}) has not", text)

    def test_refused_when_stable_2026_1_lacks_a_change_for_2025_2(self):
        up = self.upstream(stable_2026_1=(B,), stable_2025_2=())
        self.refused("2025.2", up, "Fix the driver", A, "has not merged on stable/2026.1 yet",
                     "stable policy: it merges on stable/2026.1 first")

    def test_refused_when_master_merged_other_lines(self):
        # master merged a later version of A than the folders hold
        up = self.upstream(stable_2026_1=(),
                           changed={("master", A): f"{A}\n    bug {REAL} (later)\n"})
        text = self.refused("2026.1", up, "Fix the driver",
                            f"merged on master as {self.merged['master'][A][:12]}",
                            "other lines than patches/master/0001-Fix-the-driver.patch",
                            "export the merged version into the folders first")
        self.assertNotIn("Add a regression test", text)

    def test_refused_when_stable_2026_1_merged_other_lines_for_2025_2(self):
        up = self.upstream(stable_2025_2=(),
                           changed={("stable/2026.1", A): f"{A}\n  bug {REAL}\n"})
        self.refused("2025.2", up, "merged on stable/2026.1 as", "other lines than "
                     "patches/2026.1/0001-Fix-the-driver.patch")

    def test_changed_lines(self):
        diff = ("diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@ def f():\n"
                " context\n-    old  \n+    new\n-- \n")
        self.assertEqual([("f", "-    old"), ("f", "+    new"), ("f", "--")],
                         backport.changed_lines(diff))
        # indentation and inner whitespace count, context and trailing
        # whitespace do not, nor format-patch's signature
        self.assertNotEqual(backport.changed_lines(diff),
                            backport.changed_lines(diff.replace("+    new", "+  new")))
        self.assertNotEqual(backport.changed_lines(diff.replace("new", "a b")),
                            backport.changed_lines(diff.replace("new", "ab")))
        self.assertEqual(backport.changed_lines(diff),
                         backport.changed_lines(diff.replace(" context", " other")
                                                .replace("@@ -1,3", "@@ -7,3") + "-- \n2.43.0\n"))

    def test_stable_branch_is_searched_among_its_own_commits(self):
        # stable/2026.1 forked after A merged on master: it has master's
        # commit, not a backport of it
        up = self.upstream(master=(A,), stable_2026_1=(B,), stable_2025_2=())
        git(up, "checkout", "-q", "stable/2026.1")
        git(up, "merge", "-q", "--no-edit", "master")
        git(up, "checkout", "-q", "master")
        helpers.commit(up, {f"f-{B}": content(B, REAL)}, msg(B, REAL))
        self.refused("2025.2", up, f"(Change-Id {A}) has not merged on stable/2026.1")

    def test_refused_when_merged_twice_on_a_branch(self):
        up = self.upstream(stable_2026_1=())
        helpers.commit(up, {"again": "x"}, msg(A, REAL))
        again = git(up, "rev-parse", "HEAD")
        self.refused("2026.1", up, f"{self.merged['master'][A]}, {again}",
                     "merged more than once on master")

    def test_stable_only_change_gets_no_line(self):
        up = self.upstream(stable_2026_1=())
        proc = self.cli_backport("2026.1-c", up)
        self.assertEqual(0, proc.returncode, proc.stderr)
        texts = list(self.written("2026.1-c").values())
        self.assertEqual([1, 0, 1], [len(lines_of(t)) for t in texts])
        out = proc.stdout.splitlines()
        self.assertEqual("0002-Fix-a-stable-only-thing.patch: stable-only (its Change-Id is in "
                         "no master folder): no cherry-pick line", out[1])
        self.assertEqual(f"0001-Fix-the-driver.patch: cherry picked from master "
                         f"{self.merged['master'][A][:12]}", out[0])

    def test_stacked_target_refused_until_its_below_change_merged(self):
        up = self.upstream(stable_2026_1=())
        self.refused("2026.1-x", up, f"patches/low/2026.1/0001-Fix-what-the-others-need.patch "
                     f"'Fix what the others need' (Change-Id {L}) has not merged on "
                     "stable/2026.1: target 2026.1-x's changes stand on it; propose "
                     "patches/low/2026.1 first")

    def test_stacked_target_refused_when_its_below_change_merged_other_lines(self):
        up = self.upstream(stable_2026_1=(L,),
                           changed={("stable/2026.1", L): f"{L}\nlater\n"})
        self.refused("2026.1-x", up, "patches/low/2026.1/0001-Fix-what-the-others-need.patch",
                     "merged on stable/2026.1 as", "other lines than "
                     "patches/low/2026.1/0001-Fix-what-the-others-need.patch")

    def test_the_next_command_lands_the_own_patches_on_the_gerrit_branch(self):
        # the stacked target: L merged on stable/2026.1, A and B on master;
        # the printed command, but for its git review, in a clone
        up = self.upstream(stable_2026_1=(L,), clone=True)
        proc = self.cli_backport("2026.1-x", up)
        self.assertEqual(0, proc.returncode, proc.stderr)
        out = proc.stdout.splitlines()
        self.assertEqual(2, sum(".patch: cherry picked" in line for line in out))
        command, review = out[-1].removeprefix("next: ").rsplit(" && ", 1)
        self.assertEqual(f"git -C {up} review stable/2026.1", review)
        self.assertIn("checkout -b backport/2026.1-x origin/stable/2026.1 && ", command)
        done = util.run(["bash", "-c", command], env=util.git_env(), check=False)
        self.assertEqual(0, done.returncode, done.stderr)
        landed = git(up, "rev-list", "--reverse", "origin/stable/2026.1..HEAD").split()
        self.assertEqual(
            [msg(cid, REAL) + f"(cherry picked from commit {self.merged['master'][cid]})\n"
             for cid in (A, B)],
            [git(up, "log", "-1", "--format=%B", sha).rstrip("\n") + "\n" for sha in landed])
        self.assertEqual(content(A, REAL), (up / f"f-{A}").read_text())
        self.assertEqual("backport/2026.1-x", git(up, "branch", "--show-current"))

    def test_2025_1_goes_to_unmaintained_through_every_newer_branch(self):
        up = self.upstream()
        git(up, "branch", "unmaintained/2025.1", self.fork)
        proc = self.cli_backport("2025.1", up)
        self.assertEqual(0, proc.returncode, proc.stderr)
        self.assertIn("checkout -b backport/2025.1 unmaintained/2025.1 && ",
                      proc.stdout)
        self.assertTrue(proc.stdout.endswith(" review unmaintained/2025.1\n"), proc.stdout)
        first = list(self.written("2025.1").values())[0]
        self.assertEqual([f"(cherry picked from commit {self.merged[b][A]})"
                          for b in ("master", "stable/2026.1", "stable/2025.2")],
                         lines_of(first))

    def test_pike_and_master_refused(self):
        up = self.upstream()
        for name, reason in (("pike", "release pike is end of life: its branch is deleted"),
                             ("master", "release master is master: its commits are proposed "
                              "as they are, not backported")):
            proc = self.cli_backport(name, up)
            self.assertEqual(1, proc.returncode)
            self.assertEqual(1, proc.stderr.count("\n"), proc.stderr)
            self.assertIn(reason, proc.stderr)
            self.assertFalse((self.tmp / f"out-{name}").exists())

    def test_remote_branches_before_local_ones(self):
        up = self.upstream(clone=True, stable_2025_2=())
        # the clone's local master is behind: origin/master has the changes
        git(up, "reset", "-q", "--hard", "HEAD~2")
        result = self.run_backport("2025.2", up)
        self.assertEqual("origin/stable/2025.2", result.ref)
        self.assertEqual(2, len(lines_of(list(self.written("2025.2").values())[0])))
        git(up, "remote", "rename", "origin", "opendev")
        self.refused("2025.2", up, f"--upstream {up} has no branch stable/2025.2 (neither "
                     "origin/stable/2025.2 nor a local stable/2025.2)", out=self.tmp / "o2")
        self.assertEqual(2, len(self.run_backport("2025.2", up, remote="opendev",
                                                  out=self.tmp / "o3").patches))

    def test_refused_into_a_folder_not_empty(self):
        up = self.upstream()
        out = self.tmp / "out-2026.1"
        out.mkdir()
        (out / "keep").write_text("mine")
        with self.assertRaises(HarnessError) as caught:
            self.run_backport("2026.1", up)
        self.assertIn("exists and is not an empty folder", str(caught.exception))
        self.assertEqual(["keep"], [p.name for p in out.iterdir()])

    def test_refused_on_its_own_output(self):
        up = self.upstream(stable_2026_1=())
        self.run_backport("2026.1", up)
        folder = self.root / "patches" / "2026.1"
        for name, text in self.written("2026.1").items():
            (folder / name).write_text(text)
        self.refused("2026.1", up, "already has a (cherry picked from commit ...) line",
                     out=self.tmp / "again")


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
        self.assertEqual({"master": "master", "2026.2": "stable/2026.2",
                          "2026.1": "stable/2026.1",
                          "2025.2": "stable/2025.2", "2025.1": "unmaintained/2025.1",
                          "pike": None}, branches)
        self.assertEqual(list(branches), ["master", "2026.2", "2026.1", "2025.2", "2025.1",
                                          "pike"])
        # nova 34.0.0, the master folders' release, is 2026.2
        self.assertEqual({"2026.2": "master"}, targets.gerrit_folders(ctx))
        releases = {t.name: t.release for t in targets.load(ctx).values()}
        self.assertLessEqual(set(releases.values()), set(branches))
        self.assertEqual(("2025.1", "2026.1", "pike", "master"),
                         (releases["2025.1-all"], releases["2026.1-apiblip"],
                          releases["pike"], releases["master-all"]))
        self.assertEqual(("stable/2025.2", ["master", "stable/2026.2", "stable/2026.1"]),
                         backport.chain(branches, "2025.2"))
        self.assertEqual(("unmaintained/2025.1", ["master", "stable/2026.2", "stable/2026.1",
                                                  "stable/2025.2"]),
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
