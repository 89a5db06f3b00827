"""Plate 6 roofline: where decode and prefill sit against a device's compute and memory roofs.

A step that does F FLOPs and moves B bytes has arithmetic intensity I = F / B. A device with
peak P FLOP/s and bandwidth W bytes/s can run it at most at min(P, I × W) FLOP/s; the two
roofs meet at the ridge I = P / W. Decode at batch 1 reads every weight to use it once, so
its I is about 1 FLOP/byte in 16-bit numbers, hundreds of times left of a GPU's ridge.
FLOPs and bytes come from engine.analysis.costs (through lessons/common/step_costs.py: the device's weight
format, the reader's cache bits, Mistral 7B's sliding window); the peaks from
lessons/common/devices.py (with sources).
"""
from __future__ import annotations

import math

from lessons.common import labels as L
from lessons.common import cache_bits, model_options, step_costs
from lessons.common.base import select, slider
from lessons.common.devices import DEVICES
from lessons.common.figures import (COLORS, figure, floats, fmt_bytes, fmt_int, fmt_num, fmt_percent, fmt_seconds, fmt_si,
                             layout, t)

NAME = "roofline"
PLATE = "plates/06-data-movement"
TITLE = {"en": "Roofline: decode is memory-bound", "zh-TW": "Roofline 模型：解碼受記憶體頻寬限制"}

CONTROLS = (
    select("device", {"en": "Device", "zh-TW": "裝置"}, "h200_sxm", [(k, d.name) for k, d in DEVICES.items()],
           help={"en": "Peak compute and memory bandwidth from the vendor's datasheet (laptop: a representative class).",
                 "zh-TW": "峰值運算能力與記憶體頻寬取自廠商規格表（筆電是代表性的等級）。"}),
    select("model", L.MODEL, "Llama 3 8B", model_options.options(),
           help={"en": "Whose weights and KV cache are moved.", "zh-TW": "搬的是哪個模型的權重與 KV 快取。"}),
    slider("batch", {"en": "Decode batch (sequences)", "zh-TW": "解碼批次（序列數）"}, 32, 1, 512, 1,
           help={"en": "Sequences decoded together share one read of the weights.",
                 "zh-TW": "一起解碼的序列共用同一次權重讀取。"}),
    slider("context", {"en": "Context (tokens)", "zh-TW": "上下文（詞元數）"}, 1024, 16, 32768, 16,
           help={"en": "Tokens already in each sequence's KV cache; also the prefill length.",
                 "zh-TW": "每個序列的 KV 快取裡已有的詞元數，也是預填的長度。"}),
    cache_bits.control(),
)


def points(cfg, context: int, batch: int, dev, kv_bits: float) -> list[tuple[str, int, int]]:
    """(kind, FLOPs, bytes) of the steps placed on the roofline: weights in the device's
    format, the cache in ``kv_bits`` per number."""
    f1, w1, kv1 = step_costs.decode_step(cfg, context, 1, dev.weight_bits, kv_bits)
    fn, wn, kvn = step_costs.decode_step(cfg, context, batch, dev.weight_bits, kv_bits)
    fp, bp = step_costs.prefill(cfg, context, dev.weight_bits, kv_bits)
    return [("decode1", f1, w1 + kv1), ("decodeN", fn, wn + kvn), ("prefill", fp, bp)]


def _names(batch: int, context: int) -> dict:
    return {"decode1": {"en": "decode, batch 1", "zh-TW": "解碼，批次 1"},
            "decodeN": {"en": f"decode, batch {batch}", "zh-TW": f"解碼，批次 {batch}"},
            "prefill": {"en": f"prefill, {fmt_int(context)} tokens", "zh-TW": f"預填，{fmt_int(context)} 個詞元"}}


def _roof(dev, pts, lang) -> tuple[dict, list[float]]:
    """The roof trace: min(peak, I × bandwidth) over a log range that holds the points and the ridge."""
    intensities = [f / b for _, f, b in pts]
    lo = 10 ** math.floor(math.log10(min(intensities + [dev.ridge]) / 3))
    hi = 10 ** math.ceil(math.log10(max(intensities + [dev.ridge]) * 3))
    xs = sorted([lo * (hi / lo) ** (i / 60) for i in range(61)] + [dev.ridge])
    name = t({"en": f"{dev.name['en']} roofline", "zh-TW": L.zh_join(dev.name["zh-TW"], "的 Roofline")}, lang)
    fl_b = t(L.FLOP_PER_BYTE, lang)
    return ({"type": "scatter", "mode": "lines", "name": name, "x": floats(xs),
             "y": floats(min(dev.peak_flops, x * dev.bandwidth) / 1e12 for x in xs),
             "line": {"color": COLORS["grey"], "width": 3},
             "hovertemplate": f"%{{x:.3g}} {fl_b}<br>%{{y:.4g}} TFLOP/s<extra></extra>"}, xs)


def _formats(dev, kv_bits: float) -> dict:
    """The step's two number formats in words: "bf16 weights, 16-bit KV cache"."""
    cache = cache_bits.cache_format(kv_bits)
    return {"en": f"{dev.weights['en']}, {cache['en']}", "zh-TW": L.zh_join(dev.weights["zh-TW"], "與", cache["zh-TW"])}


def _figure_roofline(dev, pts, model_name, values, lang) -> dict:
    roof, xs = _roof(dev, pts, lang)
    data, rows, fl_b = [roof], [], t(L.FLOP_PER_BYTE, lang)
    colors = {"decode1": COLORS["vermillion"], "decodeN": COLORS["orange"], "prefill": COLORS["green"]}
    for kind, f, b in pts:
        i, label = f / b, t(_names(values["batch"], values["context"])[kind], lang)
        attainable = min(dev.peak_flops, i * dev.bandwidth)
        data.append({"type": "scatter", "mode": "markers+text", "name": label, "x": floats([i]),
                     "y": floats([attainable / 1e12]), "text": [label], "textposition": "top center",
                     "cliponaxis": False,  # a label above a point at the roof stays whole
                     "marker": {"size": 13, "color": colors[kind]},
                     "hovertemplate": f"{label}<br>%{{x:.3g}} {fl_b}<br>%{{y:.4g}} TFLOP/s<extra></extra>"})
        bound = {"en": "memory", "zh-TW": "記憶體頻寬"} if i < dev.ridge else {"en": "compute", "zh-TW": "運算能力"}
        rows.append([label, fmt_si(f, "FLOP"), fmt_bytes(b), i, attainable / 1e12,
                     fmt_seconds(max(f / dev.peak_flops, b / dev.bandwidth)), t(bound, lang)])
    side = "right" if dev.ridge > math.sqrt(min(xs) * max(xs)) else "left"  # the wider side: on a phone the text ran off
    formats = _formats(dev, cache_bits.bits(values))
    title = t({"en": f"{model_name} on {dev.name['en']}: {formats['en']}",
               "zh-TW": L.zh_join(model_name, "在", dev.name["zh-TW"], "上：", formats["zh-TW"])}, lang)
    ridge = t({"en": f" ridge {fmt_num(dev.ridge)} FLOP/byte ", "zh-TW": f" 脊點 {fmt_num(dev.ridge)} FLOP／位元組 "}, lang)
    lay = layout(t(L.log(L.INTENSITY_AXIS), lang), t({"en": "attainable TFLOP/s (log)", "zh-TW": "可達到的 TFLOP/s（對數）"}, lang),
                 xaxis={"type": "log"}, yaxis={"type": "log"},
                 shapes=[{"type": "line", "x0": dev.ridge, "x1": dev.ridge, "yref": "paper", "y0": 0, "y1": 1,
                          "line": {"color": COLORS["grey"], "dash": "dot", "width": 1}}],
                 annotations=[{"x": math.log10(dev.ridge), "y": 0.02, "xref": "x", "yref": "paper", "showarrow": False,
                               "xanchor": side, "text": ridge}])
    cols = [t(L.STEP, lang), "FLOPs", t({"en": "bytes moved", "zh-TW": "搬運的位元組"}, lang), t(L.INTENSITY_AXIS, lang),
            t({"en": "attainable TFLOP/s", "zh-TW": "可達到的 TFLOP/s"}, lang),
            t({"en": "shortest time at the peaks", "zh-TW": "以峰值估算的最短時間"}, lang),
            t({"en": "bound by", "zh-TW": "受限於"}, lang)]
    return figure("roofline", title, data, lay, cols, rows)


def _notes(dev, pts, values, lang) -> list[str]:
    batch, context = values["batch"], values["context"]
    i1, ip = pts[0][1] / pts[0][2], pts[2][1] / pts[2][2]
    ratio = fmt_num(ip / dev.ridge)
    where = ({"en": f"which puts prefill at {ratio}× the ridge (compute-bound)",
              "zh-TW": f"運算強度是脊點的 {ratio} 倍（受運算能力限制）"} if ip >= dev.ridge else
             {"en": f"which brings prefill to {ratio}× the ridge", "zh-TW": f"運算強度提高到脊點的 {ratio} 倍"})
    ridge, peaks = fmt_num(dev.ridge), f"{fmt_si(dev.peak_flops, 'FLOP/s')} ÷ {fmt_si(dev.bandwidth, 'B/s')}"
    tok_s, formats = fmt_int(dev.bandwidth / pts[0][2]), _formats(dev, cache_bits.bits(values))
    return [
        t({"en": (f"Ridge of {dev.name['en']}: {ridge} FLOP/byte ({peaks}). Decode at batch 1 reaches {fmt_num(i1)} "
                  f"FLOP/byte, {fmt_num(dev.ridge / i1)}× below the ridge: the compute units mostly wait for memory."),
           "zh-TW": L.zh_join(dev.name["zh-TW"], f"的脊點是 {ridge} FLOP／位元組（{peaks}）。批次 1 的解碼只有 "
                              f"{fmt_num(i1)} FLOP／位元組，離脊點還差 {fmt_num(dev.ridge / i1)} 倍：運算單元大多時間都在等記憶體。")},
          lang),
        t({"en": (f"At batch 1 every step moves {fmt_bytes(pts[0][2])}, so memory alone caps decode at about "
                  f"{tok_s} tokens/s on this device, however fast its arithmetic."),
           "zh-TW": (f"批次 1 時每一步都要搬 {fmt_bytes(pts[0][2])}，光是記憶體就把解碼速度限制在每秒約 "
                     f"{tok_s} 個詞元，運算再快也沒用。")}, lang),
        t({"en": (f"Batching {batch} sequences reuses each weight read {batch} times; prefill reuses it for all "
                  f"{fmt_int(context)} prompt tokens, {where['en']}."),
           "zh-TW": (f"一次解碼 {batch} 個序列，每次讀進來的權重就用了 {batch} 次；預填則讓提示詞的 {fmt_int(context)} 個"
                     f"詞元共用同一次讀取，{where['zh-TW']}。")}, lang),
        t({"en": (f"Costs from engine.analysis.costs with {formats['en']}: matmul FLOPs; the weights read once per step, plus "
                  f"the KV cache traffic. Peaks are datasheet maxima, not measurements. Source: {dev.source['en']}"),
           "zh-TW": L.zh_join("成本由 engine.analysis.costs 計算，數字格式為", formats["zh-TW"],
                              f"：只計矩陣乘法的浮點運算次數；每一步讀一次權重，加上 KV 快取的讀寫。"
                              f"峰值是規格表上的上限，不是實測。來源：{dev.source['zh-TW']}")}, lang),
    ]


def _notes_cache(cfg, dev, values, lang) -> list[str]:
    """What the cache weighs in a step, what fewer cache bits buy at batch 1, and a sliding window's cap."""
    b, batch, context, name = cache_bits.bits(values), values["batch"], values["context"], _model_names(values["model"])
    _, w1, kv1 = step_costs.decode_step(cfg, context, 1, dev.weight_bits, b)
    _, wn, kvn = step_costs.decode_step(cfg, context, batch, dev.weight_bits, b)
    share1, shareN, fmt = fmt_percent(kv1 / (w1 + kv1)), fmt_percent(kvn / (wn + kvn)), cache_bits.cache_format(b)
    notes = [t({"en": (f"The {fmt['en']} is {share1} of the bytes a step moves at batch 1 and {shareN} at batch {batch}: "
                       "the larger the batch and the context, the more the cache's bits matter."),
                "zh-TW": (f"{fmt['zh-TW']}佔每一步搬運量的比例：批次 1 時是 {share1}，批次 {batch} 時是 {shareN}。"
                          "批次越大、上下文越長，快取的位元數就越要緊。")}, lang)]
    if b != cache_bits.FULL:
        notes.append(_bits_note(cfg, dev, values, lang))
    W = cfg.sliding_window
    if W and context + 1 > W:
        notes.append(t({"en": (f"{name['en']} uses sliding-window attention: its rolling-buffer cache keeps the last "
                               f"{fmt_int(W)} positions, so past {fmt_int(W)} tokens the cache bytes of a step stop growing."),
                        "zh-TW": L.zh_join(name["zh-TW"], f"使用滑動視窗注意力：環狀緩衝快取只留最新的 {fmt_int(W)} 個位置，"
                                                          f"所以超過 {fmt_int(W)} 個詞元之後，每一步讀寫的快取位元組就不再增加。")},
                       lang))
    return notes


def _bits_note(cfg, dev, values, lang) -> str:
    """The memory ceiling (tokens/s) at batch 1 and at the reader's batch, 16-bit cache against theirs."""
    b, context = cache_bits.bits(values), values["context"]
    en, zh = [], []
    for n in dict.fromkeys((1, values["batch"])):
        moved = [sum(step_costs.decode_step(cfg, context, n, dev.weight_bits, k)[1:]) for k in (cache_bits.FULL, b)]
        (was, now), (m0, m1) = (fmt_int(n * dev.bandwidth / m) for m in moved), (fmt_bytes(m) for m in moved)
        en.append(f"from about {was} to {now} tokens/s at batch {n} ({m0} → {m1} per step)")
        zh.append(f"批次 {n} 時，從每秒約 {was} 個詞元提高到 {now} 個（每一步 {m0} → {m1}）")
    return t({"en": f"With {b:g} bits per cached number instead of 16, the memory ceiling rises {' and '.join(en)}. "
                    "The weights keep their format.",
              "zh-TW": f"快取從每個數字 16 位元降到 {b:g} 位元，記憶體設下的上限跟著提高：{'；'.join(zh)}。權重的格式不變。"},
             lang)


def _model_names(key: str) -> dict:
    return {lang: model_options.label(key, lang) for lang in ("en", "zh-TW")}


def run(values: dict, lang: str) -> dict:
    dev = DEVICES[values["device"]]
    cfg = model_options.config_for(values["model"])
    name, context = _model_names(values["model"]), min(values["context"], cfg.max_seq_len - 1)
    notes = []
    if context < values["context"]:
        notes.append(t({
            "en": f"{name['en']} has a context window of {fmt_int(cfg.max_seq_len)} tokens; the context was set to {fmt_int(context)}.",
            "zh-TW": L.zh_join(name["zh-TW"], f"的上下文視窗是 {fmt_int(cfg.max_seq_len)} 個詞元，上下文已改成 {fmt_int(context)}。")},
            lang))
    values = {**values, "context": context}
    pts = points(cfg, context, values["batch"], dev, cache_bits.bits(values))
    return {"figures": [_figure_roofline(dev, pts, t(name, lang), values, lang)],
            "notes": notes + _notes(dev, pts, values, lang) + _notes_cache(cfg, dev, values, lang)}
