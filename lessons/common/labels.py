"""Bilingual labels the lessons share, built on the course's terminology table.

A label is a Text dict, ``{"en": ..., "zh-TW": ...}``; a lesson picks the reader's language
with ``lessons.common.figures.t(label, lang)``. A label with a number in it is a small function that
returns a Text dict (``layer(3)``, ``head(2)``). Words that name a concept of the terminology
table (token, prompt, KV cache, head, prefill, ...) are taken from ``lessons.common.terminology``, so
a label cannot drift from the term the pages use; ``tests/lessons/test_terminology.py`` checks
every string a demo shows either way.

Why one module: the same axis title or column header appeared in four lessons, each spelled
a little differently ("tokens in context", "context (tokens)", 「上下文詞元數」, 「詞元數」),
and the zh-TW wording drifted from the pages (「個 token」, 「提示文字」). Add a label here when
a second lesson needs it; a phrase only one lesson uses stays in that lesson.
"""
from __future__ import annotations

from lessons.common.terminology import term

Text = dict  # {"en": str, "zh-TW": str}


def _term(concept: str) -> Text:
    """The table's own words for ``concept``."""
    row = term(concept)
    return {"en": row.en, "zh-TW": row.zh}


def log(label: Text) -> Text:
    """An axis title on a log scale: "context (tokens)" -> "context (tokens, log)",
    「上下文（詞元數）」 -> 「上下文（詞元數，對數）」."""
    en, zh = label["en"], label["zh-TW"]
    en = f"{en[:-1]}, log)" if en.endswith(")") else f"{en} (log)"
    zh = f"{zh[:-1]}，對數）" if zh.endswith("）") else f"{zh}（對數）"
    return {"en": en, "zh-TW": zh}


_LATIN = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789%)")


def _cjk(ch: str) -> bool:
    return "\u3400" <= ch <= "\u9fff"


def zh_join(*parts: str) -> str:
    """Join zh-TW pieces with a space only where Latin letters or digits meet a Chinese
    character, as Taiwanese technical writing spaces them: ("Llama 3 8B", "在", "筆電 CPU", "上")
    -> "Llama 3 8B 在筆電 CPU 上"; full-width punctuation takes no space."""
    out = ""
    for part in (p for p in parts if p):
        if out and ((out[-1] in _LATIN and _cjk(part[0])) or (_cjk(out[-1]) and part[0] in _LATIN)):
            out += " "
        out += part
    return out


# --------------------------------------------------------------------------- terms

TOKEN = _term("token")                  # token / 詞元
KV_CACHE = _term("kv-cache")            # KV cache / KV 快取
PREFILL = _term("prefill")              # prefill / 預填
DECODE = _term("decode")                # decode / 解碼
RIDGE = _term("ridge-point")            # ridge point / 脊點
INTENSITY = _term("arithmetic-intensity")  # arithmetic intensity / 運算強度
EMBEDDING = _term("embedding")          # embedding / 嵌入向量
TTFT = _term("ttft")                    # time to first token (TTFT) / 首詞元延遲
TPOT = _term("tpot")                    # time per output token (TPOT) / 每詞元輸出時間
SPECULATIVE = _term("speculative-decoding")  # speculative decoding / 推測解碼

# --------------------------------------------------------------------------- controls

PROMPT = {"en": "Prompt", "zh-TW": term("prompt").zh}
MODEL = {"en": "Model", "zh-TW": "模型"}
LAYER = {"en": "Layer", "zh-TW": "層"}
HEAD = {"en": "Head", "zh-TW": term("head").zh}
CONTEXT_LENGTH = {"en": "Context length (tokens)", "zh-TW": "上下文長度（詞元數）"}
BATCH = {"en": "Batch (sequences)", "zh-TW": "批次（序列數）"}

# --------------------------------------------------------------------------- axes and columns

TOKENS = {"en": "tokens", "zh-TW": "詞元數"}                      # a count of tokens
CONTEXT = {"en": "context (tokens)", "zh-TW": "上下文（詞元數）"}  # tokens already in the context
STEP = {"en": "step", "zh-TW": "步驟"}
WEIGHTS = {"en": "weights", "zh-TW": "權重"}
WEIGHT = {"en": "weight", "zh-TW": "權重"}                        # one attention weight
PROBABILITY = {"en": "probability", "zh-TW": "機率"}
POSITION = {"en": "position", "zh-TW": "位置"}
TOKEN_ID = {"en": "id", "zh-TW": "id"}                             # the glossary's 詞元 id
KV_CACHE_BYTES = {"en": "KV cache (bytes)", "zh-TW": "KV 快取（位元組）"}
KV_HEADS = {"en": "KV heads", "zh-TW": "KV head 數"}
PER_TOKEN = {"en": "per token", "zh-TW": "每個詞元"}                # bytes each token adds to the cache
SLIDING_WINDOW = {"en": "sliding window", "zh-TW": "滑動視窗"}
BITS_PER_NUMBER = {"en": "bits per number", "zh-TW": "每個數字的位元數"}
TOTAL_BYTES = {"en": "total (bytes)", "zh-TW": "合計（位元組）"}
FLOP_PER_BYTE = {"en": "FLOP/byte", "zh-TW": "FLOP／位元組"}
INTENSITY_AXIS = {"en": "arithmetic intensity (FLOP/byte)", "zh-TW": "運算強度（FLOP／位元組）"}
WITH_CACHE = {"en": "with KV cache", "zh-TW": "使用 KV 快取"}
WITHOUT_CACHE = {"en": "without cache (recompute all)", "zh-TW": "不用快取（全部重算）"}
ENGLISH = {"en": "English", "zh-TW": "英文"}
CHINESE = {"en": "Chinese", "zh-TW": "中文"}
MEAN_OF_HEADS = {"en": "mean of all heads", "zh-TW": "所有 head 的平均"}
SOURCE = {"en": "source", "zh-TW": "來源"}
COLON = {"en": ": ", "zh-TW": "："}  # between a label and its value (hover texts)


# --------------------------------------------------------------------------- with a number


def _fill(en: str, zh: str, value) -> Text:
    """The two templates with ``value`` put in; a Text dict value gives each language its own."""
    pick = (lambda lang: value[lang]) if isinstance(value, dict) else (lambda lang: value)
    return {"en": en.format(pick("en")), "zh-TW": zh.format(pick("zh-TW"))}


def layer(n: int) -> Text:
    """Layer ``n``, counted from 1 as the pages count them."""
    return _fill("layer {}", "第 {} 層", n)


def head(n: int) -> Text:
    """Query head ``n``, counted from 1."""
    return _fill("head {}", "第 {} 個 head", n)


def layer_bytes(n: int) -> Text:
    """A column header: the bytes layer ``n``'s cache holds."""
    return _fill("layer {} (bytes)", "第 {} 層（位元組）", n)


def ridge_of(device: Text) -> Text:
    """The legend name of a device's ridge point."""
    return _fill("ridge: {}", "脊點：{}", device)


def decode_of(model: Text) -> Text:
    """The legend name of a model's decode steps."""
    return _fill("decode: {}", "解碼：{}", model)
