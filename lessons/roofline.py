"""Plate 6 roofline: where decode and prefill sit against a device's compute and memory roofs.

A step that does F FLOPs and moves B bytes has arithmetic intensity I = F / B. A device with
peak P FLOP/s and bandwidth W bytes/s can run it at most at min(P, I × W) FLOP/s; the two
roofs meet at the ridge I = P / W. Decode at batch 1 reads every weight to use it once, so
its I is about 1 FLOP/byte in 16-bit numbers, hundreds of times left of a GPU's ridge.
FLOPs and bytes come from engine.costs; the peaks from lessons/devices.py (with sources).
"""
from __future__ import annotations

import math

from engine import costs
from lessons import model_options
from lessons.base import select, slider
from lessons.devices import DEVICES
from lessons.figures import COLORS, figure, floats, fmt_bytes, fmt_int, fmt_seconds, fmt_si, layout, t

TITLE = {"en": "Roofline: decode is memory-bound", "zh-TW": "屋頂線模型：解碼受限於記憶體"}

CONTROLS = (
    select("device", {"en": "Device", "zh-TW": "裝置"}, "h200_sxm",
           [(k, d.name) for k, d in DEVICES.items()],
           help={"en": "Peak compute and memory bandwidth from the vendor's datasheet (laptop: a representative class).",
                 "zh-TW": "峰值運算力與記憶體頻寬取自廠商規格表（筆電為代表性等級）。"}),
    select("model", {"en": "Model", "zh-TW": "模型"}, "Llama 3 8B", model_options.options(),
           help={"en": "Whose weights and KV cache are moved.", "zh-TW": "搬運哪個模型的權重與 KV 快取。"}),
    slider("batch", {"en": "Decode batch (sequences)", "zh-TW": "解碼批次（序列數）"}, 32, 1, 512, 1,
           help={"en": "Sequences decoded together share one read of the weights.",
                 "zh-TW": "一起解碼的序列共用同一次權重讀取。"}),
    slider("context", {"en": "Context (tokens)", "zh-TW": "上下文（詞元數）"}, 1024, 16, 32768, 16,
           help={"en": "Tokens already in each sequence's KV cache; also the prefill length.",
                 "zh-TW": "每個序列 KV 快取中已有的詞元數，也是預填的長度。"}),
)


def _decode_batch(cfg, context: int, batch: int, nbytes: int) -> tuple[int, int]:
    """(FLOPs, bytes) of one decode step for ``batch`` sequences of ``context`` tokens each.

    engine.costs gives one sequence; a batch reads the weights once and each sequence's own
    KV cache (read context+1 positions, write 1), so only the KV part scales with the batch.
    """
    flops = costs.decode_step_flops(cfg, context, use_cache=True)
    moved = costs.decode_step_bytes(cfg, context, use_cache=True, dtype_bytes=nbytes)
    L, KV, hd = cfg.n_layers, cfg.n_kv_heads, cfg.head_dim
    kv = costs.kv_cache_bytes(L, KV, hd, context + 1, dtype_bytes=nbytes) + costs.kv_cache_bytes(L, KV, hd, 1, dtype_bytes=nbytes)
    return batch * flops, (moved - kv) + batch * kv


def points(cfg, context: int, batch: int, nbytes: int) -> list[tuple[str, int, int]]:
    """(kind, FLOPs, bytes) of the steps placed on the roofline."""
    f1, b1 = _decode_batch(cfg, context, 1, nbytes)
    fn, bn = _decode_batch(cfg, context, batch, nbytes)
    fp, bp = costs.prefill_flops(cfg, context), costs.prefill_bytes(cfg, context, dtype_bytes=nbytes)
    return [("decode1", f1, b1), ("decodeN", fn, bn), ("prefill", fp, bp)]


def run(values: dict, lang: str) -> dict:
    dev = DEVICES[values["device"]]
    cfg = model_options.config_for(values["model"])
    model_name = model_options.label(values["model"], lang)
    nbytes = dev.bytes_per_value
    batch = values["batch"]
    context = min(values["context"], cfg.max_seq_len - 1)
    notes = []
    if context < values["context"]:
        notes.append(t({
            "en": f"{model_name} has a context window of {fmt_int(cfg.max_seq_len)} tokens; the context was set to {fmt_int(context)}.",
            "zh-TW": f"{model_name} 的上下文視窗是 {fmt_int(cfg.max_seq_len)} 個詞元，上下文已調為 {fmt_int(context)}。"}, lang))

    names = {
        "decode1": {"en": "decode, batch 1", "zh-TW": "解碼，批次 1"},
        "decodeN": {"en": f"decode, batch {batch}", "zh-TW": f"解碼，批次 {batch}"},
        "prefill": {"en": f"prefill, {fmt_int(context)} tokens", "zh-TW": f"預填，{fmt_int(context)} 個詞元"},
    }
    colors = {"decode1": COLORS["vermillion"], "decodeN": COLORS["orange"], "prefill": COLORS["green"]}
    pts = points(cfg, context, batch, nbytes)

    # ------------------------------------------------------------------ the roof
    intensities = [f / b for _, f, b in pts]
    lo = 10 ** math.floor(math.log10(min(intensities + [dev.ridge]) / 3))
    hi = 10 ** math.ceil(math.log10(max(intensities + [dev.ridge]) * 3))
    xs = [lo * (hi / lo) ** (i / 60) for i in range(61)] + [dev.ridge]
    xs.sort()
    roof = [min(dev.peak_flops, x * dev.bandwidth) / 1e12 for x in xs]
    roof_name = t({"en": f"{dev.name['en']} roof", "zh-TW": f"{dev.name['zh-TW']} 屋頂"}, lang)
    fl_b = t({"en": "FLOP/byte", "zh-TW": "FLOP/位元組"}, lang)
    data = [{"type": "scatter", "mode": "lines", "name": roof_name, "x": floats(xs), "y": floats(roof),
             "line": {"color": COLORS["grey"], "width": 3},
             "hovertemplate": f"%{{x:.3g}} {fl_b}<br>%{{y:.4g}} TFLOP/s<extra></extra>"}]

    rows = []
    for kind, f, b in pts:
        i = f / b
        attainable = min(dev.peak_flops, i * dev.bandwidth)
        seconds = max(f / dev.peak_flops, b / dev.bandwidth)
        bound = (t({"en": "memory", "zh-TW": "記憶體"}, lang) if i < dev.ridge
                 else t({"en": "compute", "zh-TW": "運算"}, lang))
        label = t(names[kind], lang)
        data.append({"type": "scatter", "mode": "markers+text", "name": label, "x": floats([i]),
                     "y": floats([attainable / 1e12]), "text": [label], "textposition": "top center",
                     "cliponaxis": False,  # a label above a point at the roof stays whole
                     "marker": {"size": 13, "color": colors[kind]},
                     "hovertemplate": f"{label}<br>%{{x:.3g}} {fl_b}<br>%{{y:.4g}} TFLOP/s<extra></extra>"})
        rows.append([label, fmt_si(f, "FLOP"), fmt_bytes(b), float(f"{i:.4g}"),
                     float(f"{attainable / 1e12:.4g}"), fmt_seconds(seconds), bound])

    ridge_side = "right" if dev.ridge > math.sqrt(min(xs) * max(xs)) else "left"
    title = t({"en": f"{model_name} on {dev.name['en']} ({dev.precision})",
               "zh-TW": f"{model_name} 在 {dev.name['zh-TW']} 上（{dev.precision}）"}, lang)
    lay = layout(title, t({"en": "intensity: FLOP per byte (log)", "zh-TW": "運算強度：FLOP/位元組（對數）"}, lang),
                 t({"en": "attainable TFLOP/s (log)", "zh-TW": "可達 TFLOP/s（對數）"}, lang),
                 xaxis={"type": "log"}, yaxis={"type": "log"},
                 shapes=[{"type": "line", "x0": dev.ridge, "x1": dev.ridge, "yref": "paper", "y0": 0, "y1": 1,
                          "line": {"color": COLORS["grey"], "dash": "dot", "width": 1}}],
                 annotations=[{"x": math.log10(dev.ridge), "y": 0.02, "xref": "x", "yref": "paper", "showarrow": False,
                               # on the wider side of the dotted line (on a phone the text ran off the edge)
                               "xanchor": ridge_side, "text": t({"en": f" ridge {dev.ridge:,.0f} FLOP/byte ",
                                                                 "zh-TW": f" 脊點 {dev.ridge:,.0f} FLOP/位元組 "}, lang)}])
    cols = [t({"en": "step", "zh-TW": "步驟"}, lang), "FLOPs", t({"en": "bytes moved", "zh-TW": "搬運位元組"}, lang),
            t({"en": "intensity (FLOP/byte)", "zh-TW": "運算強度（FLOP/位元組）"}, lang),
            t({"en": "attainable TFLOP/s", "zh-TW": "可達 TFLOP/s"}, lang),
            t({"en": "time at the roof", "zh-TW": "屋頂下的時間"}, lang),
            t({"en": "bound by", "zh-TW": "受限於"}, lang)]
    fig = figure("roofline", title, data, lay, cols, rows)

    i1 = pts[0][1] / pts[0][2]
    ip = pts[2][1] / pts[2][2]
    where = ({"en": f"which puts prefill {ip / dev.ridge:.2g}× past the ridge (compute-bound)",
              "zh-TW": f"使預填越過脊點 {ip / dev.ridge:.2g} 倍（受限於運算）"} if ip >= dev.ridge else
             {"en": f"which moves prefill to {ip / dev.ridge:.2g} of the ridge",
              "zh-TW": f"使預填移到脊點的 {ip / dev.ridge:.2g} 倍處"})
    tok_s = dev.bandwidth / pts[0][2]
    notes += [
        t({"en": (f"Ridge of {dev.name['en']}: {dev.ridge:,.0f} FLOP/byte ({fmt_si(dev.peak_flops, 'FLOP/s')} ÷ "
                  f"{fmt_si(dev.bandwidth, 'B/s')}). Decode at batch 1 reaches {i1:.2g} FLOP/byte, "
                  f"{dev.ridge / i1:,.0f}× to the left: the compute units mostly wait for memory."),
           "zh-TW": (f"{dev.name['zh-TW']} 的脊點：{dev.ridge:,.0f} FLOP/位元組（{fmt_si(dev.peak_flops, 'FLOP/s')} ÷ "
                     f"{fmt_si(dev.bandwidth, 'B/s')}）。批次 1 的解碼只有 {i1:.2g} FLOP/位元組，"
                     f"在脊點左方 {dev.ridge / i1:,.0f} 倍：運算單元大多在等記憶體。")}, lang),
        t({"en": (f"At batch 1 every step moves {fmt_bytes(pts[0][2])}, so memory alone caps decode at about "
                  f"{tok_s:,.0f} tokens/s on this device, however fast its arithmetic."),
           "zh-TW": (f"批次 1 時每一步要搬 {fmt_bytes(pts[0][2])}，光是記憶體就把解碼限制在每秒約 "
                     f"{tok_s:,.0f} 個詞元，不論運算多快。")}, lang),
        t({"en": (f"Batching {batch} sequences reuses each weight read {batch} times; prefill reuses it for all "
                  f"{fmt_int(context)} prompt tokens, {where['en']}."),
           "zh-TW": (f"批次 {batch} 個序列讓每次權重讀取被重複使用 {batch} 次；預填則讓 {fmt_int(context)} 個提示詞元"
                     f"共用它，{where['zh-TW']}。")}, lang),
        t({"en": (f"Costs from engine.costs in {dev.precision} ({nbytes} bytes per number): matmul FLOPs; weights read once "
                  f"per step plus KV-cache traffic. Peaks are datasheet maxima, not measurements. Source: {dev.source['en']}"),
           "zh-TW": (f"成本由 engine.costs 以 {dev.precision}（每個數字 {nbytes} 位元組）計算：矩陣乘法 FLOP；每步讀一次權重，"
                     f"加上 KV 快取的讀寫。峰值為規格表上限，不是實測。來源：{dev.source['zh-TW']}")}, lang),
    ]
    return {"figures": [fig], "notes": notes}
