"""MkDocs hook: teach jieba the course's terms before Material's search indexes the pages.

Why: see ``search_terms_jieba.py``. Without jieba installed Material skips segmentation, and so
does this hook (tests/site/test_search.py makes sure jieba is there).
"""
from __future__ import annotations

from pathlib import Path

from search_terms_jieba import TERMS, glossary_terms, register


def on_config(config, **kwargs):
    try:
        import jieba
    except ImportError:
        return config
    glossary = Path(config.docs_dir) / "glossary.zh-TW.md"
    extra = glossary_terms(glossary.read_text(encoding="utf-8")) if glossary.is_file() else []
    register(jieba, [*TERMS, *extra])
    return config
