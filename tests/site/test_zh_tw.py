"""zh-TW pages use Traditional characters and Taiwan terms.

Two checks on the prose of every ``*.zh-TW.md`` (code, Mermaid, URLs, markup, facts and demo
blocks removed, see ``zh_prose.py``): OpenCC's s2twp conversion (Simplified -> Traditional
with Taiwan phrases) must change nothing, and no mainland term from the list below appears.
"""
from __future__ import annotations

import difflib
import re

import pytest

from site_pages import DOCS
from zh_prose import prose

# (text on the page, what s2twp makes of it): allowed, with the reason.
ALLOWED_CONVERSIONS = {
    ("台", "臺"): "台 and 臺 are both standard in Taiwan (臺 is the Ministry of Education form, "
                 "台 the everyday one: 台灣, 平台, 台積電).",
}

# Mainland term -> (the Taiwan term, why it is flagged). Patterns are regular expressions.
MAINLAND_TERMS = {
    "數據": ("資料", "'data' is 資料 in Taiwan; 數據 reads as mainland usage"),
    "內存": ("記憶體", "'memory (RAM)' is 記憶體 in Taiwan"),
    "字節": ("位元組", "'byte' is 位元組 in Taiwan"),
    "程序": ("程式", "'program' is 程式 in Taiwan (use 流程/步驟 for 'procedure')"),
    "緩存": ("快取", "'cache' is 快取 in Taiwan"),
    "性能": ("效能", "'performance' is 效能 in Taiwan"),
    "軟件": ("軟體", "'software' is 軟體 in Taiwan"),
    "硬件": ("硬體", "'hardware' is 硬體 in Taiwan"),
    "默認": ("預設", "'default' is 預設 in Taiwan"),
    "視頻": ("影片", "'video' is 影片 in Taiwan"),
    "信息": ("資訊", "'information' is 資訊 in Taiwan"),
    "質量": ("品質", "'quality' is 品質 in Taiwan (質量 means 'mass' there)"),
    "網絡": ("網路", "'network' is 網路 in Taiwan"),
    "(?<!演)算法": ("演算法", "'algorithm' is 演算法 in Taiwan"),
    "代碼": ("程式碼", "'code' is 程式碼 in Taiwan"),
    "字符": ("字元", "'character' is 字元 in Taiwan"),
    "存儲": ("儲存", "'storage' is 儲存 in Taiwan"),
    "帶寬": ("頻寬", "'bandwidth' is 頻寬 in Taiwan"),
    "矢量": ("向量", "'vector' is 向量 in Taiwan"),
    "調用": ("呼叫", "'call' is 呼叫 in Taiwan"),
    "變量": ("變數", "'variable' is 變數 in Taiwan"),
    "模塊": ("模組", "'module' is 模組 in Taiwan"),
    "用戶": ("使用者", "'user' is 使用者 in Taiwan"),
    "服務器": ("伺服器", "'server' is 伺服器 in Taiwan"),
    "芯片": ("晶片", "'chip' is 晶片 in Taiwan"),
    "顯存": ("顯示記憶體", "'VRAM' is 顯示記憶體 / GPU 記憶體 in Taiwan"),
    "運行": ("執行", "'run' is 執行 in Taiwan"),
    "鏈接": ("連結", "'link' is 連結 in Taiwan"),
    "屏幕": ("螢幕", "'screen' is 螢幕 in Taiwan"),
    "文檔": ("文件", "'document' is 文件 in Taiwan"),
    "分辨率": ("解析度", "'resolution' is 解析度 in Taiwan"),
    "示例": ("範例", "'example' is 範例 in Taiwan"),
}

ZH_PAGES = sorted(DOCS.rglob("*.zh-TW.md"))
IDS = [str(p.relative_to(DOCS)) for p in ZH_PAGES]


def conversion_changes(text: str, convert) -> list[tuple[int, str, str]]:
    """(line, original, converted) for every change ``convert`` makes, outside the allow-list."""
    changes = []
    for number, line in enumerate(text.splitlines(), 1):
        converted = convert(line)
        if converted == line:
            continue
        matcher = difflib.SequenceMatcher(None, line, converted, autojunk=False)
        for op, a1, a2, b1, b2 in matcher.get_opcodes():
            if op != "equal" and (line[a1:a2], converted[b1:b2]) not in ALLOWED_CONVERSIONS:
                changes.append((number, line[max(0, a1 - 4):a2 + 4], converted[max(0, b1 - 4):b2 + 4]))
    return changes


def mainland_terms(text: str) -> list[str]:
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for pattern, (taiwan, reason) in MAINLAND_TERMS.items():
            for m in re.finditer(pattern, line):
                found.append(f"line {number}: {m.group(0)} -> {taiwan} ({reason})")
    return found


@pytest.fixture(scope="module")
def s2twp():
    opencc = pytest.importorskip("opencc", reason="OpenCC is not installed: pip install -e '.[test]'")
    return opencc.OpenCC("s2twp").convert


def test_there_are_zh_tw_pages():
    assert ZH_PAGES


@pytest.mark.parametrize("path", ZH_PAGES, ids=IDS)
def test_s2twp_changes_nothing(path, s2twp):
    changes = conversion_changes(prose(path.read_text(encoding="utf-8")), s2twp)
    assert not changes, "\n".join(f"line {n}: {a!r} -> {b!r}" for n, a, b in changes)


@pytest.mark.parametrize("path", ZH_PAGES, ids=IDS)
def test_no_mainland_terms(path):
    found = mainland_terms(prose(path.read_text(encoding="utf-8")))
    assert not found, "\n".join(found)


def test_the_checks_catch_what_they_should(s2twp):
    """The checks themselves, on a sample with known problems (and allowed 台)."""
    sample = "這個程序把數據存進緩存。\n台灣的軟件很好，这是简体。"
    changes = conversion_changes(sample, s2twp)
    assert any("这" in a for _, a, _b in changes)
    assert conversion_changes("台灣的平台很好。", s2twp) == []  # allowed: 台 vs 臺
    terms = " ".join(mainland_terms(sample))
    for term in ("程序", "數據", "緩存", "軟件"):
        assert term in terms
    assert not mainland_terms("演算法在記憶體裡的資料")


def test_prose_drops_code_diagrams_urls_and_facts():
    md = ("前文 `数据` 與 [連結](https://例.com/数据) [[fact:course.n_layers]]\n"
          "```mermaid\nflowchart LR\n  A[数据] --> B\n```\n"
          "```kv-demo\nlesson: kv_cache\n```\n"
          '<span title="数据">後文</span> {#id-数据}\n')
    text = prose(md)
    assert "数据" not in text and "前文" in text and "後文" in text and "連結" in text
