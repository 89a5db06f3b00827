"""Rewrite the hreflang ``<link>`` tags of a built page: absolute URLs, plus ``x-default``.

Material writes ``<link rel="alternate" href="../../zh-TW/page/" hreflang="zh-TW">`` with a
page-relative href (search engines want absolute URLs for hreflang). Material's JavaScript
also fetches ``sitemap.xml`` next to every ``link[rel=alternate]`` it finds, which for the
per-page alternates of mkdocs-static-i18n is a 404 on every page load (and, when found,
would make Material re-route clicks). We write ``rel=" alternate"``: the same token set in
HTML (rel is a space-separated list), but not matched by Material's exact selector.
Plain logic, unit-tested in tests/site/test_alternates_hook.py; the hook is
``alternates.py``.
"""
from __future__ import annotations

import html
import re
from urllib.parse import urljoin

LINK = re.compile(r'<link rel="alternate" href="([^"]*)" hreflang="([^"]+)">')


def rewrite(page_html: str, page_url: str, default_lang: str) -> str:
    """Return ``page_html`` with absolute hreflang links and an ``x-default`` one.

    ``page_url`` is the page's absolute URL (its canonical URL); hrefs are resolved
    against it. ``x-default`` points to the ``default_lang`` alternate.
    """
    links = LINK.findall(page_html)
    if not links:
        return page_html
    absolute = {lang: urljoin(page_url, html.unescape(href)) for href, lang in links}
    tags = [f'<link rel=" alternate" href="{html.escape(url)}" hreflang="{html.escape(lang)}">'
            for lang, url in absolute.items()]
    if default_lang in absolute:
        tags.append(f'<link rel=" alternate" href="{html.escape(absolute[default_lang])}" '
                    'hreflang="x-default">')
    first = True

    def replace(match: re.Match) -> str:
        nonlocal first
        if first:
            first = False
            return "\n".join(tags)
        return ""

    return LINK.sub(replace, page_html)
