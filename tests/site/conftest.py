"""Site tests: make the hooks' logic modules and ``site_pages`` importable."""
import sys
from pathlib import Path

HOOKS = Path(__file__).resolve().parents[2] / "overrides" / "hooks"
if str(HOOKS) not in sys.path:
    sys.path.insert(0, str(HOOKS))
