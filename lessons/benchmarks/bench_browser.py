"""Run in your browser: time the course model's decode step with and without the KV cache
on the reader's own device (Pyodide), beside the committed CPU results.

Nothing is timed until the reader asks (the "measure" switch, set by the button): the
build-time render shows the committed numbers only, so no build machine's timing is ever
presented as the reader's. Browsers coarsen their clocks (to 0.1 ms or more), so each
sample times a batch of identical steps and divides.
"""
from __future__ import annotations

import sys
import time

import numpy as np

from engine import timing
from engine.bench_results import store
from lessons.common.base import checkbox, select, slider
from lessons.common.figures import COLORS, figure, floats, fmt_int, layout, t

NAME = "bench_browser"
PLATE = "benchmarks"
TITLE = {"en": "Run it in your browser: with vs without the KV cache",
         "zh-TW": "在你的瀏覽器裡跑：使用與不使用 KV 快取"}

CONTROLS = (
    select("max_context", {"en": "Longest context", "zh-TW": "最長上下文"}, "128",
           [(str(n), {"en": f"{n} tokens", "zh-TW": f"{n} 個詞元"}) for n in (32, 64, 128, 256)],
           help={"en": "Contexts 16, 32, … up to this (and at most the model's window).",
                 "zh-TW": "上下文依序為 16、32……直到這個長度（不超過模型的上下文視窗）。"}),
    slider("repeats", {"en": "Samples per point", "zh-TW": "每個點重複幾次"}, 3, 1, 7, 1,
           help={"en": "More samples: steadier medians, longer wait.", "zh-TW": "重複越多次，中位數越穩，也等得越久。"}),
    checkbox("measure", {"en": "Time it on this device", "zh-TW": "在這台裝置上計時"}, False,
             help={"en": "Runs the sweep in your browser; it takes a few seconds.",
                   "zh-TW": "在你的瀏覽器裡執行量測，需要幾秒鐘。"}),
)

BUDGET_S = 8.0          # stop adding longer contexts after this much measuring
SAMPLE_MIN_S = 0.02     # one sample lasts at least this long (coarse browser clocks)


def _where() -> dict:
    if sys.platform == "emscripten":
        return {"en": "your browser (Pyodide, WebAssembly)", "zh-TW": "你的瀏覽器（Pyodide、WebAssembly）"}
    return {"en": "this Python (CPython, not a browser)", "zh-TW": "這個 Python（CPython，不是瀏覽器）"}


def committed_course_points() -> tuple[str, list[dict]] | None:
    """(device label, points) of the course model in the first committed CPU results file."""
    for doc in store.load_all().values():
        prov = doc["provenance"]
        if prov["device"]["kind"] != "cpu":
            continue
        for run in doc["runs"]:
            if run["shape"] == "course":
                return f"{prov['device']['name']} ({prov['backend']})", run["points"]
    return None


MAX_BATCH = 256


def time_per_call(fn, setup, samples: int, clock=None) -> float:
    """Median seconds per call (engine.timing's loop): one warm-up call, then the batch size
    doubled until a batch outlasts a coarse clock tick (SAMPLE_MIN_S, at most MAX_BATCH
    calls), then ``samples`` batches of that size."""
    clock = timing.HostClock() if clock is None else clock
    setup()
    fn()  # warm-up
    batch = timing.calibrate_batch(fn, setup, clock, min_s=SAMPLE_MIN_S, max_batch=MAX_BATCH)
    return timing.measure(fn, clock, setup=setup, warmup=0, repeats=samples, batch=batch).median


def measure(max_context: int, samples: int, budget_s: float = BUDGET_S) -> tuple[list[dict], bool]:
    """Time the course model at contexts 16, 32, ... <= max_context; (points, stopped early?)."""
    from engine import load_course_model

    model, _tok = load_course_model()
    top = min(max_context, model.config.max_seq_len - 1)
    contexts = [c for c in (16, 32, 64, 128, 256, 512, 1024) if c <= top]
    if contexts[-1] < top:  # the longest context the model's window allows, as the reader asked
        contexts.append(top)
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    points = []
    for ctx in contexts:
        if points and time.perf_counter() - started > budget_s:
            return points, True
        ids = rng.integers(0, model.config.vocab_size, size=ctx + 1)
        cache = model.new_cache(max_len=ctx + 1)
        model.forward(ids[:ctx], cache=cache, last_only=True)

        def rewind():
            cache.truncate(ctx)

        cached = time_per_call(lambda: model.forward(ids[ctx:], cache=cache, last_only=True), rewind, samples)
        uncached = time_per_call(lambda: model.forward(ids, last_only=True), lambda: None, samples)
        points.append({"context": ctx, "cached_s": cached, "uncached_s": uncached})
    return points, False


WITH = {"en": "with cache", "zh-TW": "使用快取"}
WITHOUT = {"en": "no cache", "zh-TW": "不用快取"}


def _committed(lang: str) -> tuple[list, list, list]:
    """Grey traces, table rows and notes for the committed CPU numbers of the course model."""
    ref = committed_course_points()
    if not ref:
        return [], [], [t({"en": "No committed CPU results of the course model to compare with.",
                           "zh-TW": "沒有已提交的課程模型 CPU 結果可以比較。"}, lang)]
    label, pts = ref
    unc = [p for p in pts if p["decode_uncached"]]
    data = [{"type": "scatter", "mode": "lines+markers", "name": f"{label} — {t(WITH, lang)}",
             "x": [p["context"] for p in pts], "y": floats([p["decode_cached"]["median_s"] * 1e3 for p in pts]),
             "line": {"color": COLORS["grey"]}, "marker": {"symbol": "circle-open"}},
            {"type": "scatter", "mode": "lines+markers", "name": f"{label} — {t(WITHOUT, lang)}",
             "x": [p["context"] for p in unc], "y": floats([p["decode_uncached"]["median_s"] * 1e3 for p in unc]),
             "line": {"color": COLORS["grey"], "dash": "dash"}, "marker": {"symbol": "square-open"}}]
    rows = [[label, p["context"], float(f"{p['decode_cached']['median_s'] * 1e3:.4g}"),
             float(f"{p['decode_uncached']['median_s'] * 1e3:.4g}") if p["decode_uncached"] else "—"] for p in pts]
    return data, rows, []


def _measured(values: dict, lang: str) -> tuple[list, list, list]:
    """The reader's own sweep: two thick traces, table rows and what it says."""
    points, stopped = measure(int(values["max_context"]), values["repeats"])
    mine, where = t({"en": "you", "zh-TW": "你的裝置"}, lang), t(_where(), lang)
    ctx = [p["context"] for p in points]
    data = [{"type": "scatter", "mode": "lines+markers", "name": f"{mine} — {t(WITH, lang)}", "x": ctx,
             "y": floats([p["cached_s"] * 1e3 for p in points]), "line": {"color": COLORS["blue"], "width": 3}},
            {"type": "scatter", "mode": "lines+markers", "name": f"{mine} — {t(WITHOUT, lang)}", "x": ctx,
             "y": floats([p["uncached_s"] * 1e3 for p in points]),
             "line": {"color": COLORS["vermillion"], "width": 3, "dash": "dash"}}]
    device = f"{mine}：{where}" if lang == "zh-TW" else f"{mine} ({where})"
    rows = [[device, p["context"], float(f"{p['cached_s'] * 1e3:.4g}"),
             float(f"{p['uncached_s'] * 1e3:.4g}")] for p in points]
    return data, rows, _measured_notes(points[-1], stopped, where, lang)


def _measured_notes(last: dict, stopped: bool, where: str, lang: str) -> list[str]:
    notes = [t({
        "en": (f"Measured in {where}: at {fmt_int(last['context'])} tokens of context one step takes "
               f"{last['cached_s'] * 1e3:.3g} ms with the cache and {last['uncached_s'] * 1e3:.3g} ms without it "
               f"({last['uncached_s'] / last['cached_s']:.1f}× slower); with the cache that is about "
               f"{fmt_int(1 / last['cached_s'])} tokens/s."),
        "zh-TW": (f"在{where}實測：上下文有 {fmt_int(last['context'])} 個詞元時，使用快取的一步要 "
                  f"{last['cached_s'] * 1e3:.3g} ms，不用快取要 {last['uncached_s'] * 1e3:.3g} ms"
                  f"（慢 {last['uncached_s'] / last['cached_s']:.1f} 倍）；使用快取時約每秒 "
                  f"{fmt_int(1 / last['cached_s'])} 個詞元。")}, lang)]
    if stopped:
        notes.append(t({"en": f"Stopped after {fmt_int(last['context'])} tokens to keep the page responsive.",
                        "zh-TW": f"為了讓頁面保持流暢，量到 {fmt_int(last['context'])} 個詞元就停止了。"}, lang))
    notes.append(t({"en": "Each point is the median of batches of identical steps (browsers blur their clocks).",
                    "zh-TW": "每個點是多批相同步驟的中位數（瀏覽器會刻意模糊時鐘精度）。"}, lang))
    return notes


def _figure(data: list, rows: list, lang: str) -> dict:
    title = t({"en": "Course model: decode step time, your device vs committed results",
               "zh-TW": "課程模型：每步解碼時間，你的裝置與已提交結果的比較"}, lang)
    lay = layout(t({"en": "context (tokens already in the cache, log)", "zh-TW": "上下文（快取中已有的詞元數，對數）"}, lang),
                 t({"en": "time per step (ms, log)", "zh-TW": "每步時間（毫秒，對數）"}, lang),
                 xaxis={"type": "log"}, yaxis={"type": "log"})
    cols = [t({"en": "where", "zh-TW": "量測位置"}, lang), t({"en": "context", "zh-TW": "上下文"}, lang),
            t({"en": "with cache (ms)", "zh-TW": "使用快取（毫秒）"}, lang),
            t({"en": "no cache (ms)", "zh-TW": "不用快取（毫秒）"}, lang)]
    return figure("browser_sweep", title, data, lay, cols, rows)


def run(values: dict, lang: str) -> dict:
    data, rows, notes = _committed(lang)
    if not values["measure"]:
        notes.append(t({"en": "The grey lines are committed measurements. Press the button to time the same "
                              "course model on your own device; it takes a few seconds.",
                        "zh-TW": "灰色線是已提交的量測結果。按下按鈕，就能在你自己的裝置上為同一個課程模型計時，"
                                 "大約需要幾秒鐘。"}, lang))
        action = {"label": t({"en": "Measure on my device", "zh-TW": "在我的裝置上量測"}, lang),
                  "values": {**values, "measure": True}}
        return {"figures": [_figure(data, rows, lang)], "notes": notes, "actions": [action]}
    more_data, more_rows, more_notes = _measured(values, lang)
    return {"figures": [_figure(data + more_data, rows + more_rows, lang)], "notes": notes + more_notes}
