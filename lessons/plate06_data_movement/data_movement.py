"""Plate 6: per decode step, bytes moved vs FLOPs done, and what moving a byte costs in energy.

With the KV cache, a decode step does little arithmetic per byte: every weight is read to be
used once per sequence, and the cache part of the traffic grows with the context (up to the
window of a sliding-window model, Mistral 7B), in the cache's own bits per number, which the
reader sets apart from the weights'. FLOPs and bytes come from engine.analysis.costs (through
lessons/common/step_costs.py); energies per operation are
Horowitz's 45 nm estimates in the per-32-bit form Han et al. tabulated. The notes keep the two
ratios apart: per operation (a DRAM read against one add or multiply, hundreds of times) and
per step (all the reads of a step against all its multiply-adds, lower, because one 32-bit
word read feeds more than one multiply-add).
"""
from __future__ import annotations

from typing import NamedTuple

from lessons.common import cache_bits, model_options, step_costs
from lessons.common import labels as L
from lessons.common.base import select, slider
from lessons.common.devices import DEVICES
from lessons.common.figures import (COLORS, figure, floats, fmt_bytes, fmt_int, fmt_num, fmt_percent, fmt_si, layout, t,
                             zero_based_axis)

NAME = "data_movement"
PLATE = "plates/06-data-movement"
TITLE = {"en": "Bytes moved vs FLOPs per decode step", "zh-TW": "每個解碼步驟：搬運的位元組與浮點運算次數"}

# Energy per operation, 45 nm: M. Horowitz's ISSCC 2014 estimates, in the per-32-bit form of
# Han et al.'s table (NIPS 2015, Fig. 1, "Energy table for 45nm CMOS process", citing Horowitz).
# The 640 pJ of a 32-bit DRAM read is Han et al.'s figure derived from Horowitz's DRAM access energy.
ENERGY_SOURCE = {
    "en": ("M. Horowitz, “Computing's energy problem (and what we can do about it)”, ISSCC 2014: 45 nm estimates; "
           "per 32-bit operation as tabulated by S. Han et al., “Learning both Weights and Connections for Efficient "
           "Neural Networks”, NIPS 2015, Fig. 1."),
    "zh-TW": ("M. Horowitz，〈Computing's energy problem (and what we can do about it)〉，ISSCC 2014，45 奈米製程的估計值；"
              "每次 32 位元操作的數值引自 S. Han 等人〈Learning both Weights and Connections for Efficient Neural "
              "Networks〉，NIPS 2015，圖 1。"),
}
ENERGY_PJ = [  # (key, label, picojoules)
    ("add", {"en": "32-bit float add", "zh-TW": "32 位元浮點加法"}, 0.9),
    ("mult", {"en": "32-bit float multiply", "zh-TW": "32 位元浮點乘法"}, 3.7),
    ("sram", {"en": "32-bit read, on-chip SRAM", "zh-TW": "32 位元讀取（晶片內 SRAM）"}, 5.0),
    ("dram", {"en": "32-bit read, DRAM", "zh-TW": "32 位元讀取（DRAM）"}, 640.0),
]
_PJ = {k: pj for k, _, pj in ENERGY_PJ}

CONTROLS = (
    select("model", L.MODEL, "Llama 3 8B", model_options.options(),
           help={"en": "Whose weights and KV cache a decode step reads.", "zh-TW": "解碼步驟讀的是哪個模型的權重與 KV 快取。"}),
    slider("context", L.CONTEXT_LENGTH, 4096, 16, 32768, 16,
           help={"en": "The chart runs from an empty cache to this many tokens.", "zh-TW": "圖表從空的快取一路畫到這個詞元數。"}),
    slider("batch", L.BATCH, 1, 1, 256, 1,
           help={"en": "Sequences decoded together read the weights once.", "zh-TW": "一起解碼的序列，權重只讀一次。"}),
    cache_bits.control(),
)

BYTES_PER_VALUE = 2  # fp16 / bf16 weights, as real models are served


class Setting(NamedTuple):
    cfg: object      # engine Config
    name: dict       # the model's name in both languages
    nbytes: int      # bytes per weight
    fmt: str         # the weights' format: "fp16" or "fp32"
    context: int     # tokens before the last step, clipped to the context window
    kv_bits: float   # bits per cached number (the reader's choice)


def step_costs_of(s: Setting, context: int, batch: int) -> tuple[int, int, int]:
    """(FLOPs, weight bytes, KV bytes) of one cached decode step at ``context`` tokens."""
    return step_costs.decode_step(s.cfg, context, batch, 8 * s.nbytes, s.kv_bits)


def _grid(context: int, n: int = 40) -> list[int]:
    return sorted({round(context * i / n) for i in range(n + 1)})


def _log_grid(context: int, n: int = 30) -> list[int]:
    """1 .. context, evenly spaced on a log axis (integers, no repeats)."""
    return sorted({max(1, round(context ** (i / n))) for i in range(n + 1)})


def _setting(values: dict) -> Setting:
    """The model, its weights' format (the course model keeps its own), the context and the cache bits."""
    cfg = model_options.config_for(values["model"])
    nbytes = cfg.dtype_bytes if values["model"] == model_options.COURSE else BYTES_PER_VALUE
    name = {lang: model_options.label(values["model"], lang) for lang in ("en", "zh-TW")}
    return Setting(cfg, name, nbytes, "fp32" if nbytes == 4 else "fp16", min(values["context"], cfg.max_seq_len - 1),
                   cache_bits.bits(values))


def _formats(s: Setting) -> dict:
    """"fp16 weights, 16-bit KV cache" in both languages."""
    cache = cache_bits.cache_format(s.kv_bits)
    return {"en": f"{s.fmt} weights, {cache['en']}", "zh-TW": L.zh_join(f"{s.fmt} 權重與", cache["zh-TW"])}


# --------------------------------------------------------------------------- figures


def _full_cache_line(s: Setting, xs, batch: int, unit: int, unit_name: str, lang) -> dict:
    """The bytes a step would move with a 16-bit cache: a reference above the stack when the cache has fewer bits."""
    ys = [sum(step_costs.decode_step(s.cfg, x, batch, 8 * s.nbytes, cache_bits.FULL)[1:]) for x in xs]
    name = t({"en": "total with a 16-bit cache", "zh-TW": "16 位元快取時的合計"}, lang)
    return {"type": "scatter", "mode": "lines", "name": name, "x": xs, "y": floats(y / unit for y in ys),
            "line": {"color": COLORS["grey"], "dash": "dot"},
            "hovertemplate": f"%{{x:,}} {t(L.TOKENS, lang)}<br>%{{y:.4g}} {unit_name}<extra>{name}</extra>"}


def _figure_bytes_flops(s: Setting, batch: int, rows, xs, lang) -> dict:
    unit, unit_name = (1024**2, "MiB") if rows[-1][1] + rows[-1][2] < 1024**3 else (1024**3, "GiB")
    lbl_w, lbl_kv = t({"en": "weights read", "zh-TW": "讀取的權重"}, lang), t({"en": "KV cache read + written", "zh-TW": "KV 快取的讀寫"}, lang)
    lbl_f, ctx, tokens = t({"en": "GFLOP (right axis)", "zh-TW": "GFLOP（右軸）"}, lang), t(L.CONTEXT, lang), t(L.TOKENS, lang)
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
    if s.kv_bits != cache_bits.FULL:
        data.insert(2, _full_cache_line(s, xs, batch, unit, unit_name, lang))
    formats = _formats(s)
    title = t({"en": f"{s.name['en']}, batch {batch}: one decode step ({formats['en']})",
               "zh-TW": L.zh_join(s.name["zh-TW"], f"，批次 {batch}：一個解碼步驟（", formats["zh-TW"], "）")}, lang)
    lay = layout(ctx, t({"en": f"bytes moved ({unit_name})", "zh-TW": f"搬運量（{unit_name}）"}, lang),
                 yaxis2={"title": {"text": "GFLOP"}, "overlaying": "y", "side": "right", "showgrid": False,
                         **zero_based_axis(max(f for f, _, _ in rows) / 1e9)},
                 yaxis={"rangemode": "tozero"}, margin={"r": 80})
    cols = [ctx, t({"en": "weights (bytes)", "zh-TW": "權重（位元組）"}, lang), t(L.KV_CACHE_BYTES, lang), "FLOPs",
            t(L.FLOP_PER_BYTE, lang)]
    table = [[x, w, kv, f, f / (w + kv)] for x, (f, w, kv) in zip(xs, rows)]
    return figure("bytes_flops", title, data, lay, cols, table)


def _figure_intensity(values, lang) -> dict:
    """The chosen model and the course model side by side, on a log axis of context lengths."""
    series = [(_setting(values), COLORS["vermillion"])]
    if values["model"] != model_options.COURSE:
        series.append((_setting({**values, "model": model_options.COURSE}), COLORS["blue"]))
    data, rows, fl_b, tokens = [], [], t(L.FLOP_PER_BYTE, lang), t(L.TOKENS, lang)
    for s, color in series:
        xs = _log_grid(s.context)
        ys = [f / (w + kv) for f, w, kv in (step_costs_of(s, x, values["batch"]) for x in xs)]
        label = t(L.decode_of({"en": f"{s.name['en']}, {s.fmt}", "zh-TW": f"{s.name['zh-TW']}，{s.fmt}"}), lang)
        data.append({"type": "scatter", "mode": "lines", "name": label, "x": xs, "y": floats(ys),
                     "line": {"color": color, "width": 3},
                     "hovertemplate": f"%{{x:,}} {tokens}<br>%{{y:.3g}} {fl_b}<extra>{label}</extra>"})
        rows += [[label, x, i] for x, i in zip(xs, ys)]
    context = series[0][0].context
    for dev, color in zip(DEVICES.values(), (COLORS["sky"], COLORS["purple"], COLORS["grey"])):
        ridge = t(L.ridge_of(dev.name), lang)
        data.append({"type": "scatter", "mode": "lines", "name": ridge, "x": [1, context], "y": floats([dev.ridge] * 2),
                     "line": {"color": color, "dash": "dot"}, "hovertemplate": f"%{{y:.3g}} {fl_b}<extra>{ridge}</extra>"})
        rows.append([ridge, "", dev.ridge])
    cache = cache_bits.cache_format(series[0][0].kv_bits)
    title = t({"en": f"Arithmetic intensity of decode ({cache['en']}) vs the devices' ridge points",
               "zh-TW": f"解碼的運算強度（{cache['zh-TW']}）與各裝置的脊點"}, lang)
    lay = layout(t(L.log(L.CONTEXT), lang), t(L.log(L.INTENSITY_AXIS), lang), xaxis={"type": "log"}, yaxis={"type": "log"})
    cols = [t({"en": "line", "zh-TW": "曲線"}, lang), t(L.CONTEXT, lang), t(L.INTENSITY_AXIS, lang)]
    return figure("intensity", title, data, lay, cols, rows)


def _figure_energy(lang) -> dict:
    labels = [t(lbl, lang) for _, lbl, _ in ENERGY_PJ]
    pj = [p for _, _, p in ENERGY_PJ]
    title = t({"en": "Energy per operation (45 nm estimates, Horowitz 2014)",
               "zh-TW": "每次操作的能量（45 奈米製程的估計值，Horowitz 2014）"}, lang)
    data = [{"type": "bar", "x": labels, "y": pj, "text": [f"{fmt_num(p)} pJ" for p in pj], "textposition": "outside",
             "marker": {"color": [COLORS["green"], COLORS["green"], COLORS["sky"], COLORS["vermillion"]]},
             "hovertemplate": f"%{{x}}{t(L.COLON, lang)}%{{y:g}} pJ<extra></extra>", "name": "pJ"}]
    source = t({"en": "Source: Horowitz, ISSCC 2014; Han et al., NIPS 2015", "zh-TW": "來源：Horowitz，ISSCC 2014；Han 等人，NIPS 2015"}, lang)
    lay = layout("", t({"en": "picojoules (log)", "zh-TW": "皮焦耳（對數）"}, lang), yaxis={"type": "log"},
                 showlegend=False, margin={"t": 36},
                 annotations=[{"text": source, "xref": "paper", "yref": "paper", "x": 1, "y": 1.02, "showarrow": False,
                               "xanchor": "right", "font": {"size": 11}}])
    cols = [t({"en": "operation", "zh-TW": "操作"}, lang), t({"en": "energy (pJ)", "zh-TW": "能量（pJ）"}, lang),
            t({"en": "× a float add", "zh-TW": "是浮點加法的幾倍"}, lang), t(L.SOURCE, lang)]
    rows = [[lbl, p, p / _PJ["add"], t(ENERGY_SOURCE, lang)] for lbl, p in zip(labels, pj)]
    return figure("energy", title, data, lay, cols, rows)


# --------------------------------------------------------------------------- notes


def _signed(x: float) -> str:
    return ("+" if x >= 0 else "") + fmt_percent(x)


def _notes_step(s: Setting, rows, lang) -> list[str]:
    context, b = s.context, s.kv_bits
    (f, w, kv), (f0, w0, kv0) = rows[-1], rows[0]
    grow_b, grow_f = _signed((w + kv) / (w0 + kv0) - 1), _signed(f / f0 - 1)
    return [
        t({"en": (f"At {fmt_int(context)} tokens one step moves {fmt_bytes(w)} of weights and {fmt_bytes(kv)} of KV cache "
                  f"for {fmt_si(f, 'FLOP')}: {fmt_num(f / (w + kv))} FLOP/byte. Since the first token, the bytes per step "
                  f"grew {grow_b} and the FLOPs {grow_f}."),
           "zh-TW": (f"上下文有 {fmt_int(context)} 個詞元時，一步要搬 {fmt_bytes(w)} 的權重和 {fmt_bytes(kv)} 的 KV 快取，"
                     f"卻只做 {fmt_si(f, 'FLOP')} 的運算：每個位元組 {fmt_num(f / (w + kv))} FLOP。和只有第一個詞元時相比，"
                     f"每一步搬的位元組 {grow_b}，浮點運算次數 {grow_f}。")}, lang),
        t({"en": (f"FLOPs and bytes from engine.analysis.costs (weights in {s.fmt}, {s.nbytes} bytes each; KV cache at {b:g} bits "
                  "per number; matmul FLOPs only)."),
           "zh-TW": (f"浮點運算次數與位元組數由 engine.analysis.costs 計算（權重用 {s.fmt}，每個 {s.nbytes} 位元組；KV 快取每個數字 "
                     f"{b:g} 位元；只計矩陣乘法）。")}, lang),
    ]


def _notes_cache(s: Setting, batch: int, rows, lang) -> list[str]:
    """What fewer cache bits take off the last step, and where a sliding window stops the cache's growth."""
    notes, (_, w, kv), W = [], rows[-1], s.cfg.sliding_window
    if s.kv_bits != cache_bits.FULL:
        kv16 = step_costs.decode_step(s.cfg, s.context, batch, 8 * s.nbytes, cache_bits.FULL)[2]
        less, b = fmt_percent(1 - (w + kv) / (w + kv16)), s.kv_bits
        notes.append(t({"en": (f"With {b:g} bits per cached number instead of 16, the cache part of the step at "
                               f"{fmt_int(s.context)} tokens is {fmt_bytes(kv)} instead of {fmt_bytes(kv16)}; the weights' "
                               f"{fmt_bytes(w)} stay as they are, so the whole step moves {less} less."),
                        "zh-TW": (f"快取從每個數字 16 位元改成 {b:g} 位元後，{fmt_int(s.context)} 個詞元時這一步的快取部分是 "
                                  f"{fmt_bytes(kv)}，16 位元時是 {fmt_bytes(kv16)}；權重的 {fmt_bytes(w)} 不變，"
                                  f"所以整步少搬 {less}。")}, lang))
    if W and s.context + 1 > W:
        notes.append(t({"en": (f"{s.name['en']} uses sliding-window attention: its rolling-buffer cache keeps the last "
                               f"{fmt_int(W)} positions, so from {fmt_int(W)} tokens on the cache part of a step stays flat."),
                        "zh-TW": L.zh_join(s.name["zh-TW"], f"使用滑動視窗注意力：環狀緩衝快取只留最新的 {fmt_int(W)} 個位置，"
                                                           f"所以從 {fmt_int(W)} 個詞元起，每一步的快取部分就不再增加。")},
                       lang))
    return notes


def _word_holds(s: Setting) -> dict:
    """How many numbers one 32-bit word read brings: weights, and cached numbers if their format differs."""
    per_word, b = 4 // s.nbytes, s.kv_bits
    if 32 / b == per_word:
        return {"en": f"{per_word} {s.fmt} number{'s' if per_word > 1 else ''}", "zh-TW": f"{per_word} 個 {s.fmt} 數字"}
    return {"en": f"{per_word} {s.fmt} weight{'s' if per_word > 1 else ''} or {fmt_num(32 / b)} cached numbers at {b:g} bits",
            "zh-TW": f"{per_word} 個 {s.fmt} 權重，或 {fmt_num(32 / b)} 個 {b:g} 位元的快取數字"}


def _notes_energy(s: Setting, rows, lang) -> list[str]:
    """Per operation (the table's own ratios) and per step (this step's reads and multiply-adds)."""
    context, (f, w, kv) = s.context, rows[-1]
    words, macs = (w + kv) / 4, f / 2  # 32-bit words read; one multiply-add per 2 FLOPs
    e_dram, e_math = words * _PJ["dram"] * 1e-12, macs * (_PJ["add"] + _PJ["mult"]) * 1e-12
    per_op = {k: fmt_num(_PJ["dram"] / v) for k, v in (("add", _PJ["add"]), ("mult", _PJ["mult"]),
                                                        ("mac", _PJ["add"] + _PJ["mult"]))}
    feeds, numbers = fmt_num(macs / words), _word_holds(s)
    return [
        t({"en": (f"Per operation: one 32-bit DRAM read costs {per_op['add']}× a 32-bit float add, {per_op['mult']}× a "
                  f"multiply and {per_op['mac']}× a multiply-add. These are Horowitz's 45 nm estimates, not measurements; "
                  f"the 640 pJ per 32-bit DRAM read is the value Han et al. derived from his DRAM figure. "
                  f"Source: {ENERGY_SOURCE['en']}"),
           "zh-TW": (f"以單次操作來比：一次 32 位元 DRAM 讀取的能量，是一次 32 位元浮點加法的 {per_op['add']} 倍、乘法的 "
                     f"{per_op['mult']} 倍、一次乘加的 {per_op['mac']} 倍。這些是 Horowitz 對 45 奈米製程的估計值，不是實測；"
                     f"32 位元 DRAM 讀取的 640 pJ 是 Han 等人從他的 DRAM 數字推算出來的。來源：{ENERGY_SOURCE['zh-TW']}")}, lang),
        t({"en": (f"Per step, at {fmt_int(context)} tokens: reading these bytes from DRAM as 32-bit words ≈ "
                  f"{fmt_si(e_dram, 'J')}, the multiply-adds ≈ {fmt_si(e_math, 'J')}, so moving data costs "
                  f"{fmt_num(e_dram / e_math)}× the arithmetic. That is less than the {per_op['mac']}× of a single "
                  f"multiply-add because each 32-bit word read here feeds {feeds} multiply-adds on average (a word holds "
                  f"{numbers['en']}; a weight serves every sequence of the batch, a cached key or value every query head "
                  f"that shares it)."),
           "zh-TW": (f"以整個步驟來比（{fmt_int(context)} 個詞元時）：把這些位元組當成 32 位元字組從 DRAM 讀進來約 "
                     f"{fmt_si(e_dram, 'J')}，乘加運算約 {fmt_si(e_math, 'J')}，搬資料的耗能是運算的 {fmt_num(e_dram / e_math)} 倍。"
                     f"比單次乘加的 {per_op['mac']} 倍低，是因為這裡每讀進一個 32 位元字組，平均要做 {feeds} 次乘加"
                     f"（一個字組裝 {numbers['zh-TW']}；每個權重會被批次裡的每個序列用到，每個快取的 key 或 value 會被"
                     f"共用它的每個 query head 用到）。")}, lang),
    ]


def run(values: dict, lang: str) -> dict:
    s, batch = _setting(values), values["batch"]
    notes = []
    if s.context < values["context"]:
        notes.append(t({
            "en": f"{s.name['en']} has a context window of {fmt_int(s.cfg.max_seq_len)} tokens; the chart stops at {fmt_int(s.context)}.",
            "zh-TW": L.zh_join(s.name["zh-TW"], f"的上下文視窗是 {fmt_int(s.cfg.max_seq_len)} 個詞元，圖表畫到 {fmt_int(s.context)} 為止。")},
            lang))
    xs = _grid(s.context)
    rows = [step_costs_of(s, x, batch) for x in xs]
    figures = [_figure_bytes_flops(s, batch, rows, xs, lang), _figure_intensity(values, lang), _figure_energy(lang)]
    notes += _notes_step(s, rows, lang) + _notes_cache(s, batch, rows, lang) + _notes_energy(s, rows, lang)
    return {"figures": figures, "notes": notes}
