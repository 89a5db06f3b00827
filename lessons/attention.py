"""Plate 4: who attends to whom. Each token's query is compared with every earlier token's key
(raw scaled Q·K scores); softmax turns one row of scores into weights that sum to 1, and the
weights blend the values. The course model's own attention, per layer and head, for the
reader's prompt.
"""
from __future__ import annotations

import numpy as np

from engine import load_course_model
from lessons.base import select
from lessons.figures import COLORS, HIGHLIGHT, figure, floats, layout, show_piece, t
from lessons.prompts import encode_prompt, prompt_control

TITLE = {"en": "Attention weights", "zh-TW": "注意力權重"}

DEFAULT_PROMPT = "The cat sat on the mat because it was tired"
MAX_TOKENS = 48  # a wider heatmap has unreadable labels

_CFG = load_course_model()[0].config
MEAN = "mean"

CONTROLS = (
    prompt_control(DEFAULT_PROMPT),
    select("layer", {"en": "Layer", "zh-TW": "層"}, "1",
           [(str(i), {"en": f"layer {i}", "zh-TW": f"第 {i} 層"}) for i in range(1, _CFG.n_layers + 1)],
           help={"en": "Every layer has its own attention.", "zh-TW": "每一層都有自己的注意力。"}),
    select("head", {"en": "Head", "zh-TW": "注意力頭"}, "1",
           [(str(h), {"en": f"head {h}", "zh-TW": f"第 {h} 個頭"}) for h in range(1, _CFG.n_heads + 1)]
           + [(MEAN, {"en": "mean of all heads", "zh-TW": "所有頭的平均"})],
           help={"en": "Each head compares its own queries and keys.", "zh-TW": "每個頭各自比較自己的查詢與鍵。"}),
)


def run(values: dict, lang: str) -> dict:
    model, tok = load_course_model()
    ids = encode_prompt(tok, values["prompt"], min(MAX_TOKENS, model.config.max_seq_len))
    layer = int(values["layer"]) - 1
    _, tr = model.forward(ids, trace=True, last_only=True)
    attn = np.asarray(tr.attn[layer], dtype=np.float64)  # [H, T, T]
    scores = np.asarray(tr.scores[layer], dtype=np.float64)  # [H, T, T], masked = -inf
    T = len(ids)
    if values["head"] == MEAN:
        w = attn.mean(axis=0)  # [T, T]
        raw = np.where(np.isfinite(scores), scores, 0.0).mean(axis=0)
        head_name = t({"en": "mean of all heads", "zh-TW": "所有頭的平均"}, lang)
    else:
        h = int(values["head"]) - 1
        w, raw = attn[h], np.where(np.isfinite(scores[h]), scores[h], 0.0)
        head_name = t({"en": f"head {h + 1}", "zh-TW": f"第 {h + 1} 個頭"}, lang)
    layer_name = t({"en": f"layer {layer + 1}", "zh-TW": f"第 {layer + 1} 層"}, lang)

    pieces = tok.pieces(ids)
    ticks = [f"{show_piece(p)}" for p in pieces]
    pos = list(range(T))
    # Causal mask: query i sees keys 0..i; later keys are blank (None), not "0 attention".
    z = [[float(f"{w[i, j]:.4g}") if j <= i else None for j in range(T)] for i in range(T)]
    q_lbl = t({"en": "query (the token looking)", "zh-TW": "查詢（正在看的詞元）"}, lang)
    k_lbl = t({"en": "key (the token looked at)", "zh-TW": "鍵（被看的詞元）"}, lang)
    w_lbl = t({"en": "weight", "zh-TW": "權重"}, lang)
    heat = [{"type": "heatmap", "z": z, "x": pos, "y": pos, "zmin": 0, "zmax": 1, "colorscale": "Blues", "reversescale": True,
             "customdata": [[[pieces[i], pieces[j]] for j in range(T)] for i in range(T)],
             "colorbar": {"title": {"text": w_lbl}},
             "hovertemplate": f"{q_lbl}: %{{customdata[0]}}<br>{k_lbl}: %{{customdata[1]}}<br>{w_lbl}: %{{z:.3f}}<extra></extra>"}]
    title1 = t({"en": f"Who attends to whom ({layer_name}, {head_name})", "zh-TW": f"誰在注意誰（{layer_name}，{head_name}）"}, lang)
    axis = {"tickmode": "array", "tickvals": pos, "ticktext": ticks, "tickangle": -45 if T > 8 else 0}
    lay1 = layout(title1, k_lbl, q_lbl, xaxis={**axis, "side": "bottom"},
                  yaxis={**axis, "tickangle": 0, "autorange": "reversed"}, height=max(360, 28 * T + 140))
    cols1 = [t({"en": "query \\ key", "zh-TW": "查詢 \\ 鍵"}, lang)] + [f"{j + 1}: {p}" for j, p in enumerate(pieces)]
    rows1 = [[f"{i + 1}: {pieces[i]}"] + ["" if v is None else v for v in z[i]] for i in range(T)]
    fig1 = figure("weights", title1, heat, lay1, cols1, rows1)

    # ------------------------------------------------------------------ newest token: scores vs weights
    newest = T - 1
    s_row, w_row = raw[newest], w[newest]
    s_lbl = t({"en": "raw score Q·K/√d", "zh-TW": "原始分數 Q·K/√d"}, lang)
    colors = [HIGHLIGHT if j == int(np.argmax(w_row)) else COLORS["blue"] for j in pos]
    bars = [
        {"type": "bar", "name": s_lbl, "x": pos, "y": floats(s_row), "marker": {"color": COLORS["grey"]},
         "customdata": pieces, "hovertemplate": f"%{{customdata}}<br>{s_lbl}: %{{y:.3f}}<extra></extra>"},
        {"type": "bar", "name": t({"en": "softmax weight", "zh-TW": "softmax 權重"}, lang), "x": pos, "y": floats(w_row),
         "xaxis": "x2", "yaxis": "y2", "marker": {"color": colors}, "customdata": pieces,
         "hovertemplate": f"%{{customdata}}<br>{w_lbl}: %{{y:.3f}}<extra></extra>"},
    ]
    newest_piece = pieces[newest]
    title2 = t({"en": f"The newest token “{newest_piece}”: scores, then softmax",
                "zh-TW": f"最新的詞元「{newest_piece}」：先算分數，再做 softmax"}, lang)
    lay2 = layout(title2, "", s_lbl,
                  xaxis={**axis, "domain": [0, 1], "anchor": "y", "showticklabels": False}, yaxis={"domain": [0.55, 1]},
                  xaxis2={**axis, "domain": [0, 1], "anchor": "y2", "title": {"text": k_lbl}},
                  yaxis2={"domain": [0, 0.45], "title": {"text": w_lbl}, "rangemode": "tozero"}, height=480)
    cols2 = [t({"en": "key", "zh-TW": "鍵"}, lang), t({"en": "position", "zh-TW": "位置"}, lang), s_lbl, w_lbl]
    rows2 = [[pieces[j], j + 1, float(f"{s_row[j]:.4g}"), float(f"{w_row[j]:.4g}")] for j in pos]
    fig2 = figure("newest", title2, bars, lay2, cols2, rows2)

    top = int(np.argmax(w_row))
    notes = [
        t({"en": f"Each row is one query and adds up to 1 (largest deviation here: {np.abs(w.sum(axis=1) - 1).max():.1e}). "
                 f"Blank cells are future tokens: a token never looks ahead.",
           "zh-TW": f"每一列是一個查詢，總和為 1（這裡最大的誤差：{np.abs(w.sum(axis=1) - 1).max():.1e}）。"
                    f"空白格是未來的詞元：詞元永遠不會往後看。"}, lang),
        t({"en": f"The newest token “{newest_piece}” puts {w_row[top]:.0%} of its attention on “{pieces[top]}” (position {top + 1}).",
           "zh-TW": f"最新的詞元「{newest_piece}」把 {w_row[top]:.0%} 的注意力放在「{pieces[top]}」（第 {top + 1} 個位置）。"}, lang),
        t({"en": (f"The course model has {model.config.n_heads} query heads sharing {model.config.n_kv_heads} key/value heads "
                  f"(grouped-query attention); keys and values are what the KV cache keeps."),
           "zh-TW": (f"課程模型有 {model.config.n_heads} 個查詢頭，共用 {model.config.n_kv_heads} 個鍵／值頭"
                     f"（分組查詢注意力）；鍵與值就是 KV 快取儲存的內容。")}, lang),
    ]
    if values["head"] == MEAN:
        notes.append(t({"en": "“Mean of all heads” averages the weights (and the scores) over the heads.",
                        "zh-TW": "「所有頭的平均」是把各頭的權重（與分數）取平均。"}, lang))
    chips = [{"text": p, "id": i, "title": t({"en": f"position {n} · id {i}", "zh-TW": f"第 {n} 個位置 · 編號 {i}"}, lang)}
             for n, (i, p) in enumerate(zip(ids, pieces), start=1)]
    return {"tokens": chips, "figures": [fig1, fig2], "notes": notes}
