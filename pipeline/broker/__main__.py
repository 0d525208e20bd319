"""``python -m pipeline.broker start|stop|status`` (same as ``toolwire broker ...``)."""

import sys

from pipeline.broker.local import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
