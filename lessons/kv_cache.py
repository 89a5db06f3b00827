"""Plate 5: the KV cache saves recomputation. The course model decodes the reader's prompt
twice, step by step: once keeping keys and values in the cache (each step feeds only the
newest token) and once without (each step runs the whole text again). Both give the same
tokens; the work differs. Cache bytes are read from the engine's cache arrays, FLOPs from
engine.costs, and the seconds are measured here, on whatever machine runs the lesson.
"""
from __future__ import annotations

import sys

from engine import Generator, SamplingParams, load_course_model
from lessons.base import slider
from lessons.figures import COLORS, SEQUENCE, figure, floats, fmt_bytes, fmt_seconds, fmt_si, layout, t
from lessons.prompts import encode_prompt, prompt_control

TITLE = {"en": "Decoding with and without the KV cache", "zh-TW": "有無 KV 快取的解碼"}

# Short defaults on purpose: the lesson really decodes twice (with and without the cache)
# and times both, and in Pyodide every step costs far more than in CPython; 5 steps after
# a 3-token prompt already show the gap, and the reader can raise both.
DEFAULT_PROMPT = "The cat sat"
DEFAULT_STEPS = 5
MAX_STEPS = 32

CONTROLS = (
    prompt_control(DEFAULT_PROMPT),
    slider("steps", {"en": "Decode steps", "zh-TW": "解碼步數"}, DEFAULT_STEPS, 1, MAX_STEPS, 1,
           help={"en": "New tokens generated after the prompt (greedy: the most likely token each time).",
                 "zh-TW": "在提示文字之後產生的新詞元數（貪婪解碼：每次選最可能的詞元）。"}),
)


def _where(lang: str) -> str:
    if sys.platform == "emscripten":
        return t({"en": "measured just now in this browser (Pyodide)", "zh-TW": "剛剛在這個瀏覽器中（Pyodide）實測"}, lang)
    return t({"en": "measured when this page was built, on the build machine (CPython); "
                    "the live demo re-measures in your browser",
              "zh-TW": "建置本頁時在建置機器上（CPython）實測；互動示範會在你的瀏覽器中重新測量"}, lang)


def decode_both(model, tok, ids: list[int], steps: int):
    """Run prefill + ``steps`` decode steps with and without the cache.

    Returns (cached Steps, uncached Steps, per-layer cache bytes after each cached step),
    the per-layer bytes read from the cache's own K and V arrays.
    """
    params = SamplingParams(temperature=0.0)
    with_cache = Generator(model, tok, params, use_cache=True, n_top=0)
    without = Generator(model, tok, params, use_cache=False, n_top=0)
    cached, uncached, per_layer = [with_cache.start(ids)], [without.start(ids)], []
    cache = with_cache.cache

    def snapshot():
        per_layer.append([int(cache.keys(l).nbytes + cache.values(l).nbytes) for l in range(model.config.n_layers)])

    snapshot()
    for _ in range(steps):
        cached.append(with_cache.step())
        uncached.append(without.step())
        snapshot()
    return cached, uncached, per_layer


def run(values: dict, lang: str) -> dict:
    model, tok = load_course_model()
    steps = values["steps"]
    ids = encode_prompt(tok, values["prompt"], model.config.max_seq_len - steps)
    cached, uncached, per_layer = decode_both(model, tok, ids, steps)
    L = model.config.n_layers

    step_names = [t({"en": "prefill", "zh-TW": "預填"}, lang)] + [str(i) for i in range(1, steps + 1)]
    x = list(range(steps + 1))
    axis = {"tickmode": "array", "tickvals": x, "ticktext": step_names}
    step_lbl = t({"en": "step (0 = prefill of the prompt)", "zh-TW": "步驟（0 = 預填提示文字）"}, lang)
    pieces = [s.piece for s in cached]

    # ------------------------------------------------------------------ figure 1: cache per layer
    kib = 1024
    layer_names = [t({"en": f"layer {l + 1}", "zh-TW": f"第 {l + 1} 層"}, lang) for l in range(L)]
    data1 = [{"type": "bar", "name": layer_names[l], "x": x, "y": floats(b[l] / kib for b in per_layer),
              "marker": {"color": SEQUENCE[l % len(SEQUENCE)]}, "customdata": [fmt_bytes(b[l]) for b in per_layer],
              "hovertemplate": f"{layer_names[l]}: %{{customdata}}<extra></extra>"} for l in range(L)]
    title1 = t({"en": "The cache fills up, layer by layer", "zh-TW": "快取逐層填滿"}, lang)
    lay1 = layout(title1, step_lbl, t({"en": "KV cache (KiB)", "zh-TW": "KV 快取（KiB）"}, lang), barmode="stack", xaxis=axis)
    cols1 = ([t({"en": "step", "zh-TW": "步驟"}, lang), t({"en": "new token", "zh-TW": "新詞元"}, lang),
              t({"en": "tokens in cache", "zh-TW": "快取中的詞元數"}, lang)]
             + [f"{n} (B)" for n in layer_names] + [t({"en": "total (B)", "zh-TW": "合計（B）"}, lang)])
    rows1 = [[step_names[i], pieces[i], s.cache_tokens] + per_layer[i] + [s.cache_bytes] for i, s in enumerate(cached)]
    fig1 = figure("cache_per_layer", title1, data1, lay1, cols1, rows1)

    # ------------------------------------------------------------------ figure 2: FLOPs per step
    lbl_c = t({"en": "with KV cache", "zh-TW": "有 KV 快取"}, lang)
    lbl_n = t({"en": "without cache (recompute all)", "zh-TW": "無快取（全部重算）"}, lang)
    data2 = [{"type": "scatter", "mode": "lines+markers", "name": lbl, "x": x, "y": [s.flops for s in run_],
              "line": {"color": color}, "hovertemplate": f"%{{y:,}} FLOPs<extra>{lbl}</extra>"}
             for lbl, run_, color in ((lbl_c, cached, COLORS["blue"]), (lbl_n, uncached, COLORS["vermillion"]))]
    title2 = t({"en": "Work per step: FLOPs (engine.costs)", "zh-TW": "每一步的運算量：FLOP（engine.costs）"}, lang)
    lay2 = layout(title2, step_lbl, "FLOPs", xaxis=axis, yaxis={"rangemode": "tozero"})
    cols2 = [t({"en": "step", "zh-TW": "步驟"}, lang), t({"en": "tokens fed (cache)", "zh-TW": "輸入詞元數（有快取）"}, lang),
             t({"en": "FLOPs with cache", "zh-TW": "有快取 FLOP"}, lang),
             t({"en": "tokens fed (no cache)", "zh-TW": "輸入詞元數（無快取）"}, lang),
             t({"en": "FLOPs without cache", "zh-TW": "無快取 FLOP"}, lang)]
    rows2 = [[step_names[i], c.n_input, c.flops, n.n_input, n.flops] for i, (c, n) in enumerate(zip(cached, uncached))]
    fig2 = figure("flops", title2, data2, lay2, cols2, rows2)

    # ------------------------------------------------------------------ figure 3: measured time
    where = _where(lang)
    data3 = [{"type": "scatter", "mode": "lines+markers", "name": lbl, "x": x, "y": floats(s.seconds * 1e3 for s in run_),
              "line": {"color": color}, "hovertemplate": f"%{{y:.3g}} ms<extra>{lbl}</extra>"}
             for lbl, run_, color in ((lbl_c, cached, COLORS["blue"]), (lbl_n, uncached, COLORS["vermillion"]))]
    title3 = t({"en": "Work per step: measured time", "zh-TW": "每一步的運算量：實測時間"}, lang)
    lay3 = layout(title3, step_lbl, t({"en": "milliseconds", "zh-TW": "毫秒"}, lang), xaxis=axis, yaxis={"rangemode": "tozero"})
    cols3 = [t({"en": "step", "zh-TW": "步驟"}, lang), t({"en": "seconds with cache", "zh-TW": "有快取（秒）"}, lang),
             t({"en": "seconds without cache", "zh-TW": "無快取（秒）"}, lang)]
    rows3 = [[step_names[i], float(f"{c.seconds:.4g}"), float(f"{n.seconds:.4g}")] for i, (c, n) in enumerate(zip(cached, uncached))]
    fig3 = figure("seconds", title3, data3, lay3, cols3, rows3)

    # ------------------------------------------------------------------ notes
    same = [s.token_id for s in cached] == [s.token_id for s in uncached]
    decode_c = sum(s.flops for s in cached[1:])
    decode_n = sum(s.flops for s in uncached[1:])
    sec_c = sum(s.seconds for s in cached[1:])
    sec_n = sum(s.seconds for s in uncached[1:])
    text = tok.decode([s.token_id for s in cached])
    notes = [
        t({"en": f"Generated (greedy): “{text}”. " + ("Both paths chose exactly the same tokens." if same else
                 "The two paths chose different tokens here (a rounding tie); the work comparison still holds."),
           "zh-TW": f"產生的文字（貪婪解碼）：「{text}」。" + ("兩種做法選出的詞元完全相同。" if same else
                    "兩種做法在這裡選了不同的詞元（捨入誤差造成的平手）；運算量的比較仍然成立。")}, lang),
        t({"en": (f"The cache now holds {cached[-1].cache_tokens} tokens: {fmt_bytes(cached[-1].cache_bytes)} in {L} layers, "
                  f"{fmt_bytes(cached[-1].cache_bytes // max(cached[-1].cache_tokens, 1))} per token."),
           "zh-TW": (f"快取現在儲存 {cached[-1].cache_tokens} 個詞元：{L} 層共 {fmt_bytes(cached[-1].cache_bytes)}，"
                     f"每個詞元 {fmt_bytes(cached[-1].cache_bytes // max(cached[-1].cache_tokens, 1))}。")}, lang),
        t({"en": (f"Decode steps in total: {fmt_si(decode_c, 'FLOP')} with the cache vs {fmt_si(decode_n, 'FLOP')} without "
                  f"({decode_n / decode_c:.1f}×); time {fmt_seconds(sec_c)} vs {fmt_seconds(sec_n)}, {where}."),
           "zh-TW": (f"解碼步驟合計：有快取 {fmt_si(decode_c, 'FLOP')}，無快取 {fmt_si(decode_n, 'FLOP')}"
                     f"（{decode_n / decode_c:.1f} 倍）；時間 {fmt_seconds(sec_c)} 對 {fmt_seconds(sec_n)}，{where}。")}, lang),
        t({"en": "The cache saves recomputing old keys and values; the new token still goes through every layer and weight.",
           "zh-TW": "快取省下的是重算舊的鍵與值；新的詞元仍然要經過每一層、每一個權重。"}, lang),
    ]
    return {"figures": [fig1, fig2, fig3], "notes": notes}
