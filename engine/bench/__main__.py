"""``python -m engine.bench``: see engine/bench/cli.py and ``--help``."""
import sys

from engine.bench.cli import main

sys.exit(main())
