"""Page weight: what a reader's browser downloads for each page, before any interaction, in
both languages (tools/site/page_weight.py measures; ``python -m tools.site.page_weight`` prints the
table). Budgets: 3.5 MB any page, 1.5 MB a page without demos (uncompressed bytes, MB =
1,000,000). Bytes are deterministic for a build, so these are tests, not benchmarks.
"""
from __future__ import annotations

import pytest

from site_pages import PAGES, url_path
from tools.site.page_weight import BUDGET_BYTES, BUDGET_NO_DEMOS_BYTES, measure, site_pages

pytestmark = pytest.mark.slow

LANGS = ("en", "zh-TW")
PAIRS = [(page, lang) for lang in LANGS for page in PAGES]


@pytest.fixture(scope="module")
def weights(browser, site_server, built_site):
    """Every built page, weighed once: {site-relative path: PageWeight}."""
    return {p.path: measure(browser, site_server, p) for p in site_pages(built_site)}


@pytest.mark.parametrize(("name", "lang"), PAIRS, ids=[f"{lang}:{name}" for name, lang in PAIRS])
def test_page_is_within_its_budget(weights, name, lang):
    w = weights[url_path(name, lang)]
    assert w.budget == (BUDGET_BYTES if w.demos else BUDGET_NO_DEMOS_BYTES)
    biggest = ", ".join(f"{path} {size:,}" for path, size in w.files[:5])
    assert w.bytes <= w.budget, f"{w.path}: {w.bytes:,} bytes in {w.requests} requests > {w.budget:,}; {biggest}"


def test_every_other_built_page_is_within_its_budget(weights):
    """Pages the course list (site_pages.PAGES) does not name yet, e.g. a new plate."""
    listed = {url_path(name, lang) for name, lang in PAIRS}
    over = {w.path: w.bytes for path, w in weights.items() if path not in listed and w.bytes > w.budget}
    assert over == {}


def test_no_page_loads_anything_from_outside_the_site(weights):
    """No CDN: not Mermaid's (Material's fallback when no global `mermaid` exists), not
    plotly.js', not a font."""
    outside = {path: w.outside for path, w in weights.items() if w.outside}
    assert outside == {}


def test_the_biggest_files_are_the_ones_expected(weights):
    """The two heavy files of before (plotly.js 4.8 MB, Mermaid 3.6 MB) are gone for good:
    the partial plotly.js bundle and Mermaid's chunks are what a demo or diagram page loads."""
    names = {path.rsplit("/", 1)[-1] for w in weights.values() for path, _ in w.files}
    assert "plotly-cartesian.min.js" in names and "mermaid.esm.min.mjs" in names
    assert not names & {"mermaid.min.js", "plotly.min.js"}
    assert not [n for n in names if n.startswith("plotly-") and n.endswith("-min.js")]


def test_the_search_index_waits_for_the_reader(page, site_server):
    """Both languages' search index (0.6 MB) is fetched when the reader reaches for search,
    not with every page; then search works as before."""
    requested: list[str] = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(site_server + url_path("glossary", "en"), wait_until="load")
    page.wait_for_load_state("networkidle")
    assert not [u for u in requested if "search_index.json" in u]
    page.click("input.md-search__input")
    page.fill("input.md-search__input", "cache")
    page.press("input.md-search__input", "End")
    page.wait_for_selector(".md-search-result__item", timeout=15_000)
    assert [u for u in requested if u.endswith("/search/search_index.json")]
    assert page.console_errors == []
