"""``python -m edgepart``: the command line."""

import sys

from edgepart.cli import main

sys.exit(main())
