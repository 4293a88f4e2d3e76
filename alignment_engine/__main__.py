"""``python -m alignment_engine`` (see :mod:`alignment_engine.cli`)."""

import sys

from alignment_engine.cli import main

sys.exit(main())
