"""Plate 7: which positions to keep when the cache has room for only a few.

The course model reads a text of TEXT_TOKENS tokens with the full cache (the reference), with
a plain window of ``budget`` positions per layer, and with the reader's policy at the same
budget (one of three, each on the engine's own cache class):

    window            the last ``budget`` positions           RollingKVCache   (Mistral)
    sinks + window    the first S, then the last budget - S   SinkKVCache      (StreamingLLM)
    heavy hitters     budget/2 newest + the most attended      HeavyHitterKVCache (H2O)

Quality is measured against the full cache at every position: the KL divergence of the
next-token distributions and whether the most likely token is the same. The attention of
the text's last token shows where each cache lets it look (the sinks, or only the window).
Then each cache writes CONTINUE more tokens greedily (the engine's Generator, continuing the
cache that holds the text). Nothing is precomputed: the texts are new documents
from the course corpus's templates (a seed training did not use), cut at TEXT_TOKENS, inside
the length of the rows the model was trained on (128, engine/training/train.py). Plate 7's table runs
the same functions on a longer text at build time (lessons/facts/table.py).
"""
from __future__ import annotations

import copy
import functools
from dataclasses import replace
from typing import NamedTuple

import numpy as np

from engine import Generator, HeavyHitterKVCache, KVCache, RollingKVCache, SamplingParams, Transformer, load_course_model
from engine.caches.base import write
from engine.training.corpus import build_documents
from lessons.common import labels as L
from lessons.common.base import LessonInputError, select, slider
from lessons.common.figures import COLORS, figure, floats, fmt_bytes, fmt_num, fmt_percent, layout, show_piece, t, table

NAME = "keep_positions"
PLATE = "plates/07-shrinking-the-cache"
TITLE = {"en": "Which positions to keep: a window, attention sinks, heavy hitters",
         "zh-TW": "該留哪些位置：視窗、注意力匯聚點、heavy hitter"}

TEXT_TOKENS = 64  # the live text: short enough for Pyodide (plate 7's own table reads a longer one, lessons/facts/table.py)
CONTINUE = 6  # greedy tokens each cache writes after the text
TEXT_SEED = 7  # corpus documents the model never saw (it was trained on seed 1234's)

POLICIES = {
    "window": {"en": "window only", "zh-TW": "只留視窗"},
    "sinks": {"en": "sinks + window", "zh-TW": "注意力匯聚點 + 視窗"},
    "h2o": {"en": "heavy hitters + newest (H2O)", "zh-TW": "heavy hitter + 最新位置（H2O）"},
}
TEXTS = {"en": {"en": "English story", "zh-TW": "英文短文"}, "zh-TW": {"en": "Chinese story", "zh-TW": "中文短文"}}
FULL = {"en": "full cache", "zh-TW": "完整快取"}

CONTROLS = (
    select("policy", {"en": "What to keep", "zh-TW": "保留哪些位置"}, "sinks", list(POLICIES.items()),
           help={"en": "The rule that decides which positions stay once the cache is full.",
                 "zh-TW": "快取滿了之後，決定哪些位置留下來的規則。"}),
    slider("budget", {"en": "Positions kept per layer", "zh-TW": "每層保留的位置數"}, 32, 24, 56, 8,
           help={"en": "The cache's size for every policy: this many positions per layer.",
                 "zh-TW": "每種規則的快取大小都一樣：每層存這麼多個位置。"}),
    slider("sinks", {"en": "Sinks S (first positions kept)", "zh-TW": "注意力匯聚點 S（保留最前面幾個位置）"}, 4, 1, 8, 1,
           help={"en": "For sinks + window: the first S positions stay; the window gets the rest of the budget.",
                 "zh-TW": "用於「注意力匯聚點 + 視窗」：最前面 S 個位置一直留著，其餘的名額給視窗。"}),
    select("text", {"en": "Text", "zh-TW": "文字"}, {"en": "en", "zh-TW": "zh-TW"}, list(TEXTS.items()),
           help={"en": f"{TEXT_TOKENS} tokens of new documents written from the course corpus's templates.",
                 "zh-TW": f"用課程語料的範本新寫的短文，取 {TEXT_TOKENS} 個詞元。"}),
)


# --------------------------------------------------------------------------- measuring


@functools.lru_cache(maxsize=4)
def text_ids(lang: str, n: int = TEXT_TOKENS) -> tuple[int, ...]:
    """n tokens of fresh corpus documents in ``lang``, joined as one text (n <= the training rows' 128)."""
    _model, tok = load_course_model()
    docs = [d for i, d in enumerate(build_documents(TEXT_SEED, 80)) if (i % 2 == 0) == (lang == "en")]
    ids = tok.encode((" " if lang == "en" else "").join(docs))
    return tuple(ids[:n])


@functools.lru_cache(maxsize=8)
def windowed_model(window: int, sinks: int) -> Transformer:
    """The course model under Config(sliding_window, attention_sinks), the mask those caches need.

    A shallow copy with another config: a Transformer holds weights and no run state, and a
    window changes neither the weights nor the RoPE tables, so nothing is rebuilt (building
    a new Transformer would cost the browser a copy of every weight on each new budget).
    """
    model, _tok = load_course_model()
    masked = copy.copy(model)
    masked.config = replace(model.config, sliding_window=window, attention_sinks=sinks)
    return masked


def h2o_recent(budget: int) -> int:
    """The newest positions H2O keeps in a budget of ``budget``: half of it (the rest by attention)."""
    return budget // 2


def greedy_continuation(model, cache, ids: list[int], last_logits) -> list[int]:
    """CONTINUE greedy tokens after a text that ``cache`` holds whole: the model's pick at the
    text's last position (its logits [V] are at hand), then the engine's Generator, which feeds
    that pick through the same cache and goes on."""
    _model, tok = load_course_model()
    pick = int(np.argmax(last_logits))
    gen = Generator(model, tok, SamplingParams(temperature=0), n_top=0, cache=cache)
    steps = gen.generate(list(ids) + [pick], CONTINUE - 1, stop_at_eos=False, cached=len(ids))
    return [pick] + [s.token_id for s in steps]


class FullRun(NamedTuple):
    """The reference, computed once per text: everything the policies are compared with."""

    logits: np.ndarray  # [N, V]
    attn: list  # per layer [H, N, N]: the softmax weights of every position
    keys: list  # per layer [KV, N, hd], after RoPE
    values: list  # per layer [KV, N, hd]
    continuation: list  # CONTINUE greedy token ids


@functools.lru_cache(maxsize=4)
def full_run(lang: str, n: int = TEXT_TOKENS) -> FullRun:
    """The text through the full cache (one block, traced), then CONTINUE greedy tokens."""
    model, _tok = load_course_model()
    ids = list(text_ids(lang, n))
    cache = KVCache(model.config)
    logits, trace = model.forward(ids, cache=cache, trace=True)
    keys = [cache.keys(l).copy() for l in range(model.config.n_layers)]  # before the continuation writes more
    values = [cache.values(l).copy() for l in range(model.config.n_layers)]
    return FullRun(logits, trace.attn, keys, values, greedy_continuation(model, cache, ids, logits[-1]))


class PolicyRun(NamedTuple):
    logits: np.ndarray  # [N, V]
    kept: list  # per layer: the positions held at the end of the text
    nbytes: int  # the cache's size
    continuation: list  # CONTINUE greedy token ids
    last_look: np.ndarray  # [N]: the text's last query's attention per position (mean of heads and layers)


def policy_run(policy: str, ids: list[int], budget: int, sinks: int, full: FullRun) -> PolicyRun:
    """The text through the policy's cache of ``budget`` positions per layer.

    The first ``budget`` positions are written from the full run (engine.caches.base.write):
    while no more than that many exist, no policy has dropped any, so their keys, values and
    attention are the full cache's, and recomputing them would give the same numbers. The
    model reads the rest through the policy's cache.
    """
    model, _tok = load_course_model()
    if policy == "h2o":
        cache = HeavyHitterKVCache(model.config, budget=budget, recent=h2o_recent(budget))
    else:  # a rolling cache; with sinks, its first S slots keep positions 0 .. S-1
        model = windowed_model(budget - sinks, sinks) if policy == "sinks" else windowed_model(budget, 0)
        cache = RollingKVCache(model.config)
    write(cache, [k[:, :budget] for k in full.keys], [v[:, :budget] for v in full.values],
          [a[:, :budget, :budget] for a in full.attn])
    if policy == "h2o":  # evicts by attention, so it reads the rest one token at a time
        rest = [model.forward([i], cache=cache) for i in ids[budget:-1]]
        last, trace = model.forward(ids[-1:], cache=cache, trace=True)
        rest.append(last)
        kept = [cache.positions(l) for l in range(model.config.n_layers)]
    else:  # one block: the cache hands back what the mask allows (tests: the same as token by token)
        block, trace = model.forward(ids[budget:], cache=cache, trace=True)
        rest = [block]
        kept = [cache.held_positions()] * model.config.n_layers
    logits = np.concatenate([full.logits[:budget]] + rest)
    look = last_look([a[:, -1, :] for a in trace.attn], trace.key_pos, len(ids))
    return PolicyRun(logits, kept, cache.bytes_allocated, greedy_continuation(model, cache, ids, logits[-1]), look)


def last_look(rows, key_pos, n: int) -> np.ndarray:
    """[n]: the attention one query gives each position, the mean over heads and layers
    (rows: per layer [H, S] over keys at key_pos[l]; a position no key holds gets 0)."""
    out = np.zeros(n)
    for row, pos in zip(rows, key_pos):
        np.add.at(out, np.asarray(pos), np.asarray(row, dtype=np.float64).mean(axis=0))
    return out / len(rows)


def kl_per_position(ref, other) -> np.ndarray:
    """KL(ref || other) of the softmax of each row of two logit arrays [N, V], in nats."""
    def log_softmax(x):
        x = x - x.max(axis=-1, keepdims=True)
        return x - np.log(np.exp(x).sum(axis=-1, keepdims=True))
    lp, lq = log_softmax(ref.astype(np.float64)), log_softmax(other.astype(np.float64))
    return np.maximum((np.exp(lp) * (lp - lq)).sum(axis=-1), 0.0)  # [N]


def sink_share(attn, first: int, after: int) -> list[tuple[float, float]]:
    """Per layer: (attention the queries at positions >= ``after`` give the first ``first`` positions,
    averaged over heads and queries; the share an even spread over the visible keys would give)."""
    n = attn[0].shape[-1]
    even = float(np.mean([first / (q + 1) for q in range(after, n)]))
    return [(float(a[:, after:, :first].sum(axis=-1).mean()), even) for a in attn]


# --------------------------------------------------------------------------- figures


def _figure_kept(kept, ids, tok, policy: str, budget: int, lang):
    """Layers x positions: which positions each layer still holds after the last token of the text."""
    n, layers = len(ids), len(kept)
    held = [set(k.tolist()) for k in kept]
    z = [[1 if p in h else 0 for p in range(n)] for h in held]
    pieces = [show_piece(tok.decode([i])) for i in ids]
    state = [t({"en": "evicted", "zh-TW": "已逐出"}, lang), t({"en": "kept", "zh-TW": "保留"}, lang)]
    hover = [[f"{p}: {pieces[p]} — {state[z[l][p]]}" for p in range(n)] for l in range(layers)]
    y = [t(L.layer(l + 1), lang) for l in range(layers)]
    data = [{"type": "heatmap", "z": z, "x": list(range(n)), "y": y, "zmin": 0, "zmax": 1, "showscale": False,
             "colorscale": [[0, "rgba(140,140,140,0.15)"], [1, COLORS["blue"]]], "text": hover,
             "hovertemplate": "%{text}<extra>%{y}</extra>", "xgap": 1, "ygap": 2}]
    title = t({"en": f"{POLICIES[policy]['en']}: the {budget} positions each layer keeps at the end of the text",
               "zh-TW": f"{POLICIES[policy]['zh-TW']}：讀完整段文字時，每層保留的 {budget} 個位置"}, lang)
    lay = layout(t(L.POSITION, lang), "", height=230, yaxis={"autorange": "reversed"})
    rows = [[y[l], ", ".join(str(p) for p in k.tolist())] for l, k in enumerate(kept)]
    return figure("kept", title, data, lay, [t(L.LAYER, lang), t({"en": "positions kept", "zh-TW": "保留的位置"}, lang)], rows)


def _figure_quality(kls: dict, budget: int, lang):
    """KL divergence from the full cache at every position, one line per policy."""
    colors = {"window": COLORS["grey"], "sinks": COLORS["blue"], "h2o": COLORS["orange"]}
    n = len(next(iter(kls.values())))
    data = [{"type": "scatter", "mode": "lines", "name": t(POLICIES[p], lang), "x": list(range(n)),
             "y": floats(k), "line": {"color": colors[p], "width": 1.5},
             "hovertemplate": "%{x}: %{y:.3g}<extra>%{fullData.name}</extra>"} for p, k in kls.items()]
    title = t({"en": f"How far each cache of {budget} positions drifts from the full cache, position by position",
               "zh-TW": f"每種 {budget} 個位置的快取，在每個位置和完整快取差多少"}, lang)
    lay = layout(t(L.POSITION, lang), t({"en": "KL divergence from the full cache (nats)",
                                         "zh-TW": "和完整快取的 KL 散度（nat）"}, lang),
                 shapes=[{"type": "line", "x0": budget - 0.5, "x1": budget - 0.5, "y0": 0, "y1": 1, "yref": "paper",
                          "line": {"color": COLORS["grey"], "dash": "dot", "width": 1}}],
                 yaxis={"rangemode": "tozero"})
    cols = [t(L.POSITION, lang)] + [t(POLICIES[p], lang) for p in kls]
    rows = [[i] + [fmt_num(k[i]) for k in kls.values()] for i in range(n)]
    return figure("quality", title, data, lay, cols, rows)


def _figure_last_look(looks: dict, ids, tok, sinks: int, lang):
    """Where the text's last token looks: its attention per position, full cache against the
    caches of the budget (the mean over heads and layers; 0 where a cache no longer holds it)."""
    colors = {"full": COLORS["grey"], "window": COLORS["orange"], "sinks": COLORS["blue"], "h2o": COLORS["green"]}
    names = {"full": FULL, **POLICIES}
    pieces = [show_piece(tok.decode([i])) for i in ids]
    n = len(ids)
    data = [{"type": "scatter", "mode": "lines+markers", "name": t(names[p], lang), "x": list(range(n)),
             "y": floats(look), "text": pieces, "line": {"color": colors[p], "width": 1.5,
                                                         "dash": "dot" if p == "full" else "solid"},
             "marker": {"size": 4}, "hovertemplate": "%{x} %{text}: %{y:.3f}<extra>%{fullData.name}</extra>"}
            for p, look in looks.items()]
    title = t({"en": "Where the text's last token looks: its attention on each position (mean of heads and layers)",
               "zh-TW": "文字的最後一個詞元看向哪裡：它分給每個位置的注意力（各 head、各層平均）"}, lang)
    shapes = [{"type": "rect", "x0": -0.5, "x1": sinks - 0.5, "y0": 0, "y1": 1, "yref": "paper", "line": {"width": 0},
               "fillcolor": "rgba(60,120,220,0.10)"}] if "sinks" in looks else []
    lay = layout(t(L.POSITION, lang), t({"en": "attention weight", "zh-TW": "注意力權重"}, lang), height=300,
                 shapes=shapes, yaxis={"rangemode": "tozero"})
    cols = [t(L.POSITION, lang), t({"en": "token", "zh-TW": "詞元"}, lang)] + [t(names[p], lang) for p in looks]
    rows = [[i, pieces[i]] + [fmt_num(look[i]) for look in looks.values()] for i in range(n)]
    return figure("last_look", title, data, lay, cols, rows)


def _summary_table(runs: dict, logits, full_bytes: int, ref_cont, budget: int, tok, lang) -> dict:
    """One row per cache: bytes, mean KL and top-1 agreement after the budget, and its continuation."""
    cols = [t({"en": "cache", "zh-TW": "快取"}, lang), t({"en": "cache size", "zh-TW": "快取大小"}, lang),
            t({"en": f"mean KL after the first {budget} positions", "zh-TW": f"前 {budget} 個位置之後的平均 KL"}, lang),
            t({"en": "same top-1 token as the full cache", "zh-TW": "最可能的詞元和完整快取相同"}, lang),
            t({"en": "greedy continuation", "zh-TW": "貪婪解碼接著寫"}, lang)]
    rows = [[t(FULL, lang), fmt_bytes(full_bytes), "0", fmt_percent(1.0), tok.decode(ref_cont)]]
    for p, (run, kl) in runs.items():
        same = float(np.mean(run.logits[budget:].argmax(-1) == logits[budget:].argmax(-1)))
        rows.append([t(POLICIES[p], lang), fmt_bytes(run.nbytes), fmt_num(float(kl[budget:].mean())),
                     fmt_percent(same), tok.decode(run.continuation)])
    title = t({"en": "Every cache against the full one, on the same text", "zh-TW": "同一段文字：每種快取和完整快取對照"}, lang)
    return table(title, cols, rows)


# --------------------------------------------------------------------------- notes and run


def _sink_note(attn, sinks: int, budget: int, lang) -> str:
    shares = sink_share(attn, sinks, budget)
    per_layer = t({"en": ", ", "zh-TW": "、"}, lang).join(fmt_percent(s) for s, _ in shares)
    even = fmt_percent(shares[0][1])
    return t({"en": (f"Do the first {sinks} positions act as attention sinks in this model? With the full cache, queries "
                     f"past position {budget} give them {per_layer} of their attention (layers 1 to {len(shares)}); "
                     f"if the attention were spread evenly over the keys they see, these {sinks} positions would get "
                     f"{even} together."),
              "zh-TW": (f"在這個模型裡，最前面 {sinks} 個位置是注意力匯聚點嗎？用完整快取時，位置 {budget} 之後的 query "
                        f"分給它們的注意力是 {per_layer}（第 1 到第 {len(shares)} 層）；如果注意力平均分給看得到的每個 key，"
                        f"這 {sinks} 個位置合起來會拿到 {even}。")}, lang)


def _look_note(looks: dict, sinks: int, lang) -> str:
    """How much of the last token's attention the first S positions get under each cache."""
    share = {p: fmt_percent(float(look[:sinks].sum())) for p, look in looks.items()}
    if "sinks" in looks:
        return t({"en": (f"The text's last token gives the first {sinks} positions {share['full']} of its attention with "
                         f"the full cache and {share['sinks']} with the sinks kept; the window alone holds none of them "
                         f"({share['window']}), so that attention goes to the positions of the window instead."),
                  "zh-TW": (f"文字的最後一個詞元，用完整快取時分給最前面 {sinks} 個位置的注意力是 {share['full']}，"
                            f"留下注意力匯聚點時是 {share['sinks']}；只留視窗的話這些位置都不在快取裡（{share['window']}），"
                            f"原本給它們的注意力就改落到視窗裡的位置。")}, lang)
    others = [p for p in looks if p != "full"]
    return t({"en": (f"The text's last token gives the first {sinks} positions {share['full']} of its attention with the "
                     f"full cache; in the caches of the budget: "
                     + ", ".join(f"{POLICIES[p]['en']} {share[p]}" for p in others) + "."),
              "zh-TW": (f"文字的最後一個詞元，用完整快取時分給最前面 {sinks} 個位置的注意力是 {share['full']}；同樣預算的快取裡，"
                        + "、".join(f"{POLICIES[p]['zh-TW']}是 {share[p]}" for p in others) + "。")}, lang)


def _notes(policy: str, budget: int, sinks: int, looks: dict, lang) -> list[str]:
    notes = [_look_note(looks, sinks, lang), t({"en": ("Positions keep their place in the text: keys are stored after RoPE, with their own positions, "
                       "so a query reading sink 0 sees a key far away. StreamingLLM numbers positions inside the cache "
                       "instead, so that a long stream never shows the model a distance it did not learn. Here every "
                       "text stays inside the course model's context window, and the full cache sees the same positions."),
                "zh-TW": ("位置保持在原文裡的編號：key 是套用 RoPE 之後才存進快取，用的是自己原本的位置，所以 query 讀位置 0 "
                          "的注意力匯聚點時，看到的是一個很遠的 key。StreamingLLM 則改用快取裡的位置編號，讓很長的串流不會出現"
                          "模型沒學過的距離。這裡每段文字都在課程模型的上下文視窗之內，完整快取看到的也是同樣的位置。")}, lang)]
    if policy == "h2o":
        recent = h2o_recent(budget)
        notes.append(t({"en": (f"H2O here keeps the {recent} newest positions and the {budget - recent} others "
                               "with the largest attention received so far, one set per layer (summed over heads)."),
                        "zh-TW": (f"這裡的 H2O 保留最新的 {recent} 個位置，再加上到目前為止拿到最多注意力的 "
                                  f"{budget - recent} 個位置；每層一組（各 head 相加）。")}, lang))
    return notes


def _other_script(text: str, lang: str) -> bool:
    """Whether ``text`` holds letters of the other language: Latin after a Chinese text, Han after an English one."""
    if lang == "zh-TW":
        return any("a" <= ch.lower() <= "z" for ch in text)
    return any("\u4e00" <= ch <= "\u9fff" for ch in text)


LANGUAGES = {"en": {"en": "English", "zh-TW": "英文"}, "zh-TW": {"en": "Chinese", "zh-TW": "中文"}}


def _language_note(tok, full_cont, runs: dict, text: str, lang) -> str | None:
    """The small course model often continues a text in the other language: say so where it does, and
    whether the full cache did too (then it is the model, not the cache)."""
    switched = [_other_script(tok.decode(ids), text) for ids in [full_cont] + [r.continuation for r, _kl in runs.values()]]
    if not any(switched):
        return None
    this, other = LANGUAGES[text], LANGUAGES["en" if text == "zh-TW" else "zh-TW"]
    return t({"en": (f"The continuations are the course model's own greedy tokens. The model is small, and after "
                     f"{'a' if text == 'zh-TW' else 'an'} {this['en']} text it often switches to {other['en']}"
                     + ("; the full cache's continuation did too, so that is the model, not the cache." if switched[0]
                        else ".")),
              "zh-TW": (f"「貪婪解碼接著寫」那一欄是課程模型自己寫出的詞元。這個模型很小，接著{this['zh-TW']}往下寫時，"
                        f"常常寫著寫著就換成{other['zh-TW']}"
                        + ("；完整快取的續寫也換了語言，所以這是模型本身的能力，不是快取造成的。" if switched[0] else "。"))}, lang)


def run(values: dict, lang: str) -> dict:
    policy, budget, sinks, text = values["policy"], int(values["budget"]), int(values["sinks"]), values["text"]
    if sinks >= budget:
        raise LessonInputError(f"The sinks ({sinks}) must leave room for a window: use fewer than {budget}.",
                               f"注意力匯聚點（{sinks} 個）要留一些名額給視窗：請少於 {budget} 個。")
    model, tok = load_course_model()
    ids = list(text_ids(text))
    full = full_run(text)
    full_bytes = KVCache(model.config, max_len=len(ids) + CONTINUE).bytes_allocated
    runs = {}
    for p in dict.fromkeys(["window", policy]):  # the chosen policy against the plain window
        r = policy_run(p, ids, budget, sinks, full)
        runs[p] = (r, kl_per_position(full.logits, r.logits))
    full_look = last_look([a[:, -1, :] for a in full.attn], [np.arange(len(ids))] * len(full.attn), len(ids))
    looks = {"full": full_look, **{p: r.last_look for p, (r, _kl) in runs.items()}}
    return {"figures": [_figure_kept(runs[policy][0].kept, ids, tok, policy, budget, lang),
                        _figure_quality({p: kl for p, (_r, kl) in runs.items()}, budget, lang),
                        _figure_last_look(looks, ids, tok, sinks, lang)],
            "tables": [_summary_table(runs, full.logits, full_bytes, full.continuation, budget, tok, lang)],
            "notes": [_sink_note(full.attn, sinks, budget, lang)] + _notes(policy, budget, sinks, looks, lang)
            + [n for n in (_language_note(tok, full.continuation, runs, text, lang),) if n]}
