"""Percentages are written one way on every page, in both languages: 12.5%, no space before
the sign (the form the demos' strings use, lessons.figures.fmt_percent). The zh-TW pages get
the same rule among their typography checks (tests/site/test_zh_tw.py); this file holds the
English pages to it too, so a number quoted from a paper reads the same beside a demo's."""
from __future__ import annotations

import re

import pytest

from site_pages import DOCS
from zh_prose import prose

PERCENT_SPACE = re.compile(r"\d[ \u00a0]+%(?!\w)")
EN_PAGES = sorted(p for p in DOCS.rglob("*.md") if not p.name.endswith(".zh-TW.md"))


def spaced_percentages(text: str) -> list[str]:
    return [text[max(0, m.start() - 16):m.end() + 8].replace("\n", " ") for m in PERCENT_SPACE.finditer(text)]


@pytest.mark.parametrize("path", EN_PAGES, ids=[str(p.relative_to(DOCS)) for p in EN_PAGES])
def test_english_pages_write_percentages_without_a_space(path):
    found = spaced_percentages(prose(path.read_text(encoding="utf-8")))
    assert not found, "write 12.5%, no space:\n" + "\n".join(found)


@pytest.mark.parametrize("text, bad", [("only 20.4 % to 38.2 % held", True), ("20–26 % more", True),
                                       ("only 20.4% to 38.2% held", False), ("slot `p % 16`", False),
                                       ("the 10th to the 90th percentile", False)])
def test_the_check(text, bad):
    assert bool(spaced_percentages(prose(text))) is bad
