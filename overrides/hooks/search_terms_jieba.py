"""Course vocabulary for jieba, so that Chinese search finds whole terms.

Material segments Chinese text with jieba at build time and joins the pieces with \\u200b;
the browser's search then matches whole pieces. jieba's stock dictionary leans on mainland
usage and splits Taiwan terms in context (「KV快取會」 -> 快/取會, 「記憶體頻寬」 -> 記憶/體頻/寬),
so a reader searching 快取 would find nothing. We add the course's terms as words: the list
below plus every Han run in the zh-TW glossary's headings.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

# Taiwan terms the pages use; the glossary headings add the rest at build time.
TERMS = (
    "快取", "記憶體", "頻寬", "位元組", "詞元", "向量", "矩陣", "注意力", "嵌入", "模型",
    "語言模型", "自迴歸", "預填", "解碼", "機率", "溫度", "取樣", "上下文", "上下文視窗",
    "詞彙表", "分詞器", "前饋", "查詢", "小抄", "檔案櫃", "文字接龍",
    "積木", "座標", "工作臺", "搬運", "算術強度", "屋頂線", "記憶體頻寬", "資料搬移",
    "運算", "浮點運算", "效能", "軟體", "程式", "預設", "瀏覽器",
    # A search alias: many Taiwanese articles call compute-in-memory (記憶體內運算) 存算合一;
    # jieba alone splits it into 存算 + 合一, and a reader's query would find nothing.
    "存算合一",
)

HAN_RUN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]{2,}")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*(\{[^}]*\})?\s*$", re.MULTILINE)


def glossary_terms(markdown: str) -> list[str]:
    """Han runs of two or more characters in the headings of a glossary page."""
    terms: list[str] = []
    for heading, _attrs in HEADING.findall(markdown):
        terms.extend(HAN_RUN.findall(heading))
    return list(dict.fromkeys(terms))


def register(jieba_module, words: Iterable[str]) -> int:
    """Add ``words`` to jieba's dictionary (frequency chosen by jieba); returns how many."""
    count = 0
    for word in dict.fromkeys(words):
        jieba_module.add_word(word)
        count += 1
    return count
