"""Plate 4: who attends to whom. Each token's query is compared with every earlier token's key
(raw scaled Q·K scores); softmax turns one row of scores into weights that sum to 1, and the
weights blend the values. The course model's own attention, per layer and head, for the
reader's prompt.
"""
from __future__ import annotations

import numpy as np

from engine import load_course_model
from lessons.common import labels as L
from lessons.common.base import select
from lessons.common.figures import COLORS, HIGHLIGHT, figure, floats, fmt_num, fmt_percent, layout, show_piece, t
from lessons.common.prompts import encode_prompt, prompt_control

NAME = "attention"
PLATE = "plates/04-attention"
TITLE = {"en": "Attention weights", "zh-TW": "注意力權重"}

DEFAULT_PROMPT = "The cat sat on the mat because it was tired"
MAX_TOKENS = 48  # a wider heatmap has unreadable labels

_CFG = load_course_model()[0].config
MEAN = "mean"

CONTROLS = (
    prompt_control(DEFAULT_PROMPT),
    select("layer", L.LAYER, "1", [(str(i), L.layer(i)) for i in range(1, _CFG.n_layers + 1)],
           help={"en": "Every layer has its own attention.", "zh-TW": "每一層都有自己的注意力。"}),
    select("head", L.HEAD, "1", [(str(h), L.head(h)) for h in range(1, _CFG.n_heads + 1)] + [(MEAN, L.MEAN_OF_HEADS)],
           help={"en": "Each head compares its own queries with the keys of its KV head.",
                 "zh-TW": "每個 head 用自己的 query 去比對 key；同一組 GQA 的 head 比對的是同一批 key。"}),
)

QUERY_AXIS = {"en": "query (the token looking)", "zh-TW": "query（正在看的詞元）"}
KEY_AXIS = {"en": "key (the token looked at)", "zh-TW": "key（被看的詞元）"}
SCORE = {"en": "raw score Q·K/√d", "zh-TW": "原始分數 Q·K/√d"}


def _weights(model, ids, values) -> tuple[np.ndarray, np.ndarray]:
    """(softmax weights [T, T], raw scores [T, T] with the masked future as 0) of the chosen
    layer and head, or their mean over the heads."""
    _, tr = model.forward(ids, trace=True, last_only=True)
    layer = int(values["layer"]) - 1
    attn = np.asarray(tr.attn[layer], dtype=np.float64)  # [H, T, T]
    scores = np.asarray(tr.scores[layer], dtype=np.float64)  # [H, T, T], masked = -inf
    raw = np.where(np.isfinite(scores), scores, 0.0)
    if values["head"] == MEAN:
        return attn.mean(axis=0), raw.mean(axis=0)
    h = int(values["head"]) - 1
    return attn[h], raw[h]


def _where(values, lang) -> str:
    """"layer 2, head 1" in the reader's language."""
    head = L.MEAN_OF_HEADS if values["head"] == MEAN else L.head(int(values["head"]))
    return t({"en": f"{L.layer(int(values['layer']))['en']}, {head['en']}",
              "zh-TW": f"{L.layer(int(values['layer']))['zh-TW']}，{head['zh-TW']}"}, lang)


def _axis(pieces) -> dict:
    pos = list(range(len(pieces)))
    return {"tickmode": "array", "tickvals": pos, "ticktext": [show_piece(p) for p in pieces],
            "tickangle": -45 if len(pieces) > 8 else 0}


def _figure_weights(w, pieces, values, lang) -> dict:
    T = len(pieces)
    # Causal mask: query i sees keys 0..i; later keys are blank (None), not "0 attention".
    z = [[float(f"{w[i, j]:.4g}") if j <= i else None for j in range(T)] for i in range(T)]
    q_lbl, k_lbl, w_lbl, c = t(QUERY_AXIS, lang), t(KEY_AXIS, lang), t(L.WEIGHT, lang), t(L.COLON, lang)
    heat = [{"type": "heatmap", "z": z, "x": list(range(T)), "y": list(range(T)), "zmin": 0, "zmax": 1,
             "colorscale": "Blues", "reversescale": True, "colorbar": {"title": {"text": w_lbl}},
             "customdata": [[[pieces[i], pieces[j]] for j in range(T)] for i in range(T)],
             "hovertemplate": f"{q_lbl}{c}%{{customdata[0]}}<br>{k_lbl}{c}%{{customdata[1]}}<br>{w_lbl}{c}%{{z:.3f}}<extra></extra>"}]
    title = t({"en": f"Who attends to whom ({_where(values, 'en')})", "zh-TW": f"誰在注意誰（{_where(values, 'zh-TW')}）"}, lang)
    lay = layout(k_lbl, q_lbl, xaxis={**_axis(pieces), "side": "bottom"},
                 yaxis={**_axis(pieces), "tickangle": 0, "autorange": "reversed"}, height=max(360, 28 * T + 140))
    cols = [t({"en": "query (row) \\ key (column)", "zh-TW": "query（列）\\ key（欄）"}, lang)]
    cols += [f"{j + 1}: {p}" for j, p in enumerate(pieces)]
    rows = [[f"{i + 1}: {pieces[i]}"] + [w[i, j] if j <= i else None for j in range(T)] for i in range(T)]
    return figure("weights", title, heat, lay, cols, rows)


def _figure_newest(s_row, w_row, pieces, lang) -> dict:
    pos = list(range(len(pieces)))
    s_lbl, w_lbl, k_lbl, c = t(SCORE, lang), t(L.WEIGHT, lang), t(KEY_AXIS, lang), t(L.COLON, lang)
    colors = [HIGHLIGHT if j == int(np.argmax(w_row)) else COLORS["blue"] for j in pos]
    bars = [
        {"type": "bar", "name": s_lbl, "x": pos, "y": floats(s_row), "marker": {"color": COLORS["grey"]},
         "customdata": pieces, "hovertemplate": f"%{{customdata}}<br>{s_lbl}{c}%{{y:.3f}}<extra></extra>"},
        {"type": "bar", "name": t({"en": "softmax weight", "zh-TW": "softmax 權重"}, lang), "x": pos, "y": floats(w_row),
         "xaxis": "x2", "yaxis": "y2", "marker": {"color": colors}, "customdata": pieces,
         "hovertemplate": f"%{{customdata}}<br>{w_lbl}{c}%{{y:.3f}}<extra></extra>"},
    ]
    newest = pieces[-1]
    title = t({"en": f"The newest token “{newest}”: scores, then softmax",
               "zh-TW": f"最新的詞元「{newest}」：先算分數，再做 softmax"}, lang)
    lay = layout("", s_lbl, xaxis={**_axis(pieces), "domain": [0, 1], "anchor": "y", "showticklabels": False},
                 yaxis={"domain": [0.55, 1]}, xaxis2={**_axis(pieces), "domain": [0, 1], "anchor": "y2", "title": {"text": k_lbl}},
                 yaxis2={"domain": [0, 0.45], "title": {"text": w_lbl}, "rangemode": "tozero"}, height=480)
    cols = [t({"en": "key", "zh-TW": "key"}, lang), t(L.POSITION, lang), s_lbl, w_lbl]
    rows = [[pieces[j], j + 1, s_row[j], w_row[j]] for j in pos]
    return figure("newest", title, bars, lay, cols, rows)


def _notes(model, w, pieces, values, lang) -> list[str]:
    w_row, top = w[-1], int(np.argmax(w[-1]))
    error = fmt_num(float(np.abs(w.sum(axis=1) - 1).max()))
    cfg = model.config
    notes = [
        t({"en": f"Each row is one query and adds up to 1 (largest deviation here: {error}). "
                 f"Blank cells are tokens that come later: a token looks back at the tokens before it, never ahead.",
           "zh-TW": f"每一列是一個 query，整列的權重加起來等於 1（和 1 最多只差 {error}）。"
                    f"空白格是後面才出現的詞元：每個詞元只回頭看前面的詞元，不會偷看後面。"}, lang),
        t({"en": f"The newest token “{pieces[-1]}” puts {fmt_percent(w_row[top])} of its attention on “{pieces[top]}” "
                 f"(position {top + 1}).",
           "zh-TW": f"最新的詞元「{pieces[-1]}」把 {fmt_percent(w_row[top])} 的注意力放在「{pieces[top]}」"
                    f"（第 {top + 1} 個位置）。"}, lang),
        t({"en": (f"The course model has {cfg.n_heads} query heads sharing {cfg.n_kv_heads} KV heads "
                  f"(grouped-query attention); keys and values are what the KV cache keeps."),
           "zh-TW": (f"課程模型有 {cfg.n_heads} 個 query head，共用 {cfg.n_kv_heads} 個 KV head"
                     f"（分組查詢注意力，GQA）；KV 快取存的就是 key 和 value。")}, lang),
    ]
    if values["head"] == MEAN:
        notes.append(t({"en": "“Mean of all heads” averages the weights (and the scores) over the heads.",
                        "zh-TW": "「所有 head 的平均」是把各個 head 的權重（和分數）取平均。"}, lang))
    return notes


def run(values: dict, lang: str) -> dict:
    model, tok = load_course_model()
    ids = encode_prompt(tok, values["prompt"], min(MAX_TOKENS, model.config.max_seq_len))
    w, raw = _weights(model, ids, values)
    pieces = tok.pieces(ids)
    figures = [_figure_weights(w, pieces, values, lang), _figure_newest(raw[-1], w[-1], pieces, lang)]
    chips = [{"text": p, "id": i, "title": t({"en": f"position {n} · id {i}", "zh-TW": f"第 {n} 個位置 · id {i}"}, lang)}
             for n, (i, p) in enumerate(zip(ids, pieces), start=1)]
    return {"tokens": chips, "figures": figures, "notes": _notes(model, w, pieces, values, lang)}
