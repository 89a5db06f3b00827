"""The benchmark page ("bench_measured"): every committed results file, drawn with Plotly.

Reads ``engine/bench_results/results/*.json`` (package data, so it works at build time and in the
browser alike) and plots, for one model shape: decode step time with and without the KV
cache against the context, the speedup, the KV cache's size, the measured points on a
Roofline (achieved bandwidth as a share of the device's peak), that share against the
context, and the gap between each step and its physical floor, bytes / peak bandwidth.
Beside a GPU file it shows what was measured with it (``engine/bench_results/baselines``): the same
step in Hugging Face transformers and the kernel launches per step, and the launches of
the fused step (engine/gpu) counted on a CPU. A GPU session of python -m tools.bench.gpu_check
(``engine/bench_results/gpu_checks/*.json``) adds the fused step replayed as a CUDA graph beside
that per-op "before", with transformers, the floor and issue 17's goals judged. Every number
comes from a results file or a committed log; a device kind with no file says so instead of
showing anything.
"""
from __future__ import annotations

import functools
import math
import re

from engine.bench_results import baseline, store
from lessons.common import labels as L
from lessons.common.base import select
from lessons.common.figures import COLORS, SEQUENCE, figure, floats, fmt_bytes, fmt_int, fmt_si, layout, t, table

NAME = "bench_measured"
PLATE = "benchmarks"
TITLE = {"en": "Measured: the engine with and without the KV cache",
         "zh-TW": "實測：引擎使用與不使用 KV 快取"}

SHAPE_LABELS = {
    "course": {"en": "Course model (trained)", "zh-TW": "課程模型（已訓練）"},
    "gpt2-small": {"en": "GPT-2 small size", "zh-TW": "GPT-2 small 大小"},
    "llama3-8b": {"en": "Llama 3 8B shape (first layers)", "zh-TW": "Llama 3 8B 形狀（前幾層）"},
    "tiny": {"en": "Tiny smoke-test model", "zh-TW": "極小測試模型"},
}

_RESULTS = store.load_all()  # stem -> document; read once per process
_BASELINES = baseline.load_all()


@functools.lru_cache(maxsize=1)
def _gpu_checks() -> dict[str, dict]:
    """stem -> a gpu_check document measured on a GPU (engine/bench_results/gpu_checks/)."""
    return store.load_gpu_checks()
_SHAPES = [k for k in SHAPE_LABELS if any(r["shape"] == k for d in _RESULTS.values() for r in d["runs"])]
# The largest shape first: it is the one a GPU file says most about.
_DEFAULT_SHAPE = "llama3-8b" if "llama3-8b" in _SHAPES else (_SHAPES[0] if _SHAPES else "course")


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
           help={"en": "One file per device and backend, written by python -m tools.bench.",
                 "zh-TW": "每個裝置與後端一個檔案，由 python -m tools.bench 產生。"}),
    select("shape", {"en": "Model shape", "zh-TW": "模型形狀"}, _DEFAULT_SHAPE,
           [(k, SHAPE_LABELS[k]) for k in (_SHAPES or ["course"])],
           help={"en": "Random weights for the real-model shapes: timing does not depend on the numbers.",
                 "zh-TW": "真實模型形狀使用隨機權重：計時與權重的數值無關。"}),
)

MEASUREMENTS = {
    "prefill": {"en": "prefill", "zh-TW": "預填"},
    "decode_uncached": {"en": "the step without the cache", "zh-TW": "不用快取的一步"},
}

CTX_LOG = {"en": "context (tokens, log)", "zh-TW": "上下文（詞元數，對數）"}
RESULTS_COL = {"en": "results", "zh-TW": "結果"}
CONTEXT_COL = {"en": "context", "zh-TW": "上下文"}


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


def _baselines(docs: dict[str, dict]) -> list[tuple[dict, baseline.Baseline]]:
    """(results doc, its baseline) for the selected files that have side measurements."""
    found = [(doc, baseline.for_doc(doc, _BASELINES)) for doc in docs.values()]
    return [(doc, b) for doc, b in found if b is not None]


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
    title = t({"en": "Decode step time vs context", "zh-TW": "每步解碼時間隨上下文長度的變化"}, lang)
    lay = layout(t({"en": "context (tokens already in the cache, log)", "zh-TW": "上下文（快取中已有的詞元數，對數）"}, lang),
                 t({"en": "time per step (ms, log; bars: p10–p90)", "zh-TW": "每步時間（毫秒，對數；誤差線 p10–p90）"}, lang),
                 xaxis={"type": "log"}, yaxis={"type": "log"})
    cols = [t(RESULTS_COL, lang), t(CONTEXT_COL, lang),
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
    lay = layout(t(CTX_LOG, lang),
                 t({"en": "no-cache time ÷ cached time (×)", "zh-TW": "不用快取時間 ÷ 使用快取時間（倍）"}, lang),
                 xaxis={"type": "log"})
    cols = [t(RESULTS_COL, lang), t(CONTEXT_COL, lang), t({"en": "speedup (×)", "zh-TW": "加速（倍）"}, lang)]
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
    title = t({"en": "KV cache size vs context (one sequence)", "zh-TW": "KV 快取大小隨上下文長度的變化（單一序列）"}, lang)
    lay = layout(t(CTX_LOG, lang),
                 t({"en": "MiB (log)", "zh-TW": "MiB（對數）"}, lang), xaxis={"type": "log"}, yaxis={"type": "log"})
    cols = [t(RESULTS_COL, lang), t(CONTEXT_COL, lang),
            t({"en": "KV cache", "zh-TW": "KV 快取"}, lang), t({"en": "weights", "zh-TW": "權重"}, lang)]
    return figure("kv_memory", title, data, lay, cols, rows)


def _roof_trace(doc, all_ai, lang):
    """The device's Roofline: min(peak FLOP/s, intensity x peak bandwidth), through its ridge point."""
    prov = doc["provenance"]
    bw, fl = prov["peak_bandwidth"]["value"], prov["peak_flops"]["value"]
    ridge = fl / bw
    lo = 10 ** math.floor(math.log10(min(all_ai + [ridge]) / 3))
    hi = 10 ** math.ceil(math.log10(max(all_ai + [ridge]) * 3))
    xs = sorted([lo * (hi / lo) ** (k / 40) for k in range(41)] + [ridge])
    fl_b = t({"en": "FLOP/byte", "zh-TW": "FLOP／位元組"}, lang)
    return {"type": "scatter", "mode": "lines", "name": t({"en": f"roof: {_short_device(doc)}",
                                                           "zh-TW": f"Roofline：{_short_device(doc)}"}, lang),
            "x": floats(xs), "y": floats([min(fl, x * bw) / 1e9 for x in xs]),
            "line": {"color": COLORS["grey"], "width": 3},
            "hovertemplate": f"%{{x:.3g}} {fl_b}<br>%{{y:.4g}} GFLOP/s<extra></extra>"}


def _roofline(series, lang):
    data, rows = [], []
    fl_b = t({"en": "FLOP/byte", "zh-TW": "FLOP／位元組"}, lang)
    of_peak = t({"en": "of peak bandwidth", "zh-TW": "的峰值頻寬"}, lang)
    roofs_done = set()
    all_ai = [p["decode_flops"] / p["decode_bytes"] for _l, _d, r in series for p in r["points"]]
    for i, (label, doc, run) in enumerate(series):
        key = (doc["provenance"]["device"]["name"], doc["provenance"]["backend"])
        if key not in roofs_done:
            roofs_done.add(key)
            data.append(_roof_trace(doc, all_ai, lang))
        pts = run["points"]
        share = [100 * p["bandwidth_fraction"] for p in pts]
        data.append({"type": "scatter", "mode": "markers", "name": label,
                     "x": floats([p["decode_flops"] / p["decode_bytes"] for p in pts]),
                     "y": floats([p["flops_per_s"] / 1e9 for p in pts]),
                     "text": [f"{p['context']}: {s:.1f}% {of_peak}" for p, s in zip(pts, share)],
                     "marker": {"color": SEQUENCE[i % len(SEQUENCE)], "size": 10},
                     "hovertemplate": f"{label}<br>%{{text}}<br>%{{x:.3g}} {fl_b}<br>%{{y:.4g}} GFLOP/s<extra></extra>"})
        rows += [[label, p["context"], float(f"{p['decode_flops'] / p['decode_bytes']:.4g}"),
                  float(f"{p['flops_per_s'] / 1e9:.4g}"), fmt_si(p["achieved_bandwidth"], "B/s"), float(f"{s:.3g}")]
                 for p, s in zip(pts, share)]
    title = t({"en": "Cached decode steps on the roofline", "zh-TW": "使用快取的解碼步驟在 Roofline 上的位置"}, lang)
    lay = layout(t({"en": "intensity: FLOP per byte (log)", "zh-TW": "運算強度：FLOP／位元組（對數）"}, lang),
                 t({"en": "GFLOP/s (log)", "zh-TW": "GFLOP/s（對數）"}, lang), xaxis={"type": "log"}, yaxis={"type": "log"})
    cols = [t(RESULTS_COL, lang), t(CONTEXT_COL, lang),
            t({"en": "intensity (FLOP/byte)", "zh-TW": "運算強度（FLOP／位元組）"}, lang), "GFLOP/s",
            t({"en": "achieved bandwidth", "zh-TW": "實測頻寬"}, lang),
            t({"en": "% of peak bandwidth", "zh-TW": "佔峰值頻寬 %"}, lang)]
    return figure("roofline", title, data, lay, cols, rows)


def _peak_share(series, lang):
    """How much of the memory's peak bandwidth each cached step used: 100 % is the floor."""
    data, rows = [], []
    for i, (label, doc, run) in enumerate(series):
        pts = run["points"]
        data.append({"type": "scatter", "mode": "lines+markers", "name": label, "x": [p["context"] for p in pts],
                     "y": floats([100 * p["bandwidth_fraction"] for p in pts]),
                     "line": {"color": SEQUENCE[i % len(SEQUENCE)]}})
        peak = fmt_si(doc["provenance"]["peak_bandwidth"]["value"], "B/s")
        rows += [[label, p["context"], fmt_si(p["achieved_bandwidth"], "B/s"), peak,
                  float(f"{100 * p['bandwidth_fraction']:.3g}")] for p in pts]
    title = t({"en": "Share of the peak memory bandwidth (cached step)", "zh-TW": "用到多少峰值記憶體頻寬（使用快取的一步）"}, lang)
    top = max([100 * p["bandwidth_fraction"] for _l, _d, r in series for p in r["points"]] + [1.0])
    lay = layout(t(CTX_LOG, lang),
                 t({"en": "% of peak bandwidth", "zh-TW": "佔峰值頻寬 %"}, lang),
                 xaxis={"type": "log"}, yaxis={"range": [0, min(100.0, top * 1.15)], "rangemode": "tozero"})
    cols = [t(RESULTS_COL, lang), t(CONTEXT_COL, lang), t({"en": "achieved bandwidth", "zh-TW": "實測頻寬"}, lang),
            t({"en": "peak bandwidth", "zh-TW": "峰值頻寬"}, lang), t({"en": "% of peak", "zh-TW": "佔峰值 %"}, lang)]
    return figure("peak_share", title, data, lay, cols, rows)


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
    lay = layout(t(CTX_LOG, lang),
                 t({"en": "time per step (ms, log)", "zh-TW": "每步時間（毫秒，對數）"}, lang),
                 xaxis={"type": "log"}, yaxis={"type": "log"})
    cols = [t(RESULTS_COL, lang), t(CONTEXT_COL, lang),
            t({"en": "measured (ms)", "zh-TW": "實測（毫秒）"}, lang), t({"en": "floor (ms)", "zh-TW": "下限（毫秒）"}, lang),
            t({"en": "measured ÷ floor", "zh-TW": "實測 ÷ 下限"}, lang)]
    return figure("floor", title, data, lay, cols, rows)


# --------------------------------------------------------------------------- transformers


def _comparisons(docs: dict[str, dict], shape: str) -> list[tuple[dict, dict]]:
    """(doc, comparison) for ``shape``: each file's own, then its baseline's transformers log."""
    found = [(doc, c) for doc in docs.values() for c in doc["comparisons"] if c["shape"] == shape]
    found += [(doc, c) for doc, b in _baselines(docs) for c in b.comparisons(doc) if c["shape"] == shape]
    return found


def _how(c: dict, lang: str) -> str:
    if c.get("separate_run"):
        return t({"en": "separate run, same GPU and shape", "zh-TW": "另一次執行，同一張 GPU、同一個形狀"}, lang)
    return t({"en": "same weights, back to back", "zh-TW": "同一組權重，接連量測"}, lang)


def _transformers(found, lang):
    """Engine vs transformers, cached step, per context: one solid and one dashed line per source."""
    data, groups = [], {}
    for doc, c in found:
        backend = "NumPy" if doc["provenance"]["backend"] == "numpy" else "CuPy"
        groups.setdefault((f"{_short_device(doc)} {backend}", c["dtype"], bool(c.get("separate_run"))), []).append(c)
    eng, hf = t({"en": "engine", "zh-TW": "本引擎"}, lang), "transformers"
    for i, ((device, dtype, _sep), cs) in enumerate(groups.items()):
        color, x = SEQUENCE[i % len(SEQUENCE)], [c["context"] for c in cs]
        for who, key, dash in ((eng, "engine", "solid"), (hf, "transformers", "dash")):
            data.append({"type": "scatter", "mode": "lines+markers", "name": f"{device} {dtype} — {who}", "x": x,
                         "y": floats([c[key]["median_s"] * 1e3 for c in cs]), "line": {"color": color, "dash": dash}})
    rows = [[_device_label(doc), c["dtype"], c["context"], _ms(c["engine"]["median_s"]),
             _ms(c["transformers"]["median_s"]), float(f"{c['ratio']:.3g}"),
             t({"en": "engine faster", "zh-TW": "本引擎較快"} if c["ratio"] > 1
               else {"en": "transformers faster", "zh-TW": "transformers 較快"}, lang), _how(c, lang)]
            for doc, c in found]
    title = t({"en": "The same cached step in Hugging Face transformers",
               "zh-TW": "同一個使用快取的步驟，放進 Hugging Face transformers"}, lang)
    lay = layout(t(CTX_LOG, lang), t({"en": "time per step (ms, log)", "zh-TW": "每步時間（毫秒，對數）"}, lang),
                 xaxis={"type": "log"}, yaxis={"type": "log"})
    cols = [t(RESULTS_COL, lang), "dtype", t(CONTEXT_COL, lang), t({"en": "engine (ms)", "zh-TW": "本引擎（毫秒）"}, lang),
            t({"en": "transformers (ms)", "zh-TW": "transformers（毫秒）"}, lang),
            t({"en": "transformers ÷ engine", "zh-TW": "transformers ÷ 本引擎"}, lang),
            t({"en": "which is faster", "zh-TW": "誰較快"}, lang), t({"en": "how measured", "zh-TW": "量測方式"}, lang)]
    return figure("transformers", title, data, lay, cols, rows)


# --------------------------------------------------------------------------- launches


@functools.lru_cache(maxsize=8)
def _fused_launches(n_layers: int) -> int:
    from engine.gpu.recording import launches_per_step

    return launches_per_step(n_layers)


def _launch_rows(docs: dict[str, dict], shape: str, lang: str) -> list[list]:
    """[short name, what, per step, per step / layers, how counted] for the selected GPU files."""
    profiled = {"en": "profiled on the GPU (CUPTI)", "zh-TW": "在 GPU 上剖析（CUPTI）"}
    rows = []
    for doc, b in _baselines(docs):
        p, commit = b.profile, b.provenance["commit"][:7]
        if p.shape == shape:
            rows.append([t({"en": f"engine, {commit}", "zh-TW": f"本引擎，{commit}"}, lang),
                         t({"en": f"the engine one operation at a time ({_short_device(doc)}, commit {commit})",
                            "zh-TW": f"一次只做一個運算的本引擎（{_short_device(doc)}，commit {commit}）"}, lang),
                         p.ops_per_step, float(f"{p.ops_per_layer:.3g}"), t(profiled, lang)])
    for label, _doc, run in _series(docs, shape):
        if run.get("launches"):
            n = run["launches"]
            how = profiled if n["method"] == "cupti" else {"en": "kernel calls counted", "zh-TW": "數 kernel 呼叫次數"}
            rows.append([label, label, n["per_step"], float(f"{n['per_layer']:.3g}"), t(how, lang)])
    for L in sorted({b.profile.n_layers for _d, b in _baselines(docs) if b.profile.shape == shape}):
        n = _fused_launches(L)
        rows.append([t({"en": "fused step", "zh-TW": "融合步驟"}, lang),
                     t({"en": f"the fused step of engine/gpu, {L} layers (not yet run on a GPU)",
                        "zh-TW": f"engine/gpu 的融合步驟，{L} 層（尚未在 GPU 上執行）"}, lang), n, float(f"{n / L:.3g}"),
                     t({"en": "counted on a CPU (a NumPy backend that records calls)",
                        "zh-TW": "在 CPU 上數出（記下每次呼叫的 NumPy 後端）"}, lang)])
    return rows


def _launches(docs: dict[str, dict], shape: str, lang: str):
    rows = _launch_rows(docs, shape, lang)
    if not rows:
        return None
    data = [{"type": "bar", "orientation": "h", "name": t({"en": "launches per step", "zh-TW": "每步啟動次數"}, lang),
             "y": [r[0] for r in rows], "x": [r[2] for r in rows], "marker": {"color": SEQUENCE[0]},
             "text": [f"{r[2]:g}" for r in rows], "textposition": "auto",
             "hovertext": [r[1] for r in rows], "hoverinfo": "text+x"}]
    # the axis title stays short enough for a 375 px screen; the figure title says what is counted
    title = t({"en": "GPU launches (kernels and matmuls) per decode step",
               "zh-TW": "每個解碼步驟啟動幾次 GPU kernel（含矩陣乘法）"}, lang)
    lay = layout(t({"en": "launches per step", "zh-TW": "每步啟動次數"}, lang),
                 "", yaxis={"automargin": True, "autorange": "reversed"}, showlegend=False)
    cols = [t({"en": "bar", "zh-TW": "長條"}, lang), t({"en": "what", "zh-TW": "項目"}, lang),
            t({"en": "per step", "zh-TW": "每步"}, lang), t({"en": "per step ÷ layers", "zh-TW": "每步 ÷ 層數"}, lang),
            t({"en": "how counted", "zh-TW": "計數方式"}, lang)]
    return figure("launches", title, data, lay, cols, rows)


# --------------------------------------------------------------------------- tables and notes

SOURCE = {"user": {"en": "given by the user", "zh-TW": "使用者指定"},
          "spec": {"en": "datasheet", "zh-TW": "規格表"},
          "measured": {"en": "measured", "zh-TW": "實測"}}


# How the threads were pinned, as the zh-TW provenance row says it (an unknown method is shown as it is).
_ZH_PIN = {"env": "環境變數", "threadpoolctl": " threadpoolctl "}


def _timing_text(tm: dict, lang: str) -> str:
    return t({"en": (f"{tm['clock']}; {tm['warmup']} warm-up, then at least {tm['repeats']} samples (cheap steps: "
                     f"until {tm['min_seconds']:g} s are measured; slow ones: at least 3); median and p10–p90"),
              "zh-TW": (f"{tm['clock']}；{tm['warmup']} 次暖身，之後至少計時 {tm['repeats']} 次（很快的步驟會一直計時到累計 "
                        f"{tm['min_seconds']:g} 秒；很慢的步驟至少 3 次）；取中位數與 p10–p90")}, lang)


# The harness writes each peak's note from a few fixed templates (tools/bench/backend.py GPU_SPEC_BANDWIDTH,
# tools/bench/provenance.py measure_copy_bandwidth / measure_matmul_flops, --peak-bw-gbs): each has its zh-TW
# wording here, with the numbers carried over. A note of any other form is shown as the file holds it.
_ZH_NOTES = (
    (re.compile(r"(?P<xp>\w+) STREAM-like test on 2 x (?P<mib>\d+) MiB float32 arrays, best of (?P<n>\d+): "
                r"copy (?P<copy>[\d.]+ GB/s) \(read \+ write counted\), dot (?P<dot>[\d.]+ GB/s); "
                r"the higher \((?P<kernel>copy|dot \(read-only\))\) is used"),
     "{xp} 的類似 STREAM 測試，2 個 {mib} MiB 的 float32 陣列，取 {n} 次中最快的一次；copy {copy}（讀和寫都算），"
     "dot {dot}，採用比較高的 {kernel}"),
    (re.compile(r"(?P<xp>\w+) (?P<n1>\d+)x(?P<n2>\d+) (?P<dtype>\w+) matmul, best of (?P<n>\d+)"),
     "{xp} 的 {n1}×{n2} {dtype} 矩陣乘法，取 {n} 次中最快的一次"),
    (re.compile(r"(?P<gpu>NVIDIA \S+(?: \S+)*?) Tensor Core GPU datasheet \((?P<form>[^)]+)\): (?P<bw>[\d.]+ TB/s) (?P<mem>\S+)"),
     "{gpu} Tensor Core GPU（{form}）的 {mem} 頻寬 {bw}"),
    (re.compile(r"given on the command line with --peak-bw-gbs"), "在命令列用 --peak-bw-gbs 指定"),
)
_ZH_KERNEL = {"copy": "copy", "dot (read-only)": "dot（只讀）"}


def peak_note(note: str, lang: str) -> str:
    """A peak's note in the reader's language: a harness template mapped to zh-TW, anything else as it is."""
    if lang != "zh-TW":
        return note
    for pattern, zh in _ZH_NOTES:
        m = pattern.fullmatch(note)
        if m:
            parts = m.groupdict()
            if "kernel" in parts:
                parts["kernel"] = _ZH_KERNEL[parts["kernel"]]
            return zh.format(**parts)
    return note


def command_notes(command: str, lang: str) -> str:
    """What a reader should know about a recorded command: it ran under the harness's old name
    (python -m engine.bench, writing to engine/bench/results/), and an option given twice takes its last value."""
    notes = []
    if re.match(r"python -m engine\.bench(?!\w)", command):
        notes.append(t({"en": ("written when the harness was python -m engine.bench, writing to engine/bench/results/; "
                               "today it is python -m tools.bench, and the files live in engine/bench_results/results/"),
                        "zh-TW": ("這個檔案寫出時，測試程式還叫 python -m engine.bench，結果寫在 engine/bench/results/；"
                                  "現在的指令是 python -m tools.bench，檔案放在 engine/bench_results/results/")}, lang))
    words = command.split()
    seen: dict[str, list[str]] = {}
    for i, w in enumerate(words):
        if w.startswith("--"):
            seen.setdefault(w, []).append(words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else "")
    for flag, given in seen.items():
        if len(given) > 1:
            notes.append(t({"en": f"{flag} is given {len(given)} times and the last one, {given[-1]}, applies",
                            "zh-TW": f"{flag} 出現了 {len(given)} 次，以最後一個 {given[-1]} 為準"}, lang))
    return t({"en": "; ", "zh-TW": "；"}, lang).join(notes)


def provenance_table(stem: str, doc: dict, lang: str) -> dict:
    """Where one file's numbers come from, as a two-column table."""
    p = doc["provenance"]
    bw, fl, git, threads = p["peak_bandwidth"], p["peak_flops"], p["git"], p["threads"]
    about = command_notes(p["command"], lang)
    commit = (git["commit"] or "?")[:12] + (t({"en": " (uncommitted changes)", "zh-TW": "（含未提交的修改）"}, lang)
                                             if git["dirty"] else "")
    thread_text = (t({"en": f"{threads['count']} (pinned via {threads['method']})",
                      "zh-TW": f"{threads['count']}（用{_ZH_PIN.get(threads['method'], ' ' + threads['method'] + ' ')}固定）"}, lang)
                   if threads["pinned"] else t({"en": "not pinned", "zh-TW": "未固定"}, lang))
    rows = [
        [t({"en": "device", "zh-TW": "裝置"}, lang), _device_label(doc)],
        [t({"en": "peak bandwidth", "zh-TW": "峰值頻寬"}, lang),
         f"{fmt_si(bw['value'], 'B/s')} — {t(SOURCE[bw['source']], lang)}{t(L.COLON, lang)}{peak_note(bw['note'], lang)}"],
        [t({"en": "peak compute (the roof)", "zh-TW": "峰值運算能力（Roofline 的平頂）"}, lang),
         f"{fmt_si(fl['value'], 'FLOP/s')} — {t(SOURCE[fl['source']], lang)}{t(L.COLON, lang)}{peak_note(fl['note'], lang)}"],
        [t({"en": "software", "zh-TW": "軟體版本"}, lang), ", ".join(f"{k} {v}" for k, v in p["versions"].items() if v)],
        ["CUDA", t({"en": "driver {d}, runtime {r}", "zh-TW": "驅動程式 {d}、runtime {r}"}, lang).format(
            d=p["cuda"]["driver"], r=p["cuda"]["runtime"]) if p["cuda"] else "—"],
        [t({"en": "CPU threads", "zh-TW": "CPU 執行緒"}, lang), thread_text],
        [t({"en": "timing", "zh-TW": "計時方式"}, lang), _timing_text(p["timing"], lang)],
        [t({"en": "load average (start → end)", "zh-TW": "系統負載（開始 → 結束）"}, lang),
         f"{p['host']['loadavg_start']} → {p['host']['loadavg_end']}"],
        ["git commit", commit],
        [t({"en": "date (UTC)", "zh-TW": "日期（UTC）"}, lang), p["date"]],
        [t({"en": "command", "zh-TW": "指令"}, lang), p["command"]],
        *([[t({"en": "about the command", "zh-TW": "關於這個指令"}, lang), about]] if about else []),
        [t({"en": "file", "zh-TW": "檔案"}, lang), f"engine/bench_results/results/{stem}.json"],
    ]
    return table(t({"en": f"Provenance: {_device_label(doc)}", "zh-TW": f"來源資訊：{_device_label(doc)}"}, lang),
                 [t({"en": "field", "zh-TW": "欄位"}, lang), t({"en": "value", "zh-TW": "內容"}, lang)], rows)


SIDE_FILES = {  # what each committed side log measured (its provenance.json says it in English)
    "hf-transformers-cuda.log": {"en": "the same step in Hugging Face transformers (PyTorch CUDA, eager, sdpa): "
                                       "same GPU and shape, its own random weights, median of 50",
                                 "zh-TW": "同一步放進 Hugging Face transformers（PyTorch CUDA、eager、sdpa）：同一張 GPU、"
                                          "同一個形狀、它自己的隨機權重，取 50 次的中位數"},
    "kernel-profile.log": {"en": "every GPU operation of one engine step, seen by torch.profiler (CUPTI)",
                           "zh-TW": "引擎一步裡的每個 GPU 運算，由 torch.profiler（CUPTI）記錄"},
    "matmul-and-launch.log": {"en": "host time of a tiny two-kernel CuPy expression: the cost of a launch",
                              "zh-TW": "一個只有兩個 kernel 的小 CuPy 運算花掉的主機時間：也就是啟動一次的成本"},
}


def baseline_table(doc: dict, b: baseline.Baseline, lang: str) -> dict:
    """Where the side measurements of a GPU file come from: one row per committed log."""
    prov = b.provenance
    rows = [[f"engine/bench_results/baselines/{b.name}/{name}", t(SIDE_FILES[name], lang) if name in SIDE_FILES else f["what"],
             f["script"], f["sha256"][:12]] for name, f in prov["files"].items()]
    rows.append([f"engine/bench_results/baselines/{b.name}/provenance.json",
                 t({"en": f"copied byte for byte from {prov['source'].split(' ')[0]}; software: {prov['software']}",
                    "zh-TW": f"逐位元組複製自 {prov['source'].split(' ')[0]}；軟體：{prov['software']}"}, lang),
                 "—", f"commit {prov['commit'][:12]}, {prov['date']}"])
    return table(t({"en": f"Provenance of the side measurements: {_device_label(doc)}",
                    "zh-TW": f"附帶量測的來源資訊：{_device_label(doc)}"}, lang),
                 [t({"en": "file", "zh-TW": "檔案"}, lang), t({"en": "what it measured", "zh-TW": "量了什麼"}, lang),
                  t({"en": "script", "zh-TW": "指令碼"}, lang), "sha256 / commit"], rows)


def summary_notes(series, lang: str) -> list[str]:
    """Sentences computed from the files: growth of each step with the context, tokens/s."""
    notes = []
    for label, _doc, run in series:
        pts = run["points"]
        a, b = pts[0], pts[-1]
        line = {"en": (f"{label}: from {fmt_int(a['context'])} to {fmt_int(b['context'])} tokens of context the "
                       f"cached step grows {b['decode_cached']['median_s'] / a['decode_cached']['median_s']:.2f}×"),
                "zh-TW": (f"{label}：上下文從 {fmt_int(a['context'])} 增加到 {fmt_int(b['context'])} 個詞元時，"
                          f"使用快取的每步時間變成原來的 {b['decode_cached']['median_s'] / a['decode_cached']['median_s']:.2f} 倍")}
        unc = [p for p in pts if p["decode_uncached"]]
        if len(unc) >= 2:
            u0, u1 = unc[0], unc[-1]
            g = u1["decode_uncached"]["median_s"] / u0["decode_uncached"]["median_s"]
            line["en"] += (f"; recomputing without it grows {g:.2f}× from {fmt_int(u0['context'])} to "
                           f"{fmt_int(u1['context'])} tokens (the context grew {u1['context'] / u0['context']:.1f}×)")
            line["zh-TW"] += (f"；不用快取、全部重算時，從 {fmt_int(u0['context'])} 到 {fmt_int(u1['context'])} 個詞元就變成 "
                              f"{g:.2f} 倍（上下文是原來的 {u1['context'] / u0['context']:.1f} 倍）")
        tps = [1 / p["decode_cached"]["median_s"] for p in pts]
        line["en"] += f"; {fmt_int(min(tps))}–{fmt_int(max(tps))} tokens/s with the cache."
        line["zh-TW"] += f"；使用快取時每秒 {fmt_int(min(tps))} 到 {fmt_int(max(tps))} 個詞元。"
        notes.append(t(line, lang))
        notes += _skipped_note(label, pts, lang)
    return notes


def _skipped_note(label: str, pts: list[dict], lang: str) -> list[str]:
    skipped = [MEASUREMENTS[k] for k in MEASUREMENTS if any(k in p["skipped"] for p in pts)]
    if not skipped:
        return []
    first = min(p["context"] for p in pts if p["skipped"])
    return [t({"en": (f"{label}: from {fmt_int(first)} tokens of context on, some measurements "
                      f"({', '.join(m['en'] for m in skipped)}) were skipped as too slow or too large for this "
                      "device; there the cache was filled with random keys and values before timing the cached step."),
               "zh-TW": (f"{label}：上下文從 {fmt_int(first)} 個詞元起，有些量測（{'、'.join(m['zh-TW'] for m in skipped)}）"
                         "因為在這個裝置上太慢或太佔記憶體而略過；這時先用隨機的 key 與 value 填滿快取，再量使用快取的一步。")},
              lang)]


def launch_bound_note(doc: dict, b: baseline.Baseline, lang: str) -> str:
    """Why the baseline GPU step is slow, in numbers parsed from its kernel profile."""
    p = b.profile
    gemv = max((k for k in p.kernels if "gemv" in k.name.lower() and "<float" in k.name), key=lambda k: k.us_per_step)
    copies = next(k for k in p.kernels if k.name == f"cupy_copy__{p.dtype}_float32")
    launching_ms = p.ops_per_step * b.launch_us / 1e3
    d = dict(dev=_short_device(doc), commit=b.provenance["commit"][:7], dtype=p.dtype, ctx=fmt_int(p.context),
             ops=f"{p.ops_per_step:g}", per_layer=f"{p.ops_per_layer:.0f}", us=f"{b.launch_us:.0f}",
             launching=f"{launching_ms:.1f}", busy=f"{p.busy_ms:.2f}", wall=f"{p.wall_ms:.2f}",
             gemv=f"{gemv.us_per_step / 1e3:.2f}", n_copies=f"{copies.per_step:g}", copy_ms=f"{copies.us_per_step / 1e3:.2f}")
    return t({
        "en": ("Why the {dev} numbers are far above the floor (commit {commit}): one {dtype} step of the Llama shape at "
               "{ctx} tokens launches {ops} GPU operations, about {per_layer} per layer, and each launch costs the "
               "host about {us} µs, so launching alone takes about {launching} ms; in the profiled run a step took "
               "{wall} ms and the GPU was busy {busy} ms of it: the host, not the memory, sets the pace. The largest GPU cost is the attention "
               "product over the cache, which CuPy runs as a float32 batched gemv ({gemv} ms per step) after "
               "{n_copies} float16 → float32 copies ({copy_ms} ms).").format(**d),
        "zh-TW": ("為什麼 {dev} 的數字離下限這麼遠（commit {commit}）：以 Llama 的形狀、上下文 {ctx} 個詞元來說，{dtype} 的一步要啟動 {ops} 個 "
                  "GPU 運算，每層約 {per_layer} 個；主機每啟動一次約花 {us} µs，光是啟動就要約 {launching} ms。剖析那次執行的一步是 "
                  "{wall} ms，其中 GPU 只忙了 {busy} ms。決定速度的是主機，不是記憶體。GPU 上最花時間的是對快取做的"
                  "注意力乘法：CuPy 先做 {n_copies} 次 float16 → float32 轉換（{copy_ms} ms），再用 float32 的批次 gemv 計算"
                  "（每步 {gemv} ms）。").format(**d)}, lang)


def fused_note(n_layers: int, lang: str) -> str:
    n = _fused_launches(n_layers)
    head = {"en": (f"The fused step in engine/gpu computes the same step in {n} launches for {n_layers} layers "
                   f"(counted on a CPU by a NumPy backend that records every call). Its CUDA kernels are written "
                   f"(engine/gpu/kernels/*.cu): the tests run them on a CPU and they compile for sm_90"),
            "zh-TW": (f"engine/gpu 的融合步驟只要 {n} 次啟動就算完 {n_layers} 層的同一步（在 CPU 上用一個會記下每次呼叫的 "
                      f"NumPy 後端數出來的）。它的 CUDA kernel 已經寫好了（engine/gpu/kernels/*.cu）：測試會在 CPU 上執行它們，"
                      f"也能替 sm_90 編譯")}
    if _gpu_checks():
        return t({"en": head["en"] + "; the figure of the CUDA graph step shows it timed on a GPU, beside these numbers.",
                  "zh-TW": head["zh-TW"] + "；它在 GPU 上實測的時間，見 CUDA graph 那張圖，和這裡的數字並排。"}, lang)
    return t({"en": head["en"] + (", but no GPU has timed them yet, so the GPU numbers above are all the per-op "
                                  "engine's."),
              "zh-TW": head["zh-TW"] + "，但還沒有在任何 GPU 上量過時間，所以上面的 GPU 數字全都來自逐一運算的引擎。"}, lang)


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


# --------------------------------------------------------------------------- the CUDA graph step (gpu_check)

GOAL_NAMES = {  # tools/bench/gpu_check.py's GOALS (issue 17), as a reader reads them
    "llama_8192_pct_peak": {"en": "Llama-3-8B × 4 at 8,192: % of the peak bandwidth",
                            "zh-TW": "Llama-3-8B × 4、上下文 8,192：峰值頻寬的百分比"},
    "llama_8192_vs_transformers": {"en": "Llama-3-8B × 4 at 8,192: times faster than transformers eager",
                                   "zh-TW": "Llama-3-8B × 4、上下文 8,192：比 transformers eager 快幾倍"},
    "llama_growth_128_to_32768": {"en": "cached step at 32,768 ÷ at 128",
                                  "zh-TW": "使用快取的一步：上下文 32,768 ÷ 128"},
    "course_ms_per_step": {"en": "course model: time per step (ms)", "zh-TW": "課程模型：每步時間（毫秒）"},
    "gpt2_cache_speedup_1023": {"en": "GPT-2 small at 1,023: speedup from the cache",
                                "zh-TW": "GPT-2 small、上下文 1,023：快取帶來的加速"},
}


def _before(shape: str = "llama3-8b", dtype: str = "float16") -> dict[int, float]:
    """context -> seconds per cached step of the per-op engine on a GPU: the committed CuPy runs
    whose step is the engine's (``step`` absent, as in files older than the fused path, or
    "engine"), not a fused-step sweep committed later."""
    out = {}
    for doc in _RESULTS.values():
        if doc["provenance"]["backend"] == "cupy":
            for run in doc["runs"]:
                per_op = (run.get("step") or {"path": "engine"})["path"] == "engine"
                if per_op and run["shape"] == shape and run["dtype"] == dtype:
                    out.update({p["context"]: p["decode_cached"]["median_s"] for p in run["points"]})
    return out


def _commit(doc: dict) -> str:
    git = doc.get("git") or {}
    return (git.get("commit") or "?")[:7] + ("+" if git.get("dirty") else "")


def _graph_step(lang: str):
    """Per context: the fused step replayed as a CUDA graph and launched eagerly (each gpu_check
    file), the per-op engine of the committed CuPy file (before), transformers, and the floor."""
    before, data, rows = _before(), [], []
    after = t({"en": "after", "zh-TW": "之後"}, lang)
    ways = (("graph_us", {"en": "fused step, CUDA graph", "zh-TW": "融合步驟，CUDA graph"}, "solid"),
            ("eager_us", {"en": "fused step, launched one by one", "zh-TW": "融合步驟，逐一啟動"}, "dot"))
    for i, doc in enumerate(_gpu_checks().values()):
        color, sweep, peak = SEQUENCE[i % len(SEQUENCE)], doc["sweep"], doc["peak_bandwidth"]["value"]
        who = f"{doc['device']['name']} {_commit(doc)}"
        step_s = {key: {p["context"]: p[key] * 1e-6 for p in sweep if key in p} for key, _, _ in ways}
        hf = {r["context"]: r["transformers"]["median_s"] for r in doc.get("transformers", [])}
        for key, name, dash in ways:
            if step_s[key]:
                data.append({"type": "scatter", "mode": "lines+markers", "name": f"{after}: {t(name, lang)} ({who})",
                             "x": list(step_s[key]), "y": floats([v * 1e3 for v in step_s[key].values()]),
                             "line": {"color": color, "dash": dash}})
        if hf:
            data.append({"type": "scatter", "mode": "markers", "name": f"transformers eager ({who})", "x": list(hf),
                         "y": floats([v * 1e3 for v in hf.values()]), "marker": {"color": color, "symbol": "x", "size": 9}})
        data.append({"type": "scatter", "mode": "lines", "name": t({"en": "floor: bytes ÷ peak bandwidth",
                                                                    "zh-TW": "下限：位元組 ÷ 峰值頻寬"}, lang),
                     "x": [p["context"] for p in sweep], "y": floats([p["bytes"] / peak * 1e3 for p in sweep]),
                     "line": {"color": COLORS["grey"], "dash": "dash"}})
        for p in sweep:
            c = p["context"]
            best = step_s["graph_us"].get(c, step_s["eager_us"][c])
            cell = lambda d: _ms(d[c]) if c in d else "—"  # noqa: E731
            rows.append([who, c, cell(step_s["graph_us"]), cell(step_s["eager_us"]), cell(before), cell(hf),
                         _ms(p["bytes"] / peak), float(f"{100 * p['bytes'] / best / peak:.3g}")])
    if before:
        data.append({"type": "scatter", "mode": "lines+markers", "name": t({"en": "before: the per-op engine (CuPy)",
                                                                           "zh-TW": "之前：逐一運算的引擎（CuPy）"}, lang),
                     "x": list(before), "y": floats([v * 1e3 for v in before.values()]), "line": {"color": COLORS["orange"]}})
    title = t({"en": "Llama-3-8B shape × 4 layers, float16: the fused step as one CUDA graph, against the per-op engine",
               "zh-TW": "Llama-3-8B 形狀 × 4 層、float16：整步錄成一個 CUDA graph 的融合步驟，和逐一運算的引擎對照"}, lang)
    lay = layout(t(CTX_LOG, lang), t({"en": "time per step (ms, log)", "zh-TW": "每步時間（毫秒，對數）"}, lang),
                 xaxis={"type": "log"}, yaxis={"type": "log"})
    cols = [t(RESULTS_COL, lang), t(CONTEXT_COL, lang), t({"en": "CUDA graph (ms)", "zh-TW": "CUDA graph（毫秒）"}, lang),
            t({"en": "launched one by one (ms)", "zh-TW": "逐一啟動（毫秒）"}, lang),
            t({"en": "before: per-op engine (ms)", "zh-TW": "之前：逐一運算的引擎（毫秒）"}, lang),
            t({"en": "transformers eager (ms)", "zh-TW": "transformers eager（毫秒）"}, lang),
            t({"en": "floor (ms)", "zh-TW": "下限（毫秒）"}, lang),
            t({"en": "% of peak bandwidth", "zh-TW": "峰值頻寬的百分比"}, lang)]
    return figure("graph_step", title, data, lay, cols, rows)


def goals_table(stem: str, doc: dict, lang: str) -> dict:
    """Issue 17's goals as the gpu_check file judged them, with where the file came from."""
    verdict = {True: {"en": "met", "zh-TW": "達成"}, False: {"en": "not met", "zh-TW": "未達成"},
               None: {"en": "not measured", "zh-TW": "沒有量到"}}
    rows = []
    for name, g in doc["goals"].items():
        sign = "≤" if g.get("at_most") else "≥"
        value = "—" if g["value"] is None else float(f"{g['value']:.3g}")
        rows.append([t(GOAL_NAMES.get(name, {"en": name, "zh-TW": name}), lang), value, f"{sign} {g['target']:g}",
                     t(verdict[g["met"]], lang)])
    tests = doc.get("tests", {})
    rows.append([t({"en": "GPU tests", "zh-TW": "GPU 測試"}, lang), tests.get("summary", "—"), "",
                 t({"en": "passed", "zh-TW": "通過"} if tests.get("passed") else {"en": "failed", "zh-TW": "未通過"}, lang)])
    title = t({"en": f"Goals, measured on {doc['device']['name']} at commit {_commit(doc)} ({doc['started'][:10]}): "
                     f"engine/bench_results/gpu_checks/{stem}.json",
               "zh-TW": f"目標：{doc['device']['name']} 上實測，commit {_commit(doc)}（{doc['started'][:10]}）；"
                        f"檔案 engine/bench_results/gpu_checks/{stem}.json"}, lang)
    return table(title, [t({"en": "goal", "zh-TW": "目標"}, lang), t({"en": "measured", "zh-TW": "實測"}, lang),
                         t({"en": "target", "zh-TW": "門檻"}, lang), t({"en": "verdict", "zh-TW": "結果"}, lang)], rows)


# --------------------------------------------------------------------------- run


def _gpu_parts(docs: dict[str, dict], shape: str, lang: str) -> tuple[list, list, list]:
    """Figures, tables and notes from what was measured beside the selected GPU files."""
    figures, tables, notes = [], [], []
    found = _comparisons(docs, shape)
    if found:
        figures.append(_transformers(found, lang))
    launches = _launches(docs, shape, lang)
    if launches:
        figures.append(launches)
    for doc, b in _baselines(docs):
        tables.append(baseline_table(doc, b, lang))
        if b.profile.shape == shape:
            notes += [launch_bound_note(doc, b, lang), fused_note(b.profile.n_layers, lang)]
    return figures, tables, notes


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
               _peak_share(series, lang), _floor(series, lang)]
    gpu_figures, gpu_tables, gpu_notes = _gpu_parts(docs, values["shape"], lang)
    if values["shape"] == "llama3-8b" and _gpu_checks():
        gpu_figures.append(_graph_step(lang))
        gpu_tables += [goals_table(stem, doc, lang) for stem, doc in _gpu_checks().items()]
    figures = [f for f in figures + gpu_figures if f["figure"]["data"]]
    tables = [provenance_table(stem, doc, lang) for stem, doc in docs.items()] + gpu_tables
    return {"figures": figures, "tables": tables, "notes": gpu_notes + summary_notes(series, lang) + notes}
