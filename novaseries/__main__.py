"""Allow ``python -m novaseries``."""

import sys

from novaseries.cli import main

sys.exit(main())
