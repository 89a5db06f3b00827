"""Plate 6: per decode step, bytes moved vs FLOPs done, and what moving a byte costs in energy.

With the KV cache, a decode step does little arithmetic per byte: every weight is read to be
used once per sequence, and the cache part of the traffic grows with the context. FLOPs and
bytes come from engine.costs; energies per operation from Horowitz's published 45 nm table.
"""
from __future__ import annotations

from engine import costs
from lessons import model_options
from lessons.base import select, slider
from lessons.devices import DEVICES
from lessons.figures import COLORS, figure, floats, fmt_bytes, fmt_int, fmt_si, layout, t, zero_based_axis

TITLE = {"en": "Bytes moved vs FLOPs per decode step", "zh-TW": "每個解碼步驟：搬運的位元組與 FLOP"}

# Energy per operation, 45 nm, 0.9 V: M. Horowitz, "Computing's energy problem (and what we
# can do about it)", ISSCC 2014, as tabulated for 32-bit operands by Han et al. (2016).
ENERGY_SOURCE = {
    "en": ("M. Horowitz, “Computing's energy problem (and what we can do about it)”, ISSCC 2014 (45 nm); "
           "32-bit values as tabulated in S. Han et al., “EIE”, ISCA 2016."),
    "zh-TW": ("M. Horowitz，〈Computing's energy problem (and what we can do about it)〉，ISSCC 2014（45 奈米）；"
              "32 位元數值引自 S. Han 等人〈EIE〉，ISCA 2016 的整理表。"),
}
ENERGY_PJ = [  # (key, label, picojoules)
    ("add", {"en": "32-bit float add", "zh-TW": "32 位元浮點加法"}, 0.9),
    ("mult", {"en": "32-bit float multiply", "zh-TW": "32 位元浮點乘法"}, 3.7),
    ("sram", {"en": "32-bit read, 8 KB SRAM", "zh-TW": "32 位元讀取（8 KB SRAM）"}, 5.0),
    ("dram", {"en": "32-bit read, DRAM", "zh-TW": "32 位元讀取（DRAM）"}, 640.0),
]
_PJ = {k: pj for k, _, pj in ENERGY_PJ}

CONTROLS = (
    select("model", {"en": "Model", "zh-TW": "模型"}, "Llama 3 8B", model_options.options(),
           help={"en": "Whose weights and KV cache a decode step reads.", "zh-TW": "解碼步驟讀取哪個模型的權重與 KV 快取。"}),
    slider("context", {"en": "Context length (tokens)", "zh-TW": "上下文長度（詞元數）"}, 4096, 16, 32768, 16,
           help={"en": "The chart runs from an empty cache to this many tokens.",
                 "zh-TW": "圖表從空的快取畫到這個詞元數。"}),
    slider("batch", {"en": "Batch (sequences)", "zh-TW": "批次（序列數）"}, 1, 1, 256, 1,
           help={"en": "Sequences decoded together read the weights once.",
                 "zh-TW": "一起解碼的序列只讀一次權重。"}),
)

BYTES_PER_VALUE = 2  # fp16 / bf16 weights and cache, as real models are served


def step_costs(cfg, context: int, batch: int, nbytes: int) -> tuple[int, int, int]:
    """(FLOPs, weight bytes, KV bytes) of one cached decode step for ``batch`` sequences.

    engine.costs counts one sequence; in a batch the weights are read once and each
    sequence reads its own cache (context+1 positions) and writes one new position.
    """
    L, KV, hd = cfg.n_layers, cfg.n_kv_heads, cfg.head_dim
    flops = costs.decode_step_flops(cfg, context, use_cache=True)
    total = costs.decode_step_bytes(cfg, context, use_cache=True, dtype_bytes=nbytes)
    kv = costs.kv_cache_bytes(L, KV, hd, context + 1, dtype_bytes=nbytes) + costs.kv_cache_bytes(L, KV, hd, 1, dtype_bytes=nbytes)
    return batch * flops, total - kv, batch * kv


def _grid(context: int, n: int = 40) -> list[int]:
    return sorted({round(context * i / n) for i in range(n + 1)})


def _log_grid(context: int, n: int = 30) -> list[int]:
    """1 .. context, evenly spaced on a log axis (integers, no repeats)."""
    return sorted({max(1, round(context ** (i / n))) for i in range(n + 1)})


def run(values: dict, lang: str) -> dict:
    cfg = model_options.config_for(values["model"])
    name = model_options.label(values["model"], lang)
    nbytes = cfg.dtype_bytes if values["model"] == model_options.COURSE else BYTES_PER_VALUE
    fmt_name = "fp32" if nbytes == 4 else "fp16"
    batch = values["batch"]
    context = min(values["context"], cfg.max_seq_len - 1)
    notes = []
    if context < values["context"]:
        notes.append(t({
            "en": f"{name} has a context window of {fmt_int(cfg.max_seq_len)} tokens; the chart stops at {fmt_int(context)}.",
            "zh-TW": f"{name} 的上下文視窗是 {fmt_int(cfg.max_seq_len)} 個詞元，圖表畫到 {fmt_int(context)} 為止。"}, lang))

    xs = _grid(context)
    rows = [step_costs(cfg, x, batch, nbytes) for x in xs]
    unit = 1024**2 if rows[-1][1] + rows[-1][2] < 1024**3 else 1024**3
    unit_name = "MiB" if unit == 1024**2 else "GiB"
    lbl_w = t({"en": "weights read", "zh-TW": "讀取權重"}, lang)
    lbl_kv = t({"en": "KV cache read + written", "zh-TW": "KV 快取讀寫"}, lang)
    lbl_f = t({"en": "GFLOPs (right axis)", "zh-TW": "GFLOP（右軸）"}, lang)
    tokens = t({"en": "tokens in context", "zh-TW": "上下文詞元數"}, lang)

    # ------------------------------------------------------------------ figure 1: bytes and FLOPs
    data = [
        {"type": "scatter", "mode": "lines", "stackgroup": "bytes", "name": lbl_w, "x": xs,
         "y": floats(w / unit for _, w, _ in rows), "line": {"color": COLORS["blue"]},
         "hovertemplate": f"%{{x:,}} {tokens}<br>%{{y:.4g}} {unit_name}<extra>{lbl_w}</extra>"},
        {"type": "scatter", "mode": "lines", "stackgroup": "bytes", "name": lbl_kv, "x": xs,
         "y": floats(kv / unit for _, _, kv in rows), "line": {"color": COLORS["orange"]},
         "hovertemplate": f"%{{x:,}} {tokens}<br>%{{y:.4g}} {unit_name}<extra>{lbl_kv}</extra>"},
        {"type": "scatter", "mode": "lines", "name": lbl_f, "x": xs, "yaxis": "y2",
         "y": floats(f / 1e9 for f, _, _ in rows), "line": {"color": COLORS["green"], "dash": "dash"},
         "hovertemplate": f"%{{x:,}} {tokens}<br>%{{y:.4g}} GFLOP<extra></extra>"},
    ]
    title1 = t({"en": f"{name}, batch {batch}: one decode step ({fmt_name})",
                "zh-TW": f"{name}，批次 {batch}：一個解碼步驟（{fmt_name}）"}, lang)
    lay1 = layout(title1, tokens, t({"en": f"bytes moved ({unit_name})", "zh-TW": f"搬運量（{unit_name}）"}, lang),
                  yaxis2={"title": {"text": "GFLOP"}, "overlaying": "y", "side": "right", "showgrid": False,
                          **zero_based_axis(max(f for f, _, _ in rows) / 1e9)},
                  yaxis={"rangemode": "tozero"}, margin={"r": 80})
    cols1 = [tokens, t({"en": "weights (bytes)", "zh-TW": "權重（位元組）"}, lang),
             t({"en": "KV cache (bytes)", "zh-TW": "KV 快取（位元組）"}, lang), "FLOPs",
             t({"en": "FLOP per byte", "zh-TW": "每位元組 FLOP"}, lang)]
    table1 = [[x, w, kv, f, float(f"{f / (w + kv):.4g}")] for x, (f, w, kv) in zip(xs, rows)]
    fig1 = figure("bytes_flops", title1, data, lay1, cols1, table1)

    # ------------------------------------------------------------------ figure 2: intensity vs ridges
    # The chosen model and the course model side by side, on a log axis of context lengths.
    series = [(values["model"], cfg, nbytes, context, COLORS["vermillion"])]
    if values["model"] != model_options.COURSE:
        course_cfg = model_options.config_for(model_options.COURSE)
        series.append((model_options.COURSE, course_cfg, course_cfg.dtype_bytes,
                       min(context, course_cfg.max_seq_len - 1), COLORS["blue"]))
    data2, table2 = [], []
    for key, cfg_s, nb, ctx, color in series:
        xs2 = _log_grid(ctx)
        ys2 = [f / (w + kv) for f, w, kv in (step_costs(cfg_s, x, batch, nb) for x in xs2)]
        lbl_i = t({"en": f"decode: {model_options.label(key, 'en')}", "zh-TW": f"解碼：{model_options.label(key, 'zh-TW')}"}, lang)
        data2.append({"type": "scatter", "mode": "lines", "name": lbl_i, "x": xs2, "y": floats(ys2),
                      "line": {"color": color, "width": 3},
                      "hovertemplate": f"%{{x:,}} {tokens}<br>%{{y:.3g}} FLOP/B<extra>{lbl_i}</extra>"})
        table2 += [[lbl_i, x, float(f"{i:.4g}")] for x, i in zip(xs2, ys2)]
    ridge_x = [1, context]
    for dev, color in zip(DEVICES.values(), (COLORS["sky"], COLORS["purple"], COLORS["grey"])):
        ridge_name = t({"en": f"ridge: {dev.name['en']}", "zh-TW": f"脊點：{dev.name['zh-TW']}"}, lang)
        data2.append({"type": "scatter", "mode": "lines", "name": ridge_name, "x": ridge_x,
                      "y": floats([dev.ridge] * 2), "line": {"color": color, "dash": "dot"},
                      "hovertemplate": f"%{{y:.3g}} FLOP/B<extra>{ridge_name}</extra>"})
    title2 = t({"en": "Arithmetic intensity of decode vs the devices' ridge points",
                "zh-TW": "解碼的運算強度與各裝置的脊點"}, lang)
    lay2 = layout(title2, t({"en": "tokens in context (log)", "zh-TW": "上下文詞元數（對數）"}, lang),
                  t({"en": "FLOP per byte (log)", "zh-TW": "每位元組 FLOP（對數）"}, lang),
                  xaxis={"type": "log"}, yaxis={"type": "log"})
    cols2 = [t({"en": "series", "zh-TW": "數列"}, lang), t({"en": "tokens in context", "zh-TW": "上下文詞元數"}, lang),
             t({"en": "FLOP per byte", "zh-TW": "每位元組 FLOP"}, lang)]
    table2 += [[t({"en": f"ridge: {d.name['en']}", "zh-TW": f"脊點：{d.name['zh-TW']}"}, lang), "", float(f"{d.ridge:.4g}")]
               for d in DEVICES.values()]
    fig2 = figure("intensity", title2, data2, lay2, cols2, table2)

    # ------------------------------------------------------------------ figure 3: energy
    labels = [t(lbl, lang) for _, lbl, _ in ENERGY_PJ]
    pj = [p for _, _, p in ENERGY_PJ]
    title3 = t({"en": "Energy per operation (45 nm, Horowitz 2014)", "zh-TW": "每次操作的能量（45 奈米，Horowitz 2014）"}, lang)
    data3 = [{"type": "bar", "x": labels, "y": pj, "text": [f"{p:g} pJ" for p in pj], "textposition": "outside",
              "marker": {"color": [COLORS["green"], COLORS["green"], COLORS["sky"], COLORS["vermillion"]]},
              "hovertemplate": "%{x}: %{y:g} pJ<extra></extra>", "name": "pJ"}]
    lay3 = layout(title3, "", t({"en": "picojoules (log)", "zh-TW": "皮焦耳（對數）"}, lang), yaxis={"type": "log"},
                  showlegend=False, margin={"t": 36},
                  annotations=[{"text": t({"en": "Source: Horowitz, ISSCC 2014", "zh-TW": "來源：Horowitz，ISSCC 2014"}, lang),
                                "xref": "paper", "yref": "paper", "x": 1, "y": 1.02, "showarrow": False,
                                "xanchor": "right", "font": {"size": 11}}])
    cols3 = [t({"en": "operation", "zh-TW": "操作"}, lang), t({"en": "energy (pJ)", "zh-TW": "能量（pJ）"}, lang),
             t({"en": "× a float add", "zh-TW": "相當於幾次浮點加法"}, lang), t({"en": "source", "zh-TW": "來源"}, lang)]
    table3 = [[lbl, p, float(f"{p / _PJ['add']:.3g}"), t(ENERGY_SOURCE, lang)] for lbl, p in zip(labels, pj)]
    fig3 = figure("energy", title3, data3, lay3, cols3, table3)

    # ------------------------------------------------------------------ notes
    f, w, kv = rows[-1]
    f0, w0, kv0 = rows[0]
    grow_b, grow_f = (w + kv) / (w0 + kv0) - 1, f / f0 - 1
    words = (w + kv) / 4  # 32-bit words moved, to use the 32-bit energy figures
    e_dram = words * _PJ["dram"] * 1e-12
    e_math = f / 2 * (_PJ["add"] + _PJ["mult"]) * 1e-12  # one multiply-add per 2 FLOPs
    notes += [
        t({"en": (f"At {fmt_int(context)} tokens one step moves {fmt_bytes(w)} of weights and {fmt_bytes(kv)} of KV cache "
                  f"for {fmt_si(f, 'FLOP')}: {f / (w + kv):.3g} FLOP per byte. Since the first token, bytes per step grew "
                  f"{grow_b:+.0%} and FLOPs {grow_f:+.0%}."),
           "zh-TW": (f"在 {fmt_int(context)} 個詞元時，一步要搬 {fmt_bytes(w)} 權重與 {fmt_bytes(kv)} KV 快取，"
                     f"只做 {fmt_si(f, 'FLOP')}：每位元組 {f / (w + kv):.3g} FLOP。與第一個詞元相比，每步的位元組"
                     f"變化 {grow_b:+.0%}，FLOP 變化 {grow_f:+.0%}。")}, lang),
        t({"en": (f"Energy estimate with the 45 nm figures (32-bit words): reading those bytes from DRAM ≈ {e_dram:.3g} J, "
                  f"the multiply-adds ≈ {e_math:.3g} J — moving data costs {e_dram / e_math:,.0f}× the arithmetic."),
           "zh-TW": (f"以 45 奈米數值（32 位元字組）估算：從 DRAM 讀這些位元組約 {e_dram:.3g} 焦耳，"
                     f"乘加運算約 {e_math:.3g} 焦耳——搬資料的耗能是運算的 {e_dram / e_math:,.0f} 倍。")}, lang),
        t({"en": (f"One 32-bit DRAM read costs {_PJ['dram'] / _PJ['add']:,.0f}× a 32-bit float add. "
                  f"Source: {ENERGY_SOURCE['en']}"),
           "zh-TW": (f"一次 32 位元 DRAM 讀取的能量是一次 32 位元浮點加法的 {_PJ['dram'] / _PJ['add']:,.0f} 倍。"
                     f"來源：{ENERGY_SOURCE['zh-TW']}")}, lang),
        t({"en": f"FLOPs and bytes from engine.costs ({fmt_name}, {nbytes} bytes per number; matmul FLOPs only).",
           "zh-TW": f"FLOP 與位元組由 engine.costs 計算（{fmt_name}，每個數字 {nbytes} 位元組；只計矩陣乘法）。"}, lang),
    ]
    return {"figures": [fig1, fig2, fig3], "notes": notes}
