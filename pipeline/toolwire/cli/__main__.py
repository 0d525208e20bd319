"""``python -m toolwire.cli``: the same as the ``toolwire`` command."""

import sys

from toolwire.cli import main

sys.exit(main())
