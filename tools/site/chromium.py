"""The Chromium that the browser tests and tools drive: one default path, one set of flags.

Standard library only: ``dev.py`` reads the path before any virtual environment exists.
"""
from __future__ import annotations

import os

DEFAULT_PATH = "/usr/bin/chromium"
# Headless and quiet: no GPU, no background downloads, no first-run pages.
ARGS = (
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def path() -> str:
    """The browser to drive: ``KV_CHROMIUM`` when set, else the system Chromium."""
    return os.environ.get("KV_CHROMIUM") or DEFAULT_PATH


def launch(playwright):
    """A headless Chromium (Playwright ``Browser``) from ``path()``."""
    return playwright.chromium.launch(executable_path=path(), args=list(ARGS), headless=True)
