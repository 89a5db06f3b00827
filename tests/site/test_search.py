"""Search: one index for both languages, Chinese segmented by jieba at build time.

The checks tokenize the built ``search/search_index.json`` with the index's own separator,
as the browser's search does, and look for whole tokens (stricter than the browser, which
also matches prefixes).
"""
from __future__ import annotations

import json
import re

import pytest

from search_terms_jieba import TERMS, glossary_terms
from site_pages import DOCS

ZWSP = "\u200b"


def test_jieba_imports_and_segments():
    import jieba  # Material skips Chinese segmentation silently when this fails

    words = list(jieba.cut("語言模型一次寫一個詞元"))
    assert "".join(words) == "語言模型一次寫一個詞元" and len(words) > 1


@pytest.fixture(scope="module")
def index(built_site):
    return json.loads((built_site / "search" / "search_index.json").read_text(encoding="utf-8"))


def _tokens(index, text: str) -> set[str]:
    separator = re.compile(index["config"]["separator"])
    plain = re.sub(r"<[^>]+>", " ", text)
    return {t.lower() for t in separator.split(plain) if t}


def _search(index, query: str) -> list[str]:
    wanted = _tokens(index, query)
    return [doc["location"] for doc in index["docs"]
            if wanted <= _tokens(index, doc["title"] + " " + doc["text"])]


def test_settings_are_explicit(index):
    config = index["config"]
    # The separator (a JavaScript regex; the \u escape means the same in Python) splits on
    # \u200b, the character jieba's pieces are joined with.
    assert re.split(config["separator"], f"快取{ZWSP}記憶體") == ["快取", "記憶體"]
    assert config["lang"] == ["en"]
    assert config["pipeline"] == ["stemmer", "stopWordFilter"]


def test_one_index_holds_both_languages(index):
    locations = [doc["location"] for doc in index["docs"]]
    assert any(loc.startswith("zh-TW/") for loc in locations)
    assert any(not loc.startswith("zh-TW/") for loc in locations)


def test_chinese_text_is_segmented_by_jieba(index):
    """Each run of Han characters in the index is exactly jieba's cut of that run."""
    import jieba

    from search_terms_jieba import register

    glossary = DOCS / "glossary.zh-TW.md"
    extra = glossary_terms(glossary.read_text(encoding="utf-8")) if glossary.is_file() else []
    register(jieba, [*TERMS, *extra])  # the dictionary the build used (search_terms hook)
    zh_docs = [d for d in index["docs"] if d["location"].startswith("zh-TW/")]
    han = "[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]"
    runs = [m.group(0) for d in zh_docs
            for m in re.finditer(f"{han}+(?:{ZWSP}{han}+)*", d["title"] + " " + d["text"])]
    segmented = [r for r in runs if ZWSP in r]
    assert len(segmented) > 20, "zh-TW entries hold no \\u200b-segmented text: jieba did not run"
    for run in runs:
        pieces = run.split(ZWSP)
        assert list(jieba.cut("".join(pieces))) == pieces, run


@pytest.mark.parametrize("term", ["快取", "記憶體", "詞元"])
def test_course_terms_are_whole_tokens(index, term):
    assert _search(index, term), f"searching {term} finds nothing"


def test_searching_kuaiqu_finds_the_kv_cache_plate(index):
    hits = _search(index, "快取")
    assert any(h.startswith("zh-TW/plates/05-kv-cache/") for h in hits), hits[:20]


def test_searching_cache_finds_the_english_kv_cache_plate(index):
    hits = _search(index, "cache")
    assert any(h.startswith("plates/05-kv-cache/") for h in hits), hits[:20]


def test_glossary_headings_feed_jieba():
    glossary = DOCS / "glossary.zh-TW.md"
    assert glossary.is_file(), "docs/glossary.zh-TW.md is missing"
    terms = glossary_terms(glossary.read_text(encoding="utf-8"))
    assert "快取" in TERMS
    assert terms and all(re.fullmatch(r"[\u3400-\u9fff\uf900-\ufaff]{2,}", t) for t in terms)


def test_glossary_terms_extraction():
    md = "# 詞彙表\n\n### KV 快取（KV cache） {#kv-cache}\n\n正文裡的詞不算。\n\n## 注意力 {#attention}\n"
    assert glossary_terms(md) == ["詞彙表", "快取", "注意力"]


def test_terms_are_multi_character_traditional_words():
    """Single characters are words to jieba already; Simplified forms would never match."""
    import opencc

    to_taiwan = opencc.OpenCC("s2twp").convert
    for term in TERMS:
        assert len(term) >= 2, term
        assert to_taiwan(term) == term, term


def test_compute_in_memory_alias_stays_one_word():
    """存算合一 (a common name of compute-in-memory) is a search term of its own: jieba's
    stock dictionary cuts it into 存算 + 合一, which a query for the whole word never meets."""
    import jieba

    from search_terms_jieba import register

    register(jieba, TERMS)
    assert "存算合一" in jieba.lcut("有人把記憶體內運算叫作存算合一的晶片")


def test_searching_the_alias_finds_compute_in_memory(index):
    glossary = DOCS / "glossary.zh-TW.md"
    assert "存算合一" in glossary.read_text(encoding="utf-8"), "the zh-TW glossary lost 存算合一 (compute-in-memory)"
    hits = _search(index, "存算合一")
    assert any(h.startswith("zh-TW/glossary/") for h in hits), hits[:20]
