"""The packagers' docs name the packaged stack targets.toml declares
(:func:`novaseries.targets.packaged_stack`): README.rst's table and loop,
patches/README.rst's folder sequence."""

import re
import unittest

from novaseries import targets, util
from tests import helpers


class PackagerDocsTest(unittest.TestCase):
    """README.rst's packager table and loop, and patches/README.rst's
    folder sequence, name the folders of targets.packaged_stack, in its
    order, for every release."""

    def setUp(self):
        self.ctx = util.Context.create(helpers.REPO)
        self.stacks = {r: targets.packaged_stack(self.ctx, r)
                       for r in targets.releases(self.ctx)}
        self.assertEqual(["master", "2026.1", "2025.2", "2025.1", "pike"], list(self.stacks))

    def folders(self, release):
        return [f.relative_to(helpers.REPO).as_posix()
                for f in self.stacks[release].folders]

    @staticmethod
    def section(text, title):
        start = text.index(f"\n{title}\n")
        end = re.search(r"\n[^\n]+\n={3,}\n", text[start + len(title) + 2:])
        return text[start:start + len(title) + 2 + end.start()] if end else text[start:]

    def test_readme_table_and_loop(self):
        text = self.section((helpers.REPO / "README.rst").read_text(),
                            "Packagers: which folder for which release")
        rows = dict(re.findall(r"^nova (\S+) +(.+)$", text, re.M))
        for release, stack in self.stacks.items():
            with self.subTest(release=release):
                row = rows[stack.target.version]
                self.assertEqual(self.folders(release), re.findall(r"``(patches/[^`]+)``", row))
        loop = re.search(r"for f in (.*?)\n +do ", text, re.S).group(1)
        self.assertEqual(self.folders("master"),
                         [f"patches/{f}" for f in loop.replace("\\", " ").split()])
        self.assertIn("--no-backup-if-mismatch", text)

    def test_patches_readme_sequence(self):
        text = (helpers.REPO / "patches" / "README.rst").read_text()
        start = text.index("Packagers apply whole folders, in this order")
        sentence = text[start:start + re.search(r"\.\s", text[start:]).start()]
        found = {}
        for folders, releases in re.findall(r"((?:``patches/[^`]+``,?\s*)+)\(([^)]*)\)",
                                            sentence):
            for release in re.split(r",\s*", releases.strip()):
                found[release] = [f.replace("<release>", release)
                                  for f in re.findall(r"``(patches/[^`]+)``", folders)]
        self.assertEqual(set(self.stacks), set(found))
        for release in self.stacks:
            self.assertEqual(self.folders(release), found[release], release)
