"""The real build: every page in both languages, no CDN, Mermaid served by the site."""
from __future__ import annotations

import json
import re

import pytest

from site_pages import PAGES, built, fences, source

LANGS = ("en", "zh-TW")
CDN_HOSTS = ("unpkg.com", "cdn.jsdelivr.net", "fonts.googleapis.com", "fonts.gstatic.com",
             "cdnjs.cloudflare.com", "mathjax", "polyfill.io")


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("page", PAGES)
def test_every_page_is_built(built_site, page, lang):
    assert source(page, lang).is_file(), f"missing source {source(page, lang)}"
    assert built(built_site, page, lang).is_file()


def test_404_page_is_english(built_site):
    html = (built_site / "404.html").read_text(encoding="utf-8")
    assert re.search(r'<html lang="en"', html)


def _html_files(site):
    return sorted(site.rglob("*.html"))


def test_no_script_or_style_from_a_cdn(built_site):
    offenders = []
    for path in _html_files(built_site):
        html = path.read_text(encoding="utf-8")
        for url in re.findall(r'<(?:script|link)[^>]+(?:src|href)="([^"]+)"', html):
            if any(host in url for host in CDN_HOSTS):
                offenders.append(f"{path.relative_to(built_site)}: {url}")
    assert not offenders


def test_navigation_instant_is_off(built_site):
    html = built(built_site, "index", "en").read_text(encoding="utf-8")
    config = json.loads(re.search(r'id="__config" type="application/json">([^<]+)<', html).group(1))
    assert "navigation.instant" not in config["features"]


def test_mermaid_is_served_by_the_site_only_where_needed(built_site):
    script = built_site / "assets" / "vendor" / "mermaid" / "mermaid.min.js"
    assert script.stat().st_size > 1_000_000  # the real dist file, not a stub
    with_diagram = without = 0
    for lang in LANGS:
        for page in PAGES:
            if not source(page, lang).is_file():
                continue  # reported by test_every_page_is_built
            md = source(page, lang).read_text(encoding="utf-8")
            html = built(built_site, page, lang).read_text(encoding="utf-8")
            loads = "assets/vendor/mermaid/mermaid.min.js" in html
            if fences(md, "mermaid"):
                with_diagram += 1
                assert 'class="mermaid"' in html and loads, f"{page} ({lang})"
            else:
                without += 1
                assert not loads, f"{page} ({lang}) loads Mermaid without a diagram"
    assert with_diagram, "no page has a Mermaid diagram: nothing was checked"


def test_site_stylesheet_is_linked(built_site):
    html = built(built_site, "index", "zh-TW").read_text(encoding="utf-8")
    assert re.search(r'<link rel="stylesheet" href="[./]*assets/stylesheets/site\.css', html)
    assert (built_site / "assets" / "stylesheets" / "site.css").is_file()
