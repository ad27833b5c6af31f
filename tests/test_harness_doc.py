"""doc/harness.rst's table of *Concurrency modes* and README.rst's
placeholder names hold to targets.toml (:func:`novaseries.targets.load`,
:func:`novaseries.targets.placeholders`)."""

import re
import unittest

from novaseries import targets, util
from tests import helpers


def modes_table(text):
    """``{target: (eventlet cell, threading cell)}`` of the table under
    *Concurrency modes*: a row's target cell ending in a comma goes on
    on the next line; its other cells are the lines' text joined."""
    section = text[text.index("\nConcurrency modes\n"):]
    rule = re.search(r"^(=+) +(=+) +(=+)$", section, re.M)
    widths = [len(g) + 2 for g in rule.groups()[:2]]
    body = section[rule.end():].split("\n")[3:]
    rows, row, more = [], None, False
    for line in body:
        if line.startswith("="):
            break
        first, second, third = (line[:widths[0]].strip(),
                                line[widths[0]:widths[0] + widths[1]].strip(),
                                line[widths[0] + widths[1]:].strip())
        if first and not more:
            row = {"targets": [], "eventlet": [], "threading": []}
            rows.append(row)
        if first:
            row["targets"].append(first.rstrip(","))
            more = first.endswith(",")
        row["eventlet"].append(second)
        row["threading"].append(third)
    table = {}
    for row in rows:
        for name in row["targets"]:
            table[name] = (" ".join(filter(None, row["eventlet"])),
                           " ".join(filter(None, row["threading"])))
    return table


def suites_claimed(cell):
    """The suites a cell's first words name: ``()`` for ``--``."""
    if cell.startswith("--"):
        return ()
    return ("unit", "functional") if cell.startswith("unit + functional") else ("unit",)


class ModesTableTest(unittest.TestCase):
    """Each enabled target is in the table once; each cell names the
    mode's suites (``--``: no such mode), Python 3.13 where the mode has
    that interpreter, and ``in ci unit only`` where ``ci`` runs only
    the unit suite of it."""

    def test_table_matches_targets(self):
        ctx = util.Context.create(helpers.REPO)
        table = modes_table((helpers.REPO / "doc" / "harness.rst").read_text())
        loaded = {n: t for n, t in targets.load(ctx).items() if t.enabled}
        self.assertEqual(sorted(loaded), sorted(table))
        for name, target in loaded.items():
            for mode_name, cell in zip(("eventlet", "threading"), table[name]):
                with self.subTest(target=name, mode=mode_name):
                    mode = target.modes.get(mode_name)
                    self.assertEqual(tuple(mode.suites) if mode else (),
                                     suites_claimed(cell), cell)
                    if mode is None:
                        continue
                    self.assertEqual(mode.interpreter == "python3.13",
                                     "Python 3.13" in cell, cell)
                    self.assertEqual(tuple(mode.ci_suites or ()) == ("unit",),
                                     "in ``ci`` unit only" in cell, cell)


class PlaceholderNamesTest(unittest.TestCase):
    """README.rst's *Reviewers* section pairs each placeholder with its
    ``--bug`` name as ``[bugs]`` does."""

    def test_readme_pairs(self):
        ctx = util.Context.create(helpers.REPO)
        text = (helpers.REPO / "README.rst").read_text()
        section = text[text.index("\nReviewers:"):text.index("\nPackagers:")]
        pairs = dict(re.findall(r"``([a-z]+)``\s+=\s+``([A-Z]{7})``", section))
        self.assertEqual(targets.placeholders(ctx), pairs)
