"""The 10,000-foot view: a stack of layers, each with its own KV cache, and a vector's trip
through them. The prompt is fed one token at a time (as decoding does), so every layer's cache
gains one K/V entry per token; then the "logit lens" reads the newest token's vector after
each layer with the model's own output head, to show the guess taking shape.
"""
from __future__ import annotations

import numpy as np

from engine import load_course_model
from engine.sampling import softmax
from lessons.figures import COLORS, figure, floats, fmt_bytes, layout, show_piece, t
from lessons.prompts import encode_prompt, prompt_control

TITLE = {"en": "Layers: one cache each, and a vector's trip", "zh-TW": "層：各自的快取，與向量的旅程"}

DEFAULT_PROMPT = "The cat sat on the"
MAX_TOKENS = 48

CONTROLS = (prompt_control(DEFAULT_PROMPT),)


def feed_one_by_one(model, ids: list[int]):
    """Feed ``ids`` one token per forward pass (as decoding does).

    Returns (cache, per-layer bytes after each token [T][L], trace of the last pass).
    """
    cache = model.new_cache(max_len=len(ids))
    per_layer = []
    tr = None
    for i in ids:
        _, tr = model.forward([i], cache=cache, trace=True, last_only=True)
        per_layer.append([int(cache.keys(l).nbytes + cache.values(l).nbytes) for l in range(model.config.n_layers)])
    return cache, per_layer, tr


def run(values: dict, lang: str) -> dict:
    model, tok = load_course_model()
    ids = encode_prompt(tok, values["prompt"], min(MAX_TOKENS, model.config.max_seq_len))
    L, T = model.config.n_layers, len(ids)
    cache, per_layer, tr = feed_one_by_one(model, ids)
    pieces = tok.pieces(ids)
    layer_names = [t({"en": f"layer {l + 1}", "zh-TW": f"第 {l + 1} 層"}, lang) for l in range(L)]

    # ------------------------------------------------------------------ figure 1: every layer's cache
    # z[l][pos] = size (L2 norm) of the key stored for that token in that layer, averaged over KV heads
    z = [floats(np.linalg.norm(np.asarray(cache.keys(l), dtype=np.float64), axis=-1).mean(axis=0), 4) for l in range(L)]
    pos = list(range(T))
    pos_lbl = t({"en": "token (position in the cache)", "zh-TW": "詞元（在快取中的位置）"}, lang)
    norm_lbl = t({"en": "key size ‖k‖", "zh-TW": "鍵向量長度 ‖k‖"}, lang)
    heat = [{"type": "heatmap", "z": z, "x": pos, "y": layer_names, "colorscale": "Viridis",
             "colorbar": {"title": {"text": norm_lbl}},
             "customdata": [[pieces[p] for p in pos] for _ in range(L)],
             "hovertemplate": f"%{{y}} · %{{customdata}}<br>{norm_lbl}: %{{z:.3g}}<extra></extra>"}]
    title1 = t({"en": "Every layer keeps its own K/V notes for every token", "zh-TW": "每一層都為每個詞元儲存自己的 K/V 筆記"}, lang)
    lay1 = layout(title1, pos_lbl, t({"en": "layer", "zh-TW": "層"}, lang),
                  xaxis={"tickmode": "array", "tickvals": pos, "ticktext": [show_piece(p) for p in pieces],
                         "tickangle": -45 if T > 8 else 0},
                  height=max(300, 40 * L + 160))
    cols1 = [t({"en": "tokens read", "zh-TW": "已讀詞元數"}, lang), t({"en": "newest token", "zh-TW": "最新詞元"}, lang)] \
        + [f"{n} (B)" for n in layer_names] + [t({"en": "total (B)", "zh-TW": "合計（B）"}, lang)]
    rows1 = [[n + 1, pieces[n]] + b + [sum(b)] for n, b in enumerate(per_layer)]
    fig1 = figure("cache_per_layer", title1, heat, lay1, cols1, rows1)

    # ------------------------------------------------------------------ figure 2: logit lens
    # hidden[0] = the embedding, hidden[l] = after layer l; the newest token's vector [D]
    probs = [softmax(np.asarray(model.logits_from_hidden(h[-1:]), dtype=np.float64)[0]) for h in tr.hidden]
    final = int(np.argmax(probs[-1]))
    stage_names = [t({"en": "embedding", "zh-TW": "嵌入"}, lang)] + layer_names
    top1 = [int(np.argmax(p)) for p in probs]
    top1_pieces = tok.pieces(top1)
    final_piece = tok.pieces([final])[0]
    lbl_top = t({"en": "top guess", "zh-TW": "第一猜測"}, lang)
    lbl_final = t({"en": f"final answer “{final_piece}”", "zh-TW": f"最終答案「{final_piece}」"}, lang)
    data2 = [
        {"type": "bar", "name": lbl_top, "x": stage_names, "y": floats(p[i] for p, i in zip(probs, top1)),
         "text": [show_piece(s) for s in top1_pieces], "textposition": "outside",
         "marker": {"color": [COLORS["vermillion"] if i == final else COLORS["sky"] for i in top1]},
         "hovertemplate": f"%{{x}}<br>{lbl_top}: %{{text}} (%{{y:.1%}})<extra></extra>"},
        {"type": "scatter", "mode": "lines+markers", "name": lbl_final, "x": stage_names,
         "y": floats(p[final] for p in probs), "line": {"color": COLORS["blue"]},
         "hovertemplate": f"%{{x}}<br>%{{y:.1%}}<extra>{lbl_final}</extra>"},
    ]
    newest = pieces[-1]
    title2 = t({"en": f"The guess after “{newest}”, read out after each layer", "zh-TW": f"「{newest}」之後的猜測，逐層讀出"}, lang)
    lay2 = layout(title2, t({"en": "where the vector is read out", "zh-TW": "讀出向量的位置"}, lang),
                  t({"en": "probability", "zh-TW": "機率"}, lang), yaxis={"tickformat": ".0%", "rangemode": "tozero"})
    cols2 = [t({"en": "stage", "zh-TW": "階段"}, lang), t({"en": "1st guess", "zh-TW": "第 1 猜測"}, lang),
             t({"en": "p", "zh-TW": "機率"}, lang), t({"en": "2nd guess", "zh-TW": "第 2 猜測"}, lang),
             t({"en": "3rd guess", "zh-TW": "第 3 猜測"}, lang), lbl_final]
    rows2 = []
    for name, p in zip(stage_names, probs):
        top3 = [int(i) for i in np.argsort(-p, kind="stable")[:3]]
        s3 = tok.pieces(top3)
        rows2.append([name, s3[0], round(float(p[top3[0]]), 4), s3[1], s3[2], round(float(p[final]), 4)])
    fig2 = figure("logit_lens", title2, data2, lay2, cols2, rows2)

    per_token = per_layer[0][0]
    notes = [
        t({"en": (f"{L} layers, each with its own cache: after {T} tokens each layer holds {fmt_bytes(per_layer[-1][0])} "
                  f"({fmt_bytes(per_token)} per token), {fmt_bytes(cache.bytes_used)} in all."),
           "zh-TW": (f"{L} 層，每層各有自己的快取：讀完 {T} 個詞元後，每層儲存 {fmt_bytes(per_layer[-1][0])}"
                     f"（每個詞元 {fmt_bytes(per_token)}），合計 {fmt_bytes(cache.bytes_used)}。")}, lang),
        t({"en": (f"Logit lens: the newest token's vector, read with the model's final norm and output head after each layer. "
                  f"The embedding alone guesses “{top1_pieces[0]}”; after the last layer the model says “{final_piece}”."),
           "zh-TW": (f"Logit lens：在每一層之後，用模型最後的正規化與輸出層讀出最新詞元的向量。"
                     f"只有嵌入時猜「{top1_pieces[0]}」；經過最後一層，模型的答案是「{final_piece}」。")}, lang),
    ]
    return {"figures": [fig1, fig2], "notes": notes}
