"""The real build: every page in both languages, no CDN, Mermaid served by the site."""
from __future__ import annotations

import json
import re

import pytest

from site_pages import PAGES, ROOT, built, fences, source

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


MERMAID_IMPORT = re.compile(r'import mermaid from "(?:\./|(?:\.\./)+)assets/vendor/mermaid/mermaid\.esm\.min\.mjs"')
DEMO_RUNTIME = re.compile(r'<script type="module" src="(?:\.\./)*assets/javascripts/kv-demos\.mjs">')


def test_mermaid_is_served_by_the_site_only_where_needed(built_site):
    """Pages with a diagram import Mermaid's ES-module core (a path relative to the page: a
    module import needs ./ or ../); pages without one load no Mermaid at all."""
    assert not (built_site / "assets" / "vendor" / "mermaid" / "mermaid.min.js").exists()
    with_diagram = without = 0
    for lang in LANGS:
        for page in PAGES:
            if not source(page, lang).is_file():
                continue  # reported by test_every_page_is_built
            md = source(page, lang).read_text(encoding="utf-8")
            html = built(built_site, page, lang).read_text(encoding="utf-8")
            if fences(md, "mermaid"):
                with_diagram += 1
                assert 'class="mermaid"' in html and MERMAID_IMPORT.search(html), f"{page} ({lang})"
            else:
                without += 1
                assert "assets/vendor/mermaid/" not in html, f"{page} ({lang}) loads Mermaid"
    assert with_diagram, "no page has a Mermaid diagram: nothing was checked"


def test_the_demo_runtime_loads_only_on_pages_with_demos(built_site):
    pages = sorted(built_site.rglob("index.html"))
    with_demos = [p for p in pages if 'id="kv-demo-runtime"' in p.read_text(encoding="utf-8")]
    assert with_demos, "no page has a demo: nothing was checked"
    for path in pages:
        html = path.read_text(encoding="utf-8")
        assert bool(DEMO_RUNTIME.search(html)) == (path in with_demos), path.relative_to(built_site)


THEME_ASSETS = ROOT / "overrides" / "assets"


@pytest.mark.parametrize("folder", ["vendor/mermaid", "vendor/plotly", "javascripts"])
def test_every_theme_asset_reaches_the_site(built_site, folder):
    """mkdocs-static-i18n drops a file whose name has a dotted two-letter segment (x.tw.mjs):
    every vendored Mermaid chunk, plotly.js file and runtime module must be in the site."""
    files = [f.relative_to(THEME_ASSETS) for f in (THEME_ASSETS / folder).rglob("*")
             if f.is_file() and f.name != "README.md"]
    assert files
    missing = [str(f) for f in files if not (built_site / "assets" / f).is_file()]
    assert not missing


def test_site_stylesheet_is_linked(built_site):
    html = built(built_site, "index", "zh-TW").read_text(encoding="utf-8")
    assert re.search(r'<link rel="stylesheet" href="[./]*assets/stylesheets/site\.css', html)
    assert (built_site / "assets" / "stylesheets" / "site.css").is_file()
