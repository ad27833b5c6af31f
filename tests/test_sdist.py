"""Download, digest check and extraction of the sdist (no network)."""

import pathlib

from novaseries import sdist, tree
from novaseries.util import HarnessError, sha256_file
from tests import helpers


class SdistTest(helpers.ProjectTestCase):

    def test_cached_file_with_right_digest_is_used(self):
        path = sdist.fetch(self.target, self.cache, downloader=self.fail)
        self.assertEqual(path, self.sdist)

    def test_mismatch_refuses_prints_both_digests_extracts_nothing(self):
        self.sdist.write_bytes(self.sdist.read_bytes() + b"tampered")
        actual = sha256_file(self.sdist)
        dest = self.tmp / "tree"
        proc = self.cli("prepare", "fake", "--dest", str(dest))
        self.assertEqual(proc.returncode, 1)
        self.assertIn("sha256 mismatch", proc.stderr)
        self.assertIn(f"expected: {self.sha}", proc.stderr)
        self.assertIn(f"actual:   {actual}", proc.stderr)
        self.assertFalse(dest.exists())
        self.assertTrue(self.sdist.exists(), "the cached file is kept for inspection")

    def test_truncated_download_refused_and_discarded(self):
        self.sdist.unlink()
        data = helpers.make_sdist(self.tmp / "good")[0].read_bytes()

        def truncated(version, folder):
            (pathlib.Path(folder) / f"nova-{version}.tar.gz").write_bytes(data[:len(data) // 2])

        dest = self.tmp / "tree"
        with self.assertRaises(HarnessError) as caught:
            tree.create_base(self.target, dest, self.cache, downloader=truncated)
        self.assertIn("sha256 mismatch", str(caught.exception))
        self.assertIn(self.sha, caught.exception.details)
        self.assertFalse(dest.exists())
        self.assertEqual([p.name for p in self.cache.iterdir()], [],
                         "nothing enters the cache")

    def test_good_download_enters_cache(self):
        self.sdist.unlink()
        data = helpers.make_sdist(self.tmp / "good")[0].read_bytes()

        def good(version, folder):
            (pathlib.Path(folder) / f"nova-{version}.tar.gz").write_bytes(data)

        path = sdist.fetch(self.target, self.cache, downloader=good)
        self.assertEqual(sha256_file(path), self.sha)

    def test_download_producing_nothing_is_an_error(self):
        self.sdist.unlink()
        with self.assertRaises(HarnessError) as caught:
            sdist.fetch(self.target, self.cache, downloader=lambda v, f: None)
        self.assertIn("did not produce", str(caught.exception))

    def test_extract_keeps_exec_bit_and_strips_top_folder(self):
        dest = self.tmp / "x"
        sdist.extract(self.sdist, dest)
        self.assertTrue((dest / "nova" / "virt" / "driver.py").is_file())
        self.assertTrue((dest / "tools" / "run.sh").stat().st_mode & 0o100)

    def test_corrupt_archive_leaves_nothing(self):
        bad = self.tmp / "bad.tar.gz"
        bad.write_bytes(b"not a tarball")
        dest = self.tmp / "x"
        with self.assertRaises(HarnessError):
            sdist.extract(bad, dest)
        self.assertFalse(dest.exists())
        self.assertEqual(list(self.tmp.glob(".x-extract-*")), [])
