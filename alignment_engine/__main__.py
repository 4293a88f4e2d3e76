"""``python -m alignment_engine`` (see :mod:`alignment_engine.cli`)."""

import sys

from alignment_engine.cli import main

if __name__ == "__main__":  # not when a spawned worker process imports it (alignment_engine.parallel)
    sys.exit(main())
