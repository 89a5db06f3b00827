"""Accessibility of every page in both languages, in the system Chromium.

Two visits per page and language:
- desktop, light palette: axe-core (via axe-playwright-python) reports no serious or
  critical violation, and images, figures and Mermaid diagrams carry a text alternative in
  the page's language;
- phone (375 px), dark palette: no horizontal scrolling, and axe's colour-contrast rule
  passes in Material's slate palette.
"""
from __future__ import annotations

import re

import pytest

from site_pages import PAGES, built, url_path
from tools.site.demo_pages import WAIT_DIAGRAMS, diagram_count

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LANGS = ("en", "zh-TW")
PAIRS = [(page, lang) for lang in LANGS for page in PAGES]
IDS = [f"{lang}:{page}" for page, lang in PAIRS]
HAN = re.compile(r"[\u3400-\u9fff]")
LATIN_WORD = re.compile(r"[A-Za-z]{3,}")
PHONE = {"width": 375, "height": 740}


def _open(page, site_server, built_site, name, lang):
    path = url_path(name, lang)
    response = page.goto(site_server + path, wait_until="load")
    assert response and response.ok, f"{path}: HTTP {response.status if response else '?'}"
    # Material renders each Mermaid diagram after load into a `div.mermaid` whose SVG sits in
    # a closed shadow root: wait until all the page's diagrams are drawn (10 s at most).
    diagrams = diagram_count(built(built_site, name, lang).read_text(encoding="utf-8"))
    page.wait_for_function(WAIT_DIAGRAMS, arg=diagrams, timeout=10_000)


@pytest.fixture(scope="module")
def axe():
    module = pytest.importorskip("axe_playwright_python.sync_playwright",
                                 reason="axe-playwright-python is not installed")
    return module.Axe()


def _in_language(text: str, lang: str) -> bool:
    if lang == "zh-TW":
        return bool(HAN.search(text))
    return bool(LATIN_WORD.search(text))


def _axe_problems(axe, page, **kwargs) -> list[str]:
    results = axe.run(page, **kwargs)
    return [
        f"{v['impact']}: {v['id']} ({v['help']}): "
        + "; ".join(str(n["target"][0]) for n in v["nodes"][:5])
        for v in results.response["violations"] if v["impact"] in ("serious", "critical")
    ]


def _text_alternative_problems(page, lang) -> list[str]:
    problems = []
    images = page.eval_on_selector_all(
        "article img", "els => els.map(e => [e.getAttribute('src'), e.getAttribute('alt')])")
    for src, alt in images:
        if not (alt and alt.strip()):
            problems.append(f"<img src={src}> has no alt text")
        elif not _in_language(alt, lang):
            problems.append(f"alt of {src} is not in {lang}: {alt!r}")
    # Figures (the demos' Plotly charts): a caption in the page's language names each one.
    captions = page.eval_on_selector_all(
        "article figure", "els => els.map(e => (e.querySelector('figcaption') || {}).textContent || '')")
    for i, caption in enumerate(captions, 1):
        if not _in_language(caption, lang):
            problems.append(f"figure {i} has no caption in {lang}: {caption.strip()!r}")
    # A diagram's SVG is in Material's closed shadow root, out of reach of assistive tools'
    # page text, so the page gives a text description right after it (a details block or a
    # paragraph), or an aria-label on the diagram's container.
    diagrams = page.eval_on_selector_all("div.mermaid", """els => els.map(e => {
        const next = e.nextElementSibling;
        const after = next && ['DETAILS', 'P'].includes(next.tagName) ? next.textContent : '';
        return ((e.getAttribute('aria-label') || '') + ' ' + after).trim();
    })""")
    for i, text in enumerate(diagrams, 1):
        if not _in_language(text, lang):
            problems.append(f"diagram {i} has no text description in {lang}")
    return problems


@pytest.mark.parametrize(("name", "lang"), PAIRS, ids=IDS)
def test_desktop_light_axe_and_text_alternatives(page, site_server, built_site, axe, name, lang):
    _open(page, site_server, built_site, name, lang)
    problems = _axe_problems(axe, page) + _text_alternative_problems(page, lang)
    assert not problems, f"{lang}:{name}\n" + "\n".join(problems)


@pytest.mark.parametrize(("name", "lang"), PAIRS, ids=IDS)
def test_phone_dark_no_sideways_scroll_and_contrast(browser, site_server, built_site, axe, name, lang):
    context = browser.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True,
                                  has_touch=True, color_scheme="dark")
    try:
        pg = context.new_page()
        _open(pg, site_server, built_site, name, lang)
        problems = []
        if pg.evaluate("document.body.getAttribute('data-md-color-scheme')") != "slate":
            problems.append("the dark (slate) palette did not follow the system setting")
        scroll, client = pg.evaluate(
            "() => [document.scrollingElement.scrollWidth, document.scrollingElement.clientWidth]")
        if scroll > client:
            wide = pg.evaluate("""() => [...document.querySelectorAll('article *')]
                .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
                .slice(0, 5).map(e => e.tagName + '.' + e.className)""")
            problems.append(f"{scroll}px wide at {PHONE['width']}px; too wide: {wide}")
        problems += _axe_problems(axe, pg, options={"runOnly": ["color-contrast"]})
        assert not problems, f"{lang}:{name}\n" + "\n".join(problems)
    finally:
        context.close()
