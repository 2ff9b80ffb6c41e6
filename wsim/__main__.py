"""``python -m wsim``: the same as the ``wsim`` command."""

import sys

from wsim.cli import main

sys.exit(main())
