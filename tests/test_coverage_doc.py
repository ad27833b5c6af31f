"""doc/ci.rst's coverage table (*Coverage*: Nova test module x release
and mode) against targets/targets.toml: every cell says which targets
``ci`` runs that selection with, in that mode on that release, and when
(every commit, the last commit, HEAD); a cell that claims a run
targets.toml does not configure, or a selection, mode or release
targets.toml configures that the table leaves out, fails."""

import pathlib
import re
import shutil
import tempfile
import unittest

from novaseries import targets, util
from tests import helpers

DOC = helpers.REPO / "doc" / "ci.rst"
#: The directive line of the table in doc/ci.rst.
DIRECTIVE = ".. list-table:: What ci runs: Nova's test modules x release and mode"
#: The row of the functional test modules a target's series touches (not a
#: selection of targets.toml: selecting.functional_selections finds them).
OWN_FUNCTIONAL = "the functional test modules the patches touch"
#: When a run happens: at every commit of a check-commits target (a unit
#: selection with unit_paths: at each commit that touches its paths), at
#: its last commit only, or at HEAD (a target tested at HEAD only).
SCOPES = ("every commit", "last commit", "HEAD")
ENTRY = re.compile(r"([A-Za-z0-9_.-]+) \((%s)(, by name)?\)" % "|".join(SCOPES))
EMPTY = "--"
FUNCTIONAL_TEST = re.compile(r"^\+\+\+ b/nova/tests/functional/(?:\S+/)?test_\w+\.py$", re.M)


def row_of(selection):
    """``(row, by_name)``: the table row of a selection (a package, module
    or class keeps its name; a test method its class's) and whether the
    selection names tests in that row's class by name."""
    parts = selection.split(".")
    for i, part in enumerate(parts):
        if part[:1].isupper():
            return ".".join(parts[:i + 1]), i < len(parts) - 1
    return selection, False


def touches_functional_tests(patches):
    """True if one of ``patches`` adds or changes a functional test module
    (``test_*.py`` under nova/tests/functional)."""
    return any(FUNCTIONAL_TEST.search(pathlib.Path(p).read_text(errors="replace"))
               for p in patches)


def configured(ctx):
    """``{(row, column): {entry, ...}}``: what targets.toml makes ``ci``
    run.  ``column`` is ``"<version> <mode>"``; an entry ``"TARGET
    (SCOPE)"`` or ``"TARGET (SCOPE, by name)"`` (tests of the row's class
    by name).  Enabled targets only, in the modes ``ci`` runs (``ci =
    false`` leaves one out) with the suites it runs there (``ci_suites``):
    the commits before the last of a check-commits target in its
    ``ci_commit_target`` modes with their own suites, and a unit selection
    with ``unit_paths = []`` at the last commit only.  The functional test
    modules the patches touch (:data:`OWN_FUNCTIONAL`): a check-commits
    target runs those of its own commits, at each commit those present
    then (``commit_checks``); a target tested at HEAD those of its whole
    series, the ones below included."""
    cells = {}

    def add(row, target, mode, scope, by_name=False):
        entry = f"{target.name} ({scope}{', by name' if by_name else ''})"
        cells.setdefault((row, f"{target.version} {mode}"), set()).add(entry)

    for target in targets.load(ctx).values():
        if not target.enabled:
            continue
        last = target.ci_target()
        before = target.ci_commit_target() if target.check_commits else None
        end = "last commit" if target.check_commits else "HEAD"
        # the functional modules a run adds: check-commits, those of the
        # target's own commits (the series below runs them in its own
        # target); test at HEAD, those of the whole series
        own_functional = touches_functional_tests(target.own_series())
        touched_functional = own_functional if target.check_commits else (
            own_functional or touches_functional_tests(target.below_series()))
        for mode in last.modes:
            at_end = last.in_mode(mode)
            at_commits = (before.in_mode(mode)
                          if before is not None and mode in before.modes else None)
            commit_suites = at_commits.mode.suites if at_commits is not None else ()
            if "unit" in at_end.mode.suites:
                for selection in at_end.unit:
                    every = ("unit" in commit_suites and selection in at_commits.unit and
                             target.unit_paths.get(selection) != [])
                    row, by_name = row_of(selection)
                    add(row, target, mode, "every commit" if every else end, by_name)
            if "functional" in at_end.mode.suites:
                for selection in at_end.functional:
                    add(selection, target, mode, end)
                if touched_functional:
                    every = "functional" in commit_suites
                    add(OWN_FUNCTIONAL, target, mode, "every commit" if every else end)
    return cells


def parse_table(text):
    """``(columns, rows)`` of the list-table after :data:`DIRECTIVE` in
    ``text``: the header's columns (without the first) and ``{row label:
    [cell, ...]}`` (labels and cells stripped of literal quotes).

    :raises ValueError: no such table, a line that is not one of its rows
        or cells, a row with more or fewer cells than the header, or a
        label twice.
    """
    lines = text.splitlines()
    if DIRECTIVE not in lines:
        raise ValueError(f"no line {DIRECTIVE!r}")
    table = []
    for line in lines[lines.index(DIRECTIVE) + 1:]:
        if not line.strip():
            continue
        if not line.startswith("   "):
            break
        if line.startswith("   * - "):
            table.append([line[7:].strip()])
        elif line.startswith("     - ") and table:
            table[-1].append(line[7:].strip())
        elif line.startswith("       ") and table:
            table[-1][-1] += " " + line.strip()
        elif not (line.startswith("   :") and not table):
            raise ValueError(f"not a row or cell of the table: {line!r}")
    if not table:
        raise ValueError("the table has no rows")
    header, body = table[0], table[1:]
    rows = {}
    for row in body:
        label = row[0].replace("``", "")
        if len(row) != len(header):
            raise ValueError(f"row {label}: {len(row)} cells, the header {len(header)}")
        if label in rows:
            raise ValueError(f"row {label} twice")
        rows[label] = [cell.replace("``", "") for cell in row[1:]]
    return header[1:], rows


def claimed(columns, rows):
    """``{(row, column): {entry, ...}}`` the parsed table claims (empty
    cells left out, as :func:`configured` has none).

    :raises ValueError: a cell that is not ``--`` nor entries ``TARGET
        (SCOPE)`` / ``TARGET (SCOPE, by name)`` separated by commas.
    """
    cells = {}
    for label, row in rows.items():
        for column, cell in zip(columns, row):
            if cell in (EMPTY, ""):
                continue
            entries = [m.group(0) for m in ENTRY.finditer(cell)]
            if ", ".join(entries) != " ".join(cell.split()):
                raise ValueError(f"row {label}, column {column}: {cell!r} is not "
                                 "TARGET (SCOPE[, by name]), ... with SCOPE one of "
                                 f"{', '.join(SCOPES)}")
            if len(set(entries)) != len(entries):
                raise ValueError(f"row {label}, column {column}: an entry twice")
            cells[label, column] = set(entries)
    return cells


def differences(claims, configuration):
    """Lines saying where the table and targets.toml differ ([]: none)."""
    lines = []
    for key in sorted(set(claims) | set(configuration)):
        said, done = claims.get(key, set()), configuration.get(key, set())
        for entry in sorted(said - done):
            lines.append(f"{key[0]} [{key[1]}]: the table says {entry}; targets.toml "
                         "configures no such run")
        for entry in sorted(done - said):
            lines.append(f"{key[0]} [{key[1]}]: targets.toml configures {entry}; the "
                         "table omits it")
    return lines


class CoverageTableTest(unittest.TestCase):
    """The table in doc/ci.rst is what targets.toml makes ci run."""

    def setUp(self):
        self.ctx = util.Context.create(helpers.REPO)
        self.columns, self.rows = parse_table(DOC.read_text())

    def test_the_table_is_what_targets_toml_configures(self):
        problems = differences(claimed(self.columns, self.rows), configured(self.ctx))
        self.assertEqual([], problems, "doc/ci.rst's coverage table and "
                         "targets/targets.toml differ:\n" + "\n".join(problems))

    def test_a_column_per_release_and_mode_ci_runs(self):
        # every column names a release and mode ci runs (none without a
        # run: a column of nothing would claim a mode is covered by
        # saying no more than the targets file leaves out)
        wanted = {column for _, column in configured(self.ctx)}
        self.assertEqual(sorted(wanted), sorted(self.columns))

    def test_the_rows_around_the_changed_code(self):
        # the compute manager's unit tests on 34.0.0 in eventlet mode (only
        # master-all has every manager change), and on every stable release the reschedule,
        # build-abort and delete-build classes and the resource tracker
        claims = claimed(self.columns, self.rows)
        self.assertIn("master-all (HEAD)", claims.get(
            ("nova.tests.unit.compute.test_compute_mgr", "34.0.0 eventlet"), set()))
        for version, release in (("33.0.2", "2026.1"), ("32.2.1", "2025.2"),
                                 ("31.3.1", "2025.1")):
            for row in ("nova.tests.unit.compute.test_resource_tracker",
                        "nova.tests.functional.test_servers.ServerRescheduleTests",
                        "nova.tests.functional.test_servers.ServerBuildAbortTests",
                        "nova.tests.functional.test_servers.ServerDeleteBuildTests"):
                with self.subTest(row=row, release=release):
                    self.assertIn(f"{release}-all (HEAD)",
                                  claims.get((row, f"{version} eventlet"), set()))


class CoverageTableCheckTest(unittest.TestCase):
    """The check itself: a changed cell, an omitted row or run, a malformed
    cell are caught."""

    def setUp(self):
        self.ctx = util.Context.create(helpers.REPO)
        self.text = DOC.read_text()
        self.columns, self.rows = parse_table(self.text)

    def problems(self, rows):
        return differences(claimed(self.columns, rows), configured(self.ctx))

    def changed(self, row, column, cell):
        """The table's rows with one cell changed."""
        rows = {label: list(cells) for label, cells in self.rows.items()}
        rows[row][self.columns.index(column)] = cell
        return rows

    def cell(self, row, column):
        return self.rows[row][self.columns.index(column)]

    def test_the_real_table_passes(self):
        self.assertEqual([], self.problems(self.rows))

    def test_a_claimed_run_not_configured_fails(self):
        row, column = "nova.tests.unit.compute.test_shelve", "33.0.2 eventlet"
        self.assertEqual(EMPTY, self.cell(row, column))
        problems = self.problems(self.changed(row, column, "2026.1-all (HEAD)"))
        self.assertEqual([f"{row} [{column}]: the table says 2026.1-all (HEAD); "
                          "targets.toml configures no such run"], problems)

    def test_a_configured_run_omitted_fails(self):
        row, column = "nova.tests.unit.compute.test_compute_mgr", "34.0.0 eventlet"
        self.assertEqual("master-all (HEAD)", self.cell(row, column))
        problems = self.problems(self.changed(row, column, EMPTY))
        self.assertEqual([f"{row} [{column}]: targets.toml configures master-all (HEAD); "
                          "the table omits it"], problems)

    def test_a_scope_changed_fails(self):
        row, column = "nova.tests.unit.virt.ironic", "34.0.0 eventlet"
        cell = self.cell(row, column).replace("master (every commit)", "master (HEAD)")
        self.assertEqual(2, len(self.problems(self.changed(row, column, cell))))

    def test_an_omitted_row_fails(self):
        row = "nova.tests.unit.compute.test_resource_tracker"
        rows = {label: cells for label, cells in self.rows.items() if label != row}
        problems = self.problems(rows)
        self.assertTrue(problems)
        self.assertTrue(all(p.startswith(row + " [") and p.endswith("the table omits it")
                            for p in problems), problems)

    def test_malformed_cells_refused(self):
        row, column = "nova.tests.unit.compute.test_compute_mgr", "34.0.0 eventlet"
        for bad, message in (("master-all (at HEAD)", "is not TARGET"),
                             ("master-all HEAD", "is not TARGET"),
                             ("master-all (HEAD) pike (HEAD)", "is not TARGET"),
                             ("master-all (HEAD), master-all (HEAD)", "an entry twice")):
            with self.subTest(bad=bad):
                with self.assertRaisesRegex(ValueError, re.escape(message)):
                    claimed(self.columns, self.changed(row, column, bad))

    def test_malformed_tables_refused(self):
        with self.assertRaisesRegex(ValueError, "no line"):
            parse_table(self.text.replace(DIRECTIVE, ".. list-table:: other"))
        lines = self.text.splitlines(keepends=True)
        first = next(i for i, line in enumerate(lines)
                     if line.startswith("   * - ``nova.tests.unit.compute.test_compute_mgr``"))
        with self.assertRaisesRegex(ValueError, "cells, the header"):
            parse_table("".join(lines[:first + 1] + lines[first + 2:]))
        twice = "".join(lines[:first] + lines[first:first + len(self.columns) + 1] +
                        lines[first:])
        with self.assertRaisesRegex(ValueError, "twice"):
            parse_table(twice)
        with self.assertRaisesRegex(ValueError, "not a row or cell"):
            parse_table("".join(lines[:first] + ["   stray\n"] + lines[first:]))


class ConfiguredTest(unittest.TestCase):
    """:func:`configured` on a small targets file: scopes, modes ci leaves
    out, ci_suites, by-name selections, the touched functional modules."""

    TOML = '''
[defaults]
interpreter = "python3.11"
unit = ["nova.tests.unit.virt"]
[modes.eventlet.env]
X = "1"
[modes.threading]
default = true
[modes.threading.env]
X = "0"

[targets.perc]
version = "9.0.0"
sha256 = "{sha}"
pins = "p.txt"
patches = "patches/perc"
check_commits = true
commit_modes = ["eventlet"]
unit = ["nova.tests.unit.virt", "nova.tests.unit.compute.test_mgr.Case.test_a",
        "nova.tests.unit.compute.test_mgr.Case.test_b"]
functional = ["nova.tests.functional.test_servers.X"]
[targets.perc.unit_paths]
"nova.tests.unit.virt" = ["nova/virt/"]
"nova.tests.unit.compute.test_mgr.Case.test_b" = []
[targets.perc.modes.eventlet]
[targets.perc.modes.threading]
ci = false

[targets.head]
version = "8.0.0"
sha256 = "{sha}"
pins = "p.txt"
patches = "patches/head"
[targets.head.modes.eventlet]
ci_suites = ["unit"]
[targets.head.modes.threading]
suites = ["unit"]
unit = ["nova.tests.unit.compute"]

[targets.stacked]
version = "9.0.0"
sha256 = "{sha}"
pins = "p.txt"
patches = "patches/stacked"
below = "patches/perc"
check_commits = true
unit = ["nova.tests.unit.virt"]
[targets.stacked.unit_paths]
"nova.tests.unit.virt" = []
[targets.stacked.modes.eventlet]

[targets.whole]
version = "9.0.0"
sha256 = "{sha}"
pins = "p.txt"
patches = "patches/whole"
below = "patches/perc"
unit = ["nova.tests.unit.virt"]
[targets.whole.modes.eventlet]

[targets.off]
version = "8.0.0"
sha256 = "{sha}"
pins = "p.txt"
patches = "patches/off"
enabled = false
[targets.off.modes.eventlet]
'''

    def test_configured(self):
        tmp = pathlib.Path(tempfile.mkdtemp(prefix="novaseries-coverage-"))
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        (tmp / "targets").mkdir()
        (tmp / "targets" / "targets.toml").write_text(self.TOML.replace("{sha}", "0" * 64))
        functional = "+++ b/nova/tests/functional/regressions/test_bug_1.py\n"
        for name, text in (("perc", functional), ("head", "+++ b/nova/virt/x.py\n"),
                           ("stacked", "+++ b/nova/virt/y.py\n"),
                           ("whole", "+++ b/nova/virt/z.py\n"), ("off", functional)):
            (tmp / "patches" / name).mkdir(parents=True)
            (tmp / "patches" / name / "0001-x.patch").write_text(text)
            (tmp / "patches" / name / "series").write_text("0001-x.patch\n")
        cells = configured(util.Context.create(tmp, tmp / "build", tmp / "cache"))
        # (a stacked check-commits target runs the functional modules of
        # its own commits only, a target tested at HEAD those below too)
        self.assertEqual({
            ("nova.tests.unit.virt", "9.0.0 eventlet"):
                {"perc (every commit)", "stacked (last commit)", "whole (HEAD)"},
            ("nova.tests.unit.compute.test_mgr.Case", "9.0.0 eventlet"):
                {"perc (every commit, by name)", "perc (last commit, by name)"},
            ("nova.tests.functional.test_servers.X", "9.0.0 eventlet"): {"perc (last commit)"},
            (OWN_FUNCTIONAL, "9.0.0 eventlet"): {"perc (every commit)", "whole (HEAD)"},
            ("nova.tests.unit.virt", "8.0.0 eventlet"): {"head (HEAD)"},
            ("nova.tests.unit.compute", "8.0.0 threading"): {"head (HEAD)"},
        }, cells)

    def test_row_of(self):
        self.assertEqual(("nova.tests.unit.virt.ironic", False),
                         row_of("nova.tests.unit.virt.ironic"))
        self.assertEqual(("nova.tests.unit.virt.ironic.test_driver.NodeCacheTestCase", False),
                         row_of("nova.tests.unit.virt.ironic.test_driver.NodeCacheTestCase"))
        self.assertEqual(("nova.tests.unit.virt.ironic.test_driver.IronicDriverTestCase", True),
                         row_of("nova.tests.unit.virt.ironic.test_driver.IronicDriverTestCase"
                                ".test_spawn"))


if __name__ == "__main__":
    unittest.main()
