"""Plate 5 calculator: how big the KV cache of a real model gets.

    cache = 2 (K and V) × layers × KV heads × head_dim × tokens × batch × bytes per number

Shapes come from engine.shapes (published configs), the size from engine.costs; this lesson
only chooses the points to show and writes the formula out with the reader's numbers.
"""
from __future__ import annotations

from engine import costs
from engine.shapes import MODEL_SHAPES, config_from_shape
from lessons.base import select, slider
from lessons.model_options import NOT_LLAMA  # their cache size is exact, a Llama-style weight count is not
from lessons.figures import COLORS, HIGHLIGHT, figure, floats, fmt_bytes, fmt_int, layout, t, table

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
    select("model", {"en": "Model", "zh-TW": "模型"}, "Llama 3 8B",
           [(name, {"en": name, "zh-TW": name}) for name in MODEL_SHAPES],
           help={"en": "Published shapes (layers, KV heads, head size) of real models.",
                 "zh-TW": "真實模型公開的形狀（層數、KV 頭數、每頭維度）。"}),
    select("dtype", {"en": "Number format", "zh-TW": "數值格式"}, "fp16",
           [(k, label) for k, (_, label) in DTYPES.items()],
           help={"en": "Bytes used to store each cached number.",
                 "zh-TW": "快取中每個數字佔用的位元組數。"}),
    slider("context", {"en": "Context length (tokens)", "zh-TW": "上下文長度（詞元數）"}, 8192, 1024, MAX_CONTEXT, 1024,
           help={"en": "Tokens held in the cache for one sequence (up to 128K).",
                 "zh-TW": "一個序列在快取中儲存的詞元數（最多 128K）。"}),
    slider("batch", {"en": "Batch (sequences at once)", "zh-TW": "批次（同時處理的序列數）"}, 1, 1, 64, 1,
           help={"en": "Each sequence in a batch has its own cache.",
                 "zh-TW": "批次中的每個序列都有自己的快取。"}),
)


def _kv(shape, tokens: int, batch: int, nbytes: int) -> int:
    return costs.kv_cache_bytes(shape.n_layers, shape.n_kv_heads, shape.head_dim, tokens, batch, nbytes)


def _context_points(context: int) -> list[int]:
    """0, 4K, 8K … 128K plus the reader's own context, sorted (a linear axis: the growth
    is a straight line, and the chart must not make it look like anything else)."""
    return sorted({4096 * i for i in range(MAX_CONTEXT // 4096 + 1)} | {context})


def run(values: dict, lang: str) -> dict:
    shape = MODEL_SHAPES[values["model"]]
    nbytes, dtype_label = DTYPES[values["dtype"]]
    context, batch = values["context"], values["batch"]
    params = costs.param_count(config_from_shape(shape))
    weights = params * nbytes
    llama_style = shape.name not in NOT_LLAMA  # engine.costs counts Llama-style blocks only
    total = _kv(shape, context, batch, nbytes)
    per_token = _kv(shape, 1, 1, nbytes)

    # ------------------------------------------------------------------ figure
    xs = _context_points(context)
    ys = [_kv(shape, x, batch, nbytes) for x in xs]
    label_cache = t({"en": f"KV cache (batch {batch})", "zh-TW": f"KV 快取（批次 {batch}）"}, lang)
    label_weights = t({"en": "model weights", "zh-TW": "模型權重"}, lang)
    label_you = t({"en": "your setting", "zh-TW": "目前設定"}, lang)
    hover_tokens = t({"en": "tokens", "zh-TW": "詞元數"}, lang)
    data = [
        {"type": "scatter", "mode": "lines", "name": label_cache, "x": xs,
         "y": floats(y / GIB for y in ys), "line": {"color": COLORS["blue"]},
         "text": [fmt_bytes(y) for y in ys],
         "hovertemplate": f"%{{x:,}} {hover_tokens}<br>%{{text}}<extra>{label_cache}</extra>"},
        {"type": "scatter", "mode": "markers", "name": label_you, "x": [context],
         "y": floats([total / GIB]), "marker": {"color": HIGHLIGHT, "size": 12, "symbol": "diamond"},
         "text": [fmt_bytes(total)],
         "hovertemplate": f"%{{x:,}} {hover_tokens}<br>%{{text}}<extra>{label_you}</extra>"},
    ]
    if llama_style:
        data.insert(1, {"type": "scatter", "mode": "lines", "name": label_weights, "x": [xs[0], xs[-1]],
                        "y": floats([weights / GIB] * 2), "line": {"color": COLORS["grey"], "dash": "dash"},
                        "text": [fmt_bytes(weights)] * 2,
                        "hovertemplate": f"%{{text}}<extra>{label_weights}</extra>"})
    title = t({"en": f"{shape.name}: KV cache vs context ({values['dtype']})",
               "zh-TW": f"{shape.name}：KV 快取大小與上下文長度（{values['dtype']}）"}, lang)
    lay = layout(title, t({"en": "context length (tokens)", "zh-TW": "上下文長度（詞元數）"}, lang),
                 "GiB", xaxis={"tickvals": [16384 * i for i in range(9)], "ticktext": [f"{16 * i}K" for i in range(9)]},
                 yaxis={"rangemode": "tozero"})
    cols = [t({"en": "context (tokens)", "zh-TW": "上下文（詞元數）"}, lang),
            t({"en": "KV cache (bytes)", "zh-TW": "KV 快取（位元組）"}, lang),
            t({"en": "KV cache", "zh-TW": "KV 快取"}, lang),
            t({"en": "weights", "zh-TW": "權重"}, lang)]
    rows = [[x, y, fmt_bytes(y), fmt_bytes(weights) if llama_style else "—"] for x, y in zip(xs, ys)]
    fig = figure("size_vs_context", title, data, lay, cols, rows)

    # ------------------------------------------------------------------ notes
    formula = (f"2 × {shape.n_layers} × {shape.n_kv_heads} × {shape.head_dim} × {fmt_int(context)} × "
               f"{batch} × {nbytes} = {fmt_int(total)} B = {fmt_bytes(total)}")
    notes = [
        t({"en": f"2 (K and V) × layers × KV heads × head_dim × tokens × batch × bytes = {formula}",
           "zh-TW": f"2（K 與 V）× 層數 × KV 頭數 × 每頭維度 × 詞元數 × 批次 × 位元組數 = {formula}"}, lang),
        t({"en": f"Each token adds {fmt_bytes(per_token)} per sequence in {dtype_label['en']}.",
           "zh-TW": f"以 {dtype_label['zh-TW']} 儲存時，每多一個詞元，每個序列就多 {fmt_bytes(per_token)}。"}, lang),
    ]
    if llama_style:
        notes.append(t({"en": (f"The weights ({fmt_int(params)} parameters) take {fmt_bytes(weights)} in the same format; "
                               f"the cache is {total / weights:.1%} of that."),
                        "zh-TW": (f"同樣格式下，權重（共 {fmt_int(params)} 個數值）佔 {fmt_bytes(weights)}；"
                                  f"快取是它的 {total / weights:.1%}。")}, lang))
    if shape.n_kv_heads < shape.n_heads:
        notes.append(t({
            "en": (f"{shape.name} uses grouped-query attention: {shape.n_heads} query heads share "
                   f"{shape.n_kv_heads} KV heads, so its cache is {shape.n_heads // shape.n_kv_heads}× smaller "
                   f"than with one KV head per query head."),
            "zh-TW": (f"{shape.name} 使用分組查詢注意力（GQA）：{shape.n_heads} 個查詢頭共用 "
                      f"{shape.n_kv_heads} 個 KV 頭，快取因此比每個查詢頭各有 KV 頭時小 "
                      f"{shape.n_heads // shape.n_kv_heads} 倍。")}, lang))
    if context > shape.max_seq_len:
        notes.append(t({
            "en": (f"Note: {shape.name} was published with a context window of {fmt_int(shape.max_seq_len)} "
                   f"tokens; {fmt_int(context)} is beyond it, shown only to follow the formula."),
            "zh-TW": (f"注意：{shape.name} 公開的上下文視窗是 {fmt_int(shape.max_seq_len)} 個詞元，"
                      f"{fmt_int(context)} 已超出範圍，這裡只是照公式計算。")}, lang))
    if not llama_style:
        notes.append(t({
            "en": (f"{shape.name} is not Llama-style (two-matrix GELU MLP, learned positions): its cache size is exact, "
                   "but the engine's Llama-style weight count would be wrong, so no weight line is drawn."),
            "zh-TW": (f"{shape.name} 不是 Llama 架構（兩個矩陣的 GELU MLP、學習式位置編碼）：快取大小是準確的，"
                      "但引擎以 Llama 架構計算的權重數會出錯，所以不畫權重線。")}, lang))
    notes.append(t({"en": f"Shape source: {shape.source}.", "zh-TW": f"形狀來源：{shape.source}。"}, lang))

    # ------------------------------------------------------------------ all models at this setting
    cols_all = [t({"en": "model", "zh-TW": "模型"}, lang), t({"en": "layers", "zh-TW": "層數"}, lang),
                t({"en": "KV heads", "zh-TW": "KV 頭數"}, lang), "head_dim",
                t({"en": "per token", "zh-TW": "每個詞元"}, lang),
                t({"en": f"{fmt_int(context)} tokens × batch {batch}", "zh-TW": f"{fmt_int(context)} 個詞元 × 批次 {batch}"}, lang)]
    rows_all = [[s.name, s.n_layers, s.n_kv_heads, s.head_dim, fmt_bytes(_kv(s, 1, 1, nbytes)),
                 fmt_bytes(_kv(s, context, batch, nbytes))] for s in MODEL_SHAPES.values()]
    compare = table(t({"en": f"Every model at this setting ({values['dtype']})",
                       "zh-TW": f"各模型在此設定下（{values['dtype']}）"}, lang), cols_all, rows_all)

    return {"figures": [fig], "tables": [compare], "notes": notes}
