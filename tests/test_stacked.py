"""Stacked targets (``below``/``below_upto``): a separate change on part of
another folder's series -- prepared with it, exported without it."""

from novaseries import commit_checks, export, modes as modes_mod, target_model, targets, tree
from novaseries.util import HarnessError, git
from tests import helpers


class StackedTargetTest(helpers.ProjectTestCase):

    def setUp(self):
        super().setUp()
        # the main series: two patches in patches/fake
        work = tree.prepare(self.ctx, self.target, self.tmp / "main")
        helpers.sample_series(work)
        export.export(self.target, work)
        # the change stacked on its first patch: patches/change
        self.change = self.root / "patches" / "change"
        self.change.mkdir()
        (self.change / "series").write_text("")
        self._add_target("change", "patches/change", '"patches/fake"',
                         'below_upto = "0001"\nvenv = "fake"\n')
        self._add_target("both", "patches/change", '"patches/fake"',
                         'export = false\n')
        self.stacked = targets.get(self.ctx, "change")
        self.work = tree.prepare(self.ctx, self.stacked, self.tmp / "change")
        helpers.commit(self.work, {"nova/virt/other.py": "x = 1\n"},
                       helpers.message("Add another thing"))

    def test_series_is_below_then_own(self):
        self.assertEqual(["0001-Fix-the-driver.patch"],
                         [p.name for p in self.stacked.below_series()])
        # prepared with the patch it stacks on
        self.assertEqual(["Fix the driver", "Add another thing"],
                         git(self.work, "log", "--reverse", "--format=%s",
                             "base..HEAD").splitlines())
        self.assertEqual("fake", self.stacked.venv_name)

    def test_export_writes_only_own_commits(self):
        export.export(self.stacked, self.work)
        self.assertEqual("0001-Add-another-thing.patch\n",
                         (self.change / "series").read_text())
        # and it applies again on what it stacks on
        fresh = tree.prepare(self.ctx, targets.get(self.ctx, "change"),
                             self.tmp / "fresh")
        self.assertEqual(2, len(tree.series_commits(fresh)))
        both = tree.prepare(self.ctx, targets.get(self.ctx, "both"),
                            self.tmp / "both")
        self.assertEqual(["Fix the driver", "Add a regression test",
                          "Add another thing"],
                         git(both, "log", "--reverse", "--format=%s",
                             "base..HEAD").splitlines())

    def _add_target(self, name, patches, below, extra=""):
        """Append a target stacked on ``below`` (TOML text) to the
        project's targets.toml; ``extra``: more of its TOML lines."""
        toml = self.root / "targets" / "targets.toml"
        toml.write_text(toml.read_text() + (
            f'\n[targets.{name}]\nversion = "{helpers.VERSION}"\n'
            f'sha256 = "{self.sha}"\ninterpreter = "python3.11"\n'
            f'pins = "pins/fake.txt"\npatches = "{patches}"\n'
            f'below = {below}\n{extra}'))

    def test_below_several_folders_in_order(self):
        # a combination stacked on the main series and on the change: its
        # own folder's patches come after both (the first up to below_upto)
        other = self.root / "patches" / "other"
        other.mkdir()
        (other / "series").write_text("")
        export.export(self.stacked, self.work)
        self._add_target("all", "patches/other",
                         '["patches/fake", "patches/change"]',
                         'below_upto = "0001"\nexport = false\n')
        combined = targets.get(self.ctx, "all")
        self.assertEqual(
            ["0001-Fix-the-driver.patch", "0001-Add-another-thing.patch"],
            [p.name for p in combined.below_series()])
        self.assertIn("patches/fake, ", combined.below_names())
        self._add_target("bad", "patches/other", "3")
        with self.assertRaisesRegex(HarnessError, "target bad: below must be"):
            targets.load(self.ctx)

    def test_export_refuses_an_edit_below_and_loses_nothing(self):
        git(self.work, "rebase", "-q", "--exec",
            "git commit -q --amend --no-edit", "base")  # unchanged: fine
        export.export(self.stacked, self.work)
        before = (self.change / "series").read_text()
        # edit the commit that belongs to patches/fake
        git(self.work, "reset", "-q", "--hard", "base")
        helpers.commit(self.work, {"nova/virt/driver.py": "edited\n"},
                       helpers.message("Fix the driver"))
        helpers.commit(self.work, {"nova/virt/other.py": "x = 1\n"},
                       helpers.message("Add another thing"))
        with self.assertRaises(HarnessError) as ctx:
            export.export(self.stacked, self.work)
        self.assertIn("differs from", str(ctx.exception))
        self.assertIn("0001-Fix-the-driver.patch", str(ctx.exception))
        self.assertEqual(before, (self.change / "series").read_text())

    def test_combination_is_not_exported(self):
        both = tree.prepare(self.ctx, targets.get(self.ctx, "both"),
                            self.tmp / "both")
        with self.assertRaises(HarnessError) as ctx:
            export.export(targets.get(self.ctx, "both"), both)
        self.assertIn("not exported", str(ctx.exception))

    def test_check_commits_lints_only_own_commits(self):
        outcomes = commit_checks.check_commits(self.ctx, self.stacked, self.work,
                                               run_tests=False)
        self.assertEqual(["commit-msg"], [o.name.split()[0] for o in outcomes])
        self.assertIn("Add another thing", outcomes[0].name)


class CommitModesTest(helpers.ProjectTestCase):
    """check-commits: the commits before the last in ``commit_modes``, the
    last one in every mode of the target."""

    def test_last_commit_in_every_mode(self):
        from unittest import mock
        from novaseries import testrun
        work = tree.prepare(self.ctx, self.target, self.tmp / "main")
        helpers.sample_series(work)
        two = {"eventlet": modes_mod.Mode("eventlet"), "threading": modes_mod.Mode("threading")}
        target = target_model.Target(**{**self.target.__dict__, "modes": two,
                                        "commit_modes": ["threading"]})
        seen = []
        with mock.patch.object(testrun, "test_modes",
                               lambda ctx, t, *a, **k: seen.append(list(t.modes)) or []):
            commit_checks.check_commits(self.ctx, target, work)
        self.assertGreater(len(seen), 1)
        self.assertEqual([["threading"]] * (len(seen) - 1) + [["eventlet", "threading"]],
                         seen)


class CommitFunctionalModulesTest(helpers.ProjectTestCase):
    """check-commits: every commit runs every functional module of the
    target's own commits present at that commit (the last one with the
    target's selections), but a commit of functional test modules, docs
    and release notes only, which runs its own; a stacked target leaves
    those of the series below it to that series' target."""

    def seen_modules(self, target, work):
        """``[(functional_only, touched, modules run)]`` per commit."""
        from unittest import mock
        from novaseries import selecting, testrun
        seen = []

        def record(ctx, t, tree_, **k):
            modules, _ = selecting.functional_selections(
                t, tree_, k["rev"], k["functional_only"], k.get("functional_since", "base"))
            seen.append((k["functional_only"], k["touched"], modules))
            return []
        with mock.patch.object(testrun, "test_modes", record):
            commit_checks.check_commits(self.ctx, target, work)
        return seen

    def test_every_module_present_at_each_commit(self):
        work = tree.prepare(self.ctx, self.target, self.tmp / "main")
        helpers.sample_series(work)
        helpers.commit(work, {"nova/virt/driver.py": "changed again\n"},
                       helpers.message("Change the driver again"))
        helpers.commit(work, {"nova/virt/driver.py": "changed once more\n"},
                       helpers.message("Change the driver once more"))
        seen = self.seen_modules(self.target, work)
        bug = "nova.tests.functional.test_bug_NNNNNNN"
        # the driver fix comes before any functional module; every commit
        # after the one that adds the reproducer-like test runs it, though
        # it touches only the driver (a change that breaks it fails there)
        self.assertEqual([[], [bug], [bug], None], [only for only, _, _ in seen])
        self.assertEqual([[], [bug], [bug], [bug]], [run for _, _, run in seen])
        self.assertEqual(["nova/virt/driver.py"], [f for f in seen[0][1] if f])
        self.assertIsNone(seen[-1][1])

    def test_reproducer_only_commit_runs_its_own_modules(self):
        # a commit of functional test modules, docs and release notes only
        # (not the first one, not the last) leaves the code and the other
        # tests as the commit before it, which ran them: its modules only
        work = tree.prepare(self.ctx, self.target, self.tmp / "main")
        helpers.sample_series(work)  # the driver fix, test_bug_NNNNNNN + reno
        helpers.commit(work, {"nova/tests/functional/test_other.py": "# a test\n",
                              "doc/source/x.rst": "x\n"},
                       helpers.message("Add another reproducer"))
        helpers.commit(work, {"releasenotes/notes/other-0123.yaml": "fixes: [x]\n"},
                       helpers.message("Add another release note"))
        # a test module another test imports: all run
        helpers.commit(work, {"nova/tests/functional/test_base.py": "# b\n",
                              "nova/tests/functional/test_user.py":
                              "from nova.tests.functional import test_base\n"},
                       helpers.message("Add a test base and its user"))
        helpers.commit(work, {"nova/tests/functional/test_base.py": "# b2\n"},
                       helpers.message("Change the test base"))
        # a functional helper: other modules import it, so all run
        helpers.commit(work, {"nova/tests/functional/integrated_helpers.py": "# h\n",
                              "nova/tests/functional/test_other.py": "# again\n"},
                       helpers.message("Change a helper"))
        helpers.commit(work, {"nova/virt/driver.py": "changed again\n"},
                       helpers.message("Change the driver again"))
        seen = self.seen_modules(self.target, work)
        bug = "nova.tests.functional.test_bug_NNNNNNN"
        other = "nova.tests.functional.test_other"
        base = "nova.tests.functional.test_base"
        user = "nova.tests.functional.test_user"
        every = [base, bug, other, user]
        self.assertEqual([[], [bug], [other], [], every, every, every, None],
                         [only for only, _, _ in seen])
        self.assertEqual([[], [bug], [other], [], every, every, every, every],
                         [run for _, _, run in seen])

    def test_a_mention_is_no_import(self):
        # another module names the reproducer (a docstring's pointer), no
        # import: a commit that changes only the reproducer runs only it
        work = tree.prepare(self.ctx, self.target, self.tmp / "main")
        helpers.sample_series(work)  # the driver fix, test_bug_NNNNNNN + reno
        helpers.commit(work, {"nova/tests/functional/test_other.py":
                              '"""Harder cases than test_bug_NNNNNNN.py has."""\n'},
                       helpers.message("Add another test"))
        helpers.commit(work, {"nova/tests/functional/test_bug_NNNNNNN.py": "# changed\n"},
                       helpers.message("Change the reproducer"))
        helpers.commit(work, {"nova/virt/driver.py": "changed again\n"},
                       helpers.message("Change the driver again"))
        seen = self.seen_modules(self.target, work)
        bug = "nova.tests.functional.test_bug_NNNNNNN"
        other = "nova.tests.functional.test_other"
        self.assertEqual([[], [bug], [other], [bug], None], [only for only, _, _ in seen])

    def test_stacked_target_runs_its_own_modules(self):
        main = tree.prepare(self.ctx, self.target, self.tmp / "main")
        helpers.sample_series(main)
        export.export(self.target, main)
        change = self.root / "patches" / "change"
        change.mkdir()
        (change / "series").write_text("")
        toml = self.root / "targets" / "targets.toml"
        toml.write_text(toml.read_text() + (
            f'\n[targets.change]\nversion = "{helpers.VERSION}"\n'
            f'sha256 = "{self.sha}"\ninterpreter = "python3.11"\n'
            'pins = "pins/fake.txt"\npatches = "patches/change"\n'
            'below = "patches/fake"\nvenv = "fake"\n'))
        stacked = targets.get(self.ctx, "change")
        work = tree.prepare(self.ctx, stacked, self.tmp / "change")
        helpers.commit(work, {"nova/tests/functional/test_other.py": "# a test\n"},
                       helpers.message("Add another test"))
        helpers.commit(work, {"nova/virt/other.py": "x = 1\n"},
                       helpers.message("Add another thing"))
        seen = self.seen_modules(stacked, work)
        # the series below (patches/fake) touches test_bug_NNNNNNN: its own
        # target runs it, and so does a combined target at HEAD
        self.assertEqual([["nova.tests.functional.test_other"]] * 2,
                         [run for _, _, run in seen])


class LastCommitUnitTest(helpers.ProjectTestCase):
    """check-commits: a commit before the last that only touches
    functional tests, docs or release notes does not re-run the unit
    selections; the last commit runs them whatever it touches (the
    selections no earlier commit ran would else never run)."""

    def test_last_commit_runs_the_unit_selections(self):
        from unittest import mock
        from novaseries import testrun
        work = tree.prepare(self.ctx, self.target, self.tmp / "main")
        helpers.sample_series(work)  # the driver fix, a functional test
        helpers.commit(work, {"releasenotes/notes/fix.yaml": "fixes: [x]\n"},
                       helpers.message("Add a release note"))
        seen = []
        with mock.patch.object(testrun, "test_modes",
                               lambda ctx, t, *a, **k: seen.append(k["skip_unit"]) or []):
            commit_checks.check_commits(self.ctx, self.target, work)
        self.assertEqual(3, len(seen))
        self.assertEqual("", seen[0])
        self.assertIn("only touches functional tests", seen[1])
        self.assertEqual("", seen[2])
