"""``python -m pipeline.cli``: the same as the ``toolwire`` command."""

import sys

from pipeline.cli import main

sys.exit(main())
