"""README.rst's list "Before a minor update, operators must read" against
the release notes the packaged stacks add.

For each release of targets.toml, the renos are those its packaged stack
(:func:`novaseries.targets.packaged_stack`) leaves in
``releasenotes/notes/``: the ``releasenotes/notes/*.yaml`` files of its
patches, each patch applied in turn (a later commit may change a reno
an earlier one added).  A reno with an ``upgrade:`` section needs an
entry in the list for its bug with that release in its scope; an entry
may claim a release only if that release's stack has a reno of its bug,
with an ``upgrade:`` section unless :data:`JUSTIFIED` says why not.

An entry is a bullet whose bold lead names the bug, then the nova
versions it applies to: ``* **Bug NNNNNNN, nova 34.0.0, 33.0.2, 32.2.1,
31.3.1 and 16.1.8 (pike)**: ...`` (``LP 2169200`` for a filed bug).
Standard library only: the renos' top-level keys are read line by line
(no YAML library in the harness venv).
"""

import re
import unittest

from novaseries import targets, util
from tests import helpers

LIST_START = "Before a minor update, operators must read"

#: A bullet of the list: ``* **Bug NNNNNNN, nova 34.0.0, ...**``.
ENTRY = re.compile(r"^\* \*\*(?:Bug|LP) ([0-9]{7}|[A-Z]{7}), (nova [^*]+)\*\*", re.M)

#: ``releasenotes/notes/bug-<bug>-<slug>.yaml``: the reno's bug.
RENO_NAME = re.compile(r"^releasenotes/notes/bug-([0-9]{7}|[A-Z]{7})-[^/]+\.yaml$")

#: ``(bug, release)``: the list's entry may claim ``release`` although
#: that release's reno of ``bug`` has no ``upgrade:`` section (why).
JUSTIFIED = {
    ("NNNNNNN", "pike"):
        "pike's reno says it under fixes: a failed build's clean-up waits for "
        "Ironic's tear-down, holding the instance lock, a max_concurrent_builds "
        "slot and the allocation, then ends in ERROR without a reschedule, as "
        "the other releases' upgrade section says; a delete waits too",
    ("DDDDDDD", "pike"):
        "pike's 0003 changes every virt driver's failed build as the other "
        "releases' compute manager change does, whose reno says it under "
        "upgrade; pike's reno says it under fixes",
}


def file_diffs(patch):
    """``[(path, diff), ...]``: the files a format-patch's diff changes
    (``path`` its new name, None for a deleted file)."""
    tail = patch.partition("\n---\n")[2]
    found = []
    for block in re.split(r"^(?=diff --git )", tail, flags=re.M)[1:]:
        new = re.search(r"^\+\+\+ (?:b/(\S+)|/dev/null)$", block, re.M)
        found.append((new.group(1) if new else None, block))
    return found


def apply_diff(old, diff):
    """``old`` (text, "" for a new file) with the hunks of ``diff``
    applied; AssertionError if a context or removed line differs."""
    lines = old.splitlines()
    out, pos = [], 0
    body = diff.split("\n")
    i = 0
    while i < len(body):
        head = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@", body[i])
        i += 1
        if not head:
            continue
        start, old_count = int(head.group(1)), int(head.group(2) or 1)
        new_count = int(head.group(3) or 1)
        start = start if old_count else start + 1
        out += lines[pos:start - 1]
        pos = start - 1
        while old_count or new_count:
            line = body[i]
            i += 1
            kind, text = line[:1], line[1:]
            if kind == "\\":
                continue
            if kind in (" ", "-"):
                assert lines[pos] == text, (pos, lines[pos], text)
                pos += 1
                old_count -= 1
            if kind in (" ", "+"):
                out.append(text)
                new_count -= 1
            if kind not in (" ", "-", "+"):
                raise AssertionError(f"unexpected hunk line {line!r}")
    return "\n".join(out + lines[pos:]) + "\n"


def top_level_sections(reno):
    """``{key: [lines]}`` of a reno's top-level YAML mapping (a line
    ``key:`` at column 0 opens a section; ``---`` and comments skipped)."""
    sections, key = {}, None
    for line in reno.splitlines():
        if line.startswith("#") or line.strip() == "---":
            continue
        match = re.match(r"^([A-Za-z_]+):(.*)$", line)
        if match:
            key = match.group(1)
            sections[key] = [match.group(2)] if match.group(2).strip() else []
        elif key is not None and line.strip():
            sections[key].append(line)
    return sections


def stack_renos(stack):
    """``{path: text}``: the renos ``stack``'s patches leave, in order."""
    renos = {}
    for folder, names in stack.series():
        for name in names:
            for path, diff in file_diffs((folder / name).read_text()):
                old = re.search(r"^--- a/(\S+)$", diff, re.M)
                if old and old.group(1).startswith("releasenotes/notes/") \
                        and path != old.group(1):
                    renos.pop(old.group(1), None)     # deleted or renamed
                if path and path.startswith("releasenotes/notes/") and path.endswith(".yaml"):
                    renos[path] = apply_diff(renos.get(path, ""), diff)
    return renos


def list_text(readme):
    """The bullets of README's list: from the end of the paragraph of its
    lead sentence to the first line after it that is neither blank, a
    bullet nor a continuation."""
    start = readme.index("\n\n", readme.index(LIST_START))
    lines = readme[start:].split("\n")
    block = []
    for line in lines:
        if line and not line.startswith(("* ", "  ")):
            break
        block.append(line)
    return "\n".join(block)


class OperatorNotesTest(unittest.TestCase):
    """README.rst's pre-update list, release by release, against the
    ``upgrade:`` sections of the renos each packaged stack adds."""

    @classmethod
    def setUpClass(cls):
        ctx = util.Context.create(helpers.REPO)
        cls.stacks = {r: targets.packaged_stack(ctx, r) for r in targets.releases(ctx)}
        cls.release_of = {s.target.version: r for r, s in cls.stacks.items()}
        # {release: {bug: has an upgrade section}}
        cls.renos = {}
        for release, stack in cls.stacks.items():
            bugs = cls.renos[release] = {}
            for path, text in stack_renos(stack).items():
                name = RENO_NAME.match(path)
                if not name:
                    raise AssertionError(f"{release}: reno {path} names no bug "
                                         "(bug-<bug>-<slug>.yaml)")
                upgrade = top_level_sections(text).get("upgrade", [])
                has = any(line.lstrip().startswith("- ") for line in upgrade)
                bugs[name.group(1)] = bugs.get(name.group(1), False) or has
        cls.readme = (helpers.REPO / "README.rst").read_text()

    def entries(self):
        """``{bug: {release, ...}}`` of README's list; every bullet must
        have the bold lead of an entry, each bug one entry."""
        block = list_text(self.readme)
        bullets = re.findall(r"^\* .*$", block, re.M)
        self.assertTrue(bullets, f"README.rst: no bullets after '{LIST_START}'")
        found = {}
        for bullet in bullets:
            match = ENTRY.match(bullet)
            self.assertIsNotNone(match, f"README's list: {bullet!r} does not start with "
                                 "'**Bug <bug>, nova <version>, ...**'")
            bug, scope = match.groups()
            self.assertNotIn(bug, found, f"README's list: two entries for bug {bug}")
            versions = re.findall(r"\b\d+\.\d+\.\d+\b", scope)
            self.assertTrue(versions, f"README's list: the entry of bug {bug} names no "
                            "nova version")
            for version in versions:
                self.assertIn(version, self.release_of,
                              f"README's list: bug {bug}: nova {version} is no "
                              f"release's version ({', '.join(self.release_of)})")
            found[bug] = {self.release_of[v] for v in versions}
        return found

    def test_upgrade_renos_have_entries(self):
        entries = self.entries()
        for release, bugs in self.renos.items():
            version = self.stacks[release].target.version
            for bug, upgrade in bugs.items():
                if upgrade:
                    with self.subTest(release=release, bug=bug):
                        self.assertIn(
                            release, entries.get(bug, ()),
                            f"{release}'s stack adds bug {bug}'s reno with an upgrade "
                            f"section: README's list needs an entry for bug {bug} "
                            f"naming nova {version}")

    def test_entries_claim_only_their_renos(self):
        for bug, releases in self.entries().items():
            for release in releases:
                with self.subTest(bug=bug, release=release):
                    version = self.stacks[release].target.version
                    self.assertIn(bug, self.renos[release],
                                  f"README's list claims bug {bug} for nova {version}, "
                                  f"whose stack ({release}) adds no reno of it")
                    self.assertTrue(
                        self.renos[release][bug] or (bug, release) in JUSTIFIED,
                        f"README's list claims bug {bug} for nova {version}, whose "
                        f"reno of it ({release}) has no upgrade section (nor a "
                        "reason in JUSTIFIED)")

    def test_justified_not_stale(self):
        entries = self.entries()
        for (bug, release), why in JUSTIFIED.items():
            with self.subTest(bug=bug, release=release):
                self.assertIn(release, entries.get(bug, ()),
                              f"JUSTIFIED ({why}) but README's list does not claim it")
                self.assertIn(bug, self.renos[release])
                self.assertFalse(self.renos[release][bug],
                                 f"{release}'s reno of bug {bug} now has an upgrade "
                                 "section: drop it from JUSTIFIED")

    def test_patches_readme_points_to_the_list(self):
        """The list lives in README.rst only."""
        text = (helpers.REPO / "patches" / "README.rst").read_text()
        self.assertEqual([], ENTRY.findall(text))
        self.assertNotIn(LIST_START, text)
        self.assertIn("README.rst", text)


class HelpersTest(unittest.TestCase):
    """The reno reader on small inputs."""

    def test_apply_diff(self):
        old = "a\nb\nc\n"
        diff = "@@ -1,3 +1,4 @@\n a\n-b\n+B\n+B2\n c\n"
        self.assertEqual("a\nB\nB2\nc\n", apply_diff(old, diff))
        self.assertEqual("x\ny\n", apply_diff("", "@@ -0,0 +1,2 @@\n+x\n+y\n"))
        with self.assertRaises(AssertionError):
            apply_diff("a\nz\nc\n", diff)

    def test_top_level_sections(self):
        reno = "---\nfixes:\n  - |\n    x\nupgrade:\n  - |\n    y: z\n"
        sections = top_level_sections(reno)
        self.assertEqual(["fixes", "upgrade"], list(sections))
        self.assertEqual(["  - |", "    y: z"], sections["upgrade"])
        self.assertEqual({"fixes"}, set(top_level_sections("fixes:\n  - |\n    x\n")))


if __name__ == "__main__":
    unittest.main()
