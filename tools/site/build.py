"""The real ``mkdocs build --strict`` of this checkout, in a fresh process (as a writer or CI
runs it): used by the test session's ``built_site`` and by the tools that need a site."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tools.site.config import ROOT


def build_site(site_dir: Path, *extra: str) -> subprocess.CompletedProcess:
    """Build into ``site_dir``; the result carries the exit code and MkDocs' output."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir), *extra],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )


def build_or_exit(site_dir: Path) -> None:
    """:func:`build_site` for a command-line tool: on failure, exit with MkDocs' output."""
    print("building the site…", flush=True)
    result = build_site(site_dir, "-q")
    if result.returncode:
        sys.exit("mkdocs build failed:\n" + (result.stdout + result.stderr)[-3000:])
