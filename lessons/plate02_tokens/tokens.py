"""Plate 2: text -> tokens. The course tokenizer cuts the reader's text into pieces with ids,
and counts tokens, characters and UTF-8 bytes for an English sentence and its Chinese twin;
the same pairs counted by two production tokenizers (GPT-4's cl100k_base, GPT-4o's
o200k_base) sit beside the course tokenizer's counts.

A common Chinese character is one token in the course tokenizer; a rare one stays as two or
three byte tokens, which the pieces show as their bytes ("<E5 A4>") instead of hiding them.
The production tokenizers cannot run in Pyodide: their counts are package data written by
``tools/site/real_token_counts.py`` (with the package's name and version) and read here.
"""
from __future__ import annotations

import functools
import json
from importlib import resources

from engine.tokenizer import FIRST_MERGE_ID, Tokenizer
from lessons.common import labels as L
from lessons.common.base import LessonInputError, select, text
from lessons.common.figures import COLORS, figure, fmt_int, fmt_num, layout, t, table

NAME = "tokens"
PLATE = "plates/02-tokens"
TITLE = {"en": "Tokens: how text is cut into pieces", "zh-TW": "詞元（token）：文字怎麼被切成小塊"}

MAX_CHARS = 500

# Built-in sentence pairs: (English, Traditional Chinese), the same meaning.
PAIRS = {
    "cat": ("The cat sat on the mat.", "貓坐在墊子上。"),
    "weather": ("The weather is really nice today.", "今天天氣真好。"),
    "tea": ("I would like a cup of milk tea with pearls, please.", "請給我一杯珍珠奶茶。"),
    "king": ("The king and the queen walked into the castle.", "國王和女王走進了城堡。"),
    "cache": ("The KV cache keeps the notes of earlier tokens.", "KV 快取存著前面詞元的筆記。"),
}
PAIR_LABELS = {
    "cat": {"en": "The cat sat on the mat", "zh-TW": "貓坐在墊子上"},
    "weather": {"en": "The weather is nice", "zh-TW": "今天天氣真好"},
    "tea": {"en": "Milk tea with pearls", "zh-TW": "珍珠奶茶"},
    "king": {"en": "The king and the queen", "zh-TW": "國王和女王"},
    "cache": {"en": "The KV cache", "zh-TW": "KV 快取"},
}

CONTROLS = (
    text("text", {"en": "Your text", "zh-TW": "你的文字"}, "The cat sat on the mat.",
         help={"en": "Any text: English, Chinese, emoji… (up to 500 characters).",
               "zh-TW": "英文、中文、emoji，什麼文字都可以（最多 500 個字元）。"},
         max_length=MAX_CHARS),
    select("pair", {"en": "Sentence pair to compare", "zh-TW": "要比較的句子"}, "weather",
           [(k, PAIR_LABELS[k]) for k in PAIRS],
           help={"en": "An English sentence and its Chinese translation.", "zh-TW": "一句英文和意思相同的中文。"}),
)

COURSE_TOKENIZER = {"en": "course tokenizer", "zh-TW": "課程的 tokenizer"}
YOUR_TEXT = {"en": "your text", "zh-TW": "你的文字"}
CHARACTERS = {"en": "characters", "zh-TW": "字元數"}
UTF8_BYTES = {"en": "UTF-8 bytes", "zh-TW": "UTF-8 位元組數"}


@functools.lru_cache(maxsize=1)
def course_tokenizer() -> Tokenizer:
    """The course model's tokenizer (the same file load_course_model uses), without the weights."""
    return Tokenizer.load()


@functools.lru_cache(maxsize=1)
def real_counts() -> dict:
    """lessons/plate02_tokens/real_token_counts.json: the pairs as counted by production tokenizers."""
    return json.loads(resources.files("lessons.plate02_tokens").joinpath("real_token_counts.json").read_text("utf-8"))


def real_tokenizers() -> list[dict]:
    """The stored tokenizers, each with counts only for the pairs whose text is still the same
    (a pair edited in PAIRS without rerunning the generator shows no stale number)."""
    doc = real_counts()
    fresh = {k for k, (en, zh) in PAIRS.items() if doc["texts"].get(k) == {"en": en, "zh-TW": zh}}
    return [dict(r, pairs={k: v for k, v in r["pairs"].items() if k in fresh}) for r in doc["tokenizers"]]


@functools.lru_cache(maxsize=64)
def course_count(sentence: str) -> int:
    """Tokens of a built-in sentence in the course tokenizer (counted once per process)."""
    return len(course_tokenizer().encode(sentence))


def _split_char(tok, token_id: int) -> bool:
    """True when a token's bytes are not whole UTF-8 characters (part of a character)."""
    try:
        tok.token_bytes(token_id).decode("utf-8")
        return False
    except UnicodeDecodeError:
        return True


def _counts(tok, s: str) -> tuple[int, int, int]:
    """(tokens, characters, UTF-8 bytes) of ``s``."""
    return len(tok.encode(s)), len(s), len(s.encode("utf-8"))


def _real_name(r: dict) -> str:
    """"cl100k_base (gpt-4)": the encoding and the first model the package maps to it."""
    return f"{r['name']} ({r['models'][0]})" if r["models"] else r["name"]


# --------------------------------------------------------------------------- figures and tables


def _token_table(tok, ids, lang) -> tuple[list[dict], dict]:
    """(token chips, the table of the reader's text token by token)."""
    chips, rows = [], []
    for n, (i, p, (a, b)) in enumerate(zip(ids, tok.pieces(ids), tok.byte_spans(ids)), start=1):
        hexs = " ".join(f"{x:02X}" for x in tok.token_bytes(i))
        kind = (t({"en": "part of a character", "zh-TW": "字元的一部分"}, lang) if _split_char(tok, i)
                else t({"en": "text", "zh-TW": "文字"}, lang))
        chips.append({"text": p, "id": i, "title": t({"en": f"token {n} · id {i} · bytes {hexs}",
                                                      "zh-TW": f"第 {n} 個詞元 · id {i} · 位元組 {hexs}"}, lang)})
        rows.append([n, p, str(i), hexs, f"{a}–{b}", kind])
    cols = [t({"en": "#", "zh-TW": "序號"}, lang), t({"en": "piece", "zh-TW": "片段"}, lang), t(L.TOKEN_ID, lang),
            t({"en": "UTF-8 bytes (hex)", "zh-TW": "UTF-8 位元組（十六進位）"}, lang),
            t({"en": "byte span", "zh-TW": "位元組範圍"}, lang), t({"en": "kind", "zh-TW": "種類"}, lang)]
    return chips, table(t({"en": "Your text, token by token", "zh-TW": "你的文字，一個詞元一列"}, lang), cols, rows)


def _figure_counts(groups, counts, lang) -> dict:
    """Tokens, characters and bytes of the pair's two sentences and of the reader's text."""
    x = [g for g, _ in groups]
    series = [(L.TOKENS, 0, COLORS["vermillion"]), (CHARACTERS, 1, COLORS["blue"]), (UTF8_BYTES, 2, COLORS["grey"])]
    data = [{"type": "bar", "name": t(name, lang), "x": x, "y": [c[k] for c in counts],
             "text": [fmt_int(c[k]) for c in counts], "textposition": "outside",
             "marker": {"color": color}, "customdata": [s for _, s in groups],
             "hovertemplate": f"%{{customdata}}<br>%{{y:,}} {t(name, lang)}<extra></extra>"}
            for name, k, color in series]
    title = t({"en": "Tokens vs characters vs bytes", "zh-TW": "詞元數、字元數與位元組數"}, lang)
    lay = layout("", t({"en": "count", "zh-TW": "數量"}, lang), barmode="group")
    cols = [t({"en": "text", "zh-TW": "文字"}, lang), t({"en": "sentence", "zh-TW": "句子"}, lang), t(L.TOKENS, lang),
            t(CHARACTERS, lang), t(UTF8_BYTES, lang), t({"en": "characters per token", "zh-TW": "每個詞元的字元數"}, lang)]
    rows = [[g, s, n_t, n_c, n_b, n_c / n_t] for (g, s), (n_t, n_c, n_b) in zip(groups, counts)]
    return figure("counts", title, data, lay, cols, rows)


def _figure_real(tok, pair: str, lang) -> dict:
    """The pair's token counts in the course tokenizer and in each production tokenizer."""
    en_s, zh_s = PAIRS[pair]
    reals = [r for r in real_tokenizers() if pair in r["pairs"]]
    names = [t(COURSE_TOKENIZER, lang)] + [_real_name(r) for r in reals]
    en_n = [course_count(en_s)] + [r["pairs"][pair]["en"] for r in reals]
    zh_n = [course_count(zh_s)] + [r["pairs"][pair]["zh-TW"] for r in reals]
    vocab = [tok.vocab_size] + [r["vocab_size"] + r["special_tokens"] for r in reals]  # like for like: specials included
    data = [{"type": "bar", "name": t(name, lang), "x": names, "y": ys, "text": [fmt_int(v) for v in ys],
             "textposition": "outside", "marker": {"color": color},
             "hovertemplate": f"%{{x}}<br>%{{y:,}} {t(L.TOKENS, lang)}<extra>{t(name, lang)}</extra>"}
            for name, ys, color in ((L.ENGLISH, en_n, COLORS["blue"]), (L.CHINESE, zh_n, COLORS["vermillion"]))]
    title = t({"en": "The same pair in production tokenizers", "zh-TW": "同一組句子，交給商用模型的 tokenizer"}, lang)
    lay = layout("", t(L.TOKENS, lang), barmode="group")
    cols = [t({"en": "tokenizer", "zh-TW": "tokenizer"}, lang),
            t({"en": "vocabulary (tokens, special ones included)", "zh-TW": "詞彙表（詞元數，含特殊詞元）"}, lang),
            t({"en": "English tokens", "zh-TW": "英文詞元數"}, lang), t({"en": "Chinese tokens", "zh-TW": "中文詞元數"}, lang),
            t({"en": "Chinese ÷ English", "zh-TW": "中文 ÷ 英文"}, lang)]
    rows = [[n, v, e, z, z / e] for n, v, e, z in zip(names, vocab, en_n, zh_n)]
    return figure("real_tokenizers", title, data, lay, cols, rows)


def _table_all_pairs(tok, lang) -> dict:
    """Chinese ÷ English tokens for every pair and tokenizer: the claim of plate 2, pair by pair."""
    reals = real_tokenizers()
    cols = [t({"en": "sentence pair", "zh-TW": "句子"}, lang), t(COURSE_TOKENIZER, lang)] + [_real_name(r) for r in reals]
    rows = []
    for key, (en_s, zh_s) in PAIRS.items():
        ratios = [course_count(zh_s) / course_count(en_s)]
        ratios += [r["pairs"][key]["zh-TW"] / r["pairs"][key]["en"] if key in r["pairs"] else None for r in reals]
        rows.append([t(PAIR_LABELS[key], lang)] + ratios)
    return table(t({"en": "Every sentence pair: Chinese tokens ÷ English tokens",
                    "zh-TW": "每一組句子：中文詞元數 ÷ 英文詞元數"}, lang), cols, rows)


# --------------------------------------------------------------------------- notes


def _notes_text(tok, counts, split, lang) -> list[str]:
    (te, ce, _), (tz, cz, _), (tu, cu, bu) = counts
    notes = [
        t({"en": f"Your text: {fmt_int(cu)} characters, {fmt_int(bu)} UTF-8 bytes, {fmt_int(tu)} tokens "
                 f"({fmt_num(cu / tu)} characters per token).",
           "zh-TW": f"你的文字：{fmt_int(cu)} 個字元、{fmt_int(bu)} 個 UTF-8 位元組、{fmt_int(tu)} 個詞元"
                    f"（平均每個詞元 {fmt_num(cu / tu)} 個字元）。"}, lang),
        t({"en": f"English: {ce} characters → {te} tokens. Chinese: {cz} characters → {tz} tokens. "
                 f"Each Chinese character is 3 UTF-8 bytes; the course tokenizer makes a common one a single token.",
           "zh-TW": f"英文：{ce} 個字元 → {te} 個詞元。中文：{cz} 個字元 → {tz} 個詞元。"
                    f"中文字在 UTF-8 裡每個佔 3 個位元組；課程的 tokenizer 會把常見的字合成一個詞元。"}, lang),
    ]
    if sum(split):
        notes.append(t({
            "en": (f"{sum(split)} of your tokens are parts of a character: the tokenizer never learned that character "
                   f"as a whole, so it keeps its bytes, shown as hex like “<E5 A4>”. Together they still decode to the exact text."),
            "zh-TW": (f"你的詞元裡有 {sum(split)} 個只是字元的一部分：tokenizer 沒學過這個字，只好保留它的位元組，"
                      f"以「<E5 A4>」這樣的十六進位顯示。這些詞元合起來，仍然能還原成一模一樣的文字。")}, lang))
    return notes


def _ratio_note(tok, reals) -> dict:
    """Chinese tokens ÷ English tokens over the pairs every tokenizer counted."""
    keys = [k for k in PAIRS if all(k in r["pairs"] for r in reals)]

    def zh_per_en(count) -> str:
        return fmt_num(sum(count(k, "zh-TW") for k in keys) / sum(count(k, "en") for k in keys))

    course = zh_per_en(lambda k, lang: course_count(PAIRS[k][lang == "zh-TW"]))
    ratio = {r["name"]: zh_per_en(lambda k, lang, r=r: r["pairs"][k][lang]) for r in reals}
    return {"en": f"Over these {len(keys)} sentence pairs, the Chinese sentences take {course}× the English tokens in "
                  f"the course tokenizer; " + ", ".join(f"{v}× in {k}" for k, v in ratio.items()) + ".",
            "zh-TW": f"這 {len(keys)} 組句子合計，中文句子的詞元數是英文的幾倍：課程的 tokenizer {course} 倍，"
                     + "，".join(f"{k} {v} 倍" for k, v in ratio.items()) + "。"}


def _why_note(tok, reals) -> dict:
    """Why the course tokenizer counts differently, with the stored per-tokenizer evidence."""
    vocab = {"en": " and ".join(fmt_int(r["vocab_size"]) for r in reals),
             "zh-TW": "與".join(f" {fmt_int(r['vocab_size'])} " for r in reals).strip()}
    per = {"en": "; ".join(f"{r['name']} needs more than one token for {r['zh_chars_multi_token']} of the {r['zh_chars']} "
                           f"distinct characters, and {r['zh_tokens_multi_char']} of its {r['zh_tokens']} tokens for "
                           f"the Chinese sentences hold two characters or more" for r in reals),
           "zh-TW": "；".join(f"{r['name']} 在 {r['zh_chars']} 個不同的字裡有 {r['zh_chars_multi_token']} 個要用一個以上的詞元，"
                             f"它切出的 {r['zh_tokens']} 個中文詞元裡，有 {r['zh_tokens_multi_char']} 個包含兩個字以上"
                             for r in reals)}
    size = fmt_int(tok.vocab_size - (FIRST_MERGE_ID - 256))  # learned: bytes and merges, not <|eos|>, as for the others
    return {"en": f"Why the course tokenizer differs: it learned its {size} regular tokens from the course's small "
                  f"bilingual corpus, and its merges never join two Chinese characters, so a common character is exactly "
                  f"one token. The production tokenizers learned {vocab['en']} regular tokens from far more text; a character "
                  f"missing from their vocabulary is written as 2–3 byte tokens. In these sentences, {per['en']}.",
            "zh-TW": f"課程的 tokenizer 為什麼不一樣：它的 {size} 個一般詞元是從課程自己的小型中英語料學來的，合併規則又從不把"
                     f"兩個中文字併在一起，所以常見的字剛好是一個詞元。商用模型的 tokenizer 從多得多的文字裡學出 "
                     f"{vocab['zh-TW']} 個一般詞元；詞彙表裡沒有的字，就拆成 2 到 3 個位元組詞元。在這幾組句子裡，{per['zh-TW']}。"}


def _notes_real(tok, lang) -> list[str]:
    """Chinese vs English over all pairs, why the course tokenizer counts differently, and
    where the production counts come from: every number read from the stored file."""
    doc, reals = real_counts(), [r for r in real_tokenizers() if r["pairs"]]
    pkg = f"{doc['package']['name']} {doc['package']['version']}"
    source = {"en": f"Production counts: {pkg} (the vocabularies ship inside the package, nothing is downloaded), run "
                    f"by tools/site/real_token_counts.py and stored with the course. These tokenizers do not run in the "
                    f"browser, so your own text is counted by the course tokenizer only.",
              "zh-TW": f"商用模型 tokenizer 的詞元數：由 tools/site/real_token_counts.py 用 {pkg} 算好後存進課程"
                       f"（詞彙表就在套件裡，不必另外下載）。這些 tokenizer 無法在瀏覽器裡執行，"
                       f"所以你自己的文字只用課程的 tokenizer 計算。"}
    return [t(note, lang) for note in (_ratio_note(tok, reals), _why_note(tok, reals), source)]


def run(values: dict, lang: str) -> dict:
    tok = course_tokenizer()
    s = values["text"]
    if not s:
        raise LessonInputError("Type some text to see its tokens.", "請輸入一些文字，才看得到它的詞元。")
    ids = tok.encode(s)
    chips, token_table = _token_table(tok, ids, lang)
    en_s, zh_s = PAIRS[values["pair"]]
    groups = [(t(L.ENGLISH, lang), en_s), (t(L.CHINESE, lang), zh_s), (t(YOUR_TEXT, lang), s)]
    counts = [_counts(tok, g) for _, g in groups]
    split = [_split_char(tok, i) for i in ids]
    notes = _notes_text(tok, counts, split, lang) + _notes_real(tok, lang)
    notes.append(t({"en": f"Course tokenizer: byte-level BPE with {fmt_int(tok.vocab_size)} tokens (256 bytes, 1 end-of-text, "
                          f"the rest merges).",
                    "zh-TW": f"課程的 tokenizer：位元組層級的 BPE，共 {fmt_int(tok.vocab_size)} 個詞元"
                             f"（256 個位元組、1 個結束詞元，其餘都是合併出來的）。"}, lang))
    figures = [_figure_counts(groups, counts, lang), _figure_real(tok, values["pair"], lang)]
    return {"tokens": chips, "figures": figures,
            "tables": [token_table, _table_all_pairs(tok, lang)], "notes": notes}
