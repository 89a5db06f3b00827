"""Plate 8: serving many readers. The engine's scheduler (engine/analysis/scheduler.py) serves the
reader's requests three ways in the same memory -- contiguous max-length reservations, the
engine's paged cache, and the paged cache with a shared prefix -- with the course model
computing every token once (the other paged run stores the same entries through its own
pool). The figures show which request holds each block, step by step, how much of the memory
held entries, and how many requests ran at once. Beside it, the same mix for Llama 3 8B on an
80 GB and a 141 GB GPU (sold as such; counted in what each device reports, engine.analysis.serving's
usable bytes), from the formula (engine.analysis.serving). Each language has its own prompts
(SYSTEM_TEXT, QUESTIONS) so that the answers the requests table shows are in the reader's language.
"""
from __future__ import annotations

import math

import numpy as np

from engine import load_course_model
from engine.analysis import costs, serving
from engine.analysis.model_shapes import MODEL_SHAPES, config_from_shape
from engine.analysis.scheduler import PREFIX, SHARED, Request, min_blocks, run_contiguous, run_paged
from engine.caches.allocator import blocks_for
from lessons.common import labels as L
from lessons.common.base import LessonInputError, select, slider
from lessons.common.figures import COLORS, figure, floats, fmt_bytes, fmt_int, fmt_num, layout, t, table

NAME = "paging"
PLATE = "plates/08-serving-the-cache"
TITLE = {"en": "A server on a paged KV cache", "zh-TW": "用分頁 KV 快取服務多個請求"}

MIXES = {
    "system": {"en": "Shared system prompt (first ¾ of every prompt)", "zh-TW": "共同的系統提示詞（每段提示詞的前 ¾）"},
    "parallel": {"en": "One prompt, several samples", "zh-TW": "同一段提示詞，取樣多個回答"},
    "distinct": {"en": "Unrelated prompts (nothing to share)", "zh-TW": "互不相關的提示詞（沒有可共享的）"},
}

# Small defaults on purpose: the course model computes every token of the sharing run (17
# forward passes here, the other paged run replays its entries), which keeps a warm update in
# the browser's budget; with them contiguous reservations fit 2 requests, paging 3, sharing 4.
CONTROLS = (
    select("mix", {"en": "Requests", "zh-TW": "請求組合"}, "system", list(MIXES.items()),
           help={"en": "What the prompts have in common decides what the server can share.",
                 "zh-TW": "提示詞有哪些共同的部分，決定伺服器能共享什麼。"}),
    slider("requests", {"en": "Number of requests", "zh-TW": "請求數"}, 4, 1, 8, 1,
           help={"en": "All arrive at once; the server admits them first come, first served.",
                 "zh-TW": "所有請求同時抵達；伺服器照先來先服務的順序讓它們開始執行。"}),
    slider("prompt", {"en": "Prompt length (tokens)", "zh-TW": "提示詞長度（詞元數）"}, 12, 2, 64, 1),
    slider("answer", {"en": "Longest answer (tokens)", "zh-TW": "最長回答（詞元數）"}, 6, 1, 32, 1,
           help={"en": "Each answer stops somewhere between a quarter of this and this (drawn, seeded); "
                       "a contiguous server must reserve room for the longest.",
                 "zh-TW": "每個回答的長度落在這個值的四分之一到全長之間（用固定的亂數種子抽出）；"
                          "連續配置的伺服器必須替最長的情況預留空間。"}),
    slider("block", {"en": "Block size (tokens)", "zh-TW": "區塊大小（詞元數）"}, 4, 1, 16, 1),
    slider("pool", {"en": "Cache memory (token slots)", "zh-TW": "快取記憶體（可存幾個詞元）"}, 40, 8, 512, 8,
           help={"en": "The memory all three servers get, counted in tokens it can hold (every layer, K and V).",
                 "zh-TW": "三種伺服器拿到一樣多的記憶體，以能存放的詞元數計算（包含每一層的 K 與 V）。"}),
)

# One name per server everywhere in the demo (legends, bar labels, table headers, notes, titles).
SCHEME_NAMES = {
    "contiguous": {"en": "(a) contiguous", "zh-TW": "（a）連續配置"},
    "paged": {"en": "(b) paging", "zh-TW": "（b）分頁"},
    "shared": {"en": "(c) paging + prefix sharing", "zh-TW": "（c）分頁 + 字首共享"},
}
SCHEME_COLORS = {"contiguous": COLORS["vermillion"], "paged": COLORS["blue"], "shared": COLORS["green"]}
REQUEST_COLORS = [COLORS[k] for k in ("blue", "orange", "green", "vermillion", "sky", "purple", "yellow")] + ["#999933"]
# Blocks held by several requests, by the cached prefix only, and free ones: each its own colour, none of
# them grey but the free one, as in plate 8's panel (light grey: an empty drawer); the tip names all three.
SHARED_COLOR, PREFIX_COLOR, FREE_COLOR = "#882255", "#DDCC77", "#E4E7EB"

# Labels this lesson uses more than once (shared ones come from lessons/common/labels.py).
SERVER = {"en": "server", "zh-TW": "伺服器"}
SERVER_STEP = {"en": "server step", "zh-TW": "伺服器步驟"}
REQUEST = {"en": "request", "zh-TW": "請求"}
AT_ONCE = {"en": "requests at once (most)", "zh-TW": "同時執行的請求數（最多）"}
HOLDS = {"en": "holds entries", "zh-TW": "存有內容"}

# The prompts, per language: a prompt of P tokens is the first P tokens of this text (repeated as needed).
# The zh-TW texts use only characters the course tokenizer holds as single tokens, so a prompt cut at
# any length ends on a whole character; each request starts differently, so the answers differ.
SYSTEM_TEXT = {"en": ("You are a patient librarian. Answer every reader in short, plain sentences, and say so "
                      "when you do not know. Keep to the books on the shelf."),
               "zh-TW": "你是圖書館的老師，很愛看書。請用好讀的話給來館裡的人回話。"}
QUESTIONS = {"en": ("Where do the cats sleep at night?", "What does a key open?", "Why is the sky blue today?",
                    "Which book should I read first?", "How far is the sea from here?", "Who wrote the old song?",
                    "When does the library close?", "What is the queen eating?"),
             "zh-TW": ("今天下雨，我想在館裡讀書。", "請給我有國王和公主的圖畫書。", "我的朋友想看海邊的照片。",
                       "媽媽想看種花的書。", "貓喜歡坐在窗戶邊看書。", "哥哥想學寫程式。", "我想喝奶茶，館外有飲料店。",
                       "星期六早上，館裡有故事課。")}
ANSWER_SEED = 8
ANSWER_SHOWN = 6  # tokens of each answer the requests table shows (the default longest answer)
REAL_SHAPE = "Llama 3 8B"
REAL_BLOCK = 16  # vLLM's default block size (Kwon et al., SOSP 2023, section 7.2)
FP16 = 2


def _r(i: int) -> str:
    return f"R{i + 1}"


def _of(whole: str, part: str, lang: str) -> str:
    """'scheme: column' with the colon of the reader's language."""
    return f"{whole}{t(L.COLON, lang)}{part}"


def _slot() -> int:
    """Bytes of one token slot of the course model (every layer, K and V)."""
    return load_course_model()[0].new_cache(max_len=1).bytes_per_token


# --------------------------------------------------------------------------- the requests


def _tokens(tok, text: str, n: int) -> tuple[int, ...]:
    """The first n token ids of ``text`` (repeated as often as needed)."""
    ids = tok.encode(text)
    return tuple((ids * (n // len(ids) + 1))[:n])


def build_requests(tok, values: dict, lang: str = "en") -> list[Request]:
    """The reader's mix as Requests, prompts in ``lang``; answer lengths drawn from a fixed seed (the
    same in both languages, so the servers' schedules are too)."""
    n, P, A = values["requests"], values["prompt"], values["answer"]
    system, questions = SYSTEM_TEXT[lang], QUESTIONS[lang]
    lengths = np.random.default_rng(ANSWER_SEED).integers(max(1, A // 4), A + 1, size=n)
    mix = values["mix"]
    shared = {"system": max(1, 3 * P // 4), "parallel": P, "distinct": 0}[mix]  # P >= 2: one own token left
    prefix = _tokens(tok, system if mix == "system" else questions[0], shared) if shared else ()
    out = []
    for i in range(n):
        own = () if mix == "parallel" else _tokens(tok, questions[i % len(questions)], P - shared)
        out.append(Request(i, prefix + own, shared, int(lengths[i]), A))
    return out


def _check_pool(values: dict, requests: list[Request]) -> int:
    """Blocks in the pool; a bilingual error when even one request could never finish.

    The floor is engine.analysis.scheduler.min_blocks: the blocks of the longest request (its prompt
    and its own drawn answer) plus one, the block a request copies out of a cached prefix's partly
    filled last block while the prefix keeps the original (the scheduler keeps it for every mix).
    """
    B = values["block"]
    n_blocks, need = values["pool"] // B, min_blocks(requests, B)
    longest = max(requests, key=lambda r: len(r.prompt) + r.answer)
    P, A = len(longest.prompt), longest.answer
    own = blocks_for(P + A, B)
    extra = need - own  # what min_blocks keeps beyond the longest request's own blocks
    if n_blocks < need:
        raise LessonInputError(
            f"The cache memory is too small: the longest request, {P} prompt tokens and {A} answer tokens, needs "
            f"{own} blocks of {B} tokens, plus the {extra} block the server always keeps for a cached prefix, {need} in "
            f"all; {values['pool']} token slots make {n_blocks}. Give it at least {need * B} token slots, or choose "
            f"smaller blocks.",
            f"快取記憶體太小了：最長的請求有 {P} 個提示詞詞元、{A} 個回答詞元，需要 {own} 個區塊（每個區塊 {B} 個詞元），"
            f"再加上伺服器一律替已快取的字首多留的 {extra} 個區塊，共 {need} 個，而 {values['pool']} 格只切得出 {n_blocks} 個區塊。"
            f"請給它至少 {need * B} 格，或選小一點的區塊。")
    return n_blocks


def simulate(values: dict, lang: str = "en") -> tuple[list[Request], dict]:
    """Requests (prompts in ``lang``) and the three runs (contiguous, paged, shared) in the same memory."""
    model, tok = load_course_model()
    requests = build_requests(tok, values, lang)
    n_blocks = _check_pool(values, requests)
    B = values["block"]
    if requests[0].shared:  # the model runs in the sharing server; the plain one replays its entries
        shared = run_paged(model, requests, n_blocks, B, share=True)
        paged = run_paged(model, requests, n_blocks, B, share=False, replay=shared)
    else:
        paged = shared = run_paged(model, requests, n_blocks, B, share=False)
    contiguous = run_contiguous(model.config, requests, paged.memory)
    return requests, {"contiguous": contiguous, "paged": paged, "shared": shared}


# --------------------------------------------------------------------------- the block maps


FREE = None  # a block nobody holds (the block map's own band: engine.analysis.scheduler leaves it None)
BAND_NAMES = {SHARED: {"en": "shared", "zh-TW": "共享"}, PREFIX: {"en": "cached prefix", "zh-TW": "已快取的字首"},
              FREE: {"en": "free", "zh-TW": "空閒"}}
BAND_COLORS = {SHARED: SHARED_COLOR, PREFIX: PREFIX_COLOR, FREE: FREE_COLOR}


def _discrete_scale(colors: list[str]) -> list:
    """A Plotly colorscale with one flat band per category 0 .. len(colors)-1."""
    k, scale = len(colors), []
    for i, c in enumerate(colors):
        scale += [[i / k, c], [(i + 1) / k, c]]
    return scale


def _map_bands(run, n_req: int, lang: str) -> tuple[list[list], list[str], list[str], int | None]:
    """(z: per step, per block, its colour band; band labels; band colours; the free band or None).

    Requests keep their band in every map; the shared, prefix and free bands exist only where the
    run has such blocks, so a legend never lists a category the map does not show.
    """
    held = {b for s in run.steps for b in s.blocks}
    kinds = list(range(n_req)) + [k for k in (SHARED, PREFIX, FREE) if k in held]
    code = {k: i for i, k in enumerate(kinds)}
    z = [[code[b] for b in s.blocks] for s in run.steps]
    labels = [_r(k) if k is not None and k >= 0 else t(BAND_NAMES[k], lang) for k in kinds]
    colors = [REQUEST_COLORS[k] if k is not None and k >= 0 else BAND_COLORS[k] for k in kinds]
    return z, labels, colors, code.get(FREE)


def _held(row: list, labels: list[str], free: int | None, lang: str) -> str:
    """'R1: 2, shared: 1' -- the blocks each holder has in one step of the map (free ones not listed)."""
    sep = t({"en": ", ", "zh-TW": "、"}, lang)
    held = [f"{labels[c]}{t(L.COLON, lang)}{row.count(c)}" for c in range(len(labels)) if c in row and c != free]
    return sep.join(held) or "—"


def _figure_block_map(run, scheme: str, n_req: int, lang: str) -> dict:
    z, labels, band_colors, free = _map_bands(run, n_req, lang)
    text = [[labels[c] for c in row] for row in z]
    steps = list(range(1, len(run.steps) + 1))
    hover = t({"en": "step %{y}, block %{x}: %{text}", "zh-TW": "第 %{y} 步，區塊 %{x}：%{text}"}, lang)
    data = [{"type": "heatmap", "z": z, "x": list(range(len(run.steps[0].blocks))), "y": steps, "text": text,
             "zmin": -0.5, "zmax": len(labels) - 0.5, "colorscale": _discrete_scale(band_colors), "xgap": 1, "ygap": 1,
             "colorbar": {"tickvals": list(range(len(labels))), "ticktext": labels, "thickness": 12, "outlinewidth": 0},
             "hovertemplate": hover + "<extra></extra>"}]
    title = t({"en": f"{SCHEME_NAMES[scheme]['en']}: block map, who holds each block",
               "zh-TW": f"{SCHEME_NAMES[scheme]['zh-TW']}的區塊圖：每個區塊在誰手上"}, lang)
    lay = layout(t({"en": "block in the pool", "zh-TW": "區塊池中的區塊編號"}, lang), t(SERVER_STEP, lang),
                 yaxis={"autorange": "reversed"})
    cols = [t(L.STEP, lang), t({"en": "running", "zh-TW": "執行中"}, lang), t({"en": "waiting", "zh-TW": "等待中"}, lang),
            t({"en": "blocks held (shared ones once)", "zh-TW": "佔用的區塊（共享的只算一次）"}, lang),
            t({"en": "free blocks", "zh-TW": "空閒區塊"}, lang)]
    rows = [[i, " ".join(map(_r, s.running)) or "—", " ".join(map(_r, s.waiting)) or "—", _held(row, labels, free, lang),
             row.count(free) if free is not None else 0] for i, s, row in zip(steps, run.steps, z)]
    return figure(f"block_map_{scheme}", title, data, lay, cols, rows)


# --------------------------------------------------------------------------- memory and fit


def _figure_memory(runs: dict, lang: str) -> dict:
    kib, data, held = 1024, [], t(HOLDS, lang)
    for name, run in runs.items():
        x, label, color = list(range(1, len(run.steps) + 1)), t(SCHEME_NAMES[name], lang), SCHEME_COLORS[name]
        data.append({"type": "scatter", "mode": "lines", "name": label, "x": x, "line": {"color": color, "shape": "hv"},
                     "y": floats(s.reserved / kib for s in run.steps)})
        data.append({"type": "scatter", "mode": "lines", "name": _of(label, held, lang), "x": x, "showlegend": False,
                     "line": {"color": color, "dash": "dot", "shape": "hv"}, "y": floats(s.used / kib for s in run.steps)})
    longest = max(len(r.steps) for r in runs.values())
    data.append({"type": "scatter", "mode": "lines", "name": t({"en": "the memory", "zh-TW": "記憶體總量"}, lang),
                 "x": [1, max(longest, 2)], "y": floats([runs["paged"].memory / kib] * 2),
                 "line": {"color": COLORS["grey"], "width": 1}})
    title = t({"en": "Memory reserved (solid) and holding entries (dotted), step by step",
               "zh-TW": "每一步預留的記憶體（實線）與真正存有內容的部分（虛線）"}, lang)
    lay = layout(t(SERVER_STEP, lang), "KiB", yaxis={"rangemode": "tozero"})
    parts = (t({"en": "reserved (B)", "zh-TW": "預留（B）"}, lang), t({"en": "holds entries (B)", "zh-TW": "存有內容（B）"}, lang))
    cols = [t(L.STEP, lang)] + [_of(t(SCHEME_NAMES[n], lang), p, lang) for n in runs for p in parts]
    # a server that had already finished (or never started) has no value at that step: an empty cell
    rows = [[i + 1] + [v for r in runs.values() for v in ((r.steps[i].reserved, r.steps[i].used)
                                                        if i < len(r.steps) else (None, None))] for i in range(longest)]
    return figure("memory", title, data, lay, cols, rows)


def per_token(run, slot: int) -> tuple[float, float] | None:
    """Over the whole run: (slots reserved, slots holding an entry) per token the requests hold.

    1.0 and 1.0 is a cache with no empty slot and nothing shared; above 1 is memory reserved
    but empty; an entry share below 1 means tokens stored once for several requests.
    None when the server never ran.
    """
    tokens = sum(sum(s.lengths.values()) for s in run.steps) * slot
    if not tokens:
        return None
    return sum(s.reserved for s in run.steps) / tokens, sum(s.used for s in run.steps) / tokens


def _bar_labels(runs: dict, lang: str) -> list[str]:
    """The servers' names under a bar, broken after the " +" so that three fit side by side on a phone."""
    return [t(SCHEME_NAMES[n], lang).replace(" + ", " +<br>") for n in runs]


def _figure_waste(runs: dict, slot: int, lang: str) -> dict:
    names, bars = [t(SCHEME_NAMES[n], lang) for n in runs], _bar_labels(runs, lang)
    ratios = [per_token(r, slot) or (0.0, 0.0) for r in runs.values()]
    held, empty = t({"en": "holds an entry", "zh-TW": "存有內容"}, lang), t({"en": "reserved, empty", "zh-TW": "預留但空著"}, lang)
    data = [{"type": "bar", "name": held, "x": bars, "y": floats(u for _r, u in ratios), "marker": {"color": COLORS["green"]},
             "text": [fmt_num(u) for _r, u in ratios], "textposition": "inside"},
            {"type": "bar", "name": empty, "x": bars, "y": floats(r - u for r, u in ratios), "marker": {"color": COLORS["grey"]},
             "text": [fmt_num(r) for r, _u in ratios], "textposition": "outside", "cliponaxis": False}]
    title = t({"en": "Memory per token the requests hold: what held an entry, what stood empty (whole run)",
               "zh-TW": "請求每持有一個詞元，平均用掉多少格記憶體：存有內容的和空著的（整輪平均）"}, lang)
    top = max([r for r, _u in ratios] + [1.0])
    lay = layout("", t({"en": "slots per token held", "zh-TW": "每個詞元用掉的格數"}, lang), barmode="stack",
                 yaxis={"range": [0, top * 1.2]})
    cols = [t(SERVER, lang), t({"en": "slots reserved per token", "zh-TW": "每個詞元預留的格數"}, lang),
            t({"en": "slots holding an entry per token", "zh-TW": "每個詞元存有內容的格數"}, lang),
            t({"en": "reserved that held entries (%)", "zh-TW": "預留中存有內容的比例（%）"}, lang)]
    rows = [[nm, r, u, 100 * u / r if r else "—"] for nm, (r, u) in zip(names, ratios)]
    return figure("waste", title, data, lay, cols, rows)


def _figure_fit(runs: dict, lang: str) -> dict:
    names, bars = [t(SCHEME_NAMES[n], lang) for n in runs], _bar_labels(runs, lang)
    steps = [len(r.steps) for r in runs.values()]
    data = [{"type": "bar", "x": bars, "y": [r.max_running for r in runs.values()], "showlegend": False,
             "marker": {"color": [SCHEME_COLORS[n] for n in runs]},
             "text": [t({"en": f"all done in {s} steps", "zh-TW": f"第 {s} 步全部完成"}, lang) if s else "—" for s in steps],
             "textposition": "outside", "cliponaxis": False}]
    title = t({"en": "Requests running at once in the same memory", "zh-TW": "同樣的記憶體，同時能執行幾個請求"}, lang)
    top = max([r.max_running for r in runs.values()] + [1])
    lay = layout("", t(AT_ONCE, lang), yaxis={"range": [0, top * 1.25], "dtick": 1})
    cols = [t(SERVER, lang), t(AT_ONCE, lang), t({"en": "steps to serve all", "zh-TW": "全部服務完的步數"}, lang),
            t({"en": "preemptions", "zh-TW": "搶佔次數"}, lang)]
    rows = [[nm, r.max_running, s or "—", r.preemptions] for nm, r, s in zip(names, runs.values(), steps)]
    return figure("fit", title, data, lay, cols, rows)


# --------------------------------------------------------------------------- the real shape


def _mean_up(xs: list[int]) -> int:
    """The mix's average request, rounded up to a whole slot."""
    return math.ceil(sum(xs) / len(xs))


def real_shape(requests: list[Request], block_size: int = REAL_BLOCK) -> dict:
    """The reader's mix scaled to Llama 3 8B's window, on each GPU of engine.analysis.serving (fp16)."""
    s = MODEL_SHAPES[REAL_SHAPE]
    scale = s.max_seq_len // load_course_model()[0].config.max_seq_len
    slot = costs.kv_cache_bytes(s.n_layers, s.n_kv_heads, s.head_dim, 1, 1, FP16)
    weights = costs.param_count(config_from_shape(s)) * FP16
    S = scale * requests[0].shared
    per = {"contiguous": _mean_up([serving.contiguous_slots(scale * (len(r.prompt) + r.max_answer)) for r in requests]),
           "paged": _mean_up([serving.paged_slots(scale * (len(r.prompt) + r.answer), block_size) for r in requests]),
           "shared": _mean_up([serving.paged_slots(scale * (len(r.prompt) + r.answer), block_size, S) for r in requests])}
    once = {"contiguous": 0, "paged": 0, "shared": serving.prefix_slots(S, block_size) if S else 0}
    fits = {g.key: {n: serving.requests_that_fit(max(g.usable_bytes - weights, 0), per[n] * slot, once[n] * slot) for n in per}
            for g in serving.GPUS.values()}
    return {"scale": scale, "slot": slot, "weights": weights, "per": per, "once": once, "fits": fits,
            "shape": s, "block": block_size}


def _figure_real(real: dict, lang: str) -> dict:
    gpus = list(serving.GPUS.values())
    data = [{"type": "bar", "name": t(SCHEME_NAMES[n], lang), "x": [g.short for g in gpus],
             "y": [real["fits"][g.key][n] for g in gpus], "marker": {"color": SCHEME_COLORS[n]},
             "text": [fmt_int(real["fits"][g.key][n]) for g in gpus], "textposition": "outside", "cliponaxis": False}
            for n in SCHEME_NAMES]
    title = t({"en": f"The same mix on {REAL_SHAPE} (fp16): requests that fit next to the weights",
               "zh-TW": f"同樣的請求組合換成 {REAL_SHAPE}（fp16）：權重之外還放得下幾個請求"}, lang)
    lay = layout("", t({"en": "requests that fit", "zh-TW": "放得下的請求數"}, lang), barmode="group",
                 yaxis={"rangemode": "tozero"})
    per, fit = t({"en": "per request", "zh-TW": "每個請求"}, lang), t({"en": "fit", "zh-TW": "放得下"}, lang)
    cols = ([t({"en": "GPU", "zh-TW": "GPU"}, lang), t({"en": "usable memory", "zh-TW": "可用記憶體"}, lang),
             t({"en": "left for the cache", "zh-TW": "留給快取"}, lang)]
            + [_of(t(SCHEME_NAMES[n], lang), per, lang) for n in SCHEME_NAMES]
            + [_of(t(SCHEME_NAMES[n], lang), fit, lang) for n in SCHEME_NAMES])
    rows = [[g.name, fmt_bytes(g.usable_bytes), fmt_bytes(max(g.usable_bytes - real["weights"], 0))]
            + [fmt_bytes(real["per"][n] * real["slot"]) for n in SCHEME_NAMES]
            + [real["fits"][g.key][n] for n in SCHEME_NAMES] for g in gpus]
    return figure("real_shape", title, data, lay, cols, rows)


# --------------------------------------------------------------------------- tables


def _answer_text(tok, ids: list[int]) -> str:
    """The start of an answer as the course model wrote it (the tokenizer's own decoding)."""
    return tok.decode(ids[:ANSWER_SHOWN]) + ("…" if len(ids) > ANSWER_SHOWN else "")


def _table_requests(requests: list[Request], runs: dict, lang: str) -> dict:
    tok = load_course_model()[1]

    def span(run, i):
        return f"{run.admitted[i]}–{run.finished[i]}" if i in run.admitted else "—"

    cols = ([t(REQUEST, lang), t({"en": "prompt tokens", "zh-TW": "提示詞詞元數"}, lang),
             t({"en": "answer tokens", "zh-TW": "回答詞元數"}, lang)]
            + [_of(t(SCHEME_NAMES[n], lang), t({"en": "steps", "zh-TW": "步驟"}, lang), lang) for n in runs]
            + [t({"en": "answer (course model, run c)", "zh-TW": "課程模型在（c）寫出的回答"}, lang)])
    shared = {"en": "{n} ({s} shared)", "zh-TW": "{n}（共享 {s}）"}
    rows = [[_r(r.index), t(shared, lang).format(n=len(r.prompt), s=r.shared), r.answer] + [span(run, r.index) for run in runs.values()]
            + [_answer_text(tok, runs["shared"].answers[r.index])] for r in requests]
    title = t({"en": "The requests, and the steps each server ran them", "zh-TW": "各個請求，以及三種伺服器在哪幾步執行它"}, lang)
    return table(title, cols, rows)


def _busiest(run) -> int:
    """The step with the most requests running (the most memory lent among those)."""
    return max(range(len(run.steps)), key=lambda i: (len(run.steps[i].running), run.steps[i].reserved))


def _table_block_tables(run, lang: str) -> dict | None:
    """Every running request's block table at the busiest step of ``run``."""
    if not run.steps or not run.steps[0].tables:
        return None
    step = _busiest(run)
    view = run.steps[step]
    counts: dict[int, int] = {}
    for table_ in view.tables.values():
        for b in table_:
            counts[b] = counts.get(b, 0) + 1
    rows = [[_r(i), " ".join(f"{b}*" if counts[b] > 1 or view.blocks[b] == SHARED else str(b) for b in tb), len(tb)]
            for i, tb in view.tables.items()]
    title = t({"en": f"{SCHEME_NAMES[run.scheme]['en']}: block tables at step {step + 1} (* = a block other "
                     f"sequences hold too)",
               "zh-TW": f"{SCHEME_NAMES[run.scheme]['zh-TW']}：第 {step + 1} 步的區塊表（* 表示其他序列也持有這個區塊）"}, lang)
    return table(title, [t(REQUEST, lang), t({"en": "block table", "zh-TW": "區塊表"}, lang),
                         t({"en": "blocks", "zh-TW": "區塊數"}, lang)], rows)


# --------------------------------------------------------------------------- notes


def _notes(requests: list[Request], runs: dict, real: dict, block: int, lang: str) -> list[str]:
    return [n for n in (_note_summary(requests, runs, lang), _note_sharing(requests, runs, block, lang),
                        _note_batch(runs, lang), _note_real(real, lang)) if n]


def _note_summary(requests, runs, lang):
    mem, slot = runs["paged"].memory, _slot()
    a, b, c = (runs[n] for n in ("contiguous", "paged", "shared"))
    pt = ["—" if x is None else fmt_num(x[0]) for x in (per_token(r, slot) for r in (a, b, c))]
    start = "" if a.steps else t({"en": " The contiguous server never started: one reservation is larger than the memory.",
                                  "zh-TW": "連續配置的伺服器根本沒辦法開始：單一請求預留的空間就比記憶體還大。"}, lang)
    done = t({"en": "the 3 servers were done with the {n} requests after {a} / {b} / {c} server steps",
              "zh-TW": "三種伺服器分別在第 {a}、{b}、{c} 步服務完全部 {n} 個請求"} if a.steps else
             {"en": "(b) and (c) were done with the {n} requests after {b} / {c} server steps",
              "zh-TW": "（b）和（c）分別在第 {b}、{c} 步服務完全部 {n} 個請求"}, lang).format(
        n=len(requests), a=len(a.steps), b=len(b.steps), c=len(c.steps))
    return t({"en": (f"Same memory for all three: {fmt_bytes(mem)} ({fmt_int(mem // slot)} token slots). At most "
                     f"{a.max_running} / {b.max_running} / {c.max_running} requests ran at once (contiguous / paging / "
                     f"paging + prefix sharing), and {done}. Each token the requests held cost {pt[0]} / {pt[1]} / "
                     f"{pt[2]} slots of reserved memory." + start),
              "zh-TW": (f"三種伺服器拿到一樣多的記憶體：{fmt_bytes(mem)}，可存 {fmt_int(mem // slot)} 個詞元。"
                        f"依（a）、（b）、（c）的順序，同時執行的請求最多是 {a.max_running}、{b.max_running}、"
                        f"{c.max_running} 個；{done}；請求每持有一個詞元，分別要佔用 {pt[0]}、{pt[1]}、{pt[2]} 格預留的記憶體。"
                        + start)}, lang)


def _note_model(b, c, lang):
    """Where the course model ran, and what a preempted request went through."""
    model = b if c is b or not c.forwards else c  # the run in which the model ran (engine/analysis/scheduler.py)
    where = "c" if model is c and c is not b else "b"
    written = sum(len(a) for a in model.answers.values())
    return t({"en": (f" The course model ran {model.forwards} forward passes in ({where}), writing all {written} answer "
                     f"tokens; a preempted request gave its blocks back, waited, and had its cache rebuilt."),
              "zh-TW": (f"課程模型在（{where}）實際執行了 {model.forwards} 次，寫出全部 {written} 個回答詞元；"
                        f"被搶佔的請求交回區塊、重新排隊，之後再重建自己的快取。")}, lang)


def _note_copies(requests, c, B: int, lang) -> str:
    """What copy-on-write copied in (c): a block per request that wrote into the cached prefix's partly filled
    last block (the prefix keeps the original), or nothing when the prefix fills whole blocks."""
    S = requests[0].shared
    if c.copies == 0 and S % B == 0:
        return t({"en": (f"copy-on-write copied no block: the shared prefix fills whole blocks ({S} tokens, "
                         f"{S // B} blocks of {B})."),
                  "zh-TW": (f"沒有區塊因寫入時複製而被複製：共享的字首剛好填滿整數個區塊（{S} 個詞元，"
                            f"{S // B} 個 {B} 詞元的區塊）。")}, lang)
    return t({"en": (f"copy-on-write copied {c.copies} block(s) (a request's first write into the shared, partly "
                     f"filled last block)."),
              "zh-TW": (f"因寫入時複製而複製的區塊一共 {c.copies} 個，發生在請求第一次寫進共享、還沒填滿的最後一個區塊時。")}, lang)


def _note_sharing(requests, runs, B, lang):
    b, c = runs["paged"], runs["shared"]
    ran = _note_model(b, c, lang)
    if c is b:
        return t({"en": f"These prompts have nothing in common, so (c) is (b). Preemptions: {b.preemptions}.",
                  "zh-TW": f"這些提示詞沒有共同的開頭，所以（c）就是（b）。搶佔次數：{b.preemptions}。"}, lang) + ran
    copies = _note_copies(requests, c, B, lang)
    return t({"en": (f"In (c) the first {requests[0].shared} prompt tokens were prefilled once and every request forked "
                     f"them; {copies} Preemptions: {b.preemptions} in (b), {c.preemptions} in (c). (b) stored the "
                     f"same keys and values through its own pool, without running the model a second time."),
              "zh-TW": (f"在（c）裡，提示詞的前 {requests[0].shared} 個詞元只預填一次，每個請求都從這裡分岔（fork）出去。"
                        f"{copies}搶佔次數：（b）{b.preemptions} 次，（c）{c.preemptions} 次。（b）把同樣的 key 和 "
                        f"value 直接存進自己的區塊池，不必讓模型再執行一次。")}, lang) + ran


def _note_batch(runs, lang):
    cfg = load_course_model()[0].config
    step = max(runs["shared"].steps, key=lambda s: len(s.running))
    n = len(step.running)
    if n < 2:
        return None
    contexts = [step.lengths[i] for i in step.running]
    batch = serving.batch_decode_step_bytes(cfg, contexts)
    alone = sum(serving.batch_decode_step_bytes(cfg, [c]) for c in contexts)
    w = serving.resident_weight_bytes(cfg)  # every weight but the embedding table, of which a step reads a few rows
    return t({"en": (f"Batching: one server step for {n} requests reads the weights once ({fmt_bytes(w)}, the embedding "
                     f"table left out): {fmt_bytes(batch)} in all; {n} separate steps would move {fmt_bytes(alone)} "
                     f"(engine.analysis.serving)."),
              "zh-TW": (f"批次處理：伺服器替 {n} 個請求跑的一步，權重只讀一次（不含嵌入向量表，{fmt_bytes(w)}），連同快取一共搬 "
                        f"{fmt_bytes(batch)}；分開跑 {n} 步則要搬 {fmt_bytes(alone)}（engine.analysis.serving）。")}, lang)


def _note_real(real, lang):
    s = real["shape"]
    gpus = list(serving.GPUS.values())
    short = [g.short.split(" (")[0] for g in gpus]
    usable = {"en": ", ".join(f"{n} {fmt_bytes(g.usable_bytes)}" for n, g in zip(short, gpus)),
              "zh-TW": "、".join(f"{n} {fmt_bytes(g.usable_bytes)}" for n, g in zip(short, gpus))}
    sold = {"en": " and ".join(f"{g.datasheet_gb} GB" for g in gpus), "zh-TW": "、".join(f"{g.datasheet_gb} GB" for g in gpus)}
    return t({"en": (f"{s.name} beside it: fp16 weights {fmt_bytes(real['weights'])}, {fmt_bytes(real['slot'])} of cache per "
                     f"token; the mix scaled ×{real['scale']} to its {fmt_int(s.max_seq_len)}-token window; blocks of "
                     f"{real['block']} tokens (vLLM's default); paged requests counted at their final length, the most "
                     f"they hold. GPU memory as the device reports it ({usable['en']}), not the datasheets' "
                     f"{sold['en']}; activations and the runtime's own memory are left out, so these are upper bounds."),
              "zh-TW": (f"旁邊換成 {s.name}：fp16 權重 {fmt_bytes(real['weights'])}，每個詞元的快取 {fmt_bytes(real['slot'])}；"
                        f"請求組合依它 {fmt_int(s.max_seq_len)} 個詞元的上下文視窗放大 {real['scale']} 倍；區塊大小 "
                        f"{real['block']} 個詞元（vLLM 的預設值）；分頁的請求照最後的長度計算，也就是它佔用最多的時候。"
                        f"規格表寫 {sold['zh-TW']}，這裡用的是裝置實際回報的總量（{usable['zh-TW']}）；活化值（activation）"
                        f"和執行環境本身用的記憶體沒有算進去，所以這些是上限。")}, lang)


# --------------------------------------------------------------------------- run


def run(values: dict, lang: str) -> dict:
    requests, runs = simulate(values, lang)
    n, real = len(requests), real_shape(requests)
    figures = [_figure_block_map(runs["paged"], "paged", n, lang), _figure_block_map(runs["shared"], "shared", n, lang),
               _figure_memory(runs, lang), _figure_waste(runs, _slot(), lang), _figure_fit(runs, lang),
               _figure_real(real, lang)]
    tables = [_table_requests(requests, runs, lang)]
    tables += [tb for tb in (_table_block_tables(runs["shared"], lang),) if tb]
    return {"figures": figures, "tables": tables, "notes": _notes(requests, runs, real, values["block"], lang)}
