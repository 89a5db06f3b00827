"""Glossary links: pages link their terms to the glossary, and every link hits a real id."""
from __future__ import annotations

import re

import pytest

from site_pages import PAGES, built, source

LANGS = ("en", "zh-TW")
# Pages that need not link to the glossary: the glossary itself, and two lists of people
# and sources with no course terms to explain.
NO_GLOSSARY_LINK = {"glossary", "authors", "references"}
# The fixed glossary ids (ARCHITECTURE: "Pages and glossary anchors"), the same in both languages.
GLOSSARY_IDS = """token tokenizer token-id vocabulary bpe embedding vector transformer layer attention
query key value kv-cache prefill decode autoregressive logits softmax temperature top-k top-p
context-window rope rmsnorm gqa feed-forward flops bandwidth hbm sram roofline
arithmetic-intensity memory-bound compute-in-memory pca cosine-similarity pyodide
mha mqa sliding-window rolling-buffer quantization quant-group scale zero-point effective-bits
outlier rotation batching paging block-table prefix-sharing copy-on-write preemption
mla cross-layer attention-sink heavy-hitter eviction
speculative-decoding draft-model acceptance flash-decoding lse-merge""".split()

LINK = re.compile(r"\]\((?:\.\./)*glossary\.md(?:#([^)\s]*))?\)")


def _ids(html: str) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', html))


@pytest.mark.parametrize("lang", LANGS)
def test_glossary_has_every_fixed_id(built_site, lang):
    missing = sorted(set(GLOSSARY_IDS) - _ids(built(built_site, "glossary", lang).read_text("utf-8")))
    assert not missing, f"glossary ({lang}) lacks ids {missing}"


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("page", [p for p in PAGES if p not in NO_GLOSSARY_LINK])
def test_page_links_to_the_glossary(page, lang):
    path = source(page, lang)
    if not path.is_file():
        pytest.fail(f"missing {path}")
    assert LINK.search(path.read_text(encoding="utf-8")), f"{path.name} never links to the glossary"


@pytest.mark.parametrize("lang", LANGS)
@pytest.mark.parametrize("page", PAGES)
def test_glossary_links_point_to_existing_ids(built_site, page, lang):
    path = source(page, lang)
    if not path.is_file():
        pytest.skip(f"missing {path} (reported elsewhere)")
    ids = _ids(built(built_site, "glossary", lang).read_text(encoding="utf-8"))
    wanted = [a for a in LINK.findall(path.read_text(encoding="utf-8")) if a]
    broken = sorted({a for a in wanted if a not in ids})
    assert not broken, f"{path.name} links to glossary ids that do not exist: {broken}"
