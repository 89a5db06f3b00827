"""MkDocs hook: absolute hreflang alternates (+ x-default) in every page's <head>.

Why and how: see ``alternates_hreflang.py`` beside this file.
"""
from __future__ import annotations

from alternates_hreflang import rewrite

DEFAULT_LANG = "en"


def on_post_page(output, page, config, **kwargs):
    if not page.canonical_url:  # no site_url: nothing absolute to write
        return output
    return rewrite(output, page.canonical_url, DEFAULT_LANG)
