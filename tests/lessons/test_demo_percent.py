"""Every percentage a demo writes, in both languages, is 12.5%: no space before the sign, the
half-width %, as lessons.common.figures.fmt_percent makes it and the pages write it
(tests/site/test_page_percent.py, tests/site/test_zh_tw.py)."""
from __future__ import annotations

import re

import pytest

from lessons.common import registry
from lessons.common.base import LANGS
from lessons.common.figures import fmt_percent

from reader_text import collected

# a space (or none, with the full-width ％) between a number and its sign; Plotly's %{y:.1%} is a format, not text
BAD_PERCENT = re.compile(r"\d[ \u00a0\u3000]+[%％](?![{])|\d％")


def bad_percentages(text: str) -> list[str]:
    return [text[max(0, m.start() - 12):m.end() + 6] for m in BAD_PERCENT.finditer(text)]


@pytest.mark.parametrize("name, lang", [(n, lang) for n in registry.LESSONS for lang in LANGS])
def test_demo_percentages_have_no_space(course, name, lang):
    found = [f"{where}: {bad}" for where, text in collected(name, lang) for bad in bad_percentages(text)]
    assert not found, "\n".join(dict.fromkeys(found))


@pytest.mark.parametrize("text, bad", [("量化快取只要浮點快取的 12.5 %。", True), ("12.5％", True), ("only 20 % left", True),
                                       ("量化快取只要浮點快取的 12.5%。", False), ("%{y:.1%}", False), ("p % 16", False)])
def test_the_check(text, bad):
    assert bool(bad_percentages(text)) is bad


def test_fmt_percent_writes_the_form_the_check_allows():
    assert fmt_percent(0.125) == "12.5%" and not bad_percentages(fmt_percent(0.125))
