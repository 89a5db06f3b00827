"""Plate 9: Flash-Decoding on the course model. The newest token's attention over the cache is
computed the way the engine's GPU step splits it (engine/gpu/kernels_ref.py): the cache is cut
into chunks of P positions, each chunk keeps its own maximum score, sum of exponentials and
unnormalised output, and a log-sum-exp merge rescales and adds them. The figures show one
head's chunks; the notes compare the merged output with the one-pass softmax of the model.
"""
from __future__ import annotations

import numpy as np

from engine import load_course_model
from engine.gpu.kernels_ref import attention_merge, attention_partial, n_chunks
from engine.model import apply_rope, rmsnorm
from lessons.common import labels as L
from lessons.common.base import slider
from lessons.common.figures import COLORS, SEQUENCE, figure, floats, fmt_num, fmt_percent, layout, t
from lessons.common.prompts import encode_prompt, prompt_control

NAME = "flash_decoding"
PLATE = "plates/09-decoding-faster"
TITLE = {"en": "Flash-Decoding: attention in chunks, merged by log-sum-exp",
         "zh-TW": "Flash-Decoding：注意力分段計算，再用 log-sum-exp 合併"}

_CFG = load_course_model()[0].config

CONTROLS = (
    prompt_control({"en": "The cat sat on the mat. The dog ran to the park. The teacher wants to go to the library.",
                    "zh-TW": "小貓坐在墊子上。小狗跑到公園。今天天氣真好，天空很藍。"}),
    slider("chunk", {"en": "Chunk size P (positions)", "zh-TW": "每段的位置數 P"}, 8, 2, 64, 1,
           help={"en": "Positions of the cache each chunk reads; on a GPU each chunk of each KV head is one thread block.",
                 "zh-TW": "每一段讀幾個快取位置；在 GPU 上，每個 KV head 的每一段由一個執行緒區塊負責。"}),
    slider("layer", L.LAYER, 1, 1, _CFG.n_layers, 1),
    slider("head", L.HEAD, 1, 1, _CFG.n_heads, 1),
)


def split_attention(model, ids: list[int], layer: int, split: int):
    """The last token's attention in ``layer``, one pass and in chunks of ``split`` positions.

    Returns (scores [H, S] of the last query, acc [H, C, hd], mx [H, C], sm [H, C], merged
    [H, hd], one-pass output [H, hd]) -- the chunks from the reference kernels themselves.
    """
    c = model.config
    H, KV, hd, S = c.n_heads, c.n_kv_heads, c.head_dim, len(ids)
    cache = model.new_cache(max_len=S)
    _logits, tr = model.forward(ids, cache=cache, trace=True)
    # the query the layer computed for the last position: its input, normed, projected, rotated
    x = rmsnorm(tr.hidden[layer][-1:], model.layers[layer].attn_norm, c.norm_eps)  # [1, D]
    qkv = (x @ model.layers[layer].wqkv).reshape(1, H + 2 * KV, hd)
    q = apply_rope(qkv[:, :H], model.cos[S - 1 : S], model.sin[S - 1 : S], np)[0]  # [H, hd]
    C = n_chunks(S, split)
    acc, mx, sm = np.zeros((H, C, hd), np.float32), np.zeros((H, C), np.float32), np.zeros((H, C), np.float32)
    length = np.array([S], np.int32)  # the kernels read the cache length from a device buffer
    attention_partial(q, cache.k[layer], cache.v[layer], length, 0, acc, mx, sm, split=split)  # 0: no window
    merged = np.zeros((1, H * hd), np.float32)
    attention_merge(acc, mx, sm, length, 0, merged, split=split)
    V = np.repeat(cache.values(layer), H // KV, axis=0)  # [H, S, hd]: query head h reads KV head h // G
    one_pass = np.einsum("hs,hsd->hd", tr.attn[layer][:, -1, :], V)
    return tr.scores[layer][:, -1, :], acc, mx, sm, merged.reshape(H, hd), one_pass


def _chunk_names(S: int, split: int) -> list[str]:
    return [f"{a}–{min(a + split, S) - 1}" for a in range(0, S, split)]


def _figure_scores(scores, mx, split, head, lang) -> dict:
    """One head's scores over the cache, coloured by chunk, each chunk's max as a flat line."""
    S = scores.shape[0]
    data = []
    for ci, a in enumerate(range(0, S, split)):
        pos = list(range(a, min(a + split, S)))
        color = SEQUENCE[ci % 2]
        data.append({"type": "scatter", "mode": "markers", "x": pos, "y": floats(scores[pos]), "showlegend": False,
                     "marker": {"color": color, "size": 6}, "hovertemplate": "%{x}: %{y:.3g}<extra></extra>"})
        data.append({"type": "scatter", "mode": "lines", "x": [pos[0] - 0.4, pos[-1] + 0.4], "y": floats([mx[ci]] * 2),
                     "line": {"color": color, "width": 3}, "showlegend": False,
                     "hovertemplate": t({"en": "chunk max", "zh-TW": "這一段的最大值"}, lang) + " %{y:.3g}<extra></extra>"})
    title = t({"en": f"Head {head}: scores of the newest token, chunk by chunk (line: each chunk's max)",
               "zh-TW": f"第 {head} 個 head：最新詞元的分數，一段一段看（橫線是每一段的最大值）"}, lang)
    lay = layout(t(L.POSITION, lang), t({"en": "score q·k/√d", "zh-TW": "分數 q·k/√d"}, lang))
    cols = [t(L.POSITION, lang), t({"en": "chunk", "zh-TW": "段"}, lang), t({"en": "score", "zh-TW": "分數"}, lang)]
    rows = [[p, p // split + 1, float(scores[p])] for p in range(S)]
    return figure("scores", title, data, lay, cols, rows)


def _figure_chunks(mx, sm, split, S, head, lang) -> dict:
    """Each chunk's own max and sum, its rescale factor exp(m_c − M) and its share of the head's attention."""
    M = mx.max()
    w = np.exp(mx - M)  # [C] rescale factors
    share = w * sm / (w * sm).sum()
    names = _chunk_names(S, split)
    label = t({"en": "share of the attention", "zh-TW": "佔注意力的比例"}, lang)
    data = [{"type": "bar", "x": names, "y": floats(share), "name": label, "marker": {"color": COLORS["blue"]},
             "hovertemplate": "%{x}: %{y:.3g}<extra></extra>"}]
    title = t({"en": f"Head {head}: what each chunk adds to the merged result", "zh-TW": f"第 {head} 個 head：每一段對合併結果的貢獻"}, lang)
    lay = layout(t({"en": "chunk (positions)", "zh-TW": "段（位置）"}, lang), label, xaxis={"type": "category"})
    cols = [t({"en": "chunk (positions)", "zh-TW": "段（位置）"}, lang), t({"en": "max score m", "zh-TW": "最大分數 m"}, lang),
            t({"en": "sum of exp(score − m)", "zh-TW": "exp(分數 − m) 的總和"}, lang),
            t({"en": "rescale factor exp(m − M)", "zh-TW": "重新縮放倍數 exp(m − M)"}, lang), label]
    rows = [[names[i], float(mx[i]), float(sm[i]), float(w[i]), fmt_percent(share[i])] for i in range(len(names))]
    return figure("chunks", title, data, lay, cols, rows)


def _notes(model, S, split, merged, one_pass, lang) -> list[str]:
    c = model.config
    C = n_chunks(S, split)
    diff = fmt_num(float(np.abs(merged - one_pass).max()))
    blocks = c.n_kv_heads * C
    # "even for one sequence" is what the chunks buy: with one chunk there are no more thread blocks than heads
    tail = ({"en": ", as many as without chunks.", "zh-TW": "，和不切段時一樣多。"} if C == 1 else
            {"en": " working at once, even for one sequence.", "zh-TW": "同時工作，就算只有一個序列也一樣。"})
    cut = ({"en": f"The cache holds {S} positions, all in one chunk (up to {split} each)",
            "zh-TW": f"快取裡有 {S} 個位置，全部在同一段裡（每段最多 {split} 個）"} if C == 1 else
           {"en": f"The cache holds {S} positions: {C} chunks of up to {split}",
            "zh-TW": f"快取裡有 {S} 個位置：切成 {C} 段，每段最多 {split} 個"})
    return [t(n, lang) for n in (
        {"en": f"{cut['en']}. A GPU kernel gives each KV head's chunk its own thread block: {c.n_kv_heads} KV heads × "
               f"{C} chunk{'s' if C > 1 else ''} = {blocks} thread blocks{tail['en']}",
         "zh-TW": f"{cut['zh-TW']}。GPU kernel 讓每個 KV head 的每一段各用一個執行緒區塊："
                  f"{c.n_kv_heads} 個 KV head × {C} 段 = {blocks} 個執行緒區塊{tail['zh-TW']}"},
        {"en": f"Merged output vs the model's one-pass softmax, all {c.n_heads} heads × {c.head_dim} numbers: "
               f"largest difference {diff} (float32 rounding). Splitting changes the order of the sums, not the result.",
         "zh-TW": f"合併的結果和模型一次算完的 softmax 相比（全部 {c.n_heads} 個 head × {c.head_dim} 個數字）："
                  f"最大差距 {diff}（float32 的捨入誤差）。切段只改變加總的順序，不改變結果。"},
    )]


def run(values: dict, lang: str) -> dict:
    model, tok = load_course_model()
    ids = encode_prompt(tok, values["prompt"], model.config.max_seq_len)
    layer, head, split = values["layer"] - 1, values["head"] - 1, values["chunk"]
    scores, _acc, mx, sm, merged, one_pass = split_attention(model, ids, layer, split)
    figures = [_figure_scores(scores[head], mx[head], split, values["head"], lang),
               _figure_chunks(mx[head], sm[head], split, len(ids), values["head"], lang)]
    return {"figures": figures, "notes": _notes(model, len(ids), split, merged, one_pass, lang)}
