"""Plate 8: batching and chunked prefill. The engine's scheduler (engine/analysis/scheduler.py) serves
the reader's requests, arriving a few server steps apart, with static or continuous batching
and with or without chunked prefill; each step is timed as Llama 3 8B (fp16) would take it on
an NVIDIA H100 SXM (max(bytes / bandwidth, FLOPs / peak), engine.analysis.costs' counts). The figures
show who waits, prefills and decodes at each step, every request's time to first token and
time per output token, and the four policies side by side. No model runs here: the schedule
depends on token counts only (the paging demo runs the same scheduler with the course model).
"""
from __future__ import annotations

import numpy as np

from engine.analysis import costs, serving
from engine.analysis.model_shapes import config_from_shape
from engine.analysis.scheduler import Policy, Request, request_timings, run_paged_counts, step_seconds
from lessons.common import labels as L
from lessons.common.base import checkbox, select, slider
from lessons.common.devices import DEVICES
from lessons.common.figures import COLORS, figure, floats, fmt_int, fmt_seconds, layout, t

NAME = "batching"
PLATE = "plates/08-serving-the-cache"
TITLE = {"en": "Batching and chunked prefill: who waits, and for how long",
         "zh-TW": "批次處理與分段預填：誰在等、等多久"}

BATCHING = {
    "continuous": {"en": "Continuous (a freed place is refilled at the next step)", "zh-TW": "持續批次處理（空出的位置下一步就補上）"},
    "static": {"en": "Static (the whole batch finishes before the next one starts)", "zh-TW": "靜態批次處理（整批做完，下一批才開始）"},
}

CONTROLS = (
    select("batching", {"en": "Batching", "zh-TW": "批次處理方式"}, "continuous", list(BATCHING.items())),
    checkbox("chunked", {"en": "Chunked prefill", "zh-TW": "分段預填"}, False),
    slider("chunk", {"en": "Tokens per step (chunk budget)", "zh-TW": "每步詞元數上限（分段預填的額度）"}, 512, 64, 4096, 64,
           help={"en": "With chunked prefill on, no server step processes more tokens than this.",
                 "zh-TW": "開啟分段預填時，每個伺服器步驟處理的詞元數不超過這個值。"}),
    slider("max_batch", {"en": "Most requests at once", "zh-TW": "同時執行的請求數上限"}, 4, 1, 8, 1),
    slider("requests", {"en": "Number of requests", "zh-TW": "請求數"}, 6, 2, 10, 1),
    slider("gap", {"en": "Steps between arrivals", "zh-TW": "請求抵達的間隔（步數）"}, 3, 0, 12, 1,
           help={"en": "0: all arrive together at step 1.", "zh-TW": "0 表示全部在第 1 步同時抵達。"}),
    slider("prompt", {"en": "Longest prompt (tokens)", "zh-TW": "最長提示詞（詞元數）"}, 4096, 256, 8192, 256,
           help={"en": "The third request has this prompt; the others a sixteenth to a quarter of it (drawn, seeded).",
                 "zh-TW": "第三個請求的提示詞就是這麼長；其他請求是它的十六分之一到四分之一（用固定的亂數種子抽出）。"}),
    slider("answer", {"en": "Longest answer (tokens)", "zh-TW": "最長回答（詞元數）"}, 24, 2, 64, 1),
)

SHAPE, DEVICE, GPU, FP16, BLOCK, SEED = "Llama 3 8B", "h100_sxm", "h100_80", 2, 16, 8
POLICIES = {  # (batching, chunked) -> a short name that fits under a bar on a phone
    ("static", False): {"en": "static", "zh-TW": "靜態"},
    ("static", True): {"en": "static + chunks", "zh-TW": "靜態 + 分段"},
    ("continuous", False): {"en": "continuous", "zh-TW": "持續"},
    ("continuous", True): {"en": "continuous + chunks", "zh-TW": "持續 + 分段"},
}
STATES = (  # timeline cell categories: label, colour
    ({"en": "waiting", "zh-TW": "等待中"}, COLORS["grey"]),
    ({"en": "prefill (no token yet)", "zh-TW": "預填（還沒有詞元）"}, COLORS["sky"]),
    ({"en": "first token", "zh-TW": "第一個詞元"}, COLORS["vermillion"]),
    ({"en": "decode (one token)", "zh-TW": "解碼（一個詞元）"}, COLORS["blue"]),
)
REQUEST = {"en": "request", "zh-TW": "請求"}
MS = 1e3


def _r(i: int) -> str:
    return f"R{i + 1}"


# --------------------------------------------------------------------------- the runs


def build_requests(values: dict) -> list[Request]:
    """The reader's requests: prompt and answer lengths drawn from a fixed seed, arrivals ``gap`` apart."""
    n, P, A, gap = values["requests"], values["prompt"], values["answer"], values["gap"]
    rng = np.random.default_rng(SEED)
    prompts = rng.integers(max(1, P // 16), max(2, P // 4) + 1, size=n)
    prompts[min(2, n - 1)] = P
    answers = rng.integers(max(2, A // 4), A + 1, size=n)  # two tokens at least: every request has a TPOT
    return [Request(i, (0,) * int(prompts[i]), 0, int(answers[i]), None, 1 + gap * i) for i in range(n)]


def _model():
    """Llama 3 8B's shape, the device it is timed on, and a pool filling the GPU next to the weights."""
    cfg = config_from_shape(SHAPE)
    slot = costs.kv_cache_bytes(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, 1, 1, FP16)
    free = serving.GPUS[GPU].bytes - costs.param_count(cfg) * FP16
    return cfg, DEVICES[DEVICE], slot, free // (BLOCK * slot)


def serve(values: dict, batching: str, chunked: bool):
    """(run, seconds per step, timings) for one policy."""
    requests = build_requests(values)
    cfg, dev, slot, n_blocks = _model()
    policy = Policy(batching, values["chunk"] if chunked else None, values["max_batch"])
    run = run_paged_counts(requests, n_blocks, BLOCK, policy, bytes_per_slot=slot)
    seconds = step_seconds(run, cfg, dev.bandwidth, dev.peak_flops, FP16)
    return run, seconds, request_timings(run, requests, seconds)


# --------------------------------------------------------------------------- figures


def _state(run, i: int, k: int) -> int | None:
    """Request i at step k (0-based): a STATES index, or None (not arrived yet, or gone)."""
    view = run.steps[k]
    if k + 1 < run.arrival[i] or k + 1 > run.finished[i]:
        return None
    if i in view.first:
        return 2
    if i in view.decode:
        return 3
    return 1 if i in view.prefill else 0


def _scale() -> list:
    k, scale = len(STATES), []
    for c, (_label, color) in enumerate(STATES):
        scale += [[c / k, color], [(c + 1) / k, color]]
    return scale


def _figure_timeline(run, seconds, n: int, lang: str) -> dict:
    names = [t(label, lang) for label, _c in STATES]
    steps = list(range(1, len(run.steps) + 1))
    z = [[_state(run, i, k) for k in range(len(steps))] for i in range(n)]
    text = [["" if c is None else names[c] for c in row] for row in z]
    hover = t({"en": "%{y}, step %{x}: %{text}", "zh-TW": "%{y}，第 %{x} 步：%{text}"}, lang)
    data = [{"type": "heatmap", "z": z, "x": steps, "y": [_r(i) for i in range(n)], "text": text, "xgap": 1, "ygap": 2,
             "zmin": -0.5, "zmax": len(STATES) - 0.5, "colorscale": _scale(), "hovertemplate": hover + "<extra></extra>",
             "showscale": False}]
    # the states as legend entries (a legend wraps above the plot on a phone; a colour bar took its width)
    data += [{"type": "scatter", "mode": "markers", "x": [None], "y": [None], "name": nm, "hoverinfo": "skip",
              "marker": {"symbol": "square", "size": 12, "color": color}} for nm, (_l, color) in zip(names, STATES)]
    title = t({"en": "Timeline: what each request does at each server step (blank: not arrived yet, or done)",
               "zh-TW": "時間軸：每個請求在每個伺服器步驟做什麼（空白表示還沒抵達或已經完成）"}, lang)
    lay = layout(t({"en": "server step", "zh-TW": "伺服器步驟"}, lang), t(REQUEST, lang), yaxis={"autorange": "reversed"})
    cols = [t(L.STEP, lang), t({"en": "step time (ms)", "zh-TW": "這一步的時間（毫秒）"}, lang),
            t({"en": "prefill tokens", "zh-TW": "預填的詞元數"}, lang), t({"en": "decode tokens", "zh-TW": "解碼的詞元數"}, lang),
            t({"en": "running", "zh-TW": "執行中"}, lang), t({"en": "waiting", "zh-TW": "等待中"}, lang)]
    rows = [[k, s * MS, sum(c[1] for c in v.prefill.values()), len(v.decode), " ".join(map(_r, v.running)) or "—",
             " ".join(map(_r, v.waiting)) or "—"] for k, s, v in zip(steps, seconds, run.steps)]
    return figure("timeline", title, data, lay, cols, rows)


def _figure_ttft(timings: dict, requests: list[Request], lang: str) -> dict:
    names = [_r(r.index) for r in requests]
    ttft = [timings[r.index].ttft * MS for r in requests]
    data = [{"type": "bar", "x": names, "y": floats(ttft), "marker": {"color": COLORS["vermillion"]}, "showlegend": False}]
    title = t({"en": "Time to first token (TTFT) of each request: from its arrival to its first token",
               "zh-TW": "每個請求的首詞元延遲（TTFT）：從抵達到第一個詞元"}, lang)
    lay = layout(t(REQUEST, lang), t({"en": "TTFT (ms)", "zh-TW": "首詞元延遲（毫秒）"}, lang), yaxis={"rangemode": "tozero"})
    cols = [t(REQUEST, lang), t({"en": "prompt (tokens)", "zh-TW": "提示詞（詞元數）"}, lang),
            t({"en": "arrives at step", "zh-TW": "抵達的步驟"}, lang),
            t({"en": "first token at step", "zh-TW": "第一個詞元的步驟"}, lang),
            t({"en": "TTFT (steps)", "zh-TW": "首詞元延遲（步數）"}, lang), t({"en": "TTFT (ms)", "zh-TW": "首詞元延遲（毫秒）"}, lang)]
    rows = [[nm, len(r.prompt), r.arrival, timings[r.index].first, timings[r.index].ttft_steps, v]
            for nm, r, v in zip(names, requests, ttft)]
    return figure("ttft", title, data, lay, cols, rows)


def _figure_tpot(timings: dict, requests: list[Request], lang: str) -> dict:
    multi = [r for r in requests if r.answer > 1]
    names = [_r(r.index) for r in multi]
    tpot = [timings[r.index].tpot * MS for r in multi]
    worst = [timings[r.index].worst_gap * MS for r in multi]
    mean_label = t({"en": "mean TPOT", "zh-TW": "平均每詞元輸出時間"}, lang)
    worst_label = t({"en": "longest wait between two tokens", "zh-TW": "兩個詞元之間最久的等待"}, lang)
    data = [{"type": "bar", "name": mean_label, "x": names, "y": floats(tpot), "marker": {"color": COLORS["blue"]}},
            {"type": "bar", "name": worst_label, "x": names, "y": floats(worst), "marker": {"color": COLORS["orange"]}}]
    title = t({"en": "Time per output token (TPOT) after the first, and the longest wait between two tokens",
               "zh-TW": "第一個詞元之後的每詞元輸出時間（TPOT），以及兩個詞元之間最久的等待"}, lang)
    lay = layout(t(REQUEST, lang), t({"en": "time (ms)", "zh-TW": "時間（毫秒）"}, lang), barmode="group",
                 yaxis={"rangemode": "tozero"})
    cols = [t(REQUEST, lang), t({"en": "answer (tokens)", "zh-TW": "回答（詞元數）"}, lang),
            t({"en": "done at step", "zh-TW": "完成的步驟"}, lang), f"{mean_label} (ms)" if lang == "en" else f"{mean_label}（毫秒）",
            f"{worst_label} (ms)" if lang == "en" else f"{worst_label}（毫秒）"]
    rows = [[nm, r.answer, timings[r.index].finish, a, b] for nm, r, a, b in zip(names, multi, tpot, worst)]
    return figure("tpot", title, data, lay, cols, rows)


def _totals(run, seconds, timings) -> dict:
    ttft = [x.ttft for x in timings.values()]
    tpot = [x.tpot for x in timings.values() if x.tpot is not None]
    gaps = [x.worst_gap for x in timings.values() if x.worst_gap is not None]
    total = sum(seconds)
    tokens = sum(len(a) for a in run.answers.values())
    return {"steps": len(run.steps), "total": total, "ttft": float(np.mean(ttft)), "ttft_max": max(ttft),
            "tpot": float(np.mean(tpot)) if tpot else None, "gap": max(gaps) if gaps else None,
            "tokens_s": tokens / total, "max_tokens": max(v.tokens for v in run.steps)}


def _figure_totals(totals: dict, chosen: tuple, lang: str) -> dict:
    names = [t(POLICIES[k], lang) for k in totals]
    colors = [COLORS["green"] if k == chosen else COLORS["grey"] for k in totals]
    data = [{"type": "bar", "x": names, "y": floats(v["total"] * MS for v in totals.values()), "showlegend": False,
             "marker": {"color": colors}, "text": [fmt_seconds(v["total"]) for v in totals.values()],
             "textposition": "outside", "cliponaxis": False}]
    title = t({"en": "The four policies on the same requests: time until all are served (yours in green)",
               "zh-TW": "四種做法服務同一批請求：全部服務完的時間（綠色是你選的）"}, lang)
    top = max(v["total"] for v in totals.values()) * MS
    lay = layout("", t({"en": "all served after (ms)", "zh-TW": "全部服務完（毫秒）"}, lang), yaxis={"range": [0, top * 1.2]})
    ms = " (ms)" if lang == "en" else "（毫秒）"
    cols = [t({"en": "policy", "zh-TW": "做法"}, lang), t({"en": "steps", "zh-TW": "步數"}, lang),
            t({"en": "all served", "zh-TW": "全部服務完"}, lang) + ms, t({"en": "mean TTFT", "zh-TW": "平均首詞元延遲"}, lang) + ms,
            t({"en": "worst TTFT", "zh-TW": "最長首詞元延遲"}, lang) + ms, t({"en": "mean TPOT", "zh-TW": "平均每詞元輸出時間"}, lang) + ms,
            t({"en": "longest wait between tokens", "zh-TW": "詞元之間最久的等待"}, lang) + ms,
            t({"en": "most tokens in one step", "zh-TW": "單步最多詞元數"}, lang),
            t({"en": "output tokens per second", "zh-TW": "每秒輸出詞元數"}, lang)]
    rows = [[nm, v["steps"], v["total"] * MS, v["ttft"] * MS, v["ttft_max"] * MS,
             None if v["tpot"] is None else v["tpot"] * MS, None if v["gap"] is None else v["gap"] * MS,
             v["max_tokens"], v["tokens_s"]] for nm, v in zip(names, totals.values())]
    return figure("totals", title, data, lay, cols, rows)


# --------------------------------------------------------------------------- notes


def _note_costs(requests: list[Request], lang: str) -> str:
    """One decode step and the longest prompt's whole prefill, timed as the figures time them."""
    cfg, dev, _slot, _n = _model()
    P = max(len(r.prompt) for r in requests)
    dec = costs.decode_step_bytes(cfg, P, True, FP16) / dev.bandwidth, costs.decode_step_flops(cfg, P, True) / dev.peak_flops
    pre = costs.prefill_bytes(cfg, P, FP16) / dev.bandwidth, costs.prefill_flops(cfg, P) / dev.peak_flops
    d, p = (fmt_seconds(max(x)) for x in (dec, pre))
    name = t(DEVICES[DEVICE].name, lang)
    return t({"en": (f"Each step is timed as {SHAPE} in fp16 on an {name}: the larger of its bytes over the memory "
                     f"bandwidth and its FLOPs over the peak (engine.analysis.costs counts both). One decode step after a "
                     f"{fmt_int(P)}-token prompt takes {d}, set by memory: moving the bytes takes {fmt_seconds(dec[0])}, "
                     f"the arithmetic {fmt_seconds(dec[1])}. Prefilling those {fmt_int(P)} tokens in one step takes {p}, "
                     f"set by arithmetic ({fmt_seconds(pre[1])}; the bytes {fmt_seconds(pre[0])})."),
              "zh-TW": (f"每一步的時間，照 fp16 的 {SHAPE} 在 {name} 上估算：取「位元組 ÷ 記憶體頻寬」和「浮點運算次數 ÷ "
                        f"峰值運算能力」兩者中較大的（兩者都由 engine.analysis.costs 計算）。在 {fmt_int(P)} 個詞元的提示詞之後解碼一步要 {d}，"
                        f"由記憶體頻寬決定：搬位元組要 {fmt_seconds(dec[0])}，運算只要 {fmt_seconds(dec[1])}。把這 {fmt_int(P)} "
                        f"個詞元一步預填完要 {p}，由運算能力決定（運算 {fmt_seconds(pre[1])}，搬位元組 {fmt_seconds(pre[0])}）。")},
             lang)


def _pair(a: str, b: str, lang: str, en: str = "{a} against {b}", zh: str = "分別是 {a} 和 {b}",
          same_en: str = "{a} for both", same_zh: str = "兩者都是 {a}") -> str:
    """Two values as a comparison, or one when they read the same: 「兩者都是 4.64 ms」, not 「從 4.64 ms 變成 4.64 ms」."""
    if a == b:
        return t({"en": same_en, "zh-TW": same_zh}, lang).format(a=a)
    return t({"en": en, "zh-TW": zh}, lang).format(a=a, b=b)


def _note_policy(totals: dict, chosen: tuple, values: dict, lang: str) -> str:
    st, co = totals[("static", chosen[1])], totals[("continuous", chosen[1])]
    ttft = _pair(fmt_seconds(st["ttft"]), fmt_seconds(co["ttft"]), lang)
    requests = "request" if values["max_batch"] == 1 else "requests"
    if (st["steps"], fmt_seconds(st["total"])) == (co["steps"], fmt_seconds(co["total"])):
        return t({"en": (f"With at most {values['max_batch']} {requests} at once, static and continuous batching both served "
                         f"them all in {st['steps']} steps ({fmt_seconds(st['total'])}); mean TTFT {ttft}."),
                  "zh-TW": (f"同時最多執行 {values['max_batch']} 個請求時，靜態和持續批次處理都花了 {st['steps']} 步"
                            f"（{fmt_seconds(st['total'])}）服務完全部請求；平均首詞元延遲{ttft}。")}, lang)
    return t({"en": (f"With at most {values['max_batch']} {requests} at once, static batching served them all in "
                     f"{st['steps']} steps ({fmt_seconds(st['total'])}), continuous batching in {co['steps']} "
                     f"({fmt_seconds(co['total'])}); mean TTFT {ttft}."),
              "zh-TW": (f"同時最多執行 {values['max_batch']} 個請求時，靜態批次處理花了 {st['steps']} 步"
                        f"（{fmt_seconds(st['total'])}）服務完全部請求，持續批次處理花了 {co['steps']} 步"
                        f"（{fmt_seconds(co['total'])}）；平均首詞元延遲{ttft}。")},
             lang)


def _note_chunks(totals: dict, chosen: tuple, values: dict, lang: str) -> str:
    whole, chunks = totals[(chosen[0], False)], totals[(chosen[0], True)]
    if whole["gap"] is None or chunks["gap"] is None:
        return ""
    C = fmt_int(values["chunk"])
    busiest = _pair(fmt_int(whole["max_tokens"]), fmt_int(chunks["max_tokens"]), lang,
                    "{b} tokens instead of {a}", "{b} 個詞元，不分段時是 {a} 個",
                    "{a} tokens, as without chunks", "{a} 個詞元，和不分段時一樣")
    gap = _pair(fmt_seconds(whole["gap"]), fmt_seconds(chunks["gap"]), lang, "went from {a} to {b}", "從 {a} 變成 {b}",
                "stayed {a}")
    return t({"en": (f"Chunked prefill ({C} tokens per step): the busiest step processed {busiest}, and the longest "
                     f"wait between two tokens of a running request {gap} ({t(POLICIES[(chosen[0], False)], 'en')} batching)."),
              "zh-TW": (f"分段預填（每步最多 {C} 個詞元）：最忙的一步處理 {busiest}；執行中的請求兩個詞元之間最久的等待，"
                        f"{gap}（{t(POLICIES[(chosen[0], False)], 'zh-TW')}批次處理）。")}, lang)


# --------------------------------------------------------------------------- run


def run(values: dict, lang: str) -> dict:
    requests = build_requests(values)
    chosen = (values["batching"], values["chunked"])
    runs = {k: serve(values, *k) for k in POLICIES}
    totals = {k: _totals(*runs[k]) for k in POLICIES}
    run_, seconds, timings = runs[chosen]
    figures = [_figure_timeline(run_, seconds, len(requests), lang), _figure_ttft(timings, requests, lang),
               _figure_tpot(timings, requests, lang), _figure_totals(totals, chosen, lang)]
    notes = [n for n in (_note_costs(requests, lang), _note_policy(totals, chosen, values, lang),
                         _note_chunks(totals, chosen, values, lang)) if n]
    return {"figures": figures, "tables": [], "notes": notes}
