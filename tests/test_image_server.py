"""novaseries.ironic.service: the image server both Ironics start
(``RealIronic._serve_image``), without an Ironic."""

import hashlib
import pathlib
import sys
import tempfile
import time
import unittest
import urllib.request

from novaseries import procs
from novaseries.ironic import service


class ImageServerTest(unittest.TestCase):

    def test_serves_the_image_and_a_404(self):
        tmp = pathlib.Path(self.enterContext(tempfile.TemporaryDirectory()))
        ironic = service.RealIronic(venv=tmp, workdir=tmp, log=lambda m: None)
        ironic.run_dir = tmp / "run"
        ironic.run_dir.mkdir()
        ironic.image_port = procs.free_port()
        image = ironic._serve_image(sys.executable)
        self.addCleanup(ironic.stop, keep=True)
        deadline = time.monotonic() + 30
        while procs.http_status(ironic.image_url, "HEAD") != 200:
            self.assertLess(time.monotonic(), deadline,
                            procs.log_tail(ironic.run_dir / "http.log"))
            time.sleep(0.05)
        self.assertEqual(service.IMAGE_SIZE, len(image))
        self.assertEqual(hashlib.sha256(image).hexdigest(), ironic.image_sha256)
        with urllib.request.urlopen(ironic.image_url, timeout=10) as resp:
            self.assertEqual(image, resp.read())
        self.assertEqual(404, procs.http_status(ironic.missing_image_url))
        self.assertTrue(ironic.image_url.endswith("/" + service.IMAGE))
        self.assertTrue(ironic.missing_image_url.endswith("/" + service.MISSING_IMAGE))


if __name__ == "__main__":
    unittest.main()
