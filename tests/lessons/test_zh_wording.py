"""zh-TW demo strings read as written in Taiwan, not translated: the review's flagged phrases
never come back, and the punctuation after Chinese text is full-width.

The strings are the ones test_terminology.py checks (reader_text.collect: every string a
lesson writes, over every control value and bad input, the reader's and the model's text
left out). The last tests plant each fault in a sample and show it is caught.
"""
from __future__ import annotations

import re

import pytest

from lessons import registry

from reader_text import collected

# Phrases issue 11's review found reading as translated, with what was meant.
FLAGGED = {
    "小 4 倍": "'4x smaller': say the fraction (快取只要……的 1/4)",
    "左方": "'206x to the left of the ridge': 離脊點還差 206 倍",
    "第一猜測": "'top guess': 排名第一的詞元",
    "屋頂下的時間": "'time at the roof': 以峰值估算的最短時間",
    "數列": "a plot's 'series' is 曲線 (數列 is a mathematical sequence)",
    "往後看": "a token looks back (回頭看) at earlier tokens; 往後看 reads both ways",
    "永遠不會": "the attention note that said tokens 「永遠不會往後看」",
    # issue 19
    "完全不變": "the rotation preserves query·key, but the chart beside it shows an error: say where the error comes from",
    "天真的": "'naive': 最直接的",
}
# Half-width punctuation right after a Chinese character (a full-width one belongs there),
# a half-width bracket opened after Chinese, and the katakana middle dot.
PUNCTUATION = [
    (re.compile(r"[\u4e00-\u9fff][,:;!?]"), "half-width punctuation after Chinese: use ，：；！？"),
    (re.compile(r"[\u4e00-\u9fff]\("), "half-width bracket after Chinese: use （）"),
    (re.compile(r"・"), "katakana middle dot: use ·, 、 or words"),
    (re.compile(r"（[^（）]*（"), "nested full-width brackets: rewrite the outer one as a clause"),
]


def wording_problems(text: str) -> list[str]:
    found = [f"{phrase!r}: {why}" for phrase, why in FLAGGED.items() if phrase in text]
    return found + [f"{m.group(0)!r}: {why}" for pattern, why in PUNCTUATION for m in pattern.finditer(text)]


@pytest.mark.parametrize("name", list(registry.LESSONS))
def test_zh_tw_strings_read_as_written_in_taiwan(course, name):
    found = [f"{where}: {p} in {text!r}" for where, text in collected(name, "zh-TW") for p in wording_problems(text)]
    assert not found, "\n".join(dict.fromkeys(found))


@pytest.mark.parametrize("sample", ["快取因此小 4 倍。", "在脊點左方 206 倍", "第一猜測", "屋頂下的時間", "數列",
                                    "詞元永遠不會往後看。", "模型說,好", "結果:對", "上下文(詞元數)", "筆電・CPU",
                                    "內積因此完全不變。", "（權重（weight））"])
def test_the_checks_catch_what_they_should(sample):
    assert wording_problems(sample)


@pytest.mark.parametrize("sample", ["快取只要 MHA 的 1/4。", "離脊點還差 206 倍", "Llama 3 8B: bf16", "上下文（詞元數）",
                                    "cl100k_base (gpt-4)", "第 1 個位置 · id 7"])
def test_and_nothing_else(sample):
    assert wording_problems(sample) == []
