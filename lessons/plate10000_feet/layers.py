"""The 10,000-foot view: a stack of layers, each with its own KV cache, and a vector's trip
through them. The prompt is fed one token at a time (as decoding does), so every layer's cache
gains one K/V entry per token; then the "logit lens" reads the newest token's vector after
each layer with the model's own output head, to show the guess taking shape.
"""
from __future__ import annotations

import numpy as np

from engine import Generator, SamplingParams, load_course_model
from engine.sampling import softmax
from lessons.common import labels as L
from lessons.common.figures import COLORS, figure, floats, fmt_bytes, fmt_percent, layout, show_piece, t
from lessons.common.prompts import encode_prompt, prompt_control

NAME = "layers"
PLATE = "plates/10000-feet"
TITLE = {"en": "Layers: one cache each, and a vector's trip", "zh-TW": "層：每層各有快取，以及一個向量的旅程"}

# Found by running the course model's logit lens over the corpus's sentence prefixes: in both,
# the first layers give the everyday continuation (" summer" as in "in the summer"; 市 as in
# 城市) and a later layer switches to the one the king implies (" castle"; 堡 as in 城堡).
EXAMPLES = {"en": "The king lives in the", "zh-TW": "國王住在城"}
MAX_TOKENS = 48

CONTROLS = (prompt_control(EXAMPLES),)

TOP_GUESS = {"en": "top guess", "zh-TW": "排名第一的詞元"}


def feed_one_by_one(model, tok, ids: list[int]):
    """Feed ``ids`` one token per forward pass (as decoding does, the text given: the
    Generator's teacher forcing).

    Returns (cache, per-layer bytes after each token [T][L], trace of the last pass).
    """
    gen = Generator(model, tok, SamplingParams(temperature=0), n_top=0, cache=model.new_cache(max_len=len(ids)))
    cache, per_layer = gen.cache, []

    def sizes():
        return [int(cache.keys(l).nbytes + cache.values(l).nbytes) for l in range(model.config.n_layers)]

    steps = [gen.start(ids[:1], trace=True)]
    per_layer.append(sizes())
    for i in ids[1:]:
        steps.append(gen.step(trace=True, token=i))
        per_layer.append(sizes())
    return cache, per_layer, steps[-1].trace


def _figure_cache(cache, per_layer, pieces, lang) -> dict:
    """Every layer's cache: the size of the key each layer stored for each token."""
    L_, T = len(per_layer[0]), len(pieces)
    layers = [t(L.layer(n), lang) for n in range(1, L_ + 1)]
    # z[l][pos] = size (L2 norm) of the key stored for that token in that layer, averaged over KV heads
    z = [floats(np.linalg.norm(np.asarray(cache.keys(l), dtype=np.float64), axis=-1).mean(axis=0), 4) for l in range(L_)]
    norm = t({"en": "key size ‖k‖", "zh-TW": "key 的長度 ‖k‖"}, lang)
    heat = [{"type": "heatmap", "z": z, "x": list(range(T)), "y": layers, "colorscale": "Viridis",
             "colorbar": {"title": {"text": norm}}, "customdata": [pieces for _ in range(L_)],
             "hovertemplate": f"%{{y}} · %{{customdata}}<br>{norm}{t(L.COLON, lang)}%{{z:.3g}}<extra></extra>"}]
    title = t({"en": "Every layer keeps its own K/V notes for every token", "zh-TW": "每一層都替每個詞元記下自己的 K/V 筆記"}, lang)
    lay = layout(t({"en": "token (position in the cache)", "zh-TW": "詞元（在快取中的位置）"}, lang), t(L.LAYER, lang),
                 xaxis={"tickmode": "array", "tickvals": list(range(T)), "ticktext": [show_piece(p) for p in pieces],
                        "tickangle": -45 if T > 8 else 0},
                 height=max(300, 40 * L_ + 160))
    cols = ([t({"en": "tokens read", "zh-TW": "已讀詞元數"}, lang), t({"en": "newest token", "zh-TW": "最新的詞元"}, lang)]
            + [t(L.layer_bytes(n), lang) for n in range(1, L_ + 1)] + [t(L.TOTAL_BYTES, lang)])
    rows = [[n + 1, pieces[n]] + b + [sum(b)] for n, b in enumerate(per_layer)]
    return figure("cache_per_layer", title, heat, lay, cols, rows)


def logit_lens(model, tr) -> list[np.ndarray]:
    """The next-token probabilities [V] read from the newest token's vector at every stage:
    the embedding (hidden[0]) and after each layer, with the model's final norm and output head."""
    return [softmax(np.asarray(model.logits_from_hidden(h[-1:]), dtype=np.float64)[0]) for h in tr.hidden]


def _figure_lens(tok, probs, pieces, lang) -> dict:
    stages = [t(L.EMBEDDING, lang)] + [t(L.layer(n), lang) for n in range(1, len(probs))]
    top1 = [int(np.argmax(p)) for p in probs]
    final = top1[-1]
    final_piece = tok.pieces([final])[0]
    lbl_top = t(TOP_GUESS, lang)
    lbl_final = t({"en": f"final answer “{final_piece}”", "zh-TW": f"最後的答案「{final_piece}」"}, lang)
    data = [
        {"type": "bar", "name": lbl_top, "x": stages, "y": floats(p[i] for p, i in zip(probs, top1)),
         "text": [show_piece(s) for s in tok.pieces(top1)], "textposition": "outside",
         "marker": {"color": [COLORS["vermillion"] if i == final else COLORS["sky"] for i in top1]},
         "hovertemplate": f"%{{x}}<br>{lbl_top}{t(L.COLON, lang)}%{{text}}"
                          + t({"en": " (%{y:.1%})", "zh-TW": "（%{y:.1%}）"}, lang) + "<extra></extra>"},
        {"type": "scatter", "mode": "lines+markers", "name": lbl_final, "x": stages,
         "y": floats(p[final] for p in probs), "line": {"color": COLORS["blue"]},
         "hovertemplate": f"%{{x}}<br>%{{y:.1%}}<extra>{lbl_final}</extra>"},
    ]
    title = t({"en": f"The guess after “{pieces[-1]}”, read out after each layer",
               "zh-TW": f"「{pieces[-1]}」之後的猜測，逐層讀出來看"}, lang)
    lay = layout(t({"en": "where the vector is read out", "zh-TW": "在哪裡讀出向量"}, lang), t(L.PROBABILITY, lang),
                 yaxis={"tickformat": ".0%", "rangemode": "tozero"})
    cols = [t({"en": "stage", "zh-TW": "階段"}, lang), t({"en": "1st guess", "zh-TW": "第 1 名"}, lang),
            t(L.PROBABILITY, lang), t({"en": "2nd guess", "zh-TW": "第 2 名"}, lang),
            t({"en": "3rd guess", "zh-TW": "第 3 名"}, lang), lbl_final]
    rows = []
    for name, p in zip(stages, probs):
        top3 = [int(i) for i in np.argsort(-p, kind="stable")[:3]]
        s3 = tok.pieces(top3)
        rows.append([name, s3[0], fmt_percent(p[top3[0]]), s3[1], s3[2], fmt_percent(p[final])])
    return figure("logit_lens", title, data, lay, cols, rows)


def guess_runs(tok, probs) -> list[tuple[str, int, int]]:
    """(top guess, first layer, last layer) for each run of layers that agree (the embedding left out)."""
    runs: list[tuple[str, int, int]] = []
    for layer, p in enumerate(probs[1:], start=1):
        piece = tok.pieces([int(np.argmax(p))])[0]
        if runs and runs[-1][0] == piece:
            runs[-1] = (piece, runs[-1][1], layer)
        else:
            runs.append((piece, layer, layer))
    return runs


def _span(a: int, b: int) -> dict:
    return ({"en": f"layer {a}", "zh-TW": f"第 {a} 層"} if a == b else
            {"en": f"layers {a}–{b}", "zh-TW": f"第 {a} 到第 {b} 層"})


def _notes(tok, cache, per_layer, probs, dtype, lang) -> list[str]:
    n_layers, T = len(per_layer[0]), len(per_layer)
    runs = guess_runs(tok, probs)
    first, final = tok.pieces([int(np.argmax(probs[0]))])[0], runs[-1][0]
    if len(runs) == 1:
        change = {"en": f"Every layer already gives “{final}”: the guess settles in layer 1.",
                  "zh-TW": f"每一層給的都是「{final}」：第 1 層就已經決定了。"}
    else:
        change = {"en": "The top guess changes on the way up: " + ", then ".join(
                      f"“{p}” ({_span(a, b)['en']})" for p, a, b in runs) + ".",
                  "zh-TW": "逐層來看，排名第一的詞元是：" + "，接著是".join(
                      f"「{p}」（{_span(a, b)['zh-TW']}）" for p, a, b in runs) + "。"}
    held, per_token, total = fmt_bytes(per_layer[-1][0]), fmt_bytes(per_layer[0][0]), fmt_bytes(cache.bytes_used)
    caches = {"en": f"{n_layers} layers, each with its own cache: after {T} tokens each layer holds {held} "
                    f"({per_token} per token in {dtype}), {total} in all.",
              "zh-TW": f"共 {n_layers} 層，每層各有自己的快取：讀完 {T} 個詞元後，每層存了 {held}"
                       f"（以 {dtype} 儲存，每個詞元 {per_token}），合計 {total}。"}
    lens = {"en": f"Logit lens: after each layer, the newest token's vector is read with the model's final norm and "
                  f"output head. The embedding alone guesses “{first}”; after the last layer the model says “{final}”.",
            "zh-TW": f"Logit lens：每過一層，就用模型最後的正規化和輸出層，把最新詞元的向量讀一次。"
                     f"只有嵌入向量時猜「{first}」；經過最後一層，模型的答案是「{final}」。"}
    return [t(note, lang) for note in (caches, lens, change)]


def _examples(prompt: str, lang: str) -> list[dict]:
    """A button for each example prompt that is not in the box already."""
    return [{"label": t({"en": f"Try “{ex}”", "zh-TW": f"試試「{ex}」"}, lang), "values": {"prompt": ex}}
            for ex in EXAMPLES.values() if ex != prompt]


def run(values: dict, lang: str) -> dict:
    model, tok = load_course_model()
    ids = encode_prompt(tok, values["prompt"], min(MAX_TOKENS, model.config.max_seq_len))
    cache, per_layer, tr = feed_one_by_one(model, tok, ids)
    pieces, probs = tok.pieces(ids), logit_lens(model, tr)
    figures = [_figure_cache(cache, per_layer, pieces, lang), _figure_lens(tok, probs, pieces, lang)]
    return {"figures": figures, "notes": _notes(tok, cache, per_layer, probs, model.config.dtype, lang),
            "actions": _examples(values["prompt"], lang)}
