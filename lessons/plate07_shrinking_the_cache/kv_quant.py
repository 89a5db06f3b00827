"""Plate 7: a quantized KV cache against the float cache, on the same prompt.

The course model decodes the prompt greedily for 16 steps twice: with the float cache and
with a quantized cache (engine.caches.quant, the reader's scheme and bits), each on its own
choices, so the two texts can part. Attention is compared pass by pass while both read the
same tokens: the prompt, then every step up to the first divergence. Shown: what the
cache's bytes are made of, the effective bits per number as the text grows, the attention
error per layer, the next-token distributions side by side, both continuations, and what
the rotation does to the keys.
"""
from __future__ import annotations

import functools

import numpy as np

from engine import Generator, QuantKVCache, SamplingParams, load_course_model
from engine.caches.quant import channel_magnitudes, outlier_ratio, random_rotation
from lessons.common import labels as L
from lessons.common.base import select
from lessons.common.figures import COLORS, figure, floats, fmt_bytes, fmt_percent, layout, show_piece, t, table, unique_labels
from lessons.common.prompts import encode_prompt, prompt_control

NAME = "kv_quant"
PLATE = "plates/07-shrinking-the-cache"
TITLE = {"en": "A quantized KV cache against the float cache", "zh-TW": "量化 KV 快取和浮點快取的對照"}

DEFAULT_PROMPT = "The weather today is"
STEPS = 16  # greedy steps after the prompt, for both caches
RESIDUAL = 8  # KIVI's full-precision window and key block, sized for the course model's short texts
SEED = 0  # the rotation of the "rotated" scheme

SCHEMES = {
    "per_token": {"en": "per-token groups (baseline)", "zh-TW": "逐詞元分群組（基準做法）"},
    "kivi": {"en": "KIVI: keys per channel, values per token", "zh-TW": "KIVI：key 逐通道、value 逐詞元"},
    "rotated": {"en": "random rotation first (TurboQuant's idea)", "zh-TW": "先隨機旋轉（TurboQuant 的想法）"},
}
BITS = ("16", "8", "4", "3", "2")

CONTROLS = (
    prompt_control(DEFAULT_PROMPT),
    select("scheme", {"en": "Scheme", "zh-TW": "量化做法"}, "per_token", list(SCHEMES.items()),
           help={"en": "Which numbers share one scale and zero point.",
                 "zh-TW": "哪些數字共用同一組縮放係數與零點。"}),
    select("bits", {"en": "Bits per code", "zh-TW": "每個量化碼的位元數"}, "3",
           [(b, {"en": f"{b} bits" + (" (float16, no codes)" if b == "16" else ""),
                 "zh-TW": f"{b} 位元" + ("（float16，不用量化碼）" if b == "16" else "")}) for b in BITS],
           help={"en": "Each cached number becomes an integer of this many bits.",
                 "zh-TW": "快取裡的每個數字都變成這麼多位元的整數。"}),
)


# --------------------------------------------------------------------------- the two runs


def greedy(model, tok, ids, cache):
    """Prefill ``ids`` into ``cache``, then STEPS greedy tokens (the last one shown, never fed
    back). Returns (logits after the prompt [V], tokens, attention of each pass: per pass a
    list of per-layer [H, T, S])."""
    gen = Generator(model, tok, SamplingParams(temperature=0), n_top=0, cache=cache)
    steps = gen.generate(ids, STEPS, trace=True, stop_at_eos=False)
    return steps[0].logits, [s.token_id for s in steps], [s.trace.attn for s in steps]


def layer_errors(attn_f, attn_q, passes: int) -> list[tuple[float, float]]:
    """Per layer, over the first ``passes`` forward passes (those that read the same tokens):
    (largest |change| of an attention weight, mean KL(float || quantized) per row)."""
    out = []
    for layer in range(len(attn_f[0])):
        worst, kl, rows = 0.0, 0.0, 0
        for pf, pq in zip(attn_f[:passes], attn_q[:passes]):
            p, q = pf[layer].astype(np.float64), pq[layer].astype(np.float64)  # [H, T, S], masked: 0 in both
            worst = max(worst, float(np.abs(p - q).max()))
            kl += float(np.where(p > 0, p * (np.log(np.where(p > 0, p, 1)) - np.log(np.maximum(q, 1e-30))), 0).sum())
            rows += p.shape[0] * p.shape[1]
        out.append((worst, max(kl / rows, 0.0)))
    return out


def _probs(logits):
    e = np.exp(logits - logits.max())
    return e / e.sum()


# --------------------------------------------------------------------------- figures

FLOAT = {"en": "float cache", "zh-TW": "浮點快取"}
QUANT = {"en": "quantized cache", "zh-TW": "量化快取"}


def _figure_bytes(float_cache, qcache, lang):
    """Stacked bars: what each cache's bytes are made of, at the same length."""
    parts = qcache.bytes_parts
    names = {"codes": {"en": "codes", "zh-TW": "量化碼"} if qcache.bits < 16 else {"en": "float16 numbers", "zh-TW": "float16 數字"},
             "scales": {"en": "scales + zero points", "zh-TW": "縮放係數 + 零點"},
             "tail": {"en": "full-precision newest tokens", "zh-TW": "全精度的最新詞元"}}
    fp = t({"en": f"{float_cache.config.dtype} numbers", "zh-TW": f"{float_cache.config.dtype} 數字"}, lang)
    x = [t(FLOAT, lang), t(QUANT, lang)]
    data = [{"type": "bar", "name": fp, "x": x, "y": floats([float_cache.bytes_used / 1024, 0]),
             "marker": {"color": COLORS["grey"]}}]
    colors = {"codes": COLORS["blue"], "scales": COLORS["orange"], "tail": COLORS["green"]}
    data += [{"type": "bar", "name": t(names[k], lang), "x": x, "y": floats([0, parts[k] / 1024]),
              "marker": {"color": colors[k]}} for k in ("codes", "scales", "tail")]
    title = t({"en": f"Bytes held for {qcache.length} positions", "zh-TW": f"存放 {qcache.length} 個位置用掉的位元組"}, lang)
    lay = layout("", t({"en": "KiB", "zh-TW": "KiB"}, lang), barmode="stack", yaxis={"rangemode": "tozero"})
    cols = [t({"en": "cache", "zh-TW": "快取"}, lang), t({"en": "part", "zh-TW": "組成"}, lang),
            t({"en": "bytes", "zh-TW": "位元組"}, lang)]
    rows = [[x[0], fp, float_cache.bytes_used]] + [[x[1], t(names[k], lang), parts[k]] for k in ("codes", "scales", "tail")]
    return figure("bytes", title, data, lay, cols, rows)


def _table_bits_vs_length(config, bits: int, lang):
    """Effective bits per number of every scheme as the text grows: scales and full-precision
    tokens weigh less in a longer text."""
    lengths = sorted({16, 64, config.max_seq_len})
    caches = {name: QuantKVCache(config, name, bits, residual=RESIDUAL, seed=SEED) for name in SCHEMES}
    rows = [[n] + [caches[name].bits_per_value_at(n) for name in SCHEMES] for n in lengths]
    return table(t({"en": f"Effective bits per number at {bits} bits per code, as the text grows",
                    "zh-TW": f"每個量化碼 {bits} 位元時，文字變長後每個數字實際用掉的位元"}, lang),
                 [t({"en": "positions held", "zh-TW": "存放的位置數"}, lang)] + [t(label, lang) for label in SCHEMES.values()],
                 rows)


def _figure_layers(errors, lang):
    """Per layer, side by side on one log axis: mean KL and the largest change of a weight."""
    names = [t(L.layer(i + 1), lang) for i in range(len(errors))]
    kl_name = t({"en": "mean KL(float || quantized)", "zh-TW": "平均 KL（浮點 || 量化）"}, lang)
    d_name = t({"en": "largest |Δ weight|", "zh-TW": "最大的 |權重變化|"}, lang)
    data = [{"type": "bar", "name": kl_name, "x": names, "y": floats(kl for _, kl in errors), "marker": {"color": COLORS["blue"]}},
            {"type": "bar", "name": d_name, "x": names, "y": floats(d for d, _ in errors),
             "marker": {"color": COLORS["vermillion"]}}]
    title = t({"en": "How far each layer's attention moved", "zh-TW": "每一層的注意力權重變了多少"}, lang)
    lay = layout("", t({"en": "size of the change (log)", "zh-TW": "變化的大小（對數）"}, lang),
                 barmode="group", yaxis={"type": "log", "exponentformat": "power"})
    cols = [t({"en": "layer", "zh-TW": "層"}, lang), d_name, kl_name]
    rows = [[n, d, kl] for n, (d, kl) in zip(names, errors)]
    return figure("layers", title, data, lay, cols, rows)


def _figure_next(tok, first_f, first_q, lang):
    """The next-token distributions after the prompt, top 5 of each, side by side."""
    pf, pq = _probs(first_f), _probs(first_q)
    ids = list(dict.fromkeys([int(i) for i in np.argsort(-pf)[:5]] + [int(i) for i in np.argsort(-pq)[:5]]))
    ids.sort(key=lambda i: -pf[i])
    labels = unique_labels([show_piece(p) for p in tok.pieces(ids)], ids)
    data = [{"type": "bar", "orientation": "h", "name": t(name, lang), "y": labels, "x": floats(p[i] for i in ids),
             "marker": {"color": color}} for name, p, color in ((FLOAT, pf, COLORS["grey"]), (QUANT, pq, COLORS["blue"]))]
    title = t({"en": "Next token after the prompt: top 5 of each cache", "zh-TW": "提示詞之後的下一個詞元：兩種快取各自的前 5 名"}, lang)
    # a log axis: the first choice is often near 1, and the rest differ by orders of magnitude
    lay = layout(t(L.log(L.PROBABILITY), lang), "", barmode="group",
                 yaxis={"autorange": "reversed", "type": "category"}, xaxis={"type": "log", "exponentformat": "power"})
    cols = [t(L.TOKEN, lang), t(FLOAT, lang), t(QUANT, lang)]
    rows = [[lbl, float(pf[i]), float(pq[i])] for lbl, i in zip(labels, ids)]
    return figure("next_token", title, data, lay, cols, rows)


def rotation_view(float_cache, config):
    """(layer, channel RMS of its keys before [hd], after the rotation [hd]) for the layer whose
    keys have the strongest outlier channel: the picture the rotated scheme is built on."""
    P = random_rotation(config.head_dim, SEED)
    layer = max(range(config.n_layers), key=lambda l: outlier_ratio(float_cache.keys(l)))
    K = float_cache.keys(layer)  # [KV, S, hd]
    return layer, channel_magnitudes(K), channel_magnitudes(K.astype(np.float64) @ P)


def _figure_rotation(view, lang):
    layer, before, after = view
    ch = list(range(len(before)))
    data = [{"type": "bar", "name": t(name, lang), "x": ch, "y": floats(v), "marker": {"color": color}}
            for name, v, color in (({"en": "as stored", "zh-TW": "原本的 key"}, before, COLORS["grey"]),
                                   ({"en": "after the rotation", "zh-TW": "旋轉之後"}, after, COLORS["green"]))]
    title = t({"en": f"Key size per channel, layer {layer + 1}, before and after the rotation",
               "zh-TW": f"第 {layer + 1} 層每個通道的 key 大小：旋轉前後"}, lang)
    lay = layout(t({"en": "channel (0 … head_dim − 1)", "zh-TW": "通道（0 … head_dim − 1）"}, lang),
                 t({"en": "root mean square", "zh-TW": "均方根"}, lang), barmode="group", yaxis={"rangemode": "tozero"})
    cols = [t({"en": "channel", "zh-TW": "通道"}, lang), t({"en": "as stored", "zh-TW": "原本的 key"}, lang),
            t({"en": "after the rotation", "zh-TW": "旋轉之後"}, lang)]
    rows = [[c, float(b), float(a)] for c, b, a in zip(ch, before, after)]
    return figure("rotation", title, data, lay, cols, rows)


def _table_continuation(tok, mine, theirs, split, lang):
    """Both greedy continuations step by step, the first divergence marked."""
    a, b = tok.pieces(mine), tok.pieces(theirs)
    marks = {"same": {"en": "same", "zh-TW": "相同"}, "split": {"en": "◀ first divergence", "zh-TW": "◀ 第一次分開"},
             "after": {"en": "after the divergence", "zh-TW": "分開之後"}}
    rows = []
    for i in range(STEPS):
        mark = "same" if split is None or i < split else ("split" if i == split else "after")
        rows.append([i + 1, show_piece(a[i]), show_piece(b[i]), t(marks[mark], lang)])
    return table(t({"en": f"Greedy continuation, {STEPS} steps", "zh-TW": f"貪婪解碼的續寫，共 {STEPS} 步"}, lang),
                 [t(L.STEP, lang), t(FLOAT, lang), t(QUANT, lang),
                  t({"en": "compared", "zh-TW": "比較"}, lang)], rows)


# --------------------------------------------------------------------------- notes and run


def _scheme_note(qcache, lang) -> str:
    hd = qcache.config.head_dim
    if qcache.bits == 16:
        return t({"en": "At 16 bits every number is kept as a float16: no codes, no scales.",
                  "zh-TW": "16 位元時，每個數字都直接存成 float16：沒有量化碼，也沒有縮放係數。"}, lang)
    text = {
        "per_token": {"en": f"Per-token groups: each token's {qcache.group} channels of a head share one scale and one zero point (head_dim is {hd}).",
                      "zh-TW": f"逐詞元分群組：每個詞元在一個 head 裡的 {qcache.group} 個通道共用一組縮放係數與零點（head_dim 是 {hd}）。"},
        "kivi": {"en": (f"KIVI: each key channel shares one scale over a group of {RESIDUAL} tokens, each value token over its {hd} channels; "
                        f"keys wait in full precision until their group of {RESIDUAL} is complete, and the newest {RESIDUAL} values stay in full precision."),
                 "zh-TW": (f"KIVI：key 的每個通道在每 {RESIDUAL} 個詞元的詞元組裡共用一組縮放係數，value 則是每個詞元的 {hd} 個通道共用一組；"
                           f"key 要等湊滿 {RESIDUAL} 個詞元的詞元組才量化，最新的 {RESIDUAL} 個 value 一直保持全精度。")},
        "rotated": {"en": (f"Random rotation first: every key and value is first multiplied by one random {hd}×{hd} rotation, "
                           "then quantized per token, and reading undoes the rotation. The rotation alone preserves every "
                           "query·key product; the error the charts show comes from the quantization."),
                    "zh-TW": (f"先隨機旋轉：每個 key 和 value 先乘上同一個 {hd}×{hd} 的隨機旋轉矩陣，再逐詞元量化，讀取時把旋轉轉回來。"
                              "旋轉本身不改變 query 與 key 的內積；圖上的誤差來自量化。")},
    }
    return t(text[qcache.scheme], lang)


def _notes(tok, fcache, qcache, f_tokens, q_tokens, split, errors, view, lang) -> list[str]:
    fb, qb = fcache.bytes_used, qcache.bytes_used
    fbits = 8 * fcache.config.dtype_bytes
    notes = [t({"en": (f"{qcache.length} positions: the quantized cache holds them in {fmt_bytes(qb)} "
                       f"({qcache.bits_per_value:.2f} bits per number, scales and full-precision tokens included), "
                       f"the float cache in {fmt_bytes(fb)} ({fbits} bits): {fmt_percent(qb / fb)} of the float cache's bytes."),
                "zh-TW": (f"存放 {qcache.length} 個位置，量化快取用了 {fmt_bytes(qb)}（每個數字 {qcache.bits_per_value:.2f} 位元，"
                          f"縮放係數和全精度的詞元都算在內），浮點快取用了 {fmt_bytes(fb)}（每個數字 {fbits} 位元）；"
                          f"量化快取只要浮點快取的 {fmt_percent(qb / fb)}。")}, lang),
             _scheme_note(qcache, lang)]
    if split is None:
        notes.append(t({"en": f"Both caches chose the same {STEPS} tokens.", "zh-TW": f"兩種快取選出的 {STEPS} 個詞元完全相同。"}, lang))
    else:
        a, b = (show_piece(p) for p in tok.pieces([f_tokens[split], q_tokens[split]]))
        notes.append(t({"en": f"The texts part at step {split + 1}: the float cache chose “{a}”, the quantized cache “{b}”.",
                        "zh-TW": f"兩段文字在第 {split + 1} 步分開：浮點快取選了「{a}」，量化快取選了「{b}」。"}, lang))
    worst = max(range(len(errors)), key=lambda i: errors[i][1])
    same = ({"en": "Both read the same tokens throughout (the prompt and every step)",
             "zh-TW": "兩者讀的詞元從頭到尾都相同（提示詞和每一步）；在這個範圍內"} if split is None else
            {"en": "While both read the same tokens (the prompt and the steps before the texts part)",
             "zh-TW": "在兩者讀的詞元還相同的範圍內（提示詞，以及分開之前的每一步）"})
    notes.append(t({"en": (f"{same['en']}, layer {worst + 1} "
                           f"moved most: mean KL {errors[worst][1]:.2g}, largest change of one attention weight {errors[worst][0]:.2g}."),
                    "zh-TW": (f"{same['zh-TW']}，第 {worst + 1} 層的注意力變化最大："
                              f"平均 KL 是 {errors[worst][1]:.2g}，單一注意力權重最多變了 {errors[worst][0]:.2g}。")}, lang))
    layer, before, after = view
    notes.append(t({"en": (f"Keys of layer {layer + 1}: the largest channel is {before.max() / np.median(before):.2f}× the median one "
                           f"as stored and {after.max() / np.median(after):.2f}× after the rotation."),
                    "zh-TW": (f"第 {layer + 1} 層的 key：最大的通道是中位數通道的 {before.max() / np.median(before):.2f} 倍，"
                              f"旋轉之後是 {after.max() / np.median(after):.2f} 倍。")}, lang))
    return notes


@functools.lru_cache(maxsize=8)
def float_side(ids: tuple[int, ...]):
    """Everything the float cache contributes, which depends on the prompt only (kept for the
    next change of scheme or bits): (logits after the prompt, its 16 tokens, attention of each
    pass, the cache, the rotation view of its keys)."""
    model, tok = load_course_model()
    fcache = model.new_cache(max_len=len(ids) + STEPS)
    first, tokens, attn = greedy(model, tok, list(ids), fcache)
    return first, tokens, attn, fcache, rotation_view(fcache, model.config)


def run(values: dict, lang: str) -> dict:
    model, tok = load_course_model()
    c = model.config
    ids = encode_prompt(tok, values["prompt"], c.max_seq_len - STEPS)
    bits, scheme = int(values["bits"]), values["scheme"]
    first_f, f_tokens, attn_f, fcache, view = float_side(tuple(ids))
    qcache = QuantKVCache(c, scheme, bits, max_len=len(ids) + STEPS, residual=RESIDUAL, seed=SEED)
    first_q, q_tokens, attn_q = greedy(model, tok, ids, qcache)
    split = next((i for i, (a, b) in enumerate(zip(f_tokens, q_tokens)) if a != b), None)
    # pass i > 0 feeds token i-1: both caches read the same text up to the pass that feeds the split
    errors = layer_errors(attn_f, attn_q, STEPS if split is None else split + 1)
    figures = [_figure_bytes(fcache, qcache, lang), _figure_layers(errors, lang),
               _figure_next(tok, first_f, first_q, lang), _figure_rotation(view, lang)]
    tables = [_table_continuation(tok, f_tokens, q_tokens, split, lang), _table_bits_vs_length(c, bits, lang)]
    return {"figures": figures, "tables": tables,
            "notes": _notes(tok, fcache, qcache, f_tokens, q_tokens, split, errors, view, lang)}
