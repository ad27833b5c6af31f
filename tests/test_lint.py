"""Commit-message lint."""

import unittest

from novaseries import lint
from tests import helpers

GOOD = helpers.message("ironic: Fail the build when the node is gone")


class LintTest(unittest.TestCase):

    def check(self, message):
        return lint.lint_message(message)

    def test_good(self):
        self.assertEqual(self.check(GOOD), ([], []))

    def test_summary_limits(self):
        errors, warnings = self.check(helpers.message("x" * 60))
        self.assertEqual(errors, [])
        self.assertIn("summary is 60 characters (aim for 50)", warnings)
        errors, _ = self.check(helpers.message("x" * 73))
        self.assertIn("summary is 73 characters (max 72)", errors)

    def test_bracket_summary_refused(self):
        errors, _ = self.check(helpers.message("[stable-only] Fix it"))
        self.assertTrue(any("starts with '['" in e for e in errors), errors)

    def test_period_warning(self):
        self.assertIn("summary ends with a period",
                      self.check(helpers.message("Fix it."))[1])

    def test_blank_line_after_summary(self):
        errors, _ = self.check(GOOD.replace("\n\n", "\n", 1))
        self.assertIn("line 2 must be blank (summary, blank line, body)", errors)

    def test_body_line_length(self):
        errors, _ = self.check(helpers.message("Fix", body="word " * 15 + "end"))
        self.assertIn("line 3 is 78 columns (max 72)", errors)
        url = "See https://bugs.launchpad.net/nova/+bug/" + "1" * 60
        self.assertEqual(self.check(helpers.message("Fix", body=url))[0], [])
        self.assertEqual(self.check(helpers.message("Fix", body="x" * 90))[0], [])

    def test_ascii_only(self):
        errors, _ = self.check(helpers.message("Fix", body="caf\u00e9 \u2014 done"))
        self.assertTrue(any("non-ASCII" in e for e in errors), errors)

    def test_change_id_required_in_footer(self):
        errors, _ = self.check("Fix\n\nBody.\n\nCloses-Bug: #1\n")
        self.assertIn("no 'Change-Id: I<40 hex>' footer", errors)
        errors, _ = self.check("Fix\n\nChange-Id: I" + "a" * 40 + "\n\nCloses-Bug: #1\n")
        self.assertIn("Change-Id must be 'Change-Id: I<40 hex>' in the last paragraph", errors)
        errors, _ = self.check(GOOD.replace(helpers.CHANGE_ID, "I123"))
        self.assertTrue(any("Change-Id" in e for e in errors))

    def test_bug_footer_required(self):
        errors, _ = self.check(helpers.message("Fix", footer="Implements: blueprint x"))
        self.assertIn("no 'Closes-Bug: #N' or 'Related-Bug: #N' footer in the last paragraph",
                      errors)
        for footer in ("Related-Bug: #NNNNNNN", "Closes-Bug: #2071234", "Closes-Bug: MMMMMMM"):
            self.assertEqual(self.check(helpers.message("Fix", footer=footer))[0], [], footer)

    def test_no_signed_off_by(self):
        errors, _ = self.check(GOOD + "Signed-off-by: A <a@b>\n")
        self.assertTrue(any("Signed-off-by" in e for e in errors))

    def test_empty_summary(self):
        self.assertIn("empty summary line", self.check("\n\nBody\n")[0])

    def test_duplicate_change_id_in_series(self):
        results = lint.lint_series([("a", GOOD), ("b", GOOD)])
        self.assertEqual(results["a"], ([], []))
        self.assertEqual(results["b"][0], ["same Change-Id as a"])
