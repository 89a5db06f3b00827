"""Percentages are written one way on every page, in both languages: 12.5%, no space before
the sign (the form the demos' strings use, lessons.common.figures.fmt_percent). The zh-TW pages get
the same rule among their typography checks (tests/site/test_zh_tw.py); this file holds the
English pages to it too, so a number quoted from a paper reads the same beside a demo's.

Byte sizes are facts, never typed (issue 19): a page writes [[fact:course.weights_size]], not
"3.6 MiB" nor "the course model's few megabytes". What a number takes per element (2 bytes in
fp16, 3 UTF-8 bytes for a Chinese character) is a definition, not a size, and a rate such as
4.8 TB/s is the hardware's datasheet, so neither is flagged."""
from __future__ import annotations

import re

import pytest

from site_pages import DOCS
from zh_prose import prose

PERCENT_SPACE = re.compile(r"\d[ \u00a0]+%(?!\w)")
TYPED_SIZE = re.compile(r"\d\s*(?:[KMGT]i?B)(?![/\w])"
                        r"|course model's (?:few|several) (?:kilo|mega)bytes|課程模型[^。，]{0,4}只有幾 ?[KM]i?B")
ALL_PAGES = sorted(DOCS.rglob("*.md"))
EN_PAGES = sorted(p for p in DOCS.rglob("*.md") if not p.name.endswith(".zh-TW.md"))


def spaced_percentages(text: str) -> list[str]:
    return [text[max(0, m.start() - 16):m.end() + 8].replace("\n", " ") for m in PERCENT_SPACE.finditer(text)]


@pytest.mark.parametrize("path", EN_PAGES, ids=[str(p.relative_to(DOCS)) for p in EN_PAGES])
def test_english_pages_write_percentages_without_a_space(path):
    found = spaced_percentages(prose(path.read_text(encoding="utf-8")))
    assert not found, "write 12.5%, no space:\n" + "\n".join(found)


def typed_sizes(text: str) -> list[str]:
    return [text[max(0, m.start() - 24):m.end() + 8].replace("\n", " ") for m in TYPED_SIZE.finditer(text)]


@pytest.mark.parametrize("path", ALL_PAGES, ids=[str(p.relative_to(DOCS)) for p in ALL_PAGES])
def test_pages_type_no_byte_sizes(path):
    found = typed_sizes(prose(path.read_text(encoding="utf-8")))
    assert not found, "a byte size is a fact ([[fact:...]]), not typed:\n" + "\n".join(found)


@pytest.mark.parametrize("text, bad", [("The course model's few megabytes fit in a CPU's caches", True),
                                       ("課程模型只有幾 MB，整個放得進", True), ("a cache of 1 GiB at 8K", True),
                                       ("sold with 80 GB", True), ("The course model's [[fact:course.weights_size]]", False),
                                       ("4.8 TB/s of HBM bandwidth", False), ("2 bytes per number in fp16", False),
                                       ("每個中文字佔 3 個 UTF-8 位元組", False)])
def test_the_size_check(text, bad):
    assert bool(typed_sizes(prose(text))) is bad


# The datasheets' capacities are not decimal GB: an H100's 80 GB would be 74.5 GiB, less than the 79.6 GiB
# the device reports (an H200's 139.8 GiB is 150 GB, more than its 141 GB). Pages quote the datasheet as it
# prints it and the device as it reports, and call neither decimal (the second reader's review, A4).
DECIMAL_GB = re.compile(r"decimal (?:GB|gigabytes)|十進位")


@pytest.mark.parametrize("path", ALL_PAGES, ids=[str(p.relative_to(DOCS)) for p in ALL_PAGES])
def test_pages_do_not_call_the_datasheet_gb_decimal(path):
    found = [m.group(0) for m in DECIMAL_GB.finditer(prose(path.read_text(encoding="utf-8")))]
    assert not found, found


@pytest.mark.parametrize("text, bad", [("An NVIDIA H100 is sold with 80 GB (decimal gigabytes)", True),
                                       ("規格表上的記憶體是 80 GB（以十進位計的 GB）", True),
                                       ("The datasheet of an NVIDIA H100 says 80 GB; the device reports 79.6 GiB", False),
                                       ("NVIDIA H100 的規格表寫 80 GB，裝置實際回報約 79.6 GiB", False)])
def test_the_decimal_check(text, bad):
    assert bool(DECIMAL_GB.search(prose(text))) is bad


@pytest.mark.parametrize("text, bad", [("only 20.4 % to 38.2 % held", True), ("20–26 % more", True),
                                       ("only 20.4% to 38.2% held", False), ("slot `p % 16`", False),
                                       ("the 10th to the 90th percentile", False)])
def test_the_check(text, bad):
    assert bool(spaced_percentages(prose(text))) is bad
