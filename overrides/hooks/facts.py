"""MkDocs hook: put engine-computed numbers into pages (``[[fact:KEY]]`` placeholders).

The logic lives in ``fact_placeholders.py`` (unit-tested in tests/site/test_facts.py);
this hook only finds the page language and turns a :class:`FactError` into a build error.
"""
from __future__ import annotations

import sys
from pathlib import Path

from mkdocs.exceptions import PluginError

# MkDocs puts this folder on sys.path only while it imports the hook: enough for this import.
from fact_placeholders import FactError, fact_keys, load_facts, substitute

_ROOT = Path(__file__).resolve().parents[2]  # the repository root: `lessons` of this checkout
_cache: dict[str, dict[str, str]] = {}


def on_pre_build(config, **kwargs):
    """Make `lessons` importable and forget the facts of a previous build (`mkdocs serve`)."""
    if str(_ROOT) not in sys.path:
        sys.path.insert(0, str(_ROOT))
    _cache.clear()


def on_page_markdown(markdown, page, config, files, **kwargs):
    if "[[" not in markdown:
        return markdown
    # The page's own language (suffix layout: page.zh-TW.md -> "zh-TW"); set by the i18n plugin.
    lang = getattr(page.file, "locale", None) or config.theme.get("language", "en")
    name = page.file.src_uri

    def table():
        if lang not in _cache:
            _cache[lang] = load_facts(lang, name, fact_keys(markdown))
        return _cache[lang]

    try:
        return substitute(markdown, table, name)
    except FactError as exc:
        raise PluginError(f"facts hook: {exc}") from None
