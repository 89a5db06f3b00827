"""Every sentence is the project's own: no long verbatim runs from the source documents.

The check itself is the team's shared tool (../shared/tools/copycheck.py, next to the
checkout, as on the developers' machines and in CI); without it the test skips and says so.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from site_pages import ROOT

COPYCHECK = ROOT.parent / "shared" / "tools" / "copycheck.py"
WRITTEN = ["docs", "lessons", "overrides/hooks", "overrides/main.html", "engine/training/corpus.py", "README.md"]


def test_no_verbatim_runs_from_the_source_documents():
    if not COPYCHECK.is_file():
        pytest.skip(f"{COPYCHECK} not found: the source documents' copy check needs ../shared")
    result = subprocess.run([sys.executable, str(COPYCHECK), *WRITTEN], cwd=ROOT,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-3000:]
