"""``python -m tools.bench``: see tools/bench/cli.py and ``--help``."""
import sys

from tools.bench.cli import main

sys.exit(main())
