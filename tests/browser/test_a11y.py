"""Accessibility of every page in both languages, in the system Chromium.

axe-core (via axe-playwright-python) reports no serious or critical violation; images and
Mermaid diagrams carry a text alternative in the page's language; at phone width (375 px)
no page scrolls sideways.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "site"))
from site_pages import PAGES, url_path  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LANGS = ("en", "zh-TW")
PAIRS = [(page, lang) for lang in LANGS for page in PAGES]
IDS = [f"{lang}:{page}" for page, lang in PAIRS]
HAN = re.compile(r"[\u3400-\u9fff]")
LATIN_WORD = re.compile(r"[A-Za-z]{3,}")


def _open(page, site_server, path):
    response = page.goto(site_server + path, wait_until="load")
    assert response and response.ok, f"{path}: HTTP {response.status if response else '?'}"
    # Material renders each `pre.mermaid` after load into a `div.mermaid` whose SVG sits in a
    # closed shadow root: wait until no `pre.mermaid` is left (10 s at most).
    page.wait_for_function("() => !document.querySelector('pre.mermaid')", timeout=10_000)


@pytest.fixture(scope="module")
def axe():
    module = pytest.importorskip("axe_playwright_python.sync_playwright",
                                 reason="axe-playwright-python is not installed")
    return module.Axe()


@pytest.mark.parametrize(("name", "lang"), PAIRS, ids=IDS)
def test_no_serious_or_critical_axe_violations(page, site_server, axe, name, lang):
    _open(page, site_server, url_path(name, lang))
    results = axe.run(page)
    bad = [v for v in results.response["violations"] if v["impact"] in ("serious", "critical")]
    report = "\n".join(
        f"{v['impact']}: {v['id']} ({v['help']}): "
        + "; ".join(n["target"][0] if isinstance(n["target"][0], str) else str(n["target"])
                    for n in v["nodes"][:5])
        for v in bad
    )
    assert not bad, f"{lang}:{name}\n{report}"


@pytest.mark.parametrize(("name", "lang"), PAIRS, ids=IDS)
def test_dark_palette_has_enough_contrast(browser, site_server, axe, name, lang):
    """The slate (dark) palette, chosen by Material from the reader's system setting."""
    context = browser.new_context(color_scheme="dark")
    try:
        pg = context.new_page()
        _open(pg, site_server, url_path(name, lang))
        assert pg.evaluate("document.body.getAttribute('data-md-color-scheme')") == "slate"
        results = axe.run(pg, options={"runOnly": ["color-contrast"]})
        bad = [n["target"] for v in results.response["violations"] for n in v["nodes"]]
        assert not bad, f"{lang}:{name}: low contrast in the dark palette: {bad[:8]}"
    finally:
        context.close()


def _in_language(text: str, lang: str) -> bool:
    if lang == "zh-TW":
        return bool(HAN.search(text))
    return bool(LATIN_WORD.search(text))


@pytest.mark.parametrize(("name", "lang"), PAIRS, ids=IDS)
def test_images_and_diagrams_have_text_in_the_page_language(page, site_server, name, lang):
    _open(page, site_server, url_path(name, lang))
    images = page.eval_on_selector_all(
        "article img", "els => els.map(e => [e.getAttribute('src'), e.getAttribute('alt')])")
    for src, alt in images:
        assert alt is not None and alt.strip(), f"{lang}:{name}: <img src={src}> has no alt text"
        assert _in_language(alt, lang), f"{lang}:{name}: alt of {src} is not in {lang}: {alt!r}"
    # Figures (the demos' Plotly charts): a caption in the page's language names each one.
    captions = page.eval_on_selector_all(
        "article figure", "els => els.map(e => (e.querySelector('figcaption') || {}).textContent || '')")
    for i, caption in enumerate(captions, 1):
        assert caption.strip(), f"{lang}:{name}: figure {i} has no caption"
        assert _in_language(caption, lang), f"{lang}:{name}: figure {i} caption not in {lang}: {caption!r}"
    # A diagram's text alternative: its SVG is in Material's closed shadow root, out of reach
    # of assistive tools' page text, so the page gives a text description right after it
    # (a details block or a paragraph), or an aria-label on the diagram's container.
    diagrams = page.eval_on_selector_all("div.mermaid", """els => els.map(e => {
        const next = e.nextElementSibling;
        const after = next && ['DETAILS', 'P'].includes(next.tagName) ? next.textContent : '';
        return [(e.getAttribute('aria-label') || '').trim(), after.trim()];
    })""")
    for i, (own, after) in enumerate(diagrams, 1):
        text = own or after
        assert text, f"{lang}:{name}: diagram {i} has no text alternative"
        assert _in_language(text, lang), f"{lang}:{name}: diagram {i} text is not in {lang}"


@pytest.mark.parametrize(("name", "lang"), PAIRS, ids=IDS)
def test_no_horizontal_scrolling_at_phone_width(browser, site_server, name, lang):
    context = browser.new_context(viewport={"width": 375, "height": 740}, device_scale_factor=2,
                                  is_mobile=True, has_touch=True)
    try:
        pg = context.new_page()
        _open(pg, site_server, url_path(name, lang))
        scroll, client = pg.evaluate(
            "() => [document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth]")
        if scroll > client:
            wide = pg.evaluate("""() => [...document.querySelectorAll('article *')]
                .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
                .slice(0, 5).map(e => e.tagName + '.' + e.className)""")
            pytest.fail(f"{lang}:{name}: {scroll}px wide at 375px; too wide: {wide}")
    finally:
        context.close()
