"""No page states a number of plates other than the navigation's.

The number of plates is what mkdocs.yml's nav lists (the numbered ``plates/NN-*.md`` pages);
plates get added, so pages had better not count them at all ("the plates of this course",
「這幾張圖」). Where a page does state a total, in figures or in words ("eight plates",
「八張圖」), it must be that number; "this last plate" may only be said on the last one.
A partial count is not a total and is allowed: "the first five plates", 「前五張」, 「第 6 張」.
「這最後一張」 is held to the same rule as "this last plate".

The pages that describe a plate's parts (index, authors) say how many self-check questions a
plate has ("four or five", 「四到五題」): that range must be the fewest and the most any plate
has, counted from its ``??? question`` blocks.
"""
from __future__ import annotations

import re

import pytest

from site_pages import DOCS, FENCE, ROOT

EN_NUMBERS = ("zero one two three four five six seven eight nine ten eleven twelve thirteen "
              "fourteen fifteen sixteen seventeen eighteen nineteen twenty").split()
ZH_DIGITS = dict(zip("零一二兩三四五六七八九", (0, 1, 2, 2, 3, 4, 5, 6, 7, 8, 9)))

# "eight plates", "the 8 short plates", "nine numbered plates"; not "the first five plates"
EN_TOTAL = re.compile(rf"(?<!first )(?<!last )\b(?P<n>{'|'.join(EN_NUMBERS)}|\d+)\s+(?:(?:short|numbered|course)\s+)?plates\b",
                      re.IGNORECASE)
EN_LAST = re.compile(r"\b(?:this|the) last plate\b", re.IGNORECASE)
ZH_LAST = re.compile(r"這(?:是)?最後一張")
# 「八張圖」「9 張」; not 「第 8 張」「前五張」「一張圖」 (one picture, not a count of plates)
ZH_TOTAL = re.compile(r"(?<![第前後這那最、，–\d.,])(?<![第前後這那最、，–] )(?P<n>[二兩三四五六七八九十]+|\d+)\s*張(?:圖)?")

MIN_TOTAL = 5  # 「兩張表」「三張圖」 are pictures and tables; the course never had fewer plates than this
NAV_PLATE = re.compile(r"^\s*-\s+(?:[^:\n]+:\s+)?plates/\d{2}-[\w-]+\.md\s*$", re.MULTILINE)


def nav_plates() -> list[str]:
    """The numbered plates of mkdocs.yml's nav, in order (plates/10000-feet.md is not numbered)."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:", 1)[1].split("\nplugins:", 1)[0]
    return [m.group(0).strip() for m in NAV_PLATE.finditer(nav)]


def _zh_number(text: str) -> int:
    if text.isdigit():
        return int(text)
    if "十" in text:  # 十, 十二, 二十
        tens, _, ones = text.partition("十")
        return (ZH_DIGITS[tens] if tens else 1) * 10 + (ZH_DIGITS[ones] if ones else 0)
    return ZH_DIGITS[text]


def _en_number(text: str) -> int:
    return int(text) if text.isdigit() else EN_NUMBERS.index(text.lower())


def count_claims(text: str, total: int, last: bool = False) -> list[str]:
    """Statements of a plate total other than ``total``; "this last plate" unless ``last``."""
    text = FENCE.sub("", text)
    found = [f"{m.group(0)!r} (the nav has {total})" for m in EN_TOTAL.finditer(text)
             if _en_number(m.group("n")) != total]
    found += [f"{m.group(0).strip()!r} (the nav has {total})" for m in ZH_TOTAL.finditer(text)
              if MIN_TOTAL <= _zh_number(m.group("n")) != total]
    if not last:
        found += [f"{m.group(0)!r} on a plate that is not the last" for m in (*EN_LAST.finditer(text), *ZH_LAST.finditer(text))]
    return found


PAGES = sorted(DOCS.rglob("*.md")) + [ROOT / "README.md"]


def test_the_nav_lists_the_plates():
    plates = nav_plates()
    assert len(plates) >= 8 and all((DOCS / p.split()[-1]).exists() for p in plates), plates


@pytest.mark.parametrize("path", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_no_page_states_another_number_of_plates(path):
    plates = nav_plates()
    last = path.name.split(".")[0] == plates[-1].split("/")[-1].removesuffix(".md")
    found = count_claims(path.read_text(encoding="utf-8"), len(plates), last)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("text", ["The six plates, put together", "This course answers it in eight short\nplates.",
                                  "After the 7 plates", "This last plate explains why", "六張圖串起來", "讀完八張圖",
                                  "這門課用 10 張圖"])
def test_a_wrong_count_is_caught(text):
    assert count_claims(text, 9)


@pytest.mark.parametrize("text", ["The nine plates of this course", "the plates so far", "the first five plates",
                                  "九張圖", "第 8 張", "第 5、6、7 張", "前五張", "一張圖看完整個模型", "第二張圖", "最後一張圖",
                                  "[plate 6](06-data-movement.md)", "這幾張圖"])
def test_a_right_or_partial_count_passes(text):
    assert count_claims(text, 9) == []


def test_the_last_plate_may_call_itself_last():
    assert count_claims("This last plate explains why", 9, last=True) == []
    assert count_claims("這最後一張要說明為什麼", 9, last=True) == []
    assert count_claims("這最後一張要說明為什麼", 9) and count_claims("這是最後一張", 9)


# --------------------------------------------------------------------------- self-check questions per plate

QUESTION = re.compile(r"^\?\?\?\+? question ", re.MULTILINE)
EN_QUESTIONS = re.compile(rf"\b(?P<lo>{'|'.join(EN_NUMBERS)}) or (?P<hi>{'|'.join(EN_NUMBERS)}) self-check questions\b"
                          r"|\ba self-check of (?P<lo2>\w+) or (?P<hi2>\w+)\s+questions\b")
ZH_QUESTIONS = re.compile(r"(?P<lo>[一二兩三四五六七八九十]+)到(?P<hi>[一二兩三四五六七八九十]+)題")
DESCRIBED = [DOCS / f"{page}{suffix}" for page in ("index", "authors") for suffix in (".md", ".zh-TW.md")]


def question_counts() -> list[int]:
    """Self-check questions of every plate (the numbered ones and the 10,000-feet page), one language."""
    return [len(QUESTION.findall(p.read_text(encoding="utf-8"))) for p in sorted((DOCS / "plates").glob("*.md"))
            if not p.name.endswith(".zh-TW.md")]


def question_ranges(text: str) -> list[tuple[int, int]]:
    """Every "four or five self-check questions" / 「四到五題」 range the text states."""
    out = [(_en_number(m["lo"] or m["lo2"]), _en_number(m["hi"] or m["hi2"])) for m in EN_QUESTIONS.finditer(text)]
    return out + [(_zh_number(m["lo"]), _zh_number(m["hi"])) for m in ZH_QUESTIONS.finditer(text)]


def test_every_plate_has_self_check_questions():
    counts = question_counts()
    assert len(counts) >= 9 and min(counts) >= 1, counts


@pytest.mark.parametrize("path", DESCRIBED, ids=[p.name for p in DESCRIBED])
def test_the_stated_number_of_questions_is_the_plates(path):
    counts = question_counts()
    ranges = question_ranges(path.read_text(encoding="utf-8"))
    assert ranges, f"{path.name} no longer says how many self-check questions a plate has"
    assert all(r == (min(counts), max(counts)) for r in ranges), (ranges, sorted(set(counts)))


@pytest.mark.parametrize("text, expect", [("and three or four self-check questions whose", [(3, 4)]),
                                          ("a self-check of four or five\nquestions", [(4, 5)]),
                                          ("最後是三到四題自我檢測", [(3, 4)]), ("四到五題點開", [(4, 5)]),
                                          ("the first five plates", [])])
def test_the_question_range_is_read(text, expect):
    assert question_ranges(text) == expect


# --------------------------------------------------------------------------- the home page's goals

GOALS_HEADING = {"en": "## What you will be able to explain", "zh-TW": "## 讀完你能說明什麼"}


def goals(text: str, lang: str) -> list[str]:
    """The bullets under the home page's goals heading (one per numbered plate, in order)."""
    section = text.split(GOALS_HEADING[lang], 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("- ")]


@pytest.mark.parametrize("lang, page", [("en", "index.md"), ("zh-TW", "index.zh-TW.md")])
def test_the_home_page_has_a_goal_for_every_plate(lang, page):
    """The goals stopped at plate 8 when plate 9 came (the second reader's review): one goal per plate."""
    found = goals((DOCS / page).read_text(encoding="utf-8"), lang)
    assert len(found) == len(nav_plates()), found


def test_a_missing_goal_is_caught():
    text = "## 讀完你能說明什麼\n\n讀完這幾張圖，你應該能夠：\n\n" + "".join(f"- 第 {i} 張的事；\n" for i in range(1, 9)) + "\n## 下一節\n"
    assert len(goals(text, "zh-TW")) == 8 != len(nav_plates())
