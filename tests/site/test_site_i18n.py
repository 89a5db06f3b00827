"""Both languages on the built HTML: <html lang>, hreflang, the switcher, Material's UI strings."""
from __future__ import annotations

import re
from html import unescape
from pathlib import Path
from urllib.parse import urljoin

import pytest
import yaml

from site_pages import PAGES, ROOT, built, url_path

LANGS = ("en", "zh-TW")


def _site_url() -> str:
    return re.search(r"^site_url:\s*(\S+)", (ROOT / "mkdocs.yml").read_text(), re.M).group(1)


def _i18n_languages() -> list[dict]:
    """The i18n plugin's `languages` list, read from mkdocs.yml (MkDocs tags ignored)."""
    class Loader(yaml.SafeLoader):
        pass
    Loader.add_multi_constructor("", lambda loader, suffix, node: None)
    config = yaml.load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"), Loader=Loader)
    plugin = next(p["i18n"] for p in config["plugins"] if isinstance(p, dict) and "i18n" in p)
    return plugin["languages"]


def _page_url(page, lang):
    return _site_url() + url_path(page, lang)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("page", PAGES)
def test_html_lang_and_hreflang(built_site, page, lang):
    html = built(built_site, page, lang).read_text(encoding="utf-8")
    assert re.search(rf'<html lang="{lang}"', html)
    alternates = dict((hl, unescape(href)) for href, hl in
                      re.findall(r'<link rel="\s*alternate\s*" href="([^"]+)" hreflang="([^"]+)"', html))
    assert alternates == {
        "en": _page_url(page, "en"),
        "zh-TW": _page_url(page, "zh-TW"),
        "x-default": _page_url(page, "en"),
    }
    canonical = re.search(r'<link rel="canonical" href="([^"]+)"', html).group(1)
    assert canonical == _page_url(page, lang)


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("page", PAGES)
def test_language_switcher_lands_on_the_same_page(built_site, page, lang):
    html = built(built_site, page, lang).read_text(encoding="utf-8")
    links = re.findall(r'<a href="([^"]+)" hreflang="([^"]+)" class="md-select__link">', html)
    targets = {hl: urljoin(_page_url(page, lang), unescape(href)) for href, hl in links}
    assert targets == {"en": _page_url(page, "en"), "zh-TW": _page_url(page, "zh-TW")}


def test_404_is_the_default_language_and_it_is_listed_last():
    languages = _i18n_languages()
    assert languages[-1].get("default") is True and languages[-1]["locale"] == "en"
    assert [lang["locale"] for lang in languages] == ["zh-TW", "en"]  # locale exactly zh-TW


def _material_strings(language: str) -> dict[str, str]:
    import material
    path = Path(material.__file__).parent / "templates" / "partials" / "languages" / f"{language}.html"
    return dict(re.findall(r'"([\w.]+)":\s*"([^"]*)"', path.read_text(encoding="utf-8")))


@pytest.mark.parametrize("lang", LANGS)
def test_material_ui_strings_are_in_the_page_language(built_site, lang):
    strings = _material_strings(lang)
    html = built(built_site, "plates/01-next-token", lang).read_text(encoding="utf-8")
    assert f'placeholder="{strings["search.placeholder"]}"' in html
    assert strings["toc"] in html  # "Table of contents" / 目錄


def test_zh_tw_nav_and_site_name_are_translated(built_site):
    zh = next(lang for lang in _i18n_languages() if lang["locale"] == "zh-TW")
    html = built(built_site, "plates/02-tokens", "zh-TW").read_text(encoding="utf-8")
    for english, chinese in zh["nav_translations"].items():
        assert chinese in html and f">{english}<" not in html
    assert re.search(rf"<title>[^<]*{re.escape(zh['site_name'])}</title>", html)


def test_our_own_ui_labels_are_translated(built_site):
    """Palette toggle and social link names come from mkdocs.yml, not from Material."""
    zh = next(lang for lang in _i18n_languages() if lang["locale"] == "zh-TW")
    zh_html = built(built_site, "index", "zh-TW").read_text(encoding="utf-8")
    en_html = built(built_site, "index", "en").read_text(encoding="utf-8")
    names = [p["toggle"]["name"] for p in zh["theme"]["palette"]]
    names += [s["name"] for s in zh["extra"]["social"]]
    for name in names:
        assert f'title="{name}"' in zh_html and name not in en_html
    assert "Switch to dark mode" in en_html and "Switch to dark mode" not in zh_html
    assert "pyodide" in built(built_site, "plates/05-kv-cache", "zh-TW").read_text("utf-8")
