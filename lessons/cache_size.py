"""Plate 5 calculator: how big the KV cache of a real model gets.

    cache = 2 (K and V) × layers × KV heads × head_dim × tokens × batch × bytes per number

Shapes come from engine.shapes (published configs), the size from engine.costs; this lesson
only chooses the points to show and writes the formula out with the reader's numbers.
"""
from __future__ import annotations

from engine import costs
from engine.shapes import MODEL_SHAPES, config_from_shape
from lessons import labels as L
from lessons.base import select, slider
from lessons.model_options import NOT_LLAMA  # their cache size is exact, a Llama-style weight count is not
from lessons.figures import COLORS, HIGHLIGHT, figure, floats, fmt_bytes, fmt_int, fmt_percent, layout, t, table

TITLE = {"en": "KV cache size calculator", "zh-TW": "KV 快取大小計算器"}

# value -> (bytes per number, label)
DTYPES = {
    "fp32": (4, {"en": "fp32 (4 bytes)", "zh-TW": "fp32（4 位元組）"}),
    "fp16": (2, {"en": "fp16 / bf16 (2 bytes)", "zh-TW": "fp16 / bf16（2 位元組）"}),
    "fp8": (1, {"en": "fp8 (1 byte)", "zh-TW": "fp8（1 位元組）"}),
    "int8": (1, {"en": "int8 (1 byte)", "zh-TW": "int8（1 位元組）"}),
}

MAX_CONTEXT = 131072  # 128K tokens

GIB = 1024**3

CONTROLS = (
    select("model", L.MODEL, "Llama 3 8B", [(name, {"en": name, "zh-TW": name}) for name in MODEL_SHAPES],
           help={"en": "Published shapes (layers, KV heads, head dimension) of real models.",
                 "zh-TW": "真實模型公開的形狀（層數、KV head 數、head 維度）。"}),
    select("dtype", {"en": "Number format", "zh-TW": "數值格式"}, "fp16",
           [(k, label) for k, (_, label) in DTYPES.items()],
           help={"en": "Bytes used to store each cached number.", "zh-TW": "快取裡每個數字佔幾個位元組。"}),
    slider("context", L.CONTEXT_LENGTH, 8192, 1024, MAX_CONTEXT, 1024,
           help={"en": "Tokens held in the cache for one sequence (up to 128K).",
                 "zh-TW": "一個序列在快取裡存的詞元數（最多 128K）。"}),
    slider("batch", {"en": "Batch (sequences at once)", "zh-TW": "批次（同時處理的序列數）"}, 1, 1, 64, 1,
           help={"en": "Each sequence in a batch has its own cache.", "zh-TW": "批次裡的每個序列都有自己的快取。"}),
)

LAYERS = {"en": "layers", "zh-TW": "層數"}
KV_HEADS = {"en": "KV heads", "zh-TW": "KV head 數"}
HEAD_DIM = {"en": "head dimension", "zh-TW": "head 維度"}


def _kv(shape, tokens: int, batch: int, nbytes: int) -> int:
    return costs.kv_cache_bytes(shape.n_layers, shape.n_kv_heads, shape.head_dim, tokens, batch, nbytes)


def _context_points(context: int) -> list[int]:
    """0, 4K, 8K … 128K plus the reader's own context, sorted (a linear axis: the growth
    is a straight line, and the chart must not make it look like anything else)."""
    return sorted({4096 * i for i in range(MAX_CONTEXT // 4096 + 1)} | {context})


def _weights(shape, nbytes: int) -> int | None:
    """Bytes of the weights in the same format, or None where a Llama-style count would be wrong."""
    return None if shape.name in NOT_LLAMA else costs.param_count(config_from_shape(shape)) * nbytes


def _figure_size(shape, values, lang) -> dict:
    nbytes = DTYPES[values["dtype"]][0]
    context, batch, weights = values["context"], values["batch"], _weights(shape, nbytes)
    xs = _context_points(context)
    ys = [_kv(shape, x, batch, nbytes) for x in xs]
    total = _kv(shape, context, batch, nbytes)
    cache, you, tokens = (t({"en": f"KV cache (batch {batch})", "zh-TW": f"KV 快取（批次 {batch}）"}, lang),
                          t({"en": "your setting", "zh-TW": "目前的設定"}, lang), t(L.TOKENS, lang))
    data = [
        {"type": "scatter", "mode": "lines", "name": cache, "x": xs, "y": floats(y / GIB for y in ys),
         "line": {"color": COLORS["blue"]}, "text": [fmt_bytes(y) for y in ys],
         "hovertemplate": f"%{{x:,}} {tokens}<br>%{{text}}<extra>{cache}</extra>"},
        {"type": "scatter", "mode": "markers", "name": you, "x": [context], "y": floats([total / GIB]),
         "marker": {"color": HIGHLIGHT, "size": 12, "symbol": "diamond"}, "text": [fmt_bytes(total)],
         "hovertemplate": f"%{{x:,}} {tokens}<br>%{{text}}<extra>{you}</extra>"},
    ]
    if weights is not None:
        name = t({"en": "model weights", "zh-TW": "模型權重"}, lang)
        data.insert(1, {"type": "scatter", "mode": "lines", "name": name, "x": [xs[0], xs[-1]],
                        "y": floats([weights / GIB] * 2), "line": {"color": COLORS["grey"], "dash": "dash"},
                        "text": [fmt_bytes(weights)] * 2, "hovertemplate": f"%{{text}}<extra>{name}</extra>"})
    title = t({"en": f"{shape.name}: KV cache vs context ({values['dtype']})",
               "zh-TW": f"{shape.name}：KV 快取大小與上下文長度（{values['dtype']}）"}, lang)
    lay = layout(t({"en": "context length (tokens)", "zh-TW": "上下文長度（詞元數）"}, lang), "GiB",
                 xaxis={"tickvals": [16384 * i for i in range(9)], "ticktext": [f"{16 * i}K" for i in range(9)]},
                 yaxis={"rangemode": "tozero"})
    cols = [t(L.CONTEXT, lang), t(L.KV_CACHE_BYTES, lang), t(L.KV_CACHE, lang), t(L.WEIGHTS, lang)]
    rows = [[x, y, fmt_bytes(y), "—" if weights is None else fmt_bytes(weights)] for x, y in zip(xs, ys)]
    return figure("size_vs_context", title, data, lay, cols, rows)


def _notes(shape, values, lang) -> list[str]:
    nbytes, dtype_label = DTYPES[values["dtype"]]
    context, batch, weights = values["context"], values["batch"], _weights(shape, nbytes)
    total = _kv(shape, context, batch, nbytes)
    formula = (f"2 × {shape.n_layers} × {shape.n_kv_heads} × {shape.head_dim} × {fmt_int(context)} × "
               f"{batch} × {nbytes} = {fmt_int(total)} B = {fmt_bytes(total)}")
    notes = [
        t({"en": f"2 (K and V) × layers × KV heads × head dimension × tokens × batch × bytes = {formula}",
           "zh-TW": f"2（K 與 V）× 層數 × KV head 數 × head 維度 × 詞元數 × 批次 × 位元組數 = {formula}"}, lang),
        t({"en": f"Each token adds {fmt_bytes(_kv(shape, 1, 1, nbytes))} per sequence in {dtype_label['en']}.",
           "zh-TW": f"以 {dtype_label['zh-TW']} 儲存時，每多一個詞元，每個序列就多 {fmt_bytes(_kv(shape, 1, 1, nbytes))}。"}, lang),
    ]
    if weights is not None:
        params = fmt_int(weights // nbytes)
        notes.append(t({"en": (f"The weights ({params} parameters) take {fmt_bytes(weights)} in the same format; "
                               f"the cache is {fmt_percent(total / weights)} of that."),
                        "zh-TW": (f"同樣格式下，權重（共 {params} 個參數）佔 {fmt_bytes(weights)}；"
                                  f"快取是權重的 {fmt_percent(total / weights)}。")}, lang))
    if shape.n_kv_heads < shape.n_heads:
        group = shape.n_heads // shape.n_kv_heads
        notes.append(t({
            "en": (f"{shape.name} uses grouped-query attention: {shape.n_heads} query heads share {shape.n_kv_heads} "
                   f"KV heads, so its cache is 1/{group} of what one KV head per query head would need."),
            "zh-TW": (f"{shape.name} 使用分組查詢注意力（GQA）：{shape.n_heads} 個 query head 共用 {shape.n_kv_heads} 個 "
                      f"KV head，快取只要「每個 query head 各配一個 KV head」時的 1/{group}。")}, lang))
    return notes + _caveats(shape, context, lang)


def _caveats(shape, context: int, lang: str) -> list[str]:
    notes = []
    if context > shape.max_seq_len:
        notes.append(t({
            "en": (f"Note: {shape.name} was published with a context window of {fmt_int(shape.max_seq_len)} "
                   f"tokens; {fmt_int(context)} is beyond it, shown only to follow the formula."),
            "zh-TW": (f"注意：{shape.name} 公開的上下文視窗是 {fmt_int(shape.max_seq_len)} 個詞元，"
                      f"{fmt_int(context)} 已經超出，這裡只是照公式算給你看。")}, lang))
    if shape.name in NOT_LLAMA:
        notes.append(t({
            "en": (f"{shape.name} is not Llama-style (a two-matrix GELU feed-forward network, learned positions): its "
                   "cache size is exact, but the engine's Llama-style weight count would be wrong, so no weight line is drawn."),
            "zh-TW": (f"{shape.name} 不是 Llama 架構（兩個矩陣的 GELU 前饋網路、學習式位置編碼）：快取大小是準確的，"
                      "但引擎用 Llama 架構算出的權重數會算錯，所以不畫權重線。")}, lang))
    notes.append(t({"en": f"Shape source: {shape.source}.", "zh-TW": f"形狀來源：{shape.source}。"}, lang))
    return notes


def _table_all(values, lang) -> dict:
    nbytes = DTYPES[values["dtype"]][0]
    context, batch = values["context"], values["batch"]
    cols = [t({"en": "model", "zh-TW": "模型"}, lang), t(LAYERS, lang), t(KV_HEADS, lang),
            t(HEAD_DIM, lang), t({"en": "per token", "zh-TW": "每個詞元"}, lang),
            t({"en": f"{fmt_int(context)} tokens × batch {batch}", "zh-TW": f"{fmt_int(context)} 個詞元 × 批次 {batch}"}, lang)]
    rows = [[s.name, s.n_layers, s.n_kv_heads, s.head_dim, fmt_bytes(_kv(s, 1, 1, nbytes)),
             fmt_bytes(_kv(s, context, batch, nbytes))] for s in MODEL_SHAPES.values()]
    return table(t({"en": f"Every model at this setting ({values['dtype']})",
                    "zh-TW": f"各模型在同樣設定下（{values['dtype']}）"}, lang), cols, rows)


def run(values: dict, lang: str) -> dict:
    shape = MODEL_SHAPES[values["model"]]
    return {"figures": [_figure_size(shape, values, lang)], "tables": [_table_all(values, lang)],
            "notes": _notes(shape, values, lang)}
