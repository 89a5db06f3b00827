"""MkDocs hook: put engine-computed numbers into pages (``[[fact:KEY]]`` placeholders).

The logic lives in ``facts_placeholders.py`` (unit-tested in tests/site/test_facts_hook.py);
this hook only finds the page language and turns a :class:`FactError` into a build error.
``lessons`` is the installed project (``pip install -e .``, as dev.py does) or the current
folder (``python -m mkdocs`` from the repository root).
"""
from __future__ import annotations

from mkdocs.exceptions import PluginError

# MkDocs puts this folder on sys.path while it imports the hook: enough for this import.
from facts_placeholders import FactError, fact_keys, load_facts, substitute

_cache: dict[str, dict[str, str]] = {}


def on_pre_build(config, **kwargs):
    """Forget the facts of a previous build (``mkdocs serve``: the engine may have changed)."""
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
