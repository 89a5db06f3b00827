"""The benchmark page ("bench_results"): every committed results file, drawn with Plotly.

Reads ``engine/bench/results/*.json`` (package data, so it works at build time and in the
browser alike) and plots, for one model shape: decode step time with and without the KV
cache against the context, the speedup, the KV cache's size, the measured points on a
roofline (achieved bandwidth as a share of the device's peak) and the gap between each
step and its physical floor, bytes / peak bandwidth. Every number comes from a results
file; a device kind with no file says so instead of showing anything.
"""
from __future__ import annotations

import math
import re

from engine.bench import store
from lessons.base import select
from lessons.figures import COLORS, SEQUENCE, figure, floats, fmt_bytes, fmt_int, fmt_si, layout, t, table

TITLE = {"en": "Measured: the engine with and without the KV cache",
         "zh-TW": "實測：引擎使用與不使用 KV 快取"}

SHAPE_LABELS = {
    "course": {"en": "Course model (trained)", "zh-TW": "課程模型（已訓練）"},
    "gpt2-small": {"en": "GPT-2 small size", "zh-TW": "GPT-2 small 大小"},
    "llama3-8b": {"en": "Llama 3 8B shape (first layers)", "zh-TW": "Llama 3 8B 形狀（前幾層）"},
    "tiny": {"en": "Tiny smoke-test model", "zh-TW": "極小測試模型"},
}

_RESULTS = store.load_all()  # stem -> document; read once per process
_SHAPES = [k for k in SHAPE_LABELS if any(r["shape"] == k for d in _RESULTS.values() for r in d["runs"])]


def _device_label(doc: dict) -> str:
    p = doc["provenance"]
    return f"{p['device']['name']} ({'NumPy' if p['backend'] == 'numpy' else 'CuPy'})"


def _short_device(doc: dict) -> str:
    """A legend-sized device name ("Xeon", "H200"): the full name is in the provenance table."""
    name = re.sub(r"\((R|TM)\)|\b(Intel|AMD|NVIDIA|Processor|CPU|Core)\b|@.*", "", doc["provenance"]["device"]["name"])
    name = " ".join(name.split()) or doc["provenance"]["device"]["name"]
    return name if len(name) <= 18 else name[:17] + "…"


CONTROLS = (
    select("results", {"en": "Results file", "zh-TW": "結果檔"}, "all",
           [("all", {"en": "All committed results", "zh-TW": "所有已提交的結果"})]
           + [(stem, {"en": _device_label(doc), "zh-TW": _device_label(doc)}) for stem, doc in _RESULTS.items()],
           help={"en": "One file per device and backend, written by python -m engine.bench.",
                 "zh-TW": "每個裝置與後端一個檔案，由 python -m engine.bench 產生。"}),
    select("shape", {"en": "Model shape", "zh-TW": "模型形狀"}, _SHAPES[0] if _SHAPES else "course",
           [(k, SHAPE_LABELS[k]) for k in (_SHAPES or ["course"])],
           help={"en": "Random weights for the real-model shapes: timing does not depend on the numbers.",
                 "zh-TW": "真實模型形狀使用隨機權重：計時與權重的數值無關。"}),
)

MEASUREMENTS = {
    "prefill": {"en": "prefill", "zh-TW": "預填"},
    "decode_uncached": {"en": "the step without the cache", "zh-TW": "不用快取的一步"},
}


def _ms(s: float) -> float:
    return float(f"{s * 1e3:.4g}")


def _selected(values: dict) -> dict[str, dict]:
    if values["results"] == "all":
        return dict(_RESULTS)
    return {values["results"]: _RESULTS[values["results"]]}


def _series(docs: dict[str, dict], shape: str):
    """(label, doc, run) for every run of ``shape`` in the selected files."""
    out = []
    for doc in docs.values():
        for run in doc["runs"]:
            if run["shape"] == shape:
                backend = "NumPy" if doc["provenance"]["backend"] == "numpy" else "CuPy"
                out.append((f"{_short_device(doc)} {backend} {run['dtype']}", doc, run))
    return out


def _err(points, key):
    """Plotly asymmetric error bars from p10 / p90 around the median (milliseconds)."""
    have = [p for p in points if p[key]]
    return {"type": "data", "symmetric": False,
            "array": floats([(p[key]["p90_s"] - p[key]["median_s"]) * 1e3 for p in have]),
            "arrayminus": floats([(p[key]["median_s"] - p[key]["p10_s"]) * 1e3 for p in have]),
            "thickness": 1}


# --------------------------------------------------------------------------- figures


def _latency(series, lang):
    data, rows = [], []
    with_c, without_c = t({"en": "with KV cache", "zh-TW": "使用 KV 快取"}, lang), t({"en": "recompute, no cache", "zh-TW": "不用快取、全部重算"}, lang)
    for i, (label, _doc, run) in enumerate(series):
        color = SEQUENCE[i % len(SEQUENCE)]
        pts = run["points"]
        unc = [p for p in pts if p["decode_uncached"]]
        data.append({"type": "scatter", "mode": "lines+markers", "name": f"{label} — {with_c}",
                     "x": [p["context"] for p in pts], "y": floats([p["decode_cached"]["median_s"] * 1e3 for p in pts]),
                     "error_y": _err(pts, "decode_cached"), "line": {"color": color}})
        if unc:
            data.append({"type": "scatter", "mode": "lines+markers", "name": f"{label} — {without_c}",
                         "x": [p["context"] for p in unc], "y": floats([p["decode_uncached"]["median_s"] * 1e3 for p in unc]),
                         "error_y": _err(unc, "decode_uncached"), "line": {"color": color, "dash": "dash"},
                         "marker": {"symbol": "square"}})
        for p in pts:
            rows.append([label, p["context"], _ms(p["decode_cached"]["median_s"]),
                         f"{_ms(p['decode_cached']['p10_s'])}–{_ms(p['decode_cached']['p90_s'])}",
                         _ms(p["decode_uncached"]["median_s"]) if p["decode_uncached"] else "—",
                         _ms(p["prefill"]["median_s"]) if p["prefill"] else "—"])
    title = t({"en": "Decode step time vs context", "zh-TW": "每個解碼步驟的時間與上下文長度"}, lang)
    lay = layout(t({"en": "context (tokens already in the cache, log)", "zh-TW": "上下文（快取中已有的詞元數，對數）"}, lang),
                 t({"en": "time per step (ms, log; bars: p10–p90)", "zh-TW": "每步時間（毫秒，對數；誤差線：p10–p90）"}, lang),
                 xaxis={"type": "log"}, yaxis={"type": "log"})
    cols = [t({"en": "results", "zh-TW": "結果"}, lang), t({"en": "context", "zh-TW": "上下文"}, lang),
            t({"en": "with cache (ms, median)", "zh-TW": "使用快取（毫秒，中位數）"}, lang),
            t({"en": "with cache p10–p90 (ms)", "zh-TW": "使用快取 p10–p90（毫秒）"}, lang),
            t({"en": "no cache (ms, median)", "zh-TW": "不用快取（毫秒，中位數）"}, lang),
            t({"en": "prefill (ms, median)", "zh-TW": "預填（毫秒，中位數）"}, lang)]
    return figure("latency", title, data, lay, cols, rows)


def _speedup(series, lang):
    data, rows = [], []
    for i, (label, _doc, run) in enumerate(series):
        pts = [p for p in run["points"] if p["decode_uncached"]]
        if not pts:
            continue
        ratio = [p["decode_uncached"]["median_s"] / p["decode_cached"]["median_s"] for p in pts]
        data.append({"type": "scatter", "mode": "lines+markers", "name": label, "x": [p["context"] for p in pts],
                     "y": floats(ratio), "line": {"color": SEQUENCE[i % len(SEQUENCE)]}})
        rows += [[label, p["context"], float(f"{r:.3g}")] for p, r in zip(pts, ratio)]
    title = t({"en": "Speedup from the KV cache", "zh-TW": "KV 快取帶來的加速"}, lang)
    lay = layout(t({"en": "context (tokens, log)", "zh-TW": "上下文（詞元數，對數）"}, lang),
                 t({"en": "no-cache time ÷ cached time (×)", "zh-TW": "不用快取時間 ÷ 使用快取時間（倍）"}, lang),
                 xaxis={"type": "log"})
    cols = [t({"en": "results", "zh-TW": "結果"}, lang), t({"en": "context", "zh-TW": "上下文"}, lang),
            t({"en": "speedup (×)", "zh-TW": "加速（倍）"}, lang)]
    return figure("speedup", title, data, lay, cols, rows)


def _memory(series, lang):
    data, rows = [], []
    kv_name, w_name = t({"en": "KV cache", "zh-TW": "KV 快取"}, lang), t({"en": "weights", "zh-TW": "權重"}, lang)
    for i, (label, _doc, run) in enumerate(series):
        color = SEQUENCE[i % len(SEQUENCE)]
        ctx = [p["context"] for p in run["points"]]
        data.append({"type": "scatter", "mode": "lines+markers", "name": f"{label} — {kv_name}", "x": ctx,
                     "y": floats([p["kv_cache_bytes"] / 2**20 for p in run["points"]]), "line": {"color": color}})
        data.append({"type": "scatter", "mode": "lines", "name": f"{label} — {w_name}", "x": [ctx[0], ctx[-1]],
                     "y": floats([run["weights_bytes"] / 2**20] * 2), "line": {"color": color, "dash": "dot"}})
        rows += [[label, p["context"], fmt_bytes(p["kv_cache_bytes"]), fmt_bytes(run["weights_bytes"])]
                 for p in run["points"]]
    title = t({"en": "KV cache size vs context (one sequence)", "zh-TW": "KV 快取大小與上下文長度（單一序列）"}, lang)
    lay = layout(t({"en": "context (tokens, log)", "zh-TW": "上下文（詞元數，對數）"}, lang),
                 t({"en": "MiB (log)", "zh-TW": "MiB（對數）"}, lang), xaxis={"type": "log"}, yaxis={"type": "log"})
    cols = [t({"en": "results", "zh-TW": "結果"}, lang), t({"en": "context", "zh-TW": "上下文"}, lang),
            t({"en": "KV cache", "zh-TW": "KV 快取"}, lang), t({"en": "weights", "zh-TW": "權重"}, lang)]
    return figure("kv_memory", title, data, lay, cols, rows)


def _roofline(series, lang):
    data, rows = [], []
    fl_b = t({"en": "FLOP/byte", "zh-TW": "FLOP/位元組"}, lang)
    of_peak = t({"en": "of peak bandwidth", "zh-TW": "的峰值頻寬"}, lang)
    roofs_done = set()
    all_ai = [p["decode_flops"] / p["decode_bytes"] for _l, _d, r in series for p in r["points"]]
    for i, (label, doc, run) in enumerate(series):
        color = SEQUENCE[i % len(SEQUENCE)]
        prov = doc["provenance"]
        bw, fl = prov["peak_bandwidth"]["value"], prov["peak_flops"]["value"]
        key = (prov["device"]["name"], prov["backend"])
        if key not in roofs_done:
            roofs_done.add(key)
            ridge = fl / bw
            lo = 10 ** math.floor(math.log10(min(all_ai + [ridge]) / 3))
            hi = 10 ** math.ceil(math.log10(max(all_ai + [ridge]) * 3))
            xs = sorted([lo * (hi / lo) ** (k / 40) for k in range(41)] + [ridge])
            data.append({"type": "scatter", "mode": "lines", "name": t({"en": f"roof: {_short_device(doc)}",
                                                                        "zh-TW": f"屋頂：{_short_device(doc)}"}, lang),
                         "x": floats(xs), "y": floats([min(fl, x * bw) / 1e9 for x in xs]),
                         "line": {"color": COLORS["grey"], "width": 3},
                         "hovertemplate": f"%{{x:.3g}} {fl_b}<br>%{{y:.4g}} GFLOP/s<extra></extra>"})
        pts = run["points"]
        share = [100 * p["bandwidth_fraction"] for p in pts]
        data.append({"type": "scatter", "mode": "markers", "name": label,
                     "x": floats([p["decode_flops"] / p["decode_bytes"] for p in pts]),
                     "y": floats([p["flops_per_s"] / 1e9 for p in pts]),
                     "text": [f"{p['context']}: {s:.1f}% {of_peak}" for p, s in zip(pts, share)],
                     "marker": {"color": color, "size": 10},
                     "hovertemplate": f"{label}<br>%{{text}}<br>%{{x:.3g}} {fl_b}<br>%{{y:.4g}} GFLOP/s<extra></extra>"})
        rows += [[label, p["context"], float(f"{p['decode_flops'] / p['decode_bytes']:.4g}"),
                  float(f"{p['flops_per_s'] / 1e9:.4g}"), fmt_si(p["achieved_bandwidth"], "B/s"), float(f"{s:.3g}")]
                 for p, s in zip(pts, share)]
    title = t({"en": "Cached decode steps on the roofline", "zh-TW": "使用快取的解碼步驟在屋頂線上的位置"}, lang)
    lay = layout(t({"en": "intensity: FLOP per byte (log)", "zh-TW": "運算強度：FLOP／位元組（對數）"}, lang),
                 t({"en": "GFLOP/s (log)", "zh-TW": "GFLOP/s（對數）"}, lang), xaxis={"type": "log"}, yaxis={"type": "log"})
    cols = [t({"en": "results", "zh-TW": "結果"}, lang), t({"en": "context", "zh-TW": "上下文"}, lang),
            t({"en": "intensity (FLOP/byte)", "zh-TW": "運算強度（FLOP/位元組）"}, lang), "GFLOP/s",
            t({"en": "achieved bandwidth", "zh-TW": "達成頻寬"}, lang),
            t({"en": "% of peak bandwidth", "zh-TW": "佔峰值頻寬 %"}, lang)]
    return figure("roofline", title, data, lay, cols, rows)


def _floor(series, lang):
    data, rows = [], []
    meas, low = t({"en": "measured", "zh-TW": "實測"}, lang), t({"en": "floor: bytes ÷ peak bandwidth", "zh-TW": "下限：位元組 ÷ 峰值頻寬"}, lang)
    for i, (label, _doc, run) in enumerate(series):
        color = SEQUENCE[i % len(SEQUENCE)]
        pts = run["points"]
        ctx = [p["context"] for p in pts]
        data.append({"type": "scatter", "mode": "lines+markers", "name": f"{label} — {meas}", "x": ctx,
                     "y": floats([p["decode_cached"]["median_s"] * 1e3 for p in pts]), "line": {"color": color}})
        data.append({"type": "scatter", "mode": "lines", "name": f"{label} — {low}", "x": ctx,
                     "y": floats([p["lower_bound_s"] * 1e3 for p in pts]), "line": {"color": color, "dash": "dot"},
                     "fill": "tonexty", "fillcolor": "rgba(140,140,140,0.15)"})
        rows += [[label, p["context"], _ms(p["decode_cached"]["median_s"]), _ms(p["lower_bound_s"]),
                  float(f"{p['decode_cached']['median_s'] / p['lower_bound_s']:.3g}")] for p in pts]
    title = t({"en": "Gap to the physical floor (cached step)", "zh-TW": "與物理下限的差距（使用快取的一步）"}, lang)
    lay = layout(t({"en": "context (tokens, log)", "zh-TW": "上下文（詞元數，對數）"}, lang),
                 t({"en": "time per step (ms, log)", "zh-TW": "每步時間（毫秒，對數）"}, lang),
                 xaxis={"type": "log"}, yaxis={"type": "log"})
    cols = [t({"en": "results", "zh-TW": "結果"}, lang), t({"en": "context", "zh-TW": "上下文"}, lang),
            t({"en": "measured (ms)", "zh-TW": "實測（毫秒）"}, lang), t({"en": "floor (ms)", "zh-TW": "下限（毫秒）"}, lang),
            t({"en": "measured ÷ floor", "zh-TW": "實測 ÷ 下限"}, lang)]
    return figure("floor", title, data, lay, cols, rows)


# --------------------------------------------------------------------------- tables and notes


def provenance_table(stem: str, doc: dict, lang: str) -> dict:
    """Where one file's numbers come from, as a two-column table."""
    p = doc["provenance"]
    v = p["versions"]
    bw, fl = p["peak_bandwidth"], p["peak_flops"]
    source = {"user": {"en": "given by the user", "zh-TW": "使用者指定"},
              "spec": {"en": "datasheet", "zh-TW": "規格表"},
              "measured": {"en": "measured", "zh-TW": "實測"}}
    git = p["git"]
    commit = (git["commit"] or "?")[:12] + (t({"en": " (uncommitted changes)", "zh-TW": "（含未提交的修改）"}, lang)
                                             if git["dirty"] else "")
    threads = p["threads"]
    thread_text = (t({"en": f"{threads['count']} (pinned via {threads['method']})",
                      "zh-TW": f"{threads['count']}（以 {threads['method']} 固定）"}, lang)
                   if threads["pinned"] else t({"en": "not pinned", "zh-TW": "未固定"}, lang))
    load = p["host"]
    tm = p["timing"]
    versions = ", ".join(f"{k} {val}" for k, val in v.items() if val)
    rows = [
        [t({"en": "device", "zh-TW": "裝置"}, lang), _device_label(doc)],
        [t({"en": "peak bandwidth", "zh-TW": "峰值頻寬"}, lang),
         f"{fmt_si(bw['value'], 'B/s')} — {t(source[bw['source']], lang)}: {bw['note']}"],
        [t({"en": "peak compute (roof)", "zh-TW": "峰值運算（屋頂）"}, lang),
         f"{fmt_si(fl['value'], 'FLOP/s')} — {t(source[fl['source']], lang)}: {fl['note']}"],
        [t({"en": "software", "zh-TW": "軟體版本"}, lang), versions],
        ["CUDA", f"driver {p['cuda']['driver']}, runtime {p['cuda']['runtime']}" if p["cuda"] else "—"],
        [t({"en": "CPU threads", "zh-TW": "CPU 執行緒"}, lang), thread_text],
        [t({"en": "timing", "zh-TW": "計時方式"}, lang),
         t({"en": (f"{tm['clock']}; {tm['warmup']} warm-up, then at least {tm['repeats']} samples (cheap steps: "
                   f"until {tm['min_seconds']:g} s are measured; slow ones: at least 3); median and p10–p90"),
            "zh-TW": (f"{tm['clock']}；{tm['warmup']} 次暖身，之後至少取樣 {tm['repeats']} 次（便宜的步驟會一直取樣到累計 "
                      f"{tm['min_seconds']:g} 秒；很慢的步驟至少 3 次）；取中位數與 p10–p90")}, lang)],
        [t({"en": "load average (start → end)", "zh-TW": "系統負載（開始 → 結束）"}, lang),
         f"{load['loadavg_start']} → {load['loadavg_end']}"],
        ["git commit", commit],
        [t({"en": "date (UTC)", "zh-TW": "日期（UTC）"}, lang), p["date"]],
        [t({"en": "command", "zh-TW": "指令"}, lang), p["command"]],
        [t({"en": "file", "zh-TW": "檔案"}, lang), f"engine/bench/results/{stem}.json"],
    ]
    return table(t({"en": f"Provenance: {_device_label(doc)}", "zh-TW": f"來源資訊：{_device_label(doc)}"}, lang),
                 [t({"en": "field", "zh-TW": "欄位"}, lang), t({"en": "value", "zh-TW": "內容"}, lang)], rows)


def comparison_table(docs: dict[str, dict], shape: str, lang: str) -> dict | None:
    rows = []
    for doc in docs.values():
        for c in doc["comparisons"]:
            if c["shape"] != shape:
                continue
            faster = (t({"en": "engine faster", "zh-TW": "本引擎較快"}, lang) if c["ratio"] > 1
                      else t({"en": "transformers faster", "zh-TW": "transformers 較快"}, lang))
            rows.append([_device_label(doc), c["dtype"], c["context"], _ms(c["engine"]["median_s"]),
                         _ms(c["transformers"]["median_s"]), float(f"{c['ratio']:.3g}"), faster])
    if not rows:
        return None
    return table(t({"en": "Same weights in Hugging Face transformers (PyTorch CPU), cached decode step",
                    "zh-TW": "同一組權重放進 Hugging Face transformers（PyTorch CPU），使用快取的一步解碼"}, lang),
                 [t({"en": "results", "zh-TW": "結果"}, lang), "dtype", t({"en": "context", "zh-TW": "上下文"}, lang),
                  t({"en": "engine (ms)", "zh-TW": "本引擎（毫秒）"}, lang),
                  t({"en": "transformers (ms)", "zh-TW": "transformers（毫秒）"}, lang),
                  t({"en": "transformers ÷ engine", "zh-TW": "transformers ÷ 本引擎"}, lang),
                  t({"en": "which way", "zh-TW": "誰較快"}, lang)], rows)


def summary_notes(series, lang: str) -> list[str]:
    """Sentences computed from the files: growth of each step with the context, tokens/s."""
    notes = []
    for label, _doc, run in series:
        pts = run["points"]
        a, b = pts[0], pts[-1]
        line = {"en": (f"{label}: from {fmt_int(a['context'])} to {fmt_int(b['context'])} tokens of context the "
                       f"cached step grows {b['decode_cached']['median_s'] / a['decode_cached']['median_s']:.2f}×"),
                "zh-TW": (f"{label}：上下文從 {fmt_int(a['context'])} 增加到 {fmt_int(b['context'])} 個詞元時，"
                          f"使用快取的一步變為 {b['decode_cached']['median_s'] / a['decode_cached']['median_s']:.2f} 倍")}
        unc = [p for p in pts if p["decode_uncached"]]
        if len(unc) >= 2:
            u0, u1 = unc[0], unc[-1]
            g = u1["decode_uncached"]["median_s"] / u0["decode_uncached"]["median_s"]
            line["en"] += (f"; recomputing without it grows {g:.2f}× from {fmt_int(u0['context'])} to "
                           f"{fmt_int(u1['context'])} tokens (the context grew {u1['context'] / u0['context']:.1f}×)")
            line["zh-TW"] += (f"；不用快取、全部重算則從 {fmt_int(u0['context'])} 到 {fmt_int(u1['context'])} 個詞元變為 "
                              f"{g:.2f} 倍（上下文變為 {u1['context'] / u0['context']:.1f} 倍）")
        tps = [1 / p["decode_cached"]["median_s"] for p in pts]
        line["en"] += f"; {fmt_int(min(tps))}–{fmt_int(max(tps))} tokens/s with the cache."
        line["zh-TW"] += f"；使用快取時每秒 {fmt_int(min(tps))}–{fmt_int(max(tps))} 個詞元。"
        notes.append(t(line, lang))
        skipped = [MEASUREMENTS[k] for k in MEASUREMENTS if any(k in p["skipped"] for p in pts)]
        if skipped:
            first = min(p["context"] for p in pts if p["skipped"])
            notes.append(t({"en": (f"{label}: from {fmt_int(first)} tokens of context on, some measurements "
                                   f"({', '.join(m['en'] for m in skipped)}) were "
                                   "skipped as too slow or too large for this device; there the cache was filled with "
                                   "random keys and values before timing the cached step."),
                            "zh-TW": (f"{label}：上下文從 {fmt_int(first)} 個詞元起，有些量測（{'、'.join(m['zh-TW'] for m in skipped)}）因為在這個裝置上太慢或"
                                      "太佔記憶體而略過；這時先用隨機的鍵與值填滿快取，再量使用快取的一步。")}, lang))
    return notes


def absence_notes(lang: str) -> list[str]:
    """What has not been measured, decided from which files exist."""
    kinds = {d["provenance"]["device"]["kind"] for d in _RESULTS.values()}
    notes = []
    if not _RESULTS:
        notes.append(t({"en": "No benchmark results have been committed yet.",
                        "zh-TW": "目前還沒有提交任何效能測試結果。"}, lang))
    if "gpu" not in kinds:
        notes.append(t({"en": "No GPU results have been measured yet.",
                        "zh-TW": "目前還沒有任何 GPU 的量測結果。"}, lang))
    return notes


# --------------------------------------------------------------------------- run


def run(values: dict, lang: str) -> dict:
    docs = _selected(values)
    series = _series(docs, values["shape"])
    notes = absence_notes(lang)
    if not series:
        if _RESULTS:
            notes.append(t({"en": "The selected results file has no run of this model shape.",
                            "zh-TW": "所選的結果檔沒有這個模型形狀的量測。"}, lang))
        return {"figures": [], "tables": [], "notes": notes}
    figures = [_latency(series, lang), _speedup(series, lang), _memory(series, lang), _roofline(series, lang),
               _floor(series, lang)]
    figures = [f for f in figures if f["figure"]["data"]]
    tables = [provenance_table(stem, doc, lang) for stem, doc in docs.items()]
    cmp = comparison_table(docs, values["shape"], lang)
    if cmp:
        tables.insert(0, cmp)
    return {"figures": figures, "tables": tables, "notes": summary_notes(series, lang) + notes}
