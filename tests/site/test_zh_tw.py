"""zh-TW pages use Traditional characters, Taiwan terms and Chinese typography.

Checks on the prose of every ``*.zh-TW.md`` (code, Mermaid, URLs, markup, facts and demo
blocks removed, see ``zh_prose.py``): OpenCC's s2twp conversion (Simplified -> Traditional
with Taiwan phrases) must change nothing, no mainland term from the list below appears, and
the typography rules below hold.

Typography rules (issue 11), each a function here with a planted sample that proves it bites:

* No italics on Chinese text (``*中文*``, ``_中文_``, ``<em>``/``<i>``): CJK fonts have no
  italic face, so browsers slant the glyphs artificially. Emphasise with bold or 「」.
* No space after a full-width punctuation mark that closes bold (``。** 下一句``): full-width
  punctuation already carries its own space, so the extra one shows as a gap.
* No hard line breaks inside a Chinese paragraph: a line of Chinese prose must not be followed
  by another line of the same paragraph, because the browser turns the newline into a space
  between two characters. Write each paragraph, list item and admonition body on one line.
* No katakana middle dot 「・」 (nor its half-width form): use 「、」 between items, or write
  the plate titles as 「第 1 張：…」.
* Quoted strings, English or Chinese, are written in corner brackets: 「The cat sat on the」,
  never "The cat" nor 「"The cat"」 (no ASCII or curly double quotes in zh-TW prose; a token
  whose leading space matters is written as code, `␣milk`). Admonition titles keep the
  quotes Markdown needs.
* Slashes: a slash with a Han character or full-width mark on either side is the full-width
  「／」 (台／臺, FLOP／位元組); a slash between Latin letters or digits on both sides is the
  ASCII "/" (K/V, key/value, FLOP/s, top-k/top-p).

Issue 19 added three:

* Percentages are written as Taiwan writes them: 12.5%, no space before the sign and the
  half-width %, as the demos' strings (lessons.common.figures.fmt_percent) write them.
* No nested full-width brackets 「（……（……）……）」: a gloss inside a parenthesis reads as
  a second aside. Rewrite the outer one as a clause (「例如……」, a separate sentence).
* One full-width colon per sentence: 「A：B：C」 leaves the reader to guess which part
  explains which. A sentence is what lies between 。！？, line breaks and table cells.

And the calques its review found (CALQUES below), which must not come back.

The second review of issue 19 added three more, with the calques it found:

* Half-width brackets stay out of Chinese sentences: no half-width bracket inside a full-width
  one (「（在 (b) 執行）」), no half-width label such as (a) or (b) (write （a）), no
  half-width gloss after a Latin name (「Orca (Oracle) 的」 -> 「Orca（Oracle）的」) and no
  half-width comma in a full-width aside (「（head, 段）」). Formulas such as exp(m − M) and
  (qP)·(kP) keep theirs, and a quoted input its commas (「tea, 女王」).
* Ranges between two numbers are written with 到: 「20.4% 到 38.2%」, 「2 到 4 倍」, never with an
  en dash or a tilde, so every page writes a range one way.
* (In tests/site/test_plate_count.py) 「這最後一張」 only on the last plate.

The second reader's review (a Taiwanese reader on the rendered site) added three:

* No two bracket groups side by side, 「注意力匯聚點（attention sink）（StreamingLLM，……）」: the second one
  reads as an aside to the first. Put both in one bracket, 「（attention sink；StreamingLLM，……）」, or make
  the second a clause.
* No space after a full-width mark, a link or bold closing between them or not: 「縮放係數（scale） s」
  shows a gap the full-width bracket already leaves.
* An author list is written one way on every page: names joined by 「、」, the last one too
  (「Kim、Chun」), never 「Kim 與 Chun」 on one page and 「Kim、Chun」 on another.
"""
from __future__ import annotations

import difflib
import re

import pytest

from site_pages import DOCS
from zh_prose import FENCE, prose

# (text on the page, what s2twp makes of it): allowed, with the reason.
ALLOWED_CONVERSIONS = {
    ("台", "臺"): "台 and 臺 are both standard in Taiwan (臺 is the Ministry of Education form, "
                 "台 the everyday one: 台灣, 平台, 台積電).",
    # s2twp's phrase table maps these to the words for something else; each original is the
    # correct Taiwan term for what the pages mean.
    ("參", "引"): "參數 is a model's parameters in Taiwan too; s2twp turns it into 引數, which is a "
                 "function's argument.",
    ("文件", "檔案"): "文件 is documentation (Python 說明文件); 檔案 is a file on disk.",
    ("項目", "專案"): "項目 is an item in a list; 專案 is a project.",
    ("了", "瞭"): "s2twp turns the particle 了 after some verbs (證明了) into 瞭, which is wrong there.",
    ("只", "隻"): "只 ('only') is the Traditional form too; s2twp's phrase table reads 是只 and 首只 as the "
                 "measure word 隻 (「這就是只有」, 「字首只預填一次」 come back as 是隻有, 首隻預填). The "
                 "measure word written 只 is caught by MAINLAND_TERMS instead (一只、這只貓).",
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
    r"[一二兩三四五六七八九十幾每這那哪]只(?![有要是能會好需剩在用讀看])": (
        "隻", "the measure word (一隻、這隻) is 隻 in Traditional Chinese; 只 there is the Simplified form"),
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


HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
FULL_WIDTH = r"\u3000-\u303f\uff01-\uff60"  # 。、「」 and the full-width forms ，：；（）
ITALIC_MARK = re.compile(rf"(?<![*_A-Za-z0-9\\])([*_])(?![*_\s])([^*_\n]*?[{HAN}][^*_\n]*?)(?<![*_\s])\1(?![*_A-Za-z0-9])")
ITALIC_TAG = re.compile(rf"<(em|i)\b[^>]*>[^<]*[{HAN}][^<]*</\1>")
INLINE_CODE = re.compile(r"`[^`\n]+`")
SPACE_AFTER_BOLD = re.compile(rf"[{FULL_WIDTH}]\*\*[ \t]+(?=\S)")
MIDDLE_DOT = re.compile(r"[\u30fb\uff65]")
DOUBLE_QUOTE = re.compile(r'["\u201c\u201d]')
ADMONITION_TITLE = re.compile(r'^(\s*(?:\?\?\?\+?|!!!)\s+[\w-]+(?:\s+[\w-]+)*\s+)"([^"\n]*)"', re.MULTILINE)
ASCII_SLASH_BY_HAN = re.compile(rf"[{HAN}{FULL_WIDTH}]/|/[{HAN}{FULL_WIDTH}]")
WIDE_SLASH_BY_LATIN = re.compile(rf"(?<![{HAN}{FULL_WIDTH}])／(?![{HAN}{FULL_WIDTH}])")
PERCENT_SPACE = re.compile(r"\d[ \u00a0\u3000]+[%％]|\d％")
NESTED_BRACKETS = re.compile(r"（[^（）]*[（(]")  # a full-width or half-width bracket inside a full-width one
HALF_WIDTH_LABEL = re.compile(r"\([a-h]\)")  # (a), (b): a list label inside a Chinese sentence
HALF_WIDTH_GLOSS = re.compile(rf"(?<=[A-Za-z0-9]) \((?:[A-Za-z][A-Za-z .-]*)\)(?= ?[{HAN}])")  # 「Orca (Oracle) 的」
HALF_WIDTH_COMMA = re.compile(r"（[^（）]*[A-Za-z0-9], [^（）]*）")  # 「（head, 段）」: a half-width comma in a Chinese aside
QUOTED = re.compile(r"「[^「」]*」")  # a quoted input keeps its own commas: 「tea, 女王」
SPACE_AFTER_FULL_WIDTH = re.compile(r"[）。，；：、」！？][\]*]* +(?=[^\s|{])")  # 「（scale） s」: a gap after a full-width mark
LINK_TARGET = re.compile(r"\]\([^)\s]*\)")
ADJACENT_BRACKETS = re.compile(r"）[\s*_\]]*（")  # 「（attention sink）（StreamingLLM」, bold or a link between them too
AUTHOR_LIST_AND = re.compile(r"^\s*[-*]\s+[^，\n]*\s與\s[^，\n]*，\[", re.MULTILINE)  # 「- Kim 與 Chun，[Title]」
NUMBER_RANGE = re.compile(r"\d[%％]?\s*[–—~～]\s*\d")
SENTENCE_END = re.compile(r"[。！？\n|]")
BLOCK_START = re.compile(r"^\s*(?:[-*+]\s|\d+[.)]\s|#|\||>|\?\?\?|!!!|<)")
HAS_HAN = re.compile(f"[{HAN}]")


def _near(text: str, m: re.Match, width: int = 12) -> str:
    return text[max(0, m.start() - width):m.end() + width].replace("\n", "⏎")


def _markup(markdown: str) -> str:
    """Markdown without code: what the emphasis checks read (prose() would drop the markup)."""
    return INLINE_CODE.sub(" ", FENCE.sub("", markdown))


def italics_on_chinese(markdown: str) -> list[str]:
    """Emphasis (``*…*``, ``_…_``, ``<em>``/``<i>``) around text that contains Chinese."""
    text = _markup(markdown)
    return [f"italic Chinese: {_near(text, m)!r}" for m in
            [*ITALIC_MARK.finditer(text), *ITALIC_TAG.finditer(text)]]


def space_after_bold(markdown: str) -> list[str]:
    """A space after full-width punctuation that closes bold: 「。** 下一句」."""
    text = _markup(markdown)
    return [f"space after 。**: {_near(text, m)!r}" for m in SPACE_AFTER_BOLD.finditer(text)]


def hard_line_breaks(text: str) -> list[str]:
    """A line of Chinese prose followed by a further line of the same paragraph."""
    lines = text.splitlines()
    found = []
    for line, nxt in zip(lines, lines[1:]):
        if HAS_HAN.search(line) and not BLOCK_START.match(line) and nxt.strip() and not BLOCK_START.match(nxt):
            found.append(f"line break inside a paragraph: {line.strip()[-16:]!r} / {nxt.strip()[:16]!r}")
    return found


def middle_dots(text: str) -> list[str]:
    """The katakana middle dot 「・」 (and its half-width form)."""
    return [f"middle dot: {_near(text, m)!r}" for m in MIDDLE_DOT.finditer(text)]


def double_quotes(text: str) -> list[str]:
    """ASCII or curly double quotes in prose; admonition titles keep Markdown's quotes."""
    text = ADMONITION_TITLE.sub(r"\1\2", text)
    return [f"double quote (use 「」): {_near(text, m)!r}" for m in DOUBLE_QUOTE.finditer(text)]


def mixed_slashes(text: str) -> list[str]:
    """ASCII / touching Chinese, or full-width ／ between Latin letters or digits."""
    return ([f"ASCII / next to Chinese (use ／): {_near(text, m)!r}" for m in ASCII_SLASH_BY_HAN.finditer(text)]
            + [f"full-width ／ between Latin (use /): {_near(text, m)!r}" for m in WIDE_SLASH_BY_LATIN.finditer(text)])


def percent_spacing(text: str) -> list[str]:
    """A space (or a full-width ％) between a number and its percent sign: 20.4 % -> 20.4%."""
    return [f"percent (write 12.5%): {_near(text, m)!r}" for m in PERCENT_SPACE.finditer(text)]


def nested_brackets(text: str) -> list[str]:
    """A full-width bracket opened inside another: 「（一段提示詞（prompt），……）」."""
    return [f"nested （（: {_near(text, m)!r}" for m in NESTED_BRACKETS.finditer(text)]


def half_width_brackets(text: str) -> list[str]:
    """A half-width label (a) or a half-width gloss 「Orca (Oracle)」 in Chinese prose."""
    found = [f"half-width bracket in Chinese (use （）): {_near(text, m)!r}"
             for pattern in (HALF_WIDTH_LABEL, HALF_WIDTH_GLOSS) for m in pattern.finditer(text)]
    unquoted = QUOTED.sub("「」", text)
    return found + [f"half-width comma in a full-width bracket (use ，or words): {_near(unquoted, m)!r}"
                    for m in HALF_WIDTH_COMMA.finditer(unquoted)]


def number_ranges(text: str) -> list[str]:
    """A range written with a dash or a tilde: 20.4%–38.2%, 2–4 倍 -> 20.4% 到 38.2%, 2 到 4 倍."""
    return [f"range (write 2 到 4): {_near(text, m)!r}" for m in NUMBER_RANGE.finditer(text)]


def space_after_full_width(markdown: str) -> list[str]:
    """A space after a full-width mark (a link or bold may close between them): 「縮放係數（scale） s」.
    Table cells (|) and heading anchors ({#…}) keep theirs; code counts as text, not as a gap."""
    text = LINK_TARGET.sub("]", INLINE_CODE.sub("`c`", FENCE.sub("", markdown)))
    return [f"space after a full-width mark: {_near(text, m)!r}" for m in SPACE_AFTER_FULL_WIDTH.finditer(text)]


def adjacent_brackets(text: str) -> list[str]:
    """Two full-width bracket groups side by side: 「（attention sink）（StreamingLLM，……）」."""
    return [f"）（ side by side (one bracket, or a clause): {_near(text, m)!r}" for m in ADJACENT_BRACKETS.finditer(text)]


def author_lists(text: str) -> list[str]:
    """A reference's author list that ends with 「與」: 「Kim 與 Chun」 where the other pages write 「Kim、Chun」."""
    return [f"author list with 與 (use 、): {m.group(0).strip()[:60]!r}" for m in AUTHOR_LIST_AND.finditer(text)]


def two_colons(text: str) -> list[str]:
    """Two full-width colons in one sentence."""
    return [f"two ： in one sentence: {s.strip()[:80]!r}" for s in SENTENCE_END.split(text) if s.count("：") >= 2]


# Phrases issue 19's review found reading as translated from English, with what was meant.
CALQUES = {
    "天真的": "'a naive loop': 最直接的寫法",
    "全部的它們": "'needs all of them': 要把它們全部讀一遍",
    "用我們自己的話": "'in their own words' meant the papers' own reported results, not a paraphrase",
    r"形狀在 ?\d+K ?詞元時": "'the shape at 32K tokens': 以這個形狀存 32K 個詞元",
    "都在用": "'used in models you can download' does not mean every model uses it",
    "向量越長": "'longer vectors' meant more dimensions, not a larger norm: 維度越多",
    r"離群值（outlier）通道": "one term with one gloss: 離群值通道（outlier channel）",
    # issue 19, second review
    r"形狀在\s*\S+\s*個?詞元時": "'the shape at 8,192 tokens': 以這個形狀、上下文 8,192 個詞元來說",
    r"形狀在 ?[\d.]+ ?節": "'its shape is in section 3.1.2': 模型形狀見 3.1.2 節",
    r"小 ?\d+(?:\.\d+)? ?倍": "'2x smaller': say what is left: 再減半, 只要……的 1/4",
    r"打斷這條鎖鏈": "'breaks this chain': 打破這個一定得依序進行的限制",
    r"其餘的 ?GPU": "'the rest of the GPU waits': GPU 其餘的部分都閒著",
    r"從上下文裡學到的東西": "'what it learned from the context': 從上下文蒐集到的資訊",
    r"除以全部的總和": "'divided by the sum of all': 除以所有指數的總和",
    r"下一堂課": "'the next classroom' is another course, not the next plate: 另一門課",
    r"佔便宜": "'long drafts win': 長草稿比較划算",
    r"回到隊伍": "a request goes back to the queue: 回到佇列裡",
    r"(?<!集)束搜尋": "beam search is 集束搜尋",
    r"第一個數字短": "'when the first is short': 首詞元延遲夠短",
    r"寫入時複製了": "'the blocks copied on write': 因寫入時複製而複製了幾個區塊",
    r"今天下載得到": "'models you can download today': 現在就能下載的模型",
    r"每一列的長度": "'the rows it was trained on' are sequences: 每筆序列的長度",
    # the second reader's review (also inside brackets, where the terminology check leaves glosses alone)
    r"重度命中": "'heavy hitter' read as a cache hit: heavy hitter（拿到大量注意力的詞元）",
    r"向量寬度": "a vector's count of numbers is its 維度: 向量維度",
    r"誠實說明": "'Honest limits': 這些數字的限制",
    r"以十進位計": "the datasheets' GB are not decimal GB: 規格表寫 80 GB，裝置實際回報約 79.6 GiB",
    r"替伺服器的每一步計時": "the scheduler estimates, it times nothing: 估算伺服器每一步的時間",
    r"接著等後面的速度": "'then the pace': 接著是之後的輸出速度",
    r"在這裡，每一種做法要付出多少品質": "在課程模型上，每種做法會讓品質掉多少",
}


def calques(text: str) -> list[str]:
    return [f"calque {m.group(0)!r}: {why}" for pattern, why in CALQUES.items() for m in re.finditer(pattern, text)]


# check name -> (function, whether it reads the raw Markdown rather than the prose)
TYPOGRAPHY = {
    "italics": (italics_on_chinese, True),
    "space after 。**": (space_after_bold, True),
    "hard line breaks": (hard_line_breaks, False),
    "middle dot": (middle_dots, False),
    "double quotes": (double_quotes, False),
    "slashes": (mixed_slashes, False),
    "percent": (percent_spacing, False),
    "nested brackets": (nested_brackets, False),
    "half-width brackets": (half_width_brackets, False),
    "ranges": (number_ranges, False),
    "two colons": (two_colons, False),
    "calques": (calques, False),
    "adjacent brackets": (adjacent_brackets, False),
    "space after full-width": (space_after_full_width, True),
    "author lists": (author_lists, False),
}


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
    assert conversion_changes("模型有一百萬個參數，說明文件的第一個項目證明了這點。", s2twp) == []
    assert conversion_changes("這就是只有字首只預填一次的原因。", s2twp) == []  # allowed: 只, see above
    assert "隻" in " ".join(mainland_terms("一只貓和這只狗。")) and not mainland_terms("這只是字首，只有一個。")
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


@pytest.mark.parametrize("check", TYPOGRAPHY)
@pytest.mark.parametrize("path", ZH_PAGES, ids=IDS)
def test_typography(path, check):
    function, raw = TYPOGRAPHY[check]
    markdown = path.read_text(encoding="utf-8")
    found = function(markdown if raw else prose(markdown))
    assert not found, "\n".join(found)


# check -> (a sample it must flag, a sample of the right form it must let through)
PLANTED = {
    "italics": ("先看*這一站*的筆記，再讀 <em>新的</em> 那段。", "先看**這一站**的筆記，第 *t* 步，`*程式碼*`。"),
    "space after 。**": ("**圖已經在了。** 每個示範", "**圖已經在了。**每個示範，[**key（鍵向量）**](g.md#key)，**Roofline 模型** 很有用。"),
    "hard line breaks": ("這是一段很長的中文，\n被硬生生折成兩行。\n", "一整段寫在同一行。\n\n- 清單第一項\n- 清單第二項\n"),
    "middle dot": ("1・下一個詞元", "第 1 張：下一個詞元、第 2 張"),
    "double quotes": ('輸入 "The cat" 看看，或「"The cat"」。', '??? question "為什麼？"\n    輸入「The cat」看看。'),
    "slashes": ("top-k／top-p 與 台/臺", "top-k/top-p、K/V、FLOP/s、台／臺、FLOP／位元組"),
    "percent": ("只有 20.4 % 到 38.2％ 存著詞元狀態", "只有 20.4% 到 38.2% 存著詞元狀態，`p % 16` 是程式碼"),
    "nested brackets": ("很多詞元（一段很長的提示詞（prompt），或很多使用者），（模型就改在 (b) 執行）。",
                        "很多詞元，例如一段很長的提示詞（prompt）。（另一句話。）而 exp(m − M) 是公式。"),
    "half-width brackets": ("三遍：(a) 預留；(b) 分頁。吞吐量是 Orca (Oracle) 的 1.67 倍。每一組（head, 段）都是一個區塊。",
                            "三遍：（a）預留；（b）分頁。吞吐量是 Orca（Oracle）的 1.67 倍，exp(m − M) 與 (qP)·(kP) 是公式。"
                            "（預設是「tea, 女王」）"),
    "ranges": ("只有 20.4%–38.2% 存著，多 20–26%，快 2～4 倍。", "只有 20.4% 到 38.2% 存著，快 2 到 4 倍，Llama-3-8B、第 5、6 張、位置 0 … S−1。"),
    "calques": ("天真的寫法還會更糟，每個新詞元都需要全部的它們。Llama 形狀在 8,192 個詞元時，快取再小 2 倍。"
                "heavy hitter（重度命中的詞元）。（層數、向量寬度）",
                "最直接的寫法還會更糟，每個新詞元都要把它們全部讀一遍。以 Llama 的形狀、上下文 8,192 個詞元來說，快取再減半。"),
    "two colons": ("規則是：先複製：再寫入。", "規則是：先複製，再寫入。第 1 張：下一個詞元\n\n| 第 4 張：注意力 | 讀書筆記：key 是標籤 |"),
    "adjacent brackets": ("**[注意力匯聚點（attention sink）](../glossary.md#attention-sink)**（StreamingLLM，Xiao 等人，2024）。"
                          "heavy hitter（重度命中的詞元）（H2O，Zhang 等人，2023）。",
                          "**[注意力匯聚點](../glossary.md#attention-sink)**（attention sink；StreamingLLM，Xiao 等人，2024）。"
                          "（甲）。（乙）"),
    "space after full-width": ("一個[縮放係數（scale）](../glossary.md#scale) *s* 和一個零點。規則是： 先複製。",
                               "一個[縮放係數（scale）](../glossary.md#scale)*s* 和一個零點：`seq.fork()` 會產生。\n\n"
                               "### 詞元（token） {#token}\n\n| 第 4 張（注意力） | 讀書筆記 |\n"),
    "author lists": ("- Yu、Jeong、Kim、Kim 與 Chun，[Orca](https://example.org)（OSDI 2022）：持續批次處理。\n",
                     "- Yu、Jeong、Kim、Kim、Chun，[Orca](https://example.org)（OSDI 2022）：持續批次處理與搶佔。\n"),
}


@pytest.mark.parametrize("check", TYPOGRAPHY)
def test_typography_checks_catch_planted_faults(check):
    """Each rule flags its planted fault and lets the correct form through."""
    function, raw = TYPOGRAPHY[check]
    bad, good = PLANTED[check]
    assert function(bad if raw else prose(bad)), f"{check} missed: {bad!r}"
    assert not function(good if raw else prose(good)), f"{check} flagged the correct form: {good!r}"


def test_every_typography_rule_has_a_planted_sample():
    assert set(PLANTED) == set(TYPOGRAPHY)
