"""zh-TW demo strings read as written in Taiwan, not translated: the review's flagged phrases
never come back, the punctuation after Chinese text is full-width, and a sentence has one
full-width colon at most (the rule tests/site/test_zh_tw.py holds the pages to). Since the second
reader's review: one form for units of time (毫秒 in a label, ms after a number), ranges written
with 到 in a note, no two bracket groups side by side, no half-width bracket around a number.

The strings are the ones test_terminology.py checks (reader_text.collect: every string a
lesson writes, over every control value and bad input, the reader's and the model's text
left out). The last tests plant each fault in a sample and show it is caught.
"""
from __future__ import annotations

import re

import pytest

from lessons.common import registry

from reader_text import collected

# Phrases issue 11's review found reading as translated, with what was meant (regular expressions).
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
    # issue 19, second review
    r"形狀在\s*\S+\s*個?詞元時": "'the Llama shape at 8,192 tokens': 以 Llama 的形狀、上下文 8,192 個詞元來說",
    r"而不是 [^（）]*）": "'(X instead of Y)' in brackets: （X；貪婪解碼要 Y）",
    r"由(?:記憶體|運算)決定": "'set by memory': 由記憶體頻寬決定, 由運算能力決定",
    # the second reader's review
    r"十進位": "the datasheets' 80 GB and 141 GB are not decimal GB (80e9 B < the 79.6 GiB reported): 規格表寫 80 GB",
    r"變得最多": "'moved most': 變化最大",
    r"實際跑了": "a pass of the model is 執行: 實際執行了 17 次",
}
# Half-width punctuation right after a Chinese character (a full-width one belongs there),
# a half-width bracket opened after Chinese, and the katakana middle dot.
PUNCTUATION = [
    (re.compile(r"[\u4e00-\u9fff][,:;!?]"), "half-width punctuation after Chinese: use ，：；！？"),
    (re.compile(r"[\u4e00-\u9fff]\("), "half-width bracket after Chinese: use （）"),
    (re.compile(r"・"), "katakana middle dot: use ·, 、 or words"),
    (re.compile(r"（[^（）]*[（(]"), "nested brackets (a half-width one too): rewrite the outer one as a clause"),
    (re.compile(r"(?<![A-Za-z])\([a-h]\)(?=\s*[\u4e00-\u9fff])|(?<=[\u4e00-\u9fff])\s*\([a-h]\)"),
     "half-width label in Chinese: write （a）"),
    (re.compile(r"\d \(\d[\d,.]*\)"), "half-width bracket around a number: 「12 (9)」 -> 「12（共享 9）」, say what it is"),
    (re.compile(r"）（"), "two bracket groups side by side: 「（平均）（毫秒）」 -> 「平均……（毫秒）」"),

]
SENTENCE_END = re.compile(r"[。！？\n]|<br>")  # a hover template's <br> starts a new line too
# Units of time, one form per page (the second reader's review): 毫秒 and 微秒 in a label (an axis title, a column
# header: 「每步時間（毫秒）」), ms and µs after a number (「4.64 ms」), as the pages' facts print them.
UNIT_AFTER_NUMBER = re.compile(r"\d\s*(?:毫秒|微秒)")
BARE_UNIT = re.compile(r"(?<![A-Za-z\d.])(?<![\d.] )(?:ms|µs)(?![A-Za-z])")
RANGE = re.compile(r"\d[%％]?\s*[–—~～]\s*\d")  # 「每秒 4–5 個詞元」 in a sentence: 4 到 5 (a table cell may keep 1–5)
QUOTED = re.compile(r"「[^「」]*」")  # a quoted label may hold a colon of its own


def _sentences(text: str) -> list[str]:
    return SENTENCE_END.split(QUOTED.sub("「」", text))


# Fields that list label：value pairs (「R1：3、R2：3」, a hover box's lines) rather than write a sentence.
LISTS = ("hovertemplate", ".cell")


def wording_problems(text: str, where: str = "notes") -> list[str]:
    found = [f"{m.group(0)!r}: {why}" for phrase, why in FLAGGED.items() for m in re.finditer(phrase, text)]
    if not where.endswith(LISTS):
        found += [f"two ： in one sentence: {s.strip()[:60]!r}" for s in _sentences(text) if s.count("：") >= 2]
    found += [f"／ and ' / ' in one sentence: {s.strip()[:60]!r}" for s in _sentences(text) if "／" in s and " / " in s]
    found += [f"{m.group(0)!r}: after a number write ms / µs" for m in UNIT_AFTER_NUMBER.finditer(text)]
    if not where.endswith("hovertemplate"):  # a hover template's numbers are %{…} placeholders, blanked here
        found += [f"{m.group(0)!r} without a number: a label writes 毫秒 / 微秒" for m in BARE_UNIT.finditer(text)]
    if where.endswith("notes"):
        found += [f"{m.group(0)!r}: a range in a sentence is written with 到" for m in RANGE.finditer(text)]
    return found + [f"{m.group(0)!r}: {why}" for pattern, why in PUNCTUATION for m in pattern.finditer(text)]


@pytest.mark.parametrize("name", list(registry.LESSONS))
def test_zh_tw_strings_read_as_written_in_taiwan(course, name):
    found = [f"{where}: {p} in {text!r}" for where, text in collected(name, "zh-TW") for p in wording_problems(text, where)]
    assert not found, "\n".join(dict.fromkeys(found))


@pytest.mark.parametrize("sample", ["快取因此小 4 倍。", "在脊點左方 206 倍", "第一猜測", "屋頂下的時間", "數列",
                                    "詞元永遠不會往後看。", "模型說,好", "結果:對", "上下文(詞元數)", "筆電・CPU",
                                    "內積因此完全不變。", "（權重（weight））",
                                    "Llama 形狀在 8,192 個詞元時，一步要啟動 500 個運算", "產生的文字：「貓」：和貪婪解碼一字不差。",
                                    "時間軸：每一步（空白：還沒抵達）", "回答（課程模型，(c) 那一輪）", "(b) 分頁", "在 (c) 裡",
                                    "最多是 2 / 3 / 4 個（連續配置／分頁）", "（12 ms，而不是 20 ms）", "由記憶體決定",
                                    "不是規格表上以十進位計的 GB", "第 2 層的注意力變得最多", "課程模型在（c）實際跑了 17 次前向計算",
                                    "12 (9)", "每詞元輸出時間（平均）（毫秒）", "而在 6.66 毫秒的一步裡", "主機每啟動一次約花 10 微秒",
                                    "每步 ms"])
def test_the_checks_catch_what_they_should(sample):
    assert wording_problems(sample)


@pytest.mark.parametrize("sample", ["快取只要 MHA 的 1/4。", "離脊點還差 206 倍", "Llama 3 8B: bf16", "上下文（詞元數）",
                                    "cl100k_base (gpt-4)", "第 1 個位置 · id 7",
                                    "以 Llama 的形狀、上下文 8,192 個詞元來說", "產生的文字是「貓」，和貪婪解碼一字不差。",
                                    "時間軸：每一步（空白表示還沒抵達）。第 2 步：預填", "課程模型在（c）寫出的回答", "（b）分頁",
                                    "最多是 2／3／4 個", "（12 ms；貪婪解碼要 20 ms）", "exp(s − m) 的總和", "由記憶體頻寬決定",
                                    "K/V、FLOP/s 與 q·k/√d", "16 位元（fp16 / bf16）", "「KV 快取：位元數」必須是：16、8",
                                    "query：%{y}<br>key：%{x}", "每步時間（毫秒）", "一步要 4.64 ms", "12（共享 9）",
                                    "（甲）。（乙）", "每秒 4 到 5 個詞元", "items and forms", "ems"])
def test_and_nothing_else(sample):
    assert wording_problems(sample) == []


def test_ranges_only_in_sentences():
    """「每秒 4–5 個詞元」 in a note reads as a dash; a table cell such as the steps 1–5 may keep it."""
    assert wording_problems("使用快取時每秒 4–5 個詞元。", "notes")
    assert wording_problems("1–5", "tables[0].cell") == []


def test_a_hover_templates_unit_follows_a_placeholder():
    """reader_text blanks a hover template's %{…} placeholders, so its 「 ms」 has no number before it there."""
    assert wording_problems(" ms", "figures[0].figure.data[0].hovertemplate") == []
    assert wording_problems(" ms", "figures[0].figure.layout.yaxis.title")


def test_a_list_of_label_value_pairs_is_not_a_sentence():
    assert wording_problems("R1：3、R2：3", "figures[0].table.cell") == []
    assert wording_problems("R1：3、R2：3", "notes")
