"""Pages use the terminology table's terms: prose and diagrams of every page in both
languages, and the glossary's headings.

The table is lessons/common/terminology.py (one term per concept, the reason, the variants to avoid);
the lessons' strings are checked by tests/lessons/test_terminology.py. Here:

* the prose of each page (zh_prose.prose(): code, diagrams, demo blocks, URLs, markup and facts
  removed; the same function serves English, nothing in it is Chinese-specific) and the
  labels of its Mermaid diagrams, which a reader sees too, hold no variant of any term. The
  title of a cited work (an external link's text) and the glossary's "English: …" lines are
  where another name is the point, and are left out;
* every concept of the table that has an anchor in the glossary is named there by its term:
  "### KV cache {#kv-cache}", 「### KV 快取（KV cache） {#kv-cache}」 (other names may follow as
  a gloss in brackets: that is where the glossary lists search aliases).

The last tests plant variants in samples and show each check catches them.
"""
from __future__ import annotations

import re

import pytest

from lessons.common.terminology import TERMS, term, variants
from site_pages import FENCE, PAGES, fences, source
from zh_prose import prose

LANGS = ("en", "zh-TW")
CASES = [(page, lang) for page in PAGES for lang in LANGS]
IDS = [f"{page}-{lang}" for page, lang in CASES]

# Node and edge labels of a Mermaid flowchart: A[label], B(label), C{label}, -->|label|, "label".
_MERMAID_LABEL = re.compile(r"\[\"?([^\]\"]+)\"?\]|\(\"?([^()\"]+)\"?\)|\{\"?([^{}\"]+)\"?\}|\|([^|]+)\||\"([^\"]+)\"")
_HEADING = re.compile(r"^#{2,6}\s+(?P<text>.*?)\s*\{#(?P<anchor>[^}\s]+)[^}]*\}\s*$", re.MULTILINE)
_GLOSS = re.compile(r"（[^（）]*）|\([^()]*\)")


# Where another name is the point, not a variant: the title of a cited work (the text of an
# external link, no Chinese in it) and the glossary's line that gives a term's English name.
_CITED_TITLE = re.compile(r"\[([^\]\u4e00-\u9fff]*)\]\(https?://[^)\s]*\)")
_ENGLISH_NAME = re.compile(r"^English[:：].*$", re.MULTILINE)
_MULTILINE = [FENCE, re.compile(r"<!--.*?-->", re.DOTALL), re.compile(r"\A---\n.*?\n---\n", re.DOTALL)]


def _blank(m: re.Match) -> str:
    return "\n" * m.group(0).count("\n")


def page_prose(markdown: str) -> list[tuple[int, str]]:
    """(source line number, prose) of a page: blocks blanked line for line so the numbers are
    the source's, then zh_prose.prose() for the rest; cited titles and English names left out."""
    for pattern in _MULTILINE:
        markdown = pattern.sub(_blank, markdown)
    markdown = _ENGLISH_NAME.sub(" ", _CITED_TITLE.sub(" ", markdown))
    return [(n, line) for n, line in enumerate(prose(markdown).split("\n"), 1) if line.strip()]


def mermaid_labels(markdown: str) -> list[str]:
    return [next(g for g in m.groups() if g) for body in fences(markdown, "mermaid")
            for m in _MERMAID_LABEL.finditer(body)]


def page_findings(markdown: str, lang: str) -> list[str]:
    """'line N: concept 'match'' for every variant in the page's prose, then in its diagrams."""
    found = []
    for number, line in page_prose(markdown):
        found += [f"line {number}: {c} {m!r} in {line.strip()[:120]!r}" for c, m in variants(line, lang)]
    for label in mermaid_labels(markdown):
        found += [f"diagram: {c} {m!r} in {label!r}" for c, m in variants(label, lang)]
    return found


def _name(concept: str, lang: str) -> str:
    """The term as a heading names it: the English term before any bracket or slash
    ("FLOPs (a count) / FLOP/s (a rate)" -> "FLOPs"); the zh-TW term as it is."""
    t = term(concept)
    return t.zh if lang == "zh-TW" else re.split(r" \(| / ", t.en)[0]


def heading_findings(markdown: str, lang: str) -> list[str]:
    """Glossary headings of table concepts that do not name the concept by its term."""
    concepts = {t.concept for t in TERMS}
    found = []
    for m in _HEADING.finditer(markdown):
        if m.group("anchor") not in concepts:
            continue
        # the term must stand outside the brackets: "查詢向量（query）" names it only as an alias
        outside = _GLOSS.sub(" ", m.group("text")) if lang == "zh-TW" else m.group("text")
        if _name(m.group("anchor"), lang).casefold() not in outside.casefold():
            found.append(f"{m.group('anchor')}: {m.group('text')!r} does not name it "
                         f"{_name(m.group('anchor'), lang)!r}")
    return found


# A model named by its release where the releases differ in what the page says about it (issue 19):
# only Mistral 7B v0.1 has the sliding window, and Llama 3.1 (Llama 3 8B's shape) accepts 128K tokens.
RELEASES = [
    (re.compile(r"Mistral 7B(?![-\w])"), re.compile(r"v0\.1"), "Mistral 7B without v0.1 (the only release with a sliding window)"),
    (re.compile(r"Llama 3\.1(?![\d.]| \d+B)"), re.compile(r"128K"), "Llama 3.1 without the 128K it accepts"),
]


def release_findings(markdown: str) -> list[str]:
    """Paragraphs of prose that name a model but not the release (or the limit) the row above requires."""
    for pattern in _MULTILINE:
        markdown = pattern.sub(_blank, markdown)
    text = prose(_ENGLISH_NAME.sub(" ", _CITED_TITLE.sub(" ", markdown)))
    return [f"{why}: {' '.join(para.split())[:120]!r}" for para in re.split(r"\n\s*\n", text)
            for name, needed, why in RELEASES if name.search(para) and not needed.search(para)]


# Terms a zh-TW page uses before the reader has met them anywhere else carry their first-use gloss the first
# time (the table's first_zh): plate 9 wrote 執行緒區塊 and 重新縮放倍數 bare (the second reader's review).
FIRST_USE_GLOSSED = ("thread-block", "rescale")


def unglossed_first_uses(markdown: str) -> list[str]:
    text = "\n".join(line for _n, line in page_prose(markdown))
    found = []
    for concept in FIRST_USE_GLOSSED:
        t = term(concept)
        at = text.find(t.zh)
        if at >= 0 and not text.startswith(t.first_zh, at):
            found.append(f"{concept}: first use {text[at:at + len(t.first_zh)]!r}, not {t.first_zh!r}")
    return found


@pytest.mark.parametrize("page", [p for p in PAGES], ids=[p for p in PAGES])
def test_a_terms_first_use_carries_its_gloss(page):
    found = unglossed_first_uses(source(page, "zh-TW").read_text(encoding="utf-8"))
    assert not found, found


def test_the_first_use_check():
    assert unglossed_first_uses("# 頁\n\n切成很多個執行緒區塊，分給 SM。每個執行緒區塊（thread block）讀一段。\n")
    assert unglossed_first_uses("# 頁\n\n把每一段乘上 exp(m − M)，重新縮放倍數是 1 的那段不變。\n")
    assert not unglossed_first_uses("# 頁\n\n切成很多個執行緒區塊（thread block）。每個執行緒區塊讀一段。\n")


# d_model is a vector's dimension (the terminology row 'dimension'): 「向量維度」, 「維度 128」, "dimension 128",
# not 「寬度 128」 or "a 128-wide vector" beside the glossary's 維度 (the second reader's review, C42).
WIDTH_OF_D_MODEL = re.compile(r"寬度 ?\[\[fact:[\w.]+\.d_model\]\]|\bwidth \[\[fact:[\w.]+\.d_model\]\]"
                              r"|\[\[fact:[\w.]+\.d_model\]\]-wide")


@pytest.mark.parametrize("page, lang", CASES, ids=IDS)
def test_d_model_is_a_dimension_not_a_width(page, lang):
    found = WIDTH_OF_D_MODEL.findall(source(page, lang).read_text(encoding="utf-8"))
    assert not found, found


@pytest.mark.parametrize("text, bad", [("3 層、寬度 [[fact:course.d_model]]、共", True), ("a [[fact:course.d_model]]-wide vector", True),
                                       ("layers, width [[fact:gpt2.d_model]],", True), ("維度 [[fact:course.d_model]]", False),
                                       ("a [[fact:course.d_model]]-dimensional vector", False)])
def test_the_width_check(text, bad):
    assert bool(WIDTH_OF_D_MODEL.search(text)) is bad


@pytest.mark.parametrize("page, lang", CASES, ids=IDS)
def test_pages_name_the_release(page, lang):
    found = release_findings(source(page, lang).read_text(encoding="utf-8"))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("text, bad", [
    ("Mistral 7B uses a window of 4,096.", True), ("Pick Mistral 7B, set the lever to the window.", True),
    ("Mistral 7B v0.1 uses a window of 4,096.", False), ("Mistral 7B（第一版，v0.1）的注意力", False),
    ("- Jiang et al., [Mistral 7B](https://arxiv.org/abs/2310.06825) (2023)", False),
    ("Sarathi-Serve on Mistral-7B", False),
    ("32K (the length Llama 3.1 accepts)", True), ("Llama 3.1 has the same shape and accepts up to 128K", False),
    ("Llama 3.1 405B is twice as wide", False),
])
def test_the_release_check(text, bad):
    assert bool(release_findings(text + "\n")) is bad


@pytest.mark.parametrize("page, lang", CASES, ids=IDS)
def test_pages_use_the_terms(page, lang):
    found = page_findings(source(page, lang).read_text(encoding="utf-8"), lang)
    assert not found, f"{len(found)} variant(s) in {source(page, lang).name}:\n" + "\n".join(found)


@pytest.mark.parametrize("lang", LANGS)
def test_glossary_headings_name_each_concept_by_its_term(lang):
    markdown = source("glossary", lang).read_text(encoding="utf-8")
    anchored = {m.group("anchor") for m in _HEADING.finditer(markdown)} & {t.concept for t in TERMS}
    assert len(anchored) >= 10, "the glossary's anchors no longer match the table's concepts"
    found = heading_findings(markdown, lang)
    assert not found, "\n".join(found)


# --------------------------------------------------------------------------- the checks catch what they should

SAMPLE = {  # clean pages, with each place where another name is allowed
    "en": ("# A page\n\nThe KV cache grows with the prompt.\n\n```python\nkv_cache = 'K/V cache'\n```\n\n"
           "```mermaid\nflowchart LR\n  A[token] --> B[KV cache]\n```\n"
           "- Smith, [Learning an embedding vector per head size](https://example.org/paper) (2020).\n"),
    "zh-TW": ("# 一頁\n\n[KV 快取](../glossary.md#kv-cache)隨著提示詞變大，第一次出現寫成詞元（token）。\n\n"
              "`token` 在程式碼裡不算，輸入空白會得到一段提示訊息；作者可以在頁面裡嵌入即時示範。\n\n```mermaid\nflowchart LR\n  A[詞元] --> B[KV 快取]\n```\n"
              "\nEnglish: KV cache\n\n- Hugging Face，[KV cache strategies](https://huggingface.co/docs)：實務說明。\n"),
}
PLANTED = {  # (language, where, what to add) -> the concept it must be caught as
    ("en", "prose", "Each attention head has a head size of 128."): "head-dim",
    ("en", "prose", "The interactive demo below runs in your browser."): "demo",
    ("en", "prose", "A GPU reaches 989 TFLOPS."): "flops",
    ("en", "diagram", "```mermaid\nflowchart LR\n  A[prompt] -->|writes| B[K/V cache]\n```"): "kv-cache",
    ("zh-TW", "prose", "每個 token 都會留下筆記。"): "token",
    ("zh-TW", "prose", "這就是屋頂線模型。"): "roofline",
    ("zh-TW", "prose", "把提示文字餵給模型。"): "prompt",
    ("zh-TW", "prose", "每個注意力頭各算一次。"): "head",
    ("zh-TW", "link", "詞元 id 會選出 [embedding](../glossary.md#embedding) 表裡的一列。"): "embedding",
    ("zh-TW", "prose", "切換成輸出嵌入，再看一次地圖。"): "embedding",
    ("zh-TW", "diagram", "```mermaid\nflowchart LR\n  A[詞元] --> B[鍵向量]\n```"): "key",
    # issue 19: one name per thing, and 區塊 for the paging block only
    ("zh-TW", "prose", "每一層裡有兩個子區塊。"): "layer",
    ("zh-TW", "prose", "Transformer 就是同一種區塊一層層疊起來。"): "layer",
    ("zh-TW", "prose", "key 要等湊滿 32 個詞元的區塊才量化。"): "token-group",
    ("zh-TW", "prose", "解碼則是反過來查表。"): "detokenize",
    ("zh-TW", "prose", "把這些小塊解碼回去。"): "detokenize",
    ("zh-TW", "prose", "所以解碼受限於記憶體。"): "memory-bound",
    ("zh-TW", "prose", "它的達成頻寬很低。"): "achieved-bandwidth",
    ("zh-TW", "link", "得到實際達到的[頻寬（bandwidth）](../glossary.md#bandwidth)。"): "achieved-bandwidth",
    ("zh-TW", "prose", "換一種量化方式看看。"): "quant-scheme",
    ("zh-TW", "prose", "兩段文字在這裡分歧。"): "divergence",
    ("zh-TW", "prose", "一套正式上線的函式庫。"): "production",
    ("zh-TW", "prose", "換成先旋轉的做法。"): "rotated-scheme",
    # issue 19, second review: one term for each of 區塊's other senses, 共享, a pass, a rollback
    ("zh-TW", "prose", "一層的注意力就只剩每個 head 一個區塊，大部分的 SM 都閒著。"): "thread-block",
    ("zh-TW", "prose", "2 個 KV head × 4 段 = 8 個區塊同時工作。"): "thread-block",
    ("zh-TW", "prose", "每一段都是一個執行緒區塊，讓每個 SM 都有事做。每個區塊只替自己那一段計算。"): "thread-block",
    ("en", "prose", "Each block must read its share of the cache, so most SMs wait."): "thread-block",
    ("zh-TW", "prose", "找出縮放係數是 1 的那一段。"): "rescale",
    ("zh-TW", "prose", "把快取退回去。"): "rollback",
    ("en", "prose", "The rolling buffer cannot rewind past a slot it has overwritten."): "rollback",
    ("zh-TW", "prose", "快取圖在同一次驗證往下掉。"): "pass",
    ("zh-TW", "prose", "四個取樣共用一段 30 個詞元的提示詞。"): "shared-block",
    ("zh-TW", "prose", "有些抽屜由兩位讀者共用。"): "shared-block",
    ("zh-TW", "prose", "開頭相同的序列，還可以共用那幾個區塊。"): "shared-block",
    ("zh-TW", "prose", "跨層注意力讓相鄰的層共用 key 和 value。"): "cross-layer",
    ("zh-TW", "prose", "公式裡的 Q、K、V 也正是它們的字首。"): "prefix-sharing",
    ("zh-TW", "prose", "KIVI 的 key 一次把一組位置一起量化。"): "token-group",
    ("zh-TW", "prose", "實際上線的模型把快取壓到 6 位元。"): "production",
    ("zh-TW", "prose", "預填通常卡在運算能力，而不是卡在記憶體。"): "memory-bound",
    ("en", "prose", "Longer vectors give larger dot products."): "dimension",
    ("en", "prose", "An ordered list of numbers, here of length d_model."): "dimension",
    # the second reader's review
    ("zh-TW", "prose", "課程模型在（c）實際跑了 17 次前向計算。"): "pass",
    ("zh-TW", "prose", "它們是重度命中的詞元。"): "heavy-hitter",
    ("zh-TW", "prose", "H2O 留下到目前為止得到最多注意力的位置。"): "attention-received",
    ("zh-TW", "prose", "再加上到目前為止收到最多注意力的 16 個位置。"): "attention-received",
    ("zh-TW", "prose", "每個詞元的向量寬度是 128。"): "dimension",
    ("zh-TW", "prose", "在這門課裡，它的長度是 d_model。"): "dimension",
}


@pytest.mark.parametrize("text", ["一個 16 個詞元的區塊，在區塊表裡佔一格。", "用 16 詞元的區塊。", "每一層有兩個子層。",
                                  "key 要等湊滿 32 個詞元的詞元組才量化。", "把 id 還原成文字。", "貪婪解碼選出的詞元。",
                                  "解碼受記憶體頻寬限制，預填受運算能力限制。", "實測頻寬", "換成先隨機旋轉。",
                                  "兩段文字在第 3 步分開。", "商用模型的 tokenizer",
                                  "每個 KV head 的每一段都是一個執行緒區塊，每個 SM 都有事做。", "vLLM 的 GPU kernel 直接照區塊表讀取。",
                                  "每個區塊 16 個詞元：夠大，GPU 讀起來有效率。", "找出重新縮放倍數是 1 的那一段。",
                                  "把快取倒回去，由 truncate(n) 截斷。", "再用一次執行驗證這些猜測。",
                                  "權重給批次裡所有序列共用。", "四個取樣共享一段提示詞。", "好幾個 query head 共用一個 KV head。",
                                  "跨層共享讓不同的層共享 key 和 value。", "一個有 d_c 個數字的潛在向量。", "從共用的區塊池拿區塊。",
                                  "公式裡的 Q、K、V 也正是它們的第一個字母。", "KIVI 以詞元組為單位量化。", "實際部署的模型。"])
def test_the_issue_19_terms_allow_their_own_names(text):
    assert variants(text, "zh-TW") == []


@pytest.mark.parametrize("text", ["vLLM's GPU kernel reads through the block table directly.",
                                  "Blocks of 16 tokens are large enough for the GPU to read efficiently.",
                                  "One thread block per head, so most SMs wait.", "Roll the cache back to the kept text.",
                                  "An ordered list of numbers; here d_model of them, its dimension.",
                                  "the colour shows the length of its key vector"])
def test_the_second_review_terms_allow_their_own_names_in_english(text):
    assert variants(text, "en") == []


@pytest.mark.parametrize("lang", LANGS)
def test_a_clean_sample_passes(lang):
    assert page_findings(SAMPLE[lang], lang) == []


@pytest.mark.parametrize("lang, where, planted", list(PLANTED), ids=[f"{k[0]}-{v}-{k[1]}" for k, v in PLANTED.items()])
def test_the_checks_catch_a_planted_variant(lang, where, planted):
    found = page_findings(SAMPLE[lang] + "\n" + planted + "\n", lang)
    assert found and all(f.startswith(f"{'diagram' if where == 'diagram' else 'line'}") for f in found), found
    assert all(f" {PLANTED[(lang, where, planted)]} " in f for f in found), found


@pytest.mark.parametrize("lang, heading, ok", [
    ("en", "### KV cache {#kv-cache}", True),
    ("en", "### Feed-forward network (FFN) {#feed-forward}", True),
    ("en", "### Feed-forward block {#feed-forward}", False),
    ("en", "### FLOPs {#flops}", True),
    ("zh-TW", "### KV 快取（KV cache） {#kv-cache}", True),
    ("zh-TW", "### Query（查詢向量） {#query}", True),
    ("zh-TW", "### 查詢向量（query） {#query}", False),
    ("zh-TW", "### 前饋網路（FFN） {#feed-forward}", True),
    ("zh-TW", "### 屋頂線模型（roofline） {#roofline}", False),
])
def test_the_heading_check(lang, heading, ok):
    assert (heading_findings(heading + "\n", lang) == []) is ok
