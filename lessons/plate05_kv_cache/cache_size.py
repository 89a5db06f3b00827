"""Plate 5 calculator: how big the KV cache of a real model gets.

    cache = 2 (K and V) × layers × KV heads × head_dim × tokens kept × batch × bits per number ÷ 8

Shapes come from engine.analysis.model_shapes (published configs), the size from engine.analysis.costs.kv_cache_size,
which keeps a sliding-window model (Mistral 7B) at its last W positions and takes the cache's
bits apart from the weights' format (plate 7's quantized caches: 8, 4, 3.5, 2.5 bits). This
lesson only chooses the points to show and writes the formula out with the reader's numbers.
"""
from __future__ import annotations

import functools
import math
import re

from engine.analysis import costs
from engine.analysis.model_shapes import MODEL_SHAPES, config_from_shape
from lessons.common import cache_bits
from lessons.common import labels as L
from lessons.common.base import select, slider
from lessons.common.figures import COLORS, HIGHLIGHT, figure, floats, fmt_bytes, fmt_int, fmt_percent, layout, t, table
from lessons.common.model_options import NOT_LLAMA  # their cache size is exact, a Llama-style weight count is not

NAME = "cache_size"
PLATE = "plates/05-kv-cache"
TITLE = {"en": "KV cache size calculator", "zh-TW": "KV 快取大小計算器"}

# the weights' format, for the line the cache is compared with: value -> (bytes per weight, label)
DTYPES = {
    "fp32": (4, {"en": "fp32 (4 bytes)", "zh-TW": "fp32（4 位元組）"}),
    "fp16": (2, {"en": "fp16 / bf16 (2 bytes)", "zh-TW": "fp16 / bf16（2 位元組）"}),
    "fp8": (1, {"en": "fp8 (1 byte)", "zh-TW": "fp8（1 位元組）"}),
    "int8": (1, {"en": "int8 (1 byte)", "zh-TW": "int8（1 位元組）"}),
}

MAX_CONTEXT = 131072  # 128K tokens

GIB = 1024**3

CONTROLS = (
    select("model", L.MODEL, "Llama 3 8B", [(name, {"en": s.display_name, "zh-TW": s.display_name})
                                                 for name, s in MODEL_SHAPES.items()],
           help={"en": "Published shapes (layers, KV heads, head dimension, sliding window) of real models.",
                 "zh-TW": "真實模型公開的形狀（層數、KV head 數、head 維度、滑動視窗）。"}),
    cache_bits.control(),
    select("dtype", {"en": "Weights' number format", "zh-TW": "權重的數值格式"}, "fp16",
           [(k, label) for k, (_, label) in DTYPES.items()],
           help={"en": "Bytes per weight, for the weights line the cache is compared with.",
                 "zh-TW": "每個權重佔幾個位元組，用來畫和快取比較的權重線。"}),
    slider("context", L.CONTEXT_LENGTH, 8192, 1024, MAX_CONTEXT, 1024,
           help={"en": "Tokens seen by one sequence (up to 128K).",
                 "zh-TW": "一個序列讀過的詞元數（最多 128K）。"}),
    slider("batch", {"en": "Batch (sequences at once)", "zh-TW": "批次（同時處理的序列數）"}, 1, 1, 64, 1,
           help={"en": "Each sequence in a batch has its own cache.", "zh-TW": "批次裡的每個序列都有自己的快取。"}),
)

LAYERS = {"en": "layers", "zh-TW": "層數"}
HEAD_DIM = {"en": "head dimension", "zh-TW": "head 維度"}


@functools.lru_cache(maxsize=None)
def _config(name: str):
    """The engine Config of a published shape (sliding window included)."""
    return config_from_shape(name)


def _kv(shape, tokens: int, batch: int, bits: float) -> int:
    """Whole bytes of the cache after ``tokens`` tokens per sequence (capped at the window)."""
    return math.ceil(costs.kv_cache_size(_config(shape.name), tokens, batch, kv_bits=bits))


def _context_points(context: int) -> list[int]:
    """0, 4K, 8K … 128K plus the reader's own context, sorted (a linear axis: the growth
    is a straight line, flat past a sliding window, and the chart must not make it look like
    anything else)."""
    return sorted({4096 * i for i in range(MAX_CONTEXT // 4096 + 1)} | {context})


def _weights(shape, nbytes: int) -> int | None:
    """Bytes of the weights in their format, or None where a Llama-style count would be wrong."""
    return None if shape.name in NOT_LLAMA else costs.param_count(_config(shape.name)) * nbytes


# --------------------------------------------------------------------------- figure and table


def _line(name: str, xs, ys, color: str, dash: str, tokens: str) -> dict:
    return {"type": "scatter", "mode": "lines", "name": name, "x": xs, "y": floats(y / GIB for y in ys),
            "line": {"color": color, "dash": dash}, "text": [fmt_bytes(y) for y in ys],
            "hovertemplate": f"%{{x:,}} {tokens}<br>%{{text}}<extra>{name}</extra>"}


def _figure_size(shape, values, lang) -> dict:
    bits, batch, context = cache_bits.bits(values), values["batch"], values["context"]
    weights, xs, tokens = _weights(shape, DTYPES[values["dtype"]][0]), _context_points(context), t(L.TOKENS, lang)
    ys, total = [_kv(shape, x, batch, bits) for x in xs], _kv(shape, context, batch, bits)
    cache = t({"en": f"KV cache at {bits:g} bits (batch {batch})", "zh-TW": f"KV 快取，{bits:g} 位元（批次 {batch}）"}, lang)
    you = t({"en": "your setting", "zh-TW": "目前的設定"}, lang)
    data = [_line(cache, xs, ys, COLORS["blue"], "solid", tokens),
            {"type": "scatter", "mode": "markers", "name": you, "x": [context], "y": floats([total / GIB]),
             "marker": {"color": HIGHLIGHT, "size": 12, "symbol": "diamond"}, "text": [fmt_bytes(total)],
             "hovertemplate": f"%{{x:,}} {tokens}<br>%{{text}}<extra>{you}</extra>"}]
    if bits != cache_bits.FULL:  # the same cache in fp16, to see what the bits took off
        full = t({"en": "the same cache at 16 bits", "zh-TW": "同樣的快取用 16 位元"}, lang)
        data.insert(1, _line(full, xs, [_kv(shape, x, batch, cache_bits.FULL) for x in xs], COLORS["sky"], "dot", tokens))
    if weights is not None:
        name = t({"en": f"model weights ({values['dtype']})", "zh-TW": f"模型權重（{values['dtype']}）"}, lang)
        data.insert(1, _line(name, [xs[0], xs[-1]], [weights] * 2, COLORS["grey"], "dash", tokens))
    title = t({"en": f"{shape.display_name}: KV cache vs context ({bits:g} bits per number)",
               "zh-TW": f"{shape.display_name}：KV 快取大小隨上下文長度的變化（每個數字 {bits:g} 位元）"}, lang)
    lay = layout(t({"en": "context length (tokens)", "zh-TW": "上下文長度（詞元數）"}, lang), "GiB",
                 xaxis={"tickvals": [16384 * i for i in range(9)], "ticktext": [f"{16 * i}K" for i in range(9)]},
                 yaxis={"rangemode": "tozero"})
    cols = [t(L.CONTEXT, lang), t(L.KV_CACHE_BYTES, lang), t(L.KV_CACHE, lang), t(L.WEIGHTS, lang)]
    rows = [[x, y, fmt_bytes(y), "—" if weights is None else fmt_bytes(weights)] for x, y in zip(xs, ys)]
    return figure("size_vs_context", title, data, lay, cols, rows)


def _table_all(values, lang) -> dict:
    bits, context, batch = cache_bits.bits(values), values["context"], values["batch"]
    cols = [t({"en": "model", "zh-TW": "模型"}, lang), t(LAYERS, lang), t(L.KV_HEADS, lang),
            t(HEAD_DIM, lang), t(L.SLIDING_WINDOW, lang), t(L.PER_TOKEN, lang),
            t({"en": f"{fmt_int(context)} tokens × batch {batch}", "zh-TW": f"{fmt_int(context)} 個詞元 × 批次 {batch}"}, lang)]
    rows = [[s.display_name, s.n_layers, s.n_kv_heads, s.head_dim, "—" if s.sliding_window is None else s.sliding_window,
             fmt_bytes(_kv(s, 1, 1, bits)), fmt_bytes(_kv(s, context, batch, bits))] for s in MODEL_SHAPES.values()]
    return table(t({"en": f"Every model at this setting ({bits:g} bits per cached number)",
                    "zh-TW": f"各模型在同樣設定下（快取每個數字 {bits:g} 位元）"}, lang), cols, rows)


# --------------------------------------------------------------------------- notes


def _formula(shape, values, lang) -> str:
    bits, context, batch = cache_bits.bits(values), values["context"], values["batch"]
    kept, total = costs.cached_positions(_config(shape.name), context), _kv(shape, context, batch, bits)
    nums = (f"2 × {shape.n_layers} × {shape.n_kv_heads} × {shape.head_dim} × {fmt_int(kept)} × {batch} × {bits:g} ÷ 8 "
            f"= {fmt_int(total)} B = {fmt_bytes(total)}")
    return t({"en": f"2 (K and V) × layers × KV heads × head dimension × tokens kept × batch × bits per number ÷ 8 = {nums}",
              "zh-TW": f"2（K 與 V）× 層數 × KV head 數 × head 維度 × 保留的詞元數 × 批次 × 每個數字的位元數 ÷ 8 = {nums}"}, lang)


def _notes(shape, values, lang) -> list[str]:
    bits, context, batch = cache_bits.bits(values), values["context"], values["batch"]
    weights, total, per_token = _weights(shape, DTYPES[values["dtype"]][0]), _kv(shape, context, batch, bits), _kv(shape, 1, 1, bits)
    until = {"en": " until the window is full", "zh-TW": "（直到視窗填滿為止）"} if shape.sliding_window else {"en": "", "zh-TW": ""}
    notes = [_formula(shape, values, lang),
             t({"en": f"Each token adds {fmt_bytes(per_token)} per sequence at {bits:g} bits per number{until['en']}.",
                "zh-TW": f"快取每個數字 {bits:g} 位元時，每多一個詞元，每個序列就多 {fmt_bytes(per_token)}{until['zh-TW']}。"}, lang)]
    if weights is not None:
        params, fmt = fmt_int(costs.param_count(_config(shape.name))), values["dtype"]
        notes.append(t({"en": (f"The weights ({params} parameters) take {fmt_bytes(weights)} in {fmt}; "
                               f"the cache is {fmt_percent(total / weights)} of that."),
                        "zh-TW": (f"權重（共 {params} 個參數）用 {fmt} 存放是 {fmt_bytes(weights)}；"
                                  f"快取是權重的 {fmt_percent(total / weights)}。")}, lang))
    if shape.n_kv_heads < shape.n_heads:
        group = shape.n_heads // shape.n_kv_heads
        notes.append(t({
            "en": (f"{shape.display_name} uses grouped-query attention: {shape.n_heads} query heads share {shape.n_kv_heads} "
                   f"KV heads, so its cache is 1/{group} of what one KV head per query head would need."),
            "zh-TW": (f"{shape.display_name} 使用分組查詢注意力（GQA）：{shape.n_heads} 個 query head 共用 {shape.n_kv_heads} 個 "
                      f"KV head，快取只要「每個 query head 各配一個 KV head」時的 1/{group}。")}, lang))
    return notes + _notes_shrink(shape, values, lang) + _caveats(shape, context, lang)


def _notes_shrink(shape, values, lang) -> list[str]:
    """Plate 7's two other levers as they apply here: the model's sliding window and the reader's cache bits."""
    bits, context, batch, W, notes = cache_bits.bits(values), values["context"], values["batch"], shape.sliding_window, []
    if W:
        capped = fmt_bytes(_kv(shape, W, batch, bits))
        notes.append(t({"en": (f"{shape.display_name} uses sliding-window attention: its rolling-buffer cache keeps only the last "
                               f"{fmt_int(W)} positions, so from {fmt_int(W)} tokens on the cache stays at {capped} "
                               "instead of growing with the text."),
                        "zh-TW": (f"{shape.display_name} 使用滑動視窗注意力：它的環狀緩衝快取只留最新的 {fmt_int(W)} 個位置，"
                                  f"所以從 {fmt_int(W)} 個詞元起，快取就停在 {capped}，不再隨著文字變長。")}, lang))
    if bits != cache_bits.FULL:
        full = fmt_bytes(_kv(shape, context, batch, cache_bits.FULL))
        share, now = fmt_percent(bits / cache_bits.FULL), fmt_bytes(_kv(shape, context, batch, bits))
        notes.append(t({"en": (f"At {bits:g} bits per number the cache is {share} of its 16-bit size: {now} instead of "
                               f"{full}. The weights keep their own format; plate 7 shows what the fewer bits cost in accuracy."),
                        "zh-TW": (f"每個數字 {bits:g} 位元時，快取只要 16 位元時的 {share}：{now}，而不是 {full}。"
                                  "權重的格式不變；少掉的位元對準確度有什麼影響，請看第 7 張。")}, lang))
    return notes


def _caveats(shape, context: int, lang: str) -> list[str]:
    notes, name, trained = [], shape.display_name, shape.trained_context
    if trained and context > trained:  # Mistral 7B v0.1: its config allows more than it was trained on
        notes.append(t({
            "en": (f"Note: {name}'s config allows {fmt_int(shape.max_seq_len)} positions, but it was trained on a "
                   f"context of {fmt_int(trained)} tokens; at {fmt_int(context)} the size follows the formula, not a "
                   "length the model was trained for."),
            "zh-TW": (f"注意：{name} 的設定檔允許 {fmt_int(shape.max_seq_len)} 個位置，但訓練時的上下文是 "
                      f"{fmt_int(trained)} 個詞元；{fmt_int(context)} 個詞元時的大小只是照公式算，模型沒有用這麼長的"
                      "文字訓練過。")}, lang))
    elif context > shape.max_seq_len:
        notes.append(t({
            "en": (f"Note: {name} was published with a context window of {fmt_int(shape.max_seq_len)} "
                   f"tokens; {fmt_int(context)} is beyond it, shown only to follow the formula."),
            "zh-TW": (f"注意：{name} 公開的上下文視窗是 {fmt_int(shape.max_seq_len)} 個詞元，"
                      f"{fmt_int(context)} 已經超出，這裡只是照公式算給你看。")}, lang))
    if shape.name in NOT_LLAMA:
        notes.append(t({
            "en": (f"{shape.display_name} is not Llama-style (a two-matrix GELU feed-forward network, learned positions): its "
                   "cache size is exact, but the engine's Llama-style weight count would be wrong, so no weight line is drawn."),
            "zh-TW": (f"{shape.display_name} 不是 Llama 架構（兩個矩陣的 GELU 前饋網路、學習式位置編碼）：快取大小是準確的，"
                      "但引擎用 Llama 架構算出的權重數會算錯，所以不畫權重線。")}, lang))
    notes.append(t({"en": f"Shape source: {shape.source}.", "zh-TW": f"形狀來源：{_zh_source(shape.source)}。"}, lang))
    return notes


_HF_SOURCE = re.compile(r"^config\.json of the Hugging Face repository (\S+)(?: \((.*)\))?$")
# Remarks engine.analysis.model_shapes adds after a citation, as a zh-TW reader gets them (an unknown one stays as it is).
_ZH_REMARKS = {"Not a Llama: learned positions, no RoPE (rope_theta is the engine default)":
               "它不是 Llama 架構：位置編碼是學出來的，沒有 RoPE（rope_theta 只是引擎的預設值）"}


def _zh_source(source: str) -> str:
    """engine.analysis.model_shapes' English citation as Taiwanese writing cites: the repository's config.json,
    titles in 〈〉, 等人, 表 N and full-width punctuation; repository ids and config keys unchanged."""
    out = []
    for part in source.split("; "):
        if m := _HF_SOURCE.match(part):
            out.append(f"Hugging Face 儲存庫 {m[1]} 的 config.json" + (f"（{m[2]}）" if m[2] else ""))
            continue
        cite, _, remark = part.replace(" et al.", " 等人").partition(". ")
        cite = re.sub(r"'([^']+)'", r"〈\1〉", cite).replace(", ", "，")
        cite = re.sub(r" ?\(([^()]*)\)", r"（\1）", re.sub(r"\bTable (\d+)", r"表 \1", cite))
        out.append(cite + (f"。{_ZH_REMARKS.get(remark, remark)}" if remark else ""))
    return "；".join(out)


def run(values: dict, lang: str) -> dict:
    shape = MODEL_SHAPES[values["model"]]
    return {"figures": [_figure_size(shape, values, lang)], "tables": [_table_all(values, lang)],
            "notes": _notes(shape, values, lang)}
