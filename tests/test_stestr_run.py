"""One stestr run's results and progress: subunit statuses, counts,
the progress counter."""

import pathlib
import shutil
import tempfile
import unittest
from unittest import mock

from novaseries import stestr_run
from novaseries.outcomes import Outcome, totals_line

#: Last subunit status per test, as novaseries/nova_side/subunit_status.py prints it.
STATUSES = {
    "nova.tests.unit.virt.ironic.test_driver.T.test_a": "success",
    "nova.tests.unit.virt.ironic.test_driver.T.test_b": "fail",
    "nova.tests.unit.virt.ironic.test_driver.T.test_c": "skip",
    "nova.tests.unit.compute.test_compute_mgr.M.test_d": "success",
    "nova.tests.unit.compute.test_compute_mgr.M.test_e": "xfail",
    "nova.tests.unit.compute.test_compute_mgr.M.test_f": "uxsuccess",
    "nova.tests.unit.other.O.test_g": "success",
}
FILTERS = ["nova.tests.unit.virt.ironic", "nova.tests.unit.compute.test_compute_mgr"]


class ParseTest(unittest.TestCase):

    def test_parse_statuses(self):
        results = stestr_run.parse_statuses(STATUSES)
        self.assertEqual(len(results), 7)
        self.assertEqual(results["nova.tests.unit.virt.ironic.test_driver.T.test_b"], "failed")
        self.assertEqual(results["nova.tests.unit.compute.test_compute_mgr.M.test_e"], "xfail")
        self.assertEqual(results["nova.tests.unit.compute.test_compute_mgr.M.test_f"], "failed")

    def test_split_and_count(self):
        groups = stestr_run.split_by_filter(stestr_run.parse_statuses(STATUSES), FILTERS)
        counts = [stestr_run.count(str(f), g) for f, g in groups]
        self.assertEqual([(o.passed, o.failed, o.skipped) for o in counts],
                         [(1, 1, 1), (2, 1, 0), (1, 0, 0)])
        self.assertIsNone(groups[-1][0])

    def test_zero_tests_is_a_failure(self):
        outcome = stestr_run.count("sel", {})
        self.assertEqual((outcome.passed, outcome.failed), (0, 1))
        self.assertIn("ran no tests", outcome.note)
        self.assertEqual(stestr_run.parse_statuses({}), {})

    def test_a_test_that_never_ended_is_a_failure_named(self):
        # a worker killed under test_4 (in progress) and before test_5 and
        # test_6 (listed by the worker, never started) and test_7 (listed
        # by stestr, never in the stream at all)
        ids = [f"nova.tests.unit.x.T.test_{n}" for n in range(1, 8)]
        found = {ids[0]: "success", ids[1]: "success", ids[2]: "success",
                 ids[3]: "inprogress", ids[4]: "exists", ids[5]: "exists"}
        outcome = stestr_run.count("sel", stestr_run.parse_statuses(found, listed=ids))
        self.assertEqual((3, 4), (outcome.passed, outcome.failed))
        self.assertIn("4 tests never ended", outcome.note)
        self.assertIn("nova.tests.unit.x.T.test_4", outcome.note)

    def test_every_test_skipped_is_a_failure(self):
        outcome = stestr_run.count("sel", {"a.T.test_1": "skipped", "a.T.test_2": "skipped"})
        self.assertEqual((0, 1, 2), (outcome.passed, outcome.failed, outcome.skipped))
        self.assertIn("every test skipped", outcome.note)
        outcome = stestr_run.count("sel", {"a.T.test_1": "skipped", "a.T.test_2": "passed"})
        self.assertEqual((1, 0, 1), (outcome.passed, outcome.failed, outcome.skipped))

    def test_expected_failure_in_the_series_own_tests_fails(self):
        results = {"nova.tests.functional.regressions.test_bug_NNNNNNN.T.test_a": "xfail",
                   "nova.tests.functional.test_servers.T.test_b": "xfail",
                   "nova.tests.functional.test_servers.T.test_c": "passed"}
        own = ["nova.tests.functional.regressions.test_bug_NNNNNNN"]
        outcome = stestr_run.count("sel", results, own=own)
        self.assertEqual((2, 1), (outcome.passed, outcome.failed))
        self.assertIn("1 expected failures in the series' own tests", outcome.note)
        self.assertIn("test_bug_NNNNNNN.T.test_a", outcome.note)
        # Nova's own expected failures count as passed
        self.assertEqual((3, 0), (stestr_run.count("sel", results).passed,
                                  stestr_run.count("sel", results).failed))

    def test_totals_line(self):
        outcomes = [Outcome("a", 3, 1, 2), Outcome("b", 4)]
        self.assertEqual(totals_line(outcomes), "7 passed, 1 failed, 2 skipped")
        self.assertEqual(outcomes[0].line(), "FAIL a: 3 passed, 1 failed, 2 skipped")


def _packet(status, test_id=b"nova.tests.unit.test_x.T.test_y", big=False):
    """A subunit v2 packet: signature, flags (version 2, test id present,
    status in the low 3 bits), total length, test id, fake CRC."""
    body = bytes([len(test_id)]) + test_id
    flags = bytes([0x28, status])
    size = 2 if big else 1
    length = 1 + 2 + size + len(body) + 4
    head = bytes([length]) if not big else bytes([0x40 | (length >> 8), length & 0xFF])
    return b"\xb3" + flags + head + body + b"CRC!"


#: A stream written by python-subunit 1.4's StreamResultToBytes (zlib,
#: base64): t.exists (exists), t.a (inprogress, success), t.b (inprogress,
#: a 70,000-byte attachment, fail), t.c (skip), t.d (success with a
#: 20,000-byte attachment): 3- and 1-byte packet lengths (the 2-byte ones
#: come from _packet below).
REAL_STREAM = (
    "eNrtyCFOA1EARdHAhIY2NbUoKr9pt4DAkEAFQVQyHSZNw6Q09IshQbQbQNYRFoAhfIXCswQEhpCwDChh"
    "CQjEOeq+l8JGZzv2ynoyj/PVy819CpvtLPbyu6fmZwrZT598vB79/qPGw/A4hdNlZ7VerVjWsT+r8sm0"
    "GS/zohzlxfmyM6sBAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
    "AAAAAAAAAAAAAAAAAAAAAAAAgD93OH7uptBoZ7E3uu3u7Kewte6iehxep1AsBnvf66wVyzr2Z1U+mWbV"
    "xXgx2L0CAAAAAAAAAAAAAAAAAAAAAAAA4F94zw/evgAAG1ax")


class SubunitProgressTest(unittest.TestCase):

    def test_a_real_stream_with_large_attachments(self):
        import base64
        import zlib
        data = zlib.decompress(base64.b64decode(REAL_STREAM))
        self.assertGreater(len(data), 90000)
        for piece in (1, 7, 4096, len(data)):
            counter = stestr_run.SubunitCounter()
            for i in range(0, len(data), piece):
                counter.feed(data[i:i + piece])
            self.assertEqual({"passed": 2, "failed": 1, "skipped": 1}, counter.counts, piece)
            self.assertEqual(1, counter.listed)
            self.assertEqual(b"", counter._buffer)  # nothing held back at the end

    def test_counts_ended_tests_across_pieces(self):
        stream = (_packet(2) + _packet(3) + _packet(2) + _packet(6, big=True) +
                  _packet(5) + _packet(3, test_id=b"x" * 100, big=True) + _packet(7))
        counter = stestr_run.SubunitCounter()
        for i in range(0, len(stream), 5):  # split anywhere, even in a header
            counter.feed(stream[i:i + 5])
        self.assertEqual({"passed": 3, "failed": 1, "skipped": 1}, counter.counts)
        self.assertEqual(5, counter.done)

    def test_progress_lines_while_running(self):
        import subprocess
        tmp = pathlib.Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, tmp, ignore_errors=True)
        path = tmp / "unit.subunit"
        path.write_bytes(_packet(3))
        ticks = iter([0.0, 15.0, 30.0, 45.0])
        waits = []

        def wait():
            waits.append(1)
            if len(waits) == 1:
                with open(path, "ab") as f:
                    f.write(_packet(6) + _packet(3))
                raise subprocess.TimeoutExpired("stestr", 15)
            if len(waits) == 2:
                raise subprocess.TimeoutExpired("stestr", 15)

        said = []
        with mock.patch.object(stestr_run, "say", said.append):
            counter = stestr_run._watch_progress(path, None, "master@HEAD unit",
                                                 clock=lambda: next(ticks), wait=wait)
        self.assertEqual(3, counter.done)
        self.assertEqual(["  [master@HEAD unit] 3 tests done (1 failed, 0 skipped), 15 s",
                          "  [master@HEAD unit] 3 tests done (1 failed, 0 skipped), 30 s"],
                         said)
