"""Plate 5: the KV cache saves recomputation. The course model decodes the reader's prompt
twice, step by step: once keeping keys and values in the cache (each step feeds only the
newest token) and once without (each step runs the whole text again). Both give the same
tokens; the work differs. Cache bytes are read from the engine's cache arrays, FLOPs from
engine.analysis.costs, and the seconds are measured here, on whatever machine runs the lesson.
"""
from __future__ import annotations

import sys

from engine import Generator, SamplingParams, load_course_model
from lessons.common import labels as L
from lessons.common.base import slider
from lessons.common.figures import COLORS, SEQUENCE, figure, floats, fmt_bytes, fmt_num, fmt_seconds, fmt_si, layout, t
from lessons.common.prompts import encode_prompt, prompt_control

NAME = "kv_cache"
PLATE = "plates/05-kv-cache"
TITLE = {"en": "Decoding with and without the KV cache", "zh-TW": "使用與不使用 KV 快取的解碼"}

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
                 "zh-TW": "接在提示詞後面產生的新詞元數（貪婪解碼：每次都選最可能的詞元）。"}),
)

STEP_AXIS = {"en": "step (0 = prefill of the prompt)", "zh-TW": "步驟（0 = 預填提示詞）"}


def _where(lang: str) -> str:
    if sys.platform == "emscripten":
        return t({"en": "measured just now in this browser (Pyodide)", "zh-TW": "是剛剛在這個瀏覽器裡（Pyodide）實測的"}, lang)
    return t({"en": "measured when this page was built, on the build machine (CPython); "
                    "the live demo measures again in your browser",
              "zh-TW": "是建置這一頁時在建置用的機器上（CPython）實測的；即時示範會在你的瀏覽器裡重新量"}, lang)


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


def _step_axis(steps: int, lang: str) -> tuple[list[int], list[str], dict]:
    """(x positions, step names, the shared x-axis settings): step 0 is the prefill."""
    names = [t(L.PREFILL, lang)] + [str(i) for i in range(1, steps + 1)]
    x = list(range(steps + 1))
    return x, names, {"tickmode": "array", "tickvals": x, "ticktext": names}


def _figure_cache(cached, per_layer, lang) -> dict:
    x, names, axis = _step_axis(len(cached) - 1, lang)
    layers = [t(L.layer(n), lang) for n in range(1, len(per_layer[0]) + 1)]
    data = [{"type": "bar", "name": name, "x": x, "y": floats(b[l] / 1024 for b in per_layer),
             "marker": {"color": SEQUENCE[l % len(SEQUENCE)]}, "customdata": [fmt_bytes(b[l]) for b in per_layer],
             "hovertemplate": f"{name}{t(L.COLON, lang)}%{{customdata}}<extra></extra>"} for l, name in enumerate(layers)]
    title = t({"en": "The cache fills up, layer by layer", "zh-TW": "每一層的快取一步一步填滿"}, lang)
    lay = layout(t(STEP_AXIS, lang), t({"en": "KV cache (KiB)", "zh-TW": "KV 快取（KiB）"}, lang), barmode="stack", xaxis=axis)
    cols = ([t(L.STEP, lang), t({"en": "new token", "zh-TW": "新詞元"}, lang),
             t({"en": "tokens in the cache", "zh-TW": "快取中的詞元數"}, lang)]
            + [t(L.layer_bytes(n), lang) for n in range(1, len(layers) + 1)] + [t(L.TOTAL_BYTES, lang)])
    rows = [[names[i], s.piece, s.cache_tokens] + per_layer[i] + [s.cache_bytes] for i, s in enumerate(cached)]
    return figure("cache_per_layer", title, data, lay, cols, rows)


def _series(cached, uncached, lang):
    return ((t(L.WITH_CACHE, lang), cached, COLORS["blue"]), (t(L.WITHOUT_CACHE, lang), uncached, COLORS["vermillion"]))


def _figure_flops(cached, uncached, lang) -> dict:
    x, names, axis = _step_axis(len(cached) - 1, lang)
    data = [{"type": "scatter", "mode": "lines+markers", "name": lbl, "x": x, "y": [s.flops for s in run_],
             "line": {"color": color}, "hovertemplate": f"%{{y:,}} FLOPs<extra>{lbl}</extra>"}
            for lbl, run_, color in _series(cached, uncached, lang)]
    title = t({"en": "Work per step: FLOPs (engine.analysis.costs)", "zh-TW": "每一步的運算量：浮點運算次數（engine.analysis.costs）"}, lang)
    lay = layout(t(STEP_AXIS, lang), "FLOPs", xaxis=axis, yaxis={"rangemode": "tozero"})
    cols = [t(L.STEP, lang), t({"en": "tokens fed (with cache)", "zh-TW": "輸入詞元數（使用快取）"}, lang),
            t({"en": "FLOPs with cache", "zh-TW": "FLOPs（使用快取）"}, lang),
            t({"en": "tokens fed (without cache)", "zh-TW": "輸入詞元數（不用快取）"}, lang),
            t({"en": "FLOPs without cache", "zh-TW": "FLOPs（不用快取）"}, lang)]
    rows = [[names[i], c.n_input, c.flops, n.n_input, n.flops] for i, (c, n) in enumerate(zip(cached, uncached))]
    return figure("flops", title, data, lay, cols, rows)


def _figure_seconds(cached, uncached, lang) -> dict:
    x, names, axis = _step_axis(len(cached) - 1, lang)
    data = [{"type": "scatter", "mode": "lines+markers", "name": lbl, "x": x, "y": floats(s.seconds * 1e3 for s in run_),
             "line": {"color": color}, "hovertemplate": f"%{{y:.3g}} ms<extra>{lbl}</extra>"}
            for lbl, run_, color in _series(cached, uncached, lang)]
    title = t({"en": "Time per step, measured", "zh-TW": "每一步的實測時間"}, lang)
    lay = layout(t(STEP_AXIS, lang), t({"en": "milliseconds", "zh-TW": "毫秒"}, lang), xaxis=axis, yaxis={"rangemode": "tozero"})
    cols = [t(L.STEP, lang), t({"en": "with cache (ms)", "zh-TW": "使用快取（毫秒）"}, lang),
            t({"en": "without cache (ms)", "zh-TW": "不用快取（毫秒）"}, lang)]
    rows = [[names[i], c.seconds * 1e3, n.seconds * 1e3] for i, (c, n) in enumerate(zip(cached, uncached))]
    return figure("seconds", title, data, lay, cols, rows)


def _notes(tok, cached, uncached, n_layers, lang) -> list[str]:
    same = [s.token_id for s in cached] == [s.token_id for s in uncached]
    flops_c, flops_n = fmt_si(sum(s.flops for s in cached[1:]), "FLOP"), fmt_si(sum(s.flops for s in uncached[1:]), "FLOP")
    saved = fmt_num(sum(s.flops for s in uncached[1:]) / sum(s.flops for s in cached[1:]))
    sec_c, sec_n = fmt_seconds(sum(s.seconds for s in cached[1:])), fmt_seconds(sum(s.seconds for s in uncached[1:]))
    text, last = tok.decode([s.token_id for s in cached]), cached[-1]
    size, per_token = fmt_bytes(last.cache_bytes), fmt_bytes(last.cache_bytes // max(last.cache_tokens, 1))
    agree = ({"en": "Both paths chose exactly the same tokens.", "zh-TW": "兩種做法選出的詞元完全一樣。"} if same else
             {"en": "The two paths chose different tokens here (a rounding tie); the work comparison still holds.",
              "zh-TW": "兩種做法在這裡選了不同的詞元（捨入誤差造成平手）；運算量的比較依然成立。"})
    generated = {"en": f"Generated (greedy): “{text}”. {agree['en']}", "zh-TW": f"產生的文字（貪婪解碼）：「{text}」。{agree['zh-TW']}"}
    held = {"en": f"The cache now holds {last.cache_tokens} tokens: {size} in {n_layers} layers, {per_token} per token.",
            "zh-TW": f"快取現在存了 {last.cache_tokens} 個詞元：{n_layers} 層合計 {size}，每個詞元 {per_token}。"}
    work = {"en": f"Decode steps in total: {flops_c} with the cache vs {flops_n} without ({saved}×); "
                  f"time {sec_c} vs {sec_n}, {_where('en')}.",
            "zh-TW": f"解碼步驟合計：使用快取 {flops_c}，不用快取 {flops_n}（{saved} 倍）；時間分別是 {sec_c} 和 {sec_n}，{_where('zh-TW')}。"}
    saves = {"en": "The cache saves recomputing old keys and values; the new token still goes through every layer and weight.",
             "zh-TW": "快取省下的是重算舊的 key 和 value；新的詞元還是要走過每一層、用到每一個權重。"}
    return [t(note, lang) for note in (generated, held, work, saves)]


def run(values: dict, lang: str) -> dict:
    model, tok = load_course_model()
    steps = values["steps"]
    ids = encode_prompt(tok, values["prompt"], model.config.max_seq_len - steps)
    cached, uncached, per_layer = decode_both(model, tok, ids, steps)
    figures = [_figure_cache(cached, per_layer, lang), _figure_flops(cached, uncached, lang),
               _figure_seconds(cached, uncached, lang)]
    return {"figures": figures, "notes": _notes(tok, cached, uncached, model.config.n_layers, lang)}
