"""Plate 7: the three levers on the KV cache's size, one at a time.

    cache = 2 (K and V) × layers × KV heads × head_dim × positions kept × bits per number ÷ 8

Fewer KV heads (MHA → GQA → MQA), fewer positions (a sliding window caps them at W), fewer
bits per number. Every size comes from engine.analysis.costs.kv_cache_size on an engine Config (the
course model's own, or a published shape with one field changed); this lesson only picks
the points and writes the formula out with the reader's numbers.
"""
from __future__ import annotations

from dataclasses import replace

from engine.analysis import costs
from lessons.common import cache_bits, model_options
from lessons.common import labels as L
from lessons.common.base import select, slider
from lessons.common.figures import COLORS, HIGHLIGHT, figure, floats, fmt_bytes, fmt_int, fmt_percent, layout, t

NAME = "shrink_cache"
PLATE = "plates/07-shrinking-the-cache"
TITLE = {"en": "Three levers on the size of the KV cache", "zh-TW": "縮小 KV 快取的三根槓桿"}

LEVERS = {
    "heads": {"en": "fewer KV heads (MHA → GQA → MQA)", "zh-TW": "減少 KV head（MHA → GQA → MQA）"},
    "window": {"en": "fewer positions (sliding window)", "zh-TW": "減少位置（滑動視窗）"},
    "bits": {"en": "fewer bits per number", "zh-TW": "減少每個數字的位元"},
}
CACHE_BITS = tuple(float(b) for b in cache_bits.VALUES)  # 16 … 2.5 bits per cached number, as the cost lessons offer

CONTROLS = (
    select("lever", {"en": "Lever", "zh-TW": "槓桿"}, "heads", list(LEVERS.items()),
           help={"en": "Which factor of the formula to turn down.", "zh-TW": "要調小公式裡的哪一項。"}),
    select("model", L.MODEL, "Llama 3 8B", model_options.options(),
           help={"en": "The course model or a published shape; the lever changes one number of it.",
                 "zh-TW": "課程模型或公開的模型形狀；槓桿只改動其中一個數字。"}),
    slider("context", L.CONTEXT_LENGTH, 8192, 256, 131072, 256,
           help={"en": "Tokens seen by one sequence (clipped to the model's context window).",
                 "zh-TW": "一個序列讀過的詞元數（超過模型的上下文視窗時，會調回視窗的長度）。"}),
    slider("window", {"en": "Window W (tokens)", "zh-TW": "視窗 W（詞元數）"}, 4096, 16, 32768, 16,
           help={"en": "For the window lever: how many of the newest positions attention may read.",
                 "zh-TW": "拉滑動視窗這根槓桿時用：注意力最多讀最近的幾個位置。"}),
)


CACHE = {"en": "cache", "zh-TW": "快取"}


def _size(cfg, tokens: int, bits=None) -> float:
    return costs.kv_cache_size(cfg, tokens, kv_bits=bits)


def attention_name(H: int, KV: int) -> dict:
    """MHA when every query head has its own KV head, MQA when all share one, GQA between."""
    if KV == H:
        return {"en": "MHA", "zh-TW": "MHA"}
    if KV == 1:
        return {"en": "MQA", "zh-TW": "MQA"}
    return {"en": "GQA", "zh-TW": "GQA"}


def _zh(name: str) -> str:
    """A model's name as the subject of a Chinese sentence: a space after Latin letters only."""
    return name if name.endswith("）") else name + " "


def _formula(cfg, kv: int, positions: int, bits: float, lang: str) -> str:
    total = 2 * cfg.n_layers * kv * cfg.head_dim * positions * bits / 8
    nums = (f"2 × {cfg.n_layers} × {kv} × {cfg.head_dim} × {fmt_int(positions)} × {bits:g} ÷ 8 "
            f"= {fmt_int(total)} B = {fmt_bytes(total)}")
    return t({"en": f"2 (K and V) × layers × KV heads × head_dim × positions kept × bits per number ÷ 8 = {nums}",
              "zh-TW": f"2（K 與 V）× 層數 × KV head 數 × head_dim × 保留的位置數 × 每個數字的位元數 ÷ 8 = {nums}"}, lang)


def _unit(largest: float) -> tuple[int, str]:
    """The binary unit that keeps the largest bar between 1 and 1024."""
    for div, name in ((1024**3, "GiB"), (1024**2, "MiB"), (1024, "KiB")):
        if largest >= div:
            return div, name
    return 1, "B"


# --------------------------------------------------------------------------- figures


def _figure_heads(cfg, context: int, lang):
    """KV heads from H (MHA) down to 1 (MQA) for the same query heads: the cache at ``context``."""
    H = cfg.n_heads
    kvs = [kv for kv in range(H, 0, -1) if H % kv == 0]  # every grouping the query heads allow
    sizes = [_size(replace(cfg, n_kv_heads=kv), context) for kv in kvs]
    div, unit = _unit(max(sizes))
    labels = [("★ " if kv == cfg.n_kv_heads else "") + f"{kv} ({t(attention_name(H, kv), lang)})" for kv in kvs]
    shared = [t({"en": f"each KV head serves {H // kv} query head{'s' if H // kv > 1 else ''}",
                 "zh-TW": f"每個 KV head 對應 {H // kv} 個 query head"}, lang) for kv in kvs]
    data = [_starred_bars(labels, sizes, div, [kv == cfg.n_kv_heads for kv in kvs], lang, customdata=shared)]
    title = t({"en": f"{H} query heads, fewer and fewer KV heads: the cache at {fmt_int(context)} tokens",
               "zh-TW": f"{H} 個 query head、越來越少的 KV head：{fmt_int(context)} 個詞元時的快取"}, lang)
    lay = layout(t({"en": "KV heads per layer (★ as published)",
                           "zh-TW": "每層 KV head 數（★ 公開設定）"}, lang), unit,
                 showlegend=False, yaxis={"rangemode": "tozero"}, xaxis={"type": "category"})
    cols = [t(L.KV_HEADS, lang), t({"en": "attention", "zh-TW": "注意力"}, lang),
            t({"en": "query heads per KV head", "zh-TW": "每個 KV head 對應的 query head 數"}, lang),
            t(L.PER_TOKEN, lang), t(CACHE, lang), t({"en": "share of MHA", "zh-TW": "佔 MHA 的比例"}, lang)]
    rows = [[kv, t(attention_name(H, kv), lang), H // kv, fmt_bytes(_size(replace(cfg, n_kv_heads=kv), 1)),
             fmt_bytes(s), fmt_percent(s / sizes[0])] for kv, s in zip(kvs, sizes)]
    return figure("heads", title, data, lay, cols, rows)


def _starred_bars(labels, sizes, div: float, starred, lang, customdata=None) -> dict:
    """One bar per cache size (in units of ``div``), the published setting in the highlight
    colour; the hover shows the exact size (and ``customdata`` on a second line)."""
    bar = {"type": "bar", "x": labels, "y": floats(s / div for s in sizes), "text": [fmt_bytes(s) for s in sizes],
           "textposition": "none", "name": t(L.KV_CACHE, lang),
           "marker": {"color": [HIGHLIGHT if star else COLORS["blue"] for star in starred]},
           "hovertemplate": "%{x}: %{text}<extra></extra>"}
    if customdata is not None:
        bar.update(customdata=customdata, hovertemplate="%{x}: %{text}<br>%{customdata}<extra></extra>")
    return bar


def _figure_window(cfg, context: int, W: int, lang):
    """Cache size against the tokens seen: every position kept, or the last W only."""
    grid = sorted({round(context * i / 40) for i in range(41)} | ({W} if W < context else set()))
    lines = [({"en": "every position kept", "zh-TW": "保留所有位置"}, replace(cfg, sliding_window=None), COLORS["grey"], "dash"),
             ({"en": f"window W = {fmt_int(W)}", "zh-TW": f"視窗 W = {fmt_int(W)}"}, replace(cfg, sliding_window=W), COLORS["blue"], "solid")]
    if cfg.sliding_window and cfg.sliding_window != W:
        lines.append(({"en": f"published window {fmt_int(cfg.sliding_window)}", "zh-TW": f"公開的視窗 {fmt_int(cfg.sliding_window)}"},
                      cfg, COLORS["orange"], "dot"))
    sizes = {i: [_size(c, n) for n in grid] for i, (_, c, _, _) in enumerate(lines)}
    div, unit = _unit(max(max(v) for v in sizes.values()))
    data = [{"type": "scatter", "mode": "lines", "name": t(name, lang), "x": grid, "y": floats(s / div for s in sizes[i]),
             "line": {"color": color, "dash": dash}} for i, (name, _, color, dash) in enumerate(lines)]
    title = t({"en": f"The cache as the text grows, with and without a window of {fmt_int(W)}",
               "zh-TW": f"文字變長時的快取：有沒有 {fmt_int(W)} 個位置的滑動視窗"}, lang)
    lay = layout(t({"en": "tokens seen", "zh-TW": "讀過的詞元數"}, lang), unit, yaxis={"rangemode": "tozero"},
                 xaxis={"rangemode": "tozero"})
    cols = [t({"en": "tokens seen", "zh-TW": "讀過的詞元數"}, lang)] + [t(name, lang) for name, *_ in lines]
    rows = [[n] + [fmt_bytes(sizes[i][j]) for i in range(len(lines))] for j, n in enumerate(grid)]
    return figure("window", title, data, lay, cols, rows)


def _figure_bits(cfg, context: int, lang):
    """The same cache at fewer bits per number: the model's own format, then 16 … 2.5."""
    own = 8 * cfg.dtype_bytes
    bits = sorted({own, *CACHE_BITS}, reverse=True)
    sizes = [_size(cfg, context, b) for b in bits]
    div, unit = _unit(max(sizes))
    labels = [("★ " if b == own else "") + t({"en": f"{b:g} bits", "zh-TW": f"{b:g} 位元"}, lang) for b in bits]
    data = [_starred_bars(labels, sizes, div, [b == own for b in bits], lang)]
    title = t({"en": f"The cache at {fmt_int(context)} tokens, stored with fewer bits per number",
               "zh-TW": f"{fmt_int(context)} 個詞元的快取：每個數字少用幾個位元"}, lang)
    lay = layout(t({"en": "bits per number (★ the model's own format)",
                           "zh-TW": "每個數字的位元數（★ 模型原本的格式）"}, lang), unit,
                 showlegend=False, yaxis={"rangemode": "tozero"}, xaxis={"type": "category"})
    cols = [t(L.BITS_PER_NUMBER, lang), t(L.PER_TOKEN, lang), t(CACHE, lang),
            t({"en": f"share of the model's own {fmt_int(own)} bits", "zh-TW": f"相對於原本 {fmt_int(own)} 位元的比例"}, lang)]
    rows = [[b, fmt_bytes(_size(cfg, 1, b)), fmt_bytes(s), fmt_percent(s / sizes[0])] for b, s in zip(bits, sizes)]
    return figure("bits", title, data, lay, cols, rows)


# --------------------------------------------------------------------------- notes and run


def _heads_note(cfg, name: str, lang) -> str:
    H, KV = cfg.n_heads, cfg.n_kv_heads
    kind = attention_name(H, KV)
    if KV == H:
        share = {"en": "every query head has its own KV head", "zh-TW": "每個 query head 都有自己的 KV head"}
    else:
        share = {"en": f"each KV head serves {H // KV} query heads", "zh-TW": f"每個 KV head 對應 {H // KV} 個 query head"}
    return t({"en": (f"{name} has {H} query heads and {KV} KV heads ({kind['en']}): {share['en']}. With one KV head (MQA) "
                     f"the cache would be 1/{H} of what {H} KV heads (MHA) hold."),
              "zh-TW": (f"{_zh(name)}有 {H} 個 query head、{KV} 個 KV head（{kind['zh-TW']}）：{share['zh-TW']}。只留一個 KV head（MQA）時，"
                        f"快取只要 {H} 個 KV head（MHA）時的 1/{H}。")}, lang)


def _window_notes(cfg, context: int, W: int, lang) -> list[str]:
    full, win = replace(cfg, sliding_window=None), replace(cfg, sliding_window=W)
    notes = [_formula(full, cfg.n_kv_heads, context, 8 * cfg.dtype_bytes, lang),
             _formula(win, cfg.n_kv_heads, costs.cached_positions(win, context), 8 * cfg.dtype_bytes, lang)]
    if W >= context:
        notes.append(t({"en": f"The window ({fmt_int(W)}) is longer than the text ({fmt_int(context)}): nothing is dropped yet.",
                        "zh-TW": f"視窗（{fmt_int(W)}）比文字（{fmt_int(context)}）還長，所以目前還沒有丟掉任何位置。"}, lang))
    reach = cfg.n_layers * W
    if reach < cfg.max_seq_len:
        far = {"en": f"can reach up to {fmt_int(reach)} positions back", "zh-TW": f"最遠可以從 {fmt_int(reach)} 個位置之前傳過來"}
    else:  # L x W passes the context window: information can come from its very start
        far = {"en": f"can come from anywhere in the {fmt_int(cfg.max_seq_len)}-token context window ({cfg.n_layers} × "
                     f"{fmt_int(W)} is more than that)",
               "zh-TW": f"可以來自 {fmt_int(cfg.max_seq_len)} 個詞元上下文視窗裡的任何位置（{cfg.n_layers} × {fmt_int(W)} 已經超過它）"}
    notes.append(t({"en": (f"Each layer reads only the last {fmt_int(W)} positions, but what it reads was written by layers "
                           f"that looked back {fmt_int(W)} positions themselves: through {cfg.n_layers} layers, information "
                           f"{far['en']}."),
                    "zh-TW": (f"每一層只讀最新的 {fmt_int(W)} 個位置，但它讀到的內容，是前面幾層各自往回看 {fmt_int(W)} 個位置之後寫下的："
                              f"經過 {cfg.n_layers} 層，資訊{far['zh-TW']}。")}, lang))
    return notes


def _notes(lever: str, cfg, name: str, context: int, W: int, lang) -> list[str]:
    kept, own = costs.cached_positions(cfg, context), 8 * cfg.dtype_bytes
    if lever == "window":
        notes = _window_notes(cfg, context, W, lang)
    elif lever == "heads":
        notes = [_formula(cfg, cfg.n_kv_heads, kept, own, lang), _heads_note(cfg, name, lang)]
    else:
        notes = [_formula(cfg, cfg.n_kv_heads, kept, own, lang), _formula(cfg, cfg.n_kv_heads, kept, CACHE_BITS[-1], lang),
                 t({"en": ("3.5 and 2.5 bits are averages: integer codes of 3 or 2 bits plus the scales and zero points "
                           "they need, or some numbers kept at more bits. The weights keep their own format."),
                    "zh-TW": ("3.5 和 2.5 位元是平均值：3 或 2 位元的量化碼，加上它們需要的縮放係數與零點，"
                              "或是有些數字用比較多的位元存放。權重的格式不變。")}, lang)]
    if cfg.sliding_window:
        notes.append(t({"en": f"{name} was published with a sliding window of {fmt_int(cfg.sliding_window)}: its cache never holds more positions.",
                        "zh-TW": f"{_zh(name)}發表時就用了 {fmt_int(cfg.sliding_window)} 個位置的滑動視窗，所以它的快取不會存超過這麼多個位置。"}, lang))
    elif lever == "window":  # a model trained without one: the window is a what-if for its cache size
        notes.append(t({"en": (f"{name} was trained without a sliding window: this is the size its cache would have with one. "
                               "The model itself cannot simply be run that way; it would have to be trained with the window."),
                        "zh-TW": (f"{_zh(name)}訓練時沒有用滑動視窗：這裡算的是假設加上視窗之後的快取大小。"
                                  "模型本身不能直接這樣用，要在訓練時就用上視窗才行。")}, lang))
    return notes


def run(values: dict, lang: str) -> dict:
    cfg = model_options.config_for(values["model"])
    name = model_options.label(values["model"], lang)
    context, W, lever = min(values["context"], cfg.max_seq_len), values["window"], values["lever"]
    notes = []
    if context < values["context"]:
        trained = model_options.trained_context(values["model"])
        extra = ({"en": f" (it was trained on {fmt_int(trained)})", "zh-TW": f"（訓練時只用到 {fmt_int(trained)}）"}
                 if trained else {"en": "", "zh-TW": ""})
        notes.append(t({"en": f"{name} has a context window of {fmt_int(cfg.max_seq_len)} tokens{extra['en']}; the context "
                              f"was set to {fmt_int(context)}.",
                        "zh-TW": f"{_zh(name)}的上下文視窗是 {fmt_int(cfg.max_seq_len)} 個詞元{extra['zh-TW']}，上下文已調為 "
                                 f"{fmt_int(context)}。"}, lang))
    fig = {"heads": _figure_heads, "bits": _figure_bits}.get(lever)
    fig = fig(cfg, context, lang) if fig else _figure_window(cfg, context, W, lang)
    return {"figures": [fig], "notes": notes + _notes(lever, cfg, name, context, W, lang)}
