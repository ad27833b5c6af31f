"""Import guard shared by the test modules of this directory.

These tests need Nova (a tree with the series applied on PYTHONPATH, Nova's
test venv) and the Ironic venv.  ``novaseries ironic driver-tests``
provides all of it and sets ``REALIRONIC_REQUIRED=1``; any other test runner
that happens to collect this directory gets skips instead of import errors.
"""

import os
import unittest

from novaseries.ironic import run_env

REQUIRED = os.environ.get(run_env.REQUIRED) == '1'


def skip_or_raise(what, exc):
    """Raise ``exc`` under driver-tests, else skip the calling module."""
    if REQUIRED:
        raise exc
    raise unittest.SkipTest(
        '%s (%s); run `novaseries ironic driver-tests --tree '
        '<nova tree>`' % (what, exc))
