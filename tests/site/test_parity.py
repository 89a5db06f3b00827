"""Language twins: every page exists in both languages with the same shape.

Same number of headings per level, the same kv-demo blocks in the same order, the same
number of Mermaid diagrams, self-check questions (``??? question``) and images.
"""
from __future__ import annotations

import re
from collections import Counter

import pytest

from site_pages import DOCS, FENCE, PAGES, source


def shape(markdown: str) -> dict:
    """What must match between twins; headings are counted outside fenced blocks."""
    fences = list(FENCE.finditer(markdown))
    outside = FENCE.sub("", markdown)
    headings = Counter(len(m.group(1)) for m in re.finditer(r"^(#{1,6})\s", outside, re.MULTILINE))
    demos = [" ".join(m.group("body").split()) for m in fences
             if m.group("info").strip().split(" ")[0] == "kv-demo"]
    return {
        "headings per level": dict(sorted(headings.items())),
        "kv-demo blocks": demos,
        "mermaid diagrams": sum(m.group("info").strip().startswith("mermaid") for m in fences),
        "self-check questions": len(re.findall(r"^\?\?\?\+?\s+question\b", outside, re.MULTILINE)),
        "images": len(re.findall(r"!\[[^\]]*\]\(", outside)) + len(re.findall(r"<img\b", outside)),
    }


def _all_sources():
    en = {str(p.relative_to(DOCS))[:-3] for p in DOCS.rglob("*.md") if not p.name.endswith(".zh-TW.md")}
    zh = {str(p.relative_to(DOCS))[:-len(".zh-TW.md")] for p in DOCS.rglob("*.zh-TW.md")}
    return en, zh


def test_every_page_has_its_twin():
    en, zh = _all_sources()
    assert sorted(en - zh) == [], "English pages without a zh-TW twin"
    assert sorted(zh - en) == [], "zh-TW pages without an English twin"


@pytest.mark.parametrize("page", PAGES)
def test_twins_have_the_same_shape(page):
    en, zh = source(page, "en"), source(page, "zh-TW")
    if not (en.is_file() and zh.is_file()):
        pytest.fail(f"{page}: missing {'en' if not en.is_file() else 'zh-TW'} source")
    a, b = shape(en.read_text(encoding="utf-8")), shape(zh.read_text(encoding="utf-8"))
    diffs = {k: (a[k], b[k]) for k in a if a[k] != b[k]}
    assert not diffs, f"{page}: en vs zh-TW differ in " + "; ".join(
        f"{k}: {va} vs {vb}" for k, (va, vb) in diffs.items())


def test_shape_sees_what_it_should():
    md = ("# T\n## A\n```python\n# not a heading\n```\n## B\n"
          "```kv-demo\nlesson: kv_cache\n```\n```mermaid\nflowchart LR\n```\n"
          '??? question "Q?"\n    A.\n![alt](x.png)\n')
    assert shape(md) == {"headings per level": {1: 1, 2: 2}, "kv-demo blocks": ["lesson: kv_cache"],
                         "mermaid diagrams": 1, "self-check questions": 1, "images": 1}
