"""``python -m pipeline.publish CAPTURE... --session S`` (same as ``toolwire publish``)."""

import sys

from pipeline.publish.publisher import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
