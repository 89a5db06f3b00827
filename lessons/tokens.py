"""Plate 2: text -> tokens. The course tokenizer cuts the reader's text into pieces with ids,
and counts tokens, characters and UTF-8 bytes for an English sentence and its Chinese twin.

A common Chinese character is one token in the course tokenizer; a rare one stays as two or
three byte tokens, which the pieces show as their bytes ("<E5 A4>") instead of hiding them.
"""
from __future__ import annotations

import functools

from engine.tokenizer import Tokenizer
from lessons.base import LessonInputError, select, text
from lessons.figures import COLORS, figure, fmt_int, layout, t, table

TITLE = {"en": "Tokens: how text is cut into pieces", "zh-TW": "詞元（token）：文字怎麼被切成小塊"}

MAX_CHARS = 500

# Built-in sentence pairs: (English, Traditional Chinese), the same meaning.
PAIRS = {
    "cat": ("The cat sat on the mat.", "貓坐在墊子上。"),
    "weather": ("The weather is really nice today.", "今天天氣真好。"),
    "tea": ("I would like a cup of milk tea with pearls, please.", "請給我一杯珍珠奶茶。"),
    "king": ("The king and the queen walked into the castle.", "國王和女王走進了城堡。"),
    "cache": ("The KV cache keeps the notes of earlier tokens.", "KV 快取儲存先前 token 的筆記。"),
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
               "zh-TW": "任何文字：英文、中文、表情符號…（最多 500 個字元）。"},
         max_length=MAX_CHARS),
    select("pair", {"en": "Sentence pair to compare", "zh-TW": "要比較的句子組"}, "weather",
           [(k, PAIR_LABELS[k]) for k in PAIRS],
           help={"en": "An English sentence and its Chinese translation.", "zh-TW": "一句英文與它的中文翻譯。"}),
)


@functools.lru_cache(maxsize=1)
def course_tokenizer() -> Tokenizer:
    """The course model's tokenizer (the same file load_course_model uses), without the weights."""
    return Tokenizer.load()


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


def run(values: dict, lang: str) -> dict:
    tok = course_tokenizer()
    s = values["text"]
    if not s:
        raise LessonInputError("Type some text to see its tokens.", "請輸入一些文字，才能看到它的 token。")
    ids = tok.encode(s)
    pieces = tok.pieces(ids)
    spans = tok.byte_spans(ids)
    split = [_split_char(tok, i) for i in ids]

    chips = []
    rows = []
    for n, (i, p, (a, b), sp) in enumerate(zip(ids, pieces, spans, split), start=1):
        hexs = " ".join(f"{x:02X}" for x in tok.token_bytes(i))
        kind = (t({"en": "part of a character", "zh-TW": "字元的一部分"}, lang) if sp
                else t({"en": "text", "zh-TW": "文字"}, lang))
        chips.append({"text": p, "id": i,
                      "title": t({"en": f"token {n} · id {i} · bytes {hexs}", "zh-TW": f"第 {n} 個詞元 · 編號 {i} · 位元組 {hexs}"}, lang)})
        rows.append([n, p, i, hexs, f"{a}–{b}", kind])
    cols = [t({"en": "#", "zh-TW": "序號"}, lang), t({"en": "piece", "zh-TW": "片段"}, lang),
            t({"en": "token id", "zh-TW": "詞元編號"}, lang), t({"en": "UTF-8 bytes (hex)", "zh-TW": "UTF-8 位元組（十六進位）"}, lang),
            t({"en": "byte span", "zh-TW": "位元組範圍"}, lang), t({"en": "kind", "zh-TW": "種類"}, lang)]
    token_table = table(t({"en": "Your text, token by token", "zh-TW": "你的文字，逐個詞元"}, lang), cols, rows)

    # ------------------------------------------------------------------ comparison chart
    en_s, zh_s = PAIRS[values["pair"]]
    groups = [(t({"en": "English", "zh-TW": "英文"}, lang), en_s),
              (t({"en": "Chinese", "zh-TW": "中文"}, lang), zh_s),
              (t({"en": "your text", "zh-TW": "你的文字"}, lang), s)]
    counts = [_counts(tok, g) for _, g in groups]
    x = [g for g, _ in groups]
    series = [({"en": "tokens", "zh-TW": "詞元數"}, 0, COLORS["vermillion"]),
              ({"en": "characters", "zh-TW": "字元數"}, 1, COLORS["blue"]),
              ({"en": "UTF-8 bytes", "zh-TW": "UTF-8 位元組數"}, 2, COLORS["grey"])]
    data = [{"type": "bar", "name": t(name, lang), "x": x, "y": [c[k] for c in counts],
             "text": [fmt_int(c[k]) for c in counts], "textposition": "outside",
             "marker": {"color": color}, "customdata": [g for _, g in groups],
             "hovertemplate": f"%{{customdata}}<br>%{{y:,}} {t(name, lang)}<extra></extra>"}
            for name, k, color in series]
    title = t({"en": "Tokens vs characters vs bytes", "zh-TW": "詞元數、字元數與位元組數"}, lang)
    lay = layout(title, "", t({"en": "count", "zh-TW": "數量"}, lang), barmode="group")
    fcols = [t({"en": "text", "zh-TW": "文字"}, lang), t({"en": "sentence", "zh-TW": "句子"}, lang),
             t({"en": "tokens", "zh-TW": "詞元數"}, lang), t({"en": "characters", "zh-TW": "字元數"}, lang),
             t({"en": "UTF-8 bytes", "zh-TW": "UTF-8 位元組數"}, lang),
             t({"en": "characters per token", "zh-TW": "每個詞元的字元數"}, lang)]
    frows = [[g, sent, n_t, n_c, n_b, round(n_c / n_t, 2)] for (g, sent), (n_t, n_c, n_b) in zip(groups, counts)]
    fig = figure("counts", title, data, lay, fcols, frows)

    # ------------------------------------------------------------------ notes
    (te, ce, _), (tz, cz, _), (tu, cu, bu) = counts
    notes = [
        t({"en": f"Your text: {fmt_int(cu)} characters, {fmt_int(bu)} UTF-8 bytes, {fmt_int(tu)} tokens "
                 f"({cu / tu:.2f} characters per token).",
           "zh-TW": f"你的文字：{fmt_int(cu)} 個字元、{fmt_int(bu)} 個 UTF-8 位元組、{fmt_int(tu)} 個詞元"
                    f"（每個詞元平均 {cu / tu:.2f} 個字元）。"}, lang),
        t({"en": f"English: {ce} characters → {te} tokens. Chinese: {cz} characters → {tz} tokens. "
                 f"Each Chinese character is 3 UTF-8 bytes; the course tokenizer makes a common one a single token.",
           "zh-TW": f"英文：{ce} 個字元 → {te} 個詞元。中文：{cz} 個字元 → {tz} 個詞元。"
                    f"每個中文字在 UTF-8 中佔 3 個位元組；課程的 tokenizer 把常見的字合成一個詞元。"}, lang),
    ]
    n_split = sum(split)
    if n_split:
        notes.append(t({
            "en": (f"{n_split} of your tokens are parts of a character: the tokenizer never learned that character "
                   f"as a whole, so it keeps its bytes, shown as hex like “<E5 A4>”. Together they still decode to the exact text."),
            "zh-TW": (f"你的詞元中有 {n_split} 個是字元的一部分：tokenizer 沒有把那個字學成一整塊，只好保留它的位元組，"
                      f"以「<E5 A4>」這樣的十六進位顯示。它們合起來仍能還原成原本的文字。")}, lang))
    notes.append(t({"en": f"Course tokenizer: byte-level BPE with {fmt_int(tok.vocab_size)} tokens (256 bytes, 1 end-of-text, the rest merges).",
                    "zh-TW": f"課程的 tokenizer：位元組層級 BPE，共 {fmt_int(tok.vocab_size)} 個詞元（256 個位元組、1 個結束符號，其餘為合併）。"}, lang))
    return {"tokens": chips, "figures": [fig], "tables": [token_table], "notes": notes}
