"""Plate 9: speculative decoding on the course model. A drafter (the model's first layers, or
n-gram lookup in the text so far) guesses K tokens; the model checks them in one pass, keeps
the longest prefix it agrees with plus one token of its own, and its KV cache is truncated
back to the kept text (engine/speculative.py). The text is compared with plain greedy
decoding, and the time each way is estimated from the engine's cost model on one device.
"""
from __future__ import annotations

import functools

from engine import Generator, SamplingParams, load_course_model
from engine.speculative import LayerDrafter, NgramDrafter, estimate_time, pass_bytes, speculative_generate
from lessons.common import labels as L
from lessons.common.base import select, slider
from lessons.common.devices import DEVICES
from lessons.common.figures import COLORS, figure, floats, fmt_num, fmt_percent, fmt_seconds, layout, show_piece, t
from lessons.common.prompts import encode_prompt, prompt_control

NAME = "draft_verify"
PLATE = "plates/09-decoding-faster"
TITLE = {"en": "Speculative decoding: draft, verify, roll back", "zh-TW": "推測解碼：草稿、驗證、倒回"}

DEVICE = "h200_sxm"  # the device of the time estimate (lessons/common/devices.py: published peaks)
DRAFTERS = {
    "layers1": {"en": "The model's first layer", "zh-TW": "模型的前 1 層"},
    "layers2": {"en": "The model's first 2 layers", "zh-TW": "模型的前 2 層"},
    "ngram": {"en": "n-gram lookup in the text", "zh-TW": "在文字裡搜尋 n-gram"},
}

# The length comes first: tools.bench.bench_live changes the first slider, and a new length decodes
# the greedy text again (a new K or draft reuses it), so the benchmark times the slower path.
CONTROLS = (
    prompt_control({"en": "In the morning, the cat", "zh-TW": "我們今天"}),
    select("drafter", {"en": "Draft", "zh-TW": "草稿"}, "layers1", list(DRAFTERS.items()),
           help={"en": "Who guesses: a draft model made of the model's first layers, or a lookup of what followed the same words earlier.",
                 "zh-TW": "由誰來猜：用模型前幾層做成的草稿模型，或是在前文找同樣的字，看它後面接了什麼。"}),
    slider("tokens", {"en": "New tokens", "zh-TW": "新詞元數"}, 16, 2, 48, 1),
    slider("k", {"en": "Draft length K (tokens per guess)", "zh-TW": "草稿長度 K（每次猜幾個詞元）"}, 4, 1, 8, 1),
)

STATUS = {  # (label, colour) of each kind of token in a round
    "accepted": ({"en": "accepted guesses", "zh-TW": "被接受的猜測"}, COLORS["green"]),
    "own": ({"en": "the model's own token", "zh-TW": "模型自己的詞元"}, COLORS["blue"]),
    "rejected": ({"en": "rejected guesses", "zh-TW": "被拒絕的猜測"}, COLORS["vermillion"]),
}
ROUND = {"en": "pass", "zh-TW": "執行"}  # a pass of the model is 一次執行 on the page too


def _round(i: int, lang: str) -> str:
    """A round's name: "pass 3", 「第 3 次」."""
    return t({"en": f"pass {i}", "zh-TW": f"第 {i} 次"}, lang)


@functools.lru_cache(maxsize=None)
def _layer_drafter(n_layers: int) -> LayerDrafter:
    """The cut-down draft model, built once per depth (its cache is reset by every run)."""
    return LayerDrafter(load_course_model()[0], n_layers)


@functools.lru_cache(maxsize=32)
def _greedy(ids: tuple[int, ...], n_new: int) -> tuple[int, ...]:
    """Plain greedy decoding of the same prompt, the text to compare with. Cached: it depends on
    the prompt and the length only, so changing K or the draft does not decode it again."""
    model, tok = load_course_model()
    steps = Generator(model, tok, SamplingParams(temperature=0), n_top=0).generate(list(ids), n_new)
    return tuple(ids) + tuple(s.token_id for s in steps)


def _drafter(key: str):
    return NgramDrafter(3) if key == "ngram" else _layer_drafter(int(key[-1]))


def _pieces(tok, ids) -> str:
    return " ".join(show_piece(p) for p in tok.pieces(ids)) if ids else "—"


def _figure_rounds(tok, run, lang) -> dict:
    rounds = run.rounds
    y = [_round(i, lang) for i in range(1, len(rounds) + 1)]
    own = [[] if r.ended else [r.correction] for r in rounds]  # none once the text ended at an accepted guess
    counts = {"accepted": [r.accepted for r in rounds], "own": [len(o) for o in own],
              "rejected": [len(r.rejected) for r in rounds]}
    hover = {"accepted": [_pieces(tok, r.drafted[: r.accepted]) for r in rounds],
             "own": [_pieces(tok, o) for o in own], "rejected": [_pieces(tok, r.rejected) for r in rounds]}
    data = [{"type": "bar", "orientation": "h", "name": t(lbl, lang), "y": y, "x": counts[key], "customdata": hover[key],
             "marker": {"color": color}, "hovertemplate": f"%{{customdata}}<extra>{t(lbl, lang)}</extra>"}
            for key, (lbl, color) in STATUS.items()]
    title = t({"en": "Each pass of the model: accepted guesses, the model's own token, rejected guesses",
               "zh-TW": "模型每次執行：被接受的猜測、模型自己的詞元、被拒絕的猜測"}, lang)
    lay = layout(t(L.TOKENS, lang), "", barmode="stack", yaxis={"autorange": "reversed", "type": "category"},
                 legend={"traceorder": "normal"},
                 height=max(260, 60 + 24 * len(rounds)))
    cols = [t(ROUND, lang), t({"en": "guesses", "zh-TW": "猜測"}, lang), t(STATUS["accepted"][0], lang),
            t(STATUS["rejected"][0], lang), t(STATUS["own"][0], lang), t({"en": "kind", "zh-TW": "種類"}, lang)]
    rows = [[y[i], _pieces(tok, r.drafted), _pieces(tok, r.drafted[: r.accepted]), _pieces(tok, r.rejected),
             _pieces(tok, own[i]), t(_kind(r, tok.eos_id), lang)] for i, r in enumerate(rounds)]
    return figure("rounds", title, data, lay, cols, rows)


def _kind(r, eos_id: int) -> dict:
    """What the round's last token was: the end of the text, a bonus, a correction, or a plain step."""
    if r.ended or r.correction == eos_id:
        return {"en": "end of text", "zh-TW": "文字結束"}
    if r.bonus:
        return {"en": "bonus", "zh-TW": "紅利"}
    return {"en": "correction", "zh-TW": "修正"} if r.drafted else {"en": "no guess", "zh-TW": "沒有猜測"}


def _figure_cache(run, lang) -> dict:
    """Cache length after each pass (up) and after each rollback (down): a step chart."""
    # explicit corners (a vertical segment at every x where the length changes): up by the
    # pass halfway to the pass's tick, back down at the tick itself
    x, y = [0.0], [run.rounds[0].cache_before] if run.rounds else [len(run.prompt)]
    for i, r in enumerate(run.rounds, start=1):
        x += [i - 0.5, i - 0.5, float(i), float(i)]
        y += [r.cache_before, r.cache_peak, r.cache_peak, r.cache_after]
    cut = [(i, r.cache_after) for i, r in enumerate(run.rounds, start=1) if r.rolled_back]
    data = [{"type": "scatter", "mode": "lines", "line": {"color": COLORS["blue"]},
             "name": t(L.KV_CACHE, lang), "x": floats(x), "y": y, "hovertemplate": "%{y}<extra></extra>"},
            {"type": "scatter", "mode": "markers", "name": t({"en": "rolled back (truncate)", "zh-TW": "倒回（截斷）"}, lang),
             "x": [c[0] for c in cut], "y": [c[1] for c in cut], "marker": {"color": COLORS["vermillion"], "size": 9},
             "hovertemplate": "%{y}<extra></extra>"}]
    title = t({"en": "The KV cache: up by every fed token, back to the kept text", "zh-TW": "KV 快取：每次執行先全部寫進去，再倒回留下的文字"}, lang)
    axis = {"tickmode": "array", "tickvals": list(range(len(run.rounds) + 1)),
            "ticktext": [t(L.PREFILL, lang)] + [str(i) for i in range(1, len(run.rounds) + 1)]}
    lay = layout(t({"en": "pass of the model (0 = prefill)", "zh-TW": "模型的第幾次執行（0 = 預填）"}, lang),
                 t({"en": "tokens in the cache", "zh-TW": "快取中的詞元數"}, lang), xaxis=axis)
    cols = [t(ROUND, lang), t({"en": "cache before", "zh-TW": "執行前"}, lang),
            t({"en": "after the pass", "zh-TW": "執行後"}, lang), t({"en": "truncated to", "zh-TW": "截斷到"}, lang)]
    rows = [[_round(i, lang), r.cache_before, r.cache_peak, r.cache_after if r.rolled_back else "—"]
            for i, r in enumerate(run.rounds, start=1)]
    return figure("cache", title, data, lay, cols, rows)


def _figure_time(run, est, lang) -> dict:
    greedy, spec = t({"en": "greedy", "zh-TW": "貪婪解碼"}, lang), t(L.SPECULATIVE, lang)
    verify = t({"en": "model passes", "zh-TW": "模型執行"}, lang)
    draft = t({"en": "draft", "zh-TW": "草稿"}, lang)
    data = [{"type": "bar", "name": verify, "x": [greedy, spec], "y": floats([est.greedy_s * 1e6, est.verify_s * 1e6]),
             "marker": {"color": COLORS["blue"]}, "hovertemplate": "%{y:.3g} µs<extra></extra>"},
            {"type": "bar", "name": draft, "x": [greedy, spec], "y": floats([0, est.draft_s * 1e6]),
             "marker": {"color": COLORS["orange"]}, "hovertemplate": "%{y:.3g} µs<extra></extra>"}]
    device = DEVICES[DEVICE]
    title = t({"en": f"Estimated time on an {t(device.name, 'en')} (roofline, engine.analysis.costs)",
               "zh-TW": f"在 {t(device.name, 'zh-TW')} 上的估計時間（Roofline 模型、engine.analysis.costs）"}, lang)
    lay = layout("", t({"en": "microseconds", "zh-TW": "微秒"}, lang), barmode="stack", legend={"traceorder": "normal"})
    n_greedy = len(run.generated) - 1
    cols = [t({"en": "decoding", "zh-TW": "解碼方式"}, lang), t({"en": "passes of the model", "zh-TW": "模型執行次數"}, lang),
            t({"en": "tokens per pass", "zh-TW": "每次執行寫下的詞元數"}, lang), t({"en": "time", "zh-TW": "時間"}, lang)]
    rows = [[greedy, n_greedy, 1.0 if n_greedy else 0.0, fmt_seconds(est.greedy_s)],
            [spec, run.passes, run.tokens_per_pass, fmt_seconds(est.speculative_s)]]
    return figure("time", title, data, lay, cols, rows)


def _draft_note(model, drafter, context: int, lang) -> list[str]:
    """How much of a model step one draft step costs (bytes: both are memory-bound)."""
    if not isinstance(drafter, LayerDrafter):
        return []
    share = fmt_percent(pass_bytes(drafter.draft.config, context, 1) / pass_bytes(model.config, context, 1))
    n, total = drafter.draft.config.n_layers, model.config.n_layers
    return [t({"en": f"One step of the draft model ({n} of {total} layers) moves {share} of the bytes of a step of the "
                     f"model at a context of {context} tokens: like the model, it looks up one embedding row and reads "
                     "the whole output head. A draft pays off when it is much cheaper than the model and still guesses well.",
               "zh-TW": f"上下文 {context} 個詞元時，草稿模型（{total} 層中的 {n} 層）走一步，搬動的位元組是模型走一步的 {share}："
                        "它和模型一樣，要查一次嵌入向量，還要把整個輸出層讀一遍。草稿模型要比模型便宜得多、又猜得準，才划算。"}, lang)]


def _notes(tok, run, same, est, drafter, lang) -> list[str]:
    text = tok.decode(run.generated)
    agree = ({"en": "the same text as plain greedy decoding, token for token", "zh-TW": "和一般的貪婪解碼一字不差"} if same else
             {"en": "NOT the same as greedy decoding here (a float rounding tie)", "zh-TW": "這次和貪婪解碼不同（浮點數捨入造成平手）"})
    n_acc = sum(r.accepted for r in run.rounds)
    n_draft = sum(len(r.drafted) for r in run.rounds)
    per = fmt_num(run.tokens_per_pass)
    guesses = ({"en": f"{n_acc} of {n_draft} guesses accepted ({fmt_percent(n_acc / n_draft)}).",
                "zh-TW": f"{n_draft} 個猜測中有 {n_acc} 個被接受（{fmt_percent(n_acc / n_draft)}）。"} if n_draft else
               {"en": "No guess was drafted in this run.", "zh-TW": "這次沒有提出任何猜測。"})
    out = [{"en": f"Generated “{text}”: {agree['en']}.", "zh-TW": f"產生的文字是「{text}」，{agree['zh-TW']}。"},
           {"en": f"{run.passes} passes of the model wrote {len(run.generated) - 1} tokens after the prefill: {per} tokens "
                  f"per pass (greedy decoding: 1). " + guesses["en"],
            "zh-TW": f"預填之後，模型執行 {run.passes} 次，寫出 {len(run.generated) - 1} 個詞元，平均每次 {per} 個"
                     f"（貪婪解碼是 1 個）。" + guesses["zh-TW"]}]
    if run.ids[-1] == tok.eos_id:  # the model ended the text before the tokens asked for
        n, eos = len(run.generated), tok.pieces([tok.eos_id])[0]
        inside = bool(run.rounds) and run.rounds[-1].ended  # an accepted guess, not the model's own token
        out.append({"en": f"The model wrote the end-of-text token {eos} as token {n}: generation stops there"
                          + (", and what the draft guessed after it is thrown away with the rejected guesses."
                             if inside else "."),
                    "zh-TW": f"模型寫到第 {n} 個詞元時寫出結束詞元 {eos}，生成就在這裡結束"
                             + ("；草稿在它後面猜的詞元，和被拒絕的猜測一樣丟掉。" if inside else "。")})
    saved = fmt_percent(abs(est.saved))
    out.append({"en": f"Estimated time {'saved' if est.saved >= 0 else 'lost'}: {saved} ({fmt_seconds(est.speculative_s)} "
                      f"instead of {fmt_seconds(est.greedy_s)}). Assumed: each pass takes the roofline's time for its "
                      "FLOPs and bytes (weights read once per pass, so a pass over K + 1 tokens costs about one decode step)"
                      + ("; the draft model's passes are counted the same way." if drafter != "ngram" else
                         "; n-gram lookup costs nothing on the GPU."),
                "zh-TW": f"估計{'省下' if est.saved >= 0 else '多花'}的時間：{saved}（{fmt_seconds(est.speculative_s)}；"
                         f"貪婪解碼要 {fmt_seconds(est.greedy_s)}）。假設：每次執行的時間，取 Roofline 模型依它的浮點運算次數和位元組數"
                         "算出的值（權重每次只讀一遍，所以一次執行處理 K + 1 個詞元，成本和一步解碼差不多）"
                         + ("；草稿模型的每次執行也這樣算。" if drafter != "ngram" else "；n-gram 搜尋不用 GPU，成本算作零。")})
    return [t(n, lang) for n in out]


def run(values: dict, lang: str) -> dict:
    model, tok = load_course_model()
    n_new, k = values["tokens"], values["k"]
    ids = encode_prompt(tok, values["prompt"], model.config.max_seq_len - n_new)
    drafter = _drafter(values["drafter"])
    spec = speculative_generate(model, ids, n_new, drafter, k, eos_id=tok.eos_id)
    same = tuple(spec.ids) == _greedy(tuple(ids), n_new)
    device = DEVICES[DEVICE]
    draft_cfg = drafter.draft.config if isinstance(drafter, LayerDrafter) else None
    est = estimate_time(model.config, spec, device.peak_flops, device.bandwidth, draft_cfg)
    figures = [_figure_rounds(tok, spec, lang), _figure_cache(spec, lang), _figure_time(spec, est, lang)]
    notes = _notes(tok, spec, same, est, values["drafter"], lang) + _draft_note(model, drafter, len(ids), lang)
    return {"figures": figures, "notes": notes}
