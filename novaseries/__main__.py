"""Allow ``python -m novaseries``."""

import sys

if sys.version_info < (3, 11):
    sys.exit("novaseries needs Python 3.11 or newer (it reads targets.toml with "
             "tomllib); run it with python3.11")

from novaseries.cli import main  # noqa: E402

sys.exit(main())
