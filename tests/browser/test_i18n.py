"""Both languages as a reader uses them: the language switcher, Chinese search, clean loads."""
from __future__ import annotations

import re

import pytest

from site_pages import url_path

pytestmark = pytest.mark.browser


@pytest.mark.parametrize(("start", "target", "label"), [
    ("en", "zh-TW", "繁體中文"),
    ("zh-TW", "en", "English"),
])
def test_language_switcher_keeps_the_page(page, site_server, start, target, label):
    page.goto(site_server + url_path("plates/02-tokens", start))
    assert page.get_attribute("html", "lang") == start
    page.hover(".md-header__option .md-select")  # the menu opens on hover / focus
    page.get_by_role("link", name=label, exact=True).click()
    page.wait_for_load_state("load")
    assert page.url == site_server + url_path("plates/02-tokens", target)
    assert page.get_attribute("html", "lang") == target


def test_searching_kuaiqu_on_the_zh_tw_site_finds_the_kv_cache_plate(page, site_server):
    page.goto(site_server + url_path("plates/01-next-token", "zh-TW"))
    field = "input.md-search__input"  # desktop width: the search field is in the header
    page.click(field)
    # Typing CJK text inserts it without key events, and Material searches on keyup: fill the
    # field, then press a key as a reader's input method would.
    page.fill(field, "快取")
    page.press(field, "End")
    page.wait_for_selector(".md-search-result__item", timeout=15_000)
    links = page.eval_on_selector_all(".md-search-result__item a",
                                      "els => els.map(e => e.href)")
    assert any(re.search(r"/zh-TW/plates/05-kv-cache/", link) for link in links), links[:10]


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_home_page_loads_without_console_errors(page, site_server, lang):
    response = page.goto(site_server + url_path("index", lang), wait_until="load")
    assert response.ok
    page.wait_for_load_state("networkidle")  # Material's late requests (its search worker) included
    assert page.console_errors == []
