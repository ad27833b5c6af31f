"""The environment variables by which the harness tells the driver tests
(``novaseries/nova_side/driver_tests``, in Nova's test venv) how to run:
:mod:`novaseries.ironic.driver_runs` sets them, the tests read them.

Names only, importing nothing: the tests' import guard reads
:data:`REQUIRED` before Nova's monkey patching, which must come before
most of the standard library.  pike's tests (Python 2.7) cannot import
this module; they spell :data:`PIKE`'s names themselves
(tests/test_ironic_pike.py checks that they match).
"""

#: ``1``: a missing piece (Nova, the Ironic venv) is an error, not a skip.
REQUIRED = "REALIRONIC_REQUIRED"
#: What the end-to-end tests expect of the series: one of
#: :data:`EXPECTATIONS`.
EXPECT = "REALIRONIC_EXPECT"
#: :data:`EXPECT`'s values: the fix, the bug, or detected from the tree.
EXPECT_FIXED, EXPECT_BUG, EXPECT_AUTO = EXPECTATIONS = ("fixed", "bug", "auto")
#: The same for the node-leak changes (set by hand; ``driver-tests`` does
#: not set it).
EXPECT_NODELEAK = "REALIRONIC_EXPECT_NODELEAK"
#: ``1``: the contract tests fail, not skip, without the series' fake Ironic.
NEED_FIXTURE = "REALIRONIC_NEED_FIXTURE"
#: The Ironic venv (``novaseries.ironic.service.RealIronic``'s default).
VENV = "REALIRONIC_VENV"

#: pike's run (``driver_runs.run_pike``): the pike-era Ironic's API and
#: image URLs, the image's md5 and the Ironic release.
URL = "REALIRONIC_URL"
IMAGE_URL = "REALIRONIC_IMAGE_URL"
IMAGE_MD5 = "REALIRONIC_IMAGE_MD5"
IRONIC_VERSION = "REALIRONIC_IRONIC_VERSION"
#: What ``driver_runs.run_pike`` sets for pike's tests.
PIKE = (REQUIRED, EXPECT, URL, IMAGE_URL, IMAGE_MD5, IRONIC_VERSION)
