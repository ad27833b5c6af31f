"""targets.toml declares each release and each change once: targets take
their sdist, pins, venv and mode settings from ``[releases]``, their
folders from ``[changes]`` (``change``) or the release's packaged stack
(``stack``); a change's requirements are checked where declared, and
export refuses a target that lacks one."""

import dataclasses
import pathlib
import shutil
import tempfile
import tomllib
import unittest
from unittest import mock

from novaseries import release_changes, targets, targets_file, util
from novaseries.util import HarnessError
from tests import helpers

SHA = "ab" * 32

TOML = f'''
[defaults]
interpreter = "python3.11"
unit = ["nova.tests.unit"]
[defaults.unit_paths]
"nova.tests.unit.virt" = ["nova/virt/"]
[modes.eventlet]
default = true
[modes.threading]
[defaults.modes.eventlet]

[releases.one]
version = "1.0.0"
sha256 = "{SHA}"
pins = "pins/one.txt"
[releases.one.modes.threading]
interpreter = "python3.13"
[releases.one.review]
check_commits = true
[releases.one.review.modes.eventlet]
[releases.one.review.modes.threading]
ci = false

[releases.two]
version = "2.0.0"
sha256 = "{"cd" * 32}"
pins = "pins/two.txt"
interpreter = "python2.7"

[changes.base]
folder = "patches/{{release}}"
releases = ["one", "two"]

[changes.fix]
folder = "patches/fix/{{release}}"
releases = ["one"]
requires = ["base"]
on = "base"
on_upto = "0002"

[changes.review-only]
folder = "patches/ro/{{release}}"
releases = ["one"]
requires = ["base"]
on = "base"
packaged = false

[changes.top]
folder = "patches/top/{{release}}"
releases = ["one"]
requires = ["base", "fix"]

[targets.one]
release = "one"
change = "base"
unit = ["nova.tests.unit.virt.driver.Case"]

[targets.one-fix]
release = "one"
change = "fix"

[targets.one-all]
release = "one"
stack = true
[targets.one-all.modes.threading]

[targets.two]
release = "two"
stack = true
'''


class DeclaredTest(unittest.TestCase):

    def ctx(self, text=TOML):
        tmp = pathlib.Path(tempfile.mkdtemp(prefix="novaseries-declared-"))
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        (tmp / "targets").mkdir()
        (tmp / "targets" / "targets.toml").write_text(text)
        return util.Context.create(tmp, tmp / "build", tmp / "cache")

    def test_targets_take_release_and_change(self):
        ctx = self.ctx()
        known = targets.load(ctx)
        one, fix, stack, two = (known[n] for n in ("one", "one-fix", "one-all", "two"))
        self.assertEqual(("1.0.0", SHA, ctx.root / "pins/one.txt", "one"),
                         (fix.version, fix.sha256, fix.pins, fix.release))
        # the release is the target's; its venv is named after it
        self.assertEqual(("one", "one-py3.13", "x"),
                         (fix.venv_base, fix.in_mode("threading").venv_name,
                          dataclasses.replace(fix, release="x").venv_base))
        self.assertEqual((ctx.root / "patches/one", (), None),
                         (one.patches, one.below, one.below_upto))
        self.assertEqual((ctx.root / "patches/fix/one", (ctx.root / "patches/one",), "0002"),
                         (fix.patches, fix.below, fix.below_upto))
        # the review table: check_commits, its modes, the release's mode settings
        self.assertTrue(fix.check_commits)
        self.assertEqual(["eventlet", "threading"], list(fix.modes))
        self.assertEqual(("python3.13", False),
                         (fix.modes["threading"].interpreter, fix.modes["threading"].ci))
        # the stack: every packaged change of the release, in order, whole
        self.assertEqual((ctx.root / "patches/one", ctx.root / "patches/fix/one"), stack.below)
        self.assertEqual((ctx.root / "patches/top/one", None, False),
                         (stack.patches, stack.below_upto, stack.check_commits))
        self.assertEqual(("python3.13", True), (stack.modes["threading"].interpreter,
                                                stack.modes["threading"].ci))
        self.assertEqual((ctx.root / "patches/two", (), "python2.7", ["eventlet"]),
                         (two.patches, two.below, two.interpreter, list(two.modes)))
        self.assertEqual(((ctx.root / "patches/one", ctx.root / "patches/fix/one",
                           ctx.root / "patches/top/one")),
                         targets.packaged_stack(ctx, "one").folders)
        # a selection under a [defaults.unit_paths] key takes its paths
        self.assertEqual(["nova/virt/"], one.unit_paths["nova.tests.unit.virt.driver.Case"])

    def test_the_stack_is_the_declared_one(self):
        # stack = true, whatever the target's name (the main job's fixed
        # tree, ci's real-Ironic step and the ironic commands use it)
        ctx = self.ctx(TOML.replace("targets.one-all", "targets.packaged"))
        self.assertEqual("packaged", targets.stack_target(ctx, "one").name)
        self.assertEqual("packaged", targets.packaged_stack(ctx, "one").target.name)
        with self.assertRaisesRegex(HarnessError, "release nosuch: .* says stack = true"):
            targets.stack_target(ctx, "nosuch")
        with mock.patch.object(targets, "DEFAULT_TARGET", "one-fix"):
            self.assertEqual("packaged", targets.default_stack_target(ctx).name)
            self.assertEqual("packaged", targets.default_stack_name(ctx))
            self.assertEqual("packaged", targets.default_stack_in_mode(ctx).name)
        with mock.patch.object(targets, "DEFAULT_TARGET", "nosuch"):
            self.assertIsNone(targets.default_stack_target(ctx))
            self.assertEqual("nosuch", targets.default_stack_name(ctx))

    def test_release_fields_are_the_releases(self):
        for key, value in (("sha256", f'"{SHA}"'), ("pins", '"p.txt"'),
                           ("patches", '"patches/x"'), ("below", '"patches/one"')):
            with self.subTest(key=key), self.assertRaisesRegex(
                    HarnessError, f"target one: {key} come from its release and change"):
                targets.load(self.ctx(TOML.replace(
                    '[targets.one]\nrelease = "one"\n',
                    f'[targets.one]\nrelease = "one"\n{key} = {value}\n')))

    def test_bad_declarations_refused(self):
        cases = (
            ('[releases.two]\nversion = "2.0.0"\n', '[releases.two]\n',
             r"\[releases.two\] lacks version"),
            ('sha256 = "' + "cd" * 32, 'sha256 = "' + "cd" * 31, "not 64 hex digits"),
            ('releases = ["one", "two"]', 'releases = ["one", "three"]',
             "release 'three' is not in \\[releases\\]"),
            ('requires = ["base", "fix"]', 'requires = ["base", "later"]',
             "requires 'later', which is not a change declared before it"),
            ('folder = "patches/top/{release}"\nreleases = ["one"]',
             'folder = "patches/top/{release}"\nreleases = ["one", "two"]',
             "requires 'fix', which has no folder for two"),
            ('on = "base"\non_upto', 'on = "top"\non_upto',
             "on = 'top' must be one of its requires"),
            ('folder = "patches/fix/{release}"', 'folder = "patches/fix"',
             "needs folder \\(with {release}\\)"),
            ('[targets.one-fix]\nrelease = "one"\nchange = "fix"',
             '[targets.one-fix]\nrelease = "two"\nchange = "fix"',
             "change fix has no folder for two"),
            ('[targets.two]\nrelease = "two"\nstack = true',
             '[targets.two]\nrelease = "three"\nstack = true',
             "release 'three' is not in \\[releases\\]"),
            ('[targets.two]\nrelease = "two"\nstack = true',
             '[targets.two]\nrelease = "two"', "needs change .* or stack = true"),
            ('[changes.top]\nfolder', '[changes.ro2]\nfolder = "patches/ro2/{release}"\n'
             'releases = ["one"]\npacked = 1\n[changes.top]\nfolder',
             "unknown keys \\['packed'\\]"),
            ('requires = ["base", "fix"]', 'requires = ["base", "fix", "review-only"]',
             "a packaged change requires review-only, which is packaged = false"),
        )
        for old, new, error in cases:
            with self.subTest(error=error):
                self.assertIn(old, TOML)
                with self.assertRaisesRegex(HarnessError, error):
                    targets.load(self.ctx(TOML.replace(old, new, 1)))

    def test_mypy_runs_on_the_stack_of_each_release_that_says_so(self):
        self.assertEqual([], targets.mypy_targets(self.ctx()))
        both = TOML.replace('pins = "pins/one.txt"\n', 'pins = "pins/one.txt"\nmypy = true\n')
        both = both.replace('pins = "pins/two.txt"\n', 'pins = "pins/two.txt"\nmypy = true\n')
        self.assertEqual(["one-all", "two"], targets.mypy_targets(self.ctx(both)))
        off = both.replace('pins = "pins/two.txt"\nmypy = true\n',
                           'pins = "pins/two.txt"\nmypy = false\n')
        self.assertEqual(["one-all"], targets.mypy_targets(self.ctx(off)))
        with self.assertRaisesRegex(HarnessError, r"\[releases.two\]: mypy must be true or "
                                                  "false, not 'yes'"):
            targets.load(self.ctx(TOML.replace('pins = "pins/two.txt"\n',
                                               'pins = "pins/two.txt"\nmypy = "yes"\n')))

    def test_requirements_missing(self):
        ctx = self.ctx()
        known = targets.load(ctx)
        for name in ("one", "one-fix", "one-all", "two"):
            self.assertEqual([], release_changes.requirements_missing(ctx, known[name]), name)
        # a target written by hand on a stack without one requirement
        # a target written by hand on a stack without one requirement,
        # with or without the release's venv
        for venv in ('venv = "one"\n', ""):
            hand = TOML + (f'\n[targets.hand]\nversion = "1.0.0"\nsha256 = "{SHA}"\n'
                           f'pins = "pins/one.txt"\n{venv}patches = "patches/top/one"\n'
                           'below = ["patches/one"]\n')
            ctx = self.ctx(hand)
            self.assertEqual([("fix", ctx.root / "patches/fix/one")],
                             release_changes.requirements_missing(ctx, targets.get(ctx, "hand")))


class HandWrittenTargetTest(unittest.TestCase):
    """A target written by hand (no release) is no release, and its
    folders are compared as folders, however spelt."""

    ctx = DeclaredTest.ctx

    HAND = TOML + (f'\n[targets.hand]\nversion = "1.0.0"\nsha256 = "{SHA}"\n'
                   'pins = "pins/one.txt"\npatches = "patches/../patches/top/one"\n'
                   'below = {below}\n')

    def test_not_a_release(self):
        ctx = self.ctx(self.HAND.replace("{below}", '["patches/one"]'))
        self.assertEqual(["one", "two"], targets.releases(ctx))
        with self.assertRaisesRegex(HarnessError, "unknown release 'hand'"):
            targets.packaged_stack(ctx, "hand")

    def test_folders_compared_resolved(self):
        ctx = self.ctx(self.HAND.replace("{below}", '["patches/one"]'))
        self.assertEqual([("fix", ctx.root / "patches/fix/one")],
                         release_changes.requirements_missing(ctx, targets.get(ctx, "hand")))
        ctx = self.ctx(self.HAND.replace(
            "{below}", '["./patches/one/", "patches/x/../fix/one"]'))
        self.assertEqual([], release_changes.requirements_missing(ctx, targets.get(ctx, "hand")))

    def test_an_interpreter_is_required(self):
        # none in [defaults], the release or the target: no fallback
        ctx = self.ctx(self.HAND.replace("{below}", '["patches/one"]').replace(
            'interpreter = "python3.11"\n', '', 1))
        with self.assertRaisesRegex(HarnessError, "target .* has no interpreter"):
            targets.load(ctx)


class ExportRefusesTest(helpers.ProjectTestCase):
    """export refuses a target whose folder's requirement it does not
    stack on, before it reads the tree."""

    def test_refused(self):
        text = (self.root / "targets" / "targets.toml").read_text()
        text = text.replace("[targets.fake]", '[changes.base]\nfolder = "patches/{release}"\n'
                            'releases = ["fake"]\n'
                            '[changes.top]\nfolder = "patches/top/{release}"\n'
                            'releases = ["fake"]\nrequires = ["base"]\n\n'
                            f'[releases.fake]\nversion = "{helpers.VERSION}"\n'
                            f'sha256 = "{self.sha}"\npins = "pins/fake.txt"\n\n'
                            '[targets.fake]')
        text += ('\n[targets.fake-top]\nversion = "0.0.1"\n'
                 f'sha256 = "{self.sha}"\npins = "pins/fake.txt"\nvenv = "fake"\n'
                 'patches = "patches/top/fake"\n')
        (self.root / "targets" / "targets.toml").write_text(text)
        (self.root / "patches" / "top" / "fake").mkdir(parents=True)
        (self.root / "patches" / "top" / "fake" / "series").write_text("")
        proc = self.cli("export", "fake-top", "--tree", str(self.tmp / "no-tree"))
        self.assertEqual(1, proc.returncode, proc.stderr)
        self.assertIn(f"target fake-top: {self.root / 'patches' / 'top' / 'fake'} requires base "
                      f"({self.root / 'patches' / 'fake'}), which the target does not stack "
                      "on; refusing to export", proc.stderr)


class ProjectFileTest(unittest.TestCase):
    """The project's own targets.toml."""

    def setUp(self):
        self.ctx = util.Context.create(helpers.REPO)
        self.data = tomllib.loads((helpers.REPO / targets_file.TARGETS_FILE).read_text())

    def test_each_release_once(self):
        for name, entry in self.data["targets"].items():
            with self.subTest(target=name):
                self.assertIn(entry.get("release"), self.data["releases"])
                self.assertTrue(entry.get("change") or entry.get("stack"))
        text = (helpers.REPO / targets_file.TARGETS_FILE).read_text()
        for name, release in self.data["releases"].items():
            self.assertEqual(1, text.count(release["sha256"]), name)

    def test_the_default_target_is_one(self):
        self.assertIn(targets.DEFAULT_TARGET, targets.load(self.ctx))

    def test_the_pike_target_is_one(self):
        self.assertIn(targets.PIKE_TARGET, targets.load(self.ctx))

    def test_stacks(self):
        known = targets.load(self.ctx)
        changes = release_changes.load_changes(self.ctx)
        for release in self.data["releases"]:
            with self.subTest(release=release):
                stacks = [t for t in known.values() if t.stack and t.release == release]
                self.assertEqual(1, len(stacks))
                self.assertEqual([], release_changes.requirements_missing(self.ctx, stacks[0]))
                folders = targets.packaged_stack(self.ctx, release).folders
                self.assertNotIn(self.ctx.root / f"patches/nodeleak/{release}", folders)
        for target in known.values():
            with self.subTest(target=target.name):
                self.assertEqual([], release_changes.requirements_missing(self.ctx, target))
        # the node-leak fixes of the packaged stack do not apply without apiblip
        self.assertIn("apiblip", changes["nodeleak-on-teardown"].requires)


if __name__ == "__main__":
    unittest.main()
