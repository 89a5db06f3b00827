"""Browser fixtures: Playwright's sync API driving the system Chromium (tools/site/chromium.py).

``browser`` (session) and ``page`` (one fresh context per test; console errors and uncaught
page errors collect in ``page.console_errors``). Every test in tests/browser/ is marked
``browser``; it skips with the reason when Playwright or Chromium is missing.
Chromium: /usr/bin/chromium, or the path in ``KV_CHROMIUM``.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tools.site import chromium
from tools.site.demo_pages import demo_pages

DESKTOP = {"width": 1280, "height": 900}


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in item.path.parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium (Playwright ``Browser``), shared by the session."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("Playwright is not installed: pip install -e '.[test]'")
    if not Path(chromium.path()).is_file():
        pytest.skip(f"Chromium not found at {chromium.path()} (install it, or set KV_CHROMIUM)")
    with sync_playwright() as pw:
        browser = chromium.launch(pw)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser):
    """A new page in a fresh context; ``page.console_errors`` lists console errors seen."""
    context = browser.new_context(viewport=DESKTOP)
    pg = context.new_page()
    pg.console_errors = []
    pg.on("console", lambda msg: pg.console_errors.append(msg.text) if msg.type == "error" else None)
    pg.on("pageerror", lambda exc: pg.console_errors.append(f"uncaught: {exc}"))
    try:
        yield pg
    finally:
        context.close()


@pytest.fixture(scope="module")
def pages(built_site):
    """The built pages that embed demos (tools/site/demo_pages.py), both languages."""
    found = demo_pages(built_site)
    if not found:
        pytest.skip("the built site has no demos yet (no page embeds a ```kv-demo block)")
    return found
