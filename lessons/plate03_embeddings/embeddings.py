"""Plate 3: embeddings are coordinates on a semantic map. The course model's embedding rows of
the drinks / royalty / fruit words (both languages) are projected to 2-D with PCA; the
reader's own words are placed on the same map, with their nearest neighbours by cosine
similarity. The groups come from engine.training.corpus; the map from the trained weights alone.
"""
from __future__ import annotations

import functools
import re

import numpy as np

from engine import load_course_model
from engine.training.corpus import GROUP_LABELS, SEMANTIC_GROUPS
from lessons.common import labels as L
from lessons.common.base import LessonInputError, select, text
from lessons.common.figures import COLORS, figure, floats, fmt_num, fmt_percent, layout, t, table

NAME = "embeddings"
PLATE = "plates/03-embeddings"
TITLE = {"en": "Embeddings: a map of meaning", "zh-TW": "嵌入向量：語意地圖"}

MAX_WORDS = 8
MAX_PIECES = 4  # a word cut into more tokens than this has no single place on the map
N_NEIGHBOURS = 5
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_SEPARATORS = re.compile(r"[,，、;；\n]+")
LANG_NAMES = {"en": L.ENGLISH, "zh-TW": L.CHINESE}
TABLE_NAMES = {"input": {"en": "input embedding rows", "zh-TW": "輸入嵌入向量"},
               "output": {"en": "output embeddings (the output head's columns)", "zh-TW": "輸出嵌入向量（輸出層的欄向量）"}}
GROUP_COLORS = {"drinks": COLORS["orange"], "royalty": COLORS["purple"], "fruit": COLORS["green"]}

CONTROLS = (
    text("words", {"en": "Your words (comma-separated)", "zh-TW": "你的詞（用逗號分隔）"}, "tea, 女王",
         help={"en": f"Up to {MAX_WORDS} words in English or Chinese, e.g. coffee, 香蕉, prince.",
               "zh-TW": f"最多 {MAX_WORDS} 個英文或中文詞，例如 coffee、香蕉、prince。"},
         max_length=200),
    select("table", {"en": "Which vectors", "zh-TW": "哪一組向量"}, "input",
           [("input", {"en": "input embeddings (token → vector)", "zh-TW": "輸入嵌入向量（詞元 → 向量）"}),
            ("output", {"en": "output embeddings (vector → token)", "zh-TW": "輸出嵌入向量（向量 → 詞元）"})],
           help={"en": "The model has two tables: one turns a token into a vector, the other scores every token at the end.",
                 "zh-TW": "模型有兩張表：一張把詞元變成向量，另一張在最後替每個詞元打分數。"}),
)


def word_ids(tok, word: str) -> list[int]:
    """Token ids of a word as it appears in running text (English words after a space)."""
    return tok.encode(word if _CJK.match(word) else " " + word)


def embedding_table(model, which: str) -> np.ndarray:
    """[V, D] float64: the input embedding rows, or the output head's columns (one per token)."""
    return np.asarray(model.embed if which == "input" else model.lm_head.T, dtype=np.float64)


def word_vector(table: np.ndarray, ids: list[int]) -> np.ndarray:
    """The mean of the word's token vectors [D]."""
    return table[ids].mean(axis=0)


@functools.lru_cache(maxsize=2)
def _map(which: str):
    """The group words, their vectors, the PCA basis and the neighbour candidates (cached)."""
    model, tok = load_course_model()
    words = [(g, lang, w) for g, by_lang in SEMANTIC_GROUPS.items() for lang in ("en", "zh-TW") for w in by_lang[lang]]
    emb = embedding_table(model, which)  # [V, D]
    vecs = np.stack([word_vector(emb, word_ids(tok, w)) for _, _, w in words])  # [N, D]
    mean = vecs.mean(axis=0)
    _, s, vt = np.linalg.svd(vecs - mean, full_matrices=False)
    basis = vt[:2]  # [2, D]
    basis *= np.sign(basis[np.arange(2), np.abs(basis).argmax(axis=1)])[:, None]  # fixed signs
    explained = float((s[:2] ** 2).sum() / (s**2).sum())
    # Neighbour candidates: the group words and every vocabulary token that is whole text.
    cand_names = [w for _, _, w in words]
    cand_vecs = [v for v in vecs]
    for i in range(257, tok.vocab_size):
        try:
            piece = tok.token_bytes(i).decode("utf-8").strip()
        except UnicodeDecodeError:
            continue
        if len(piece) >= 2 or _CJK.match(piece or " "):
            if piece not in cand_names:
                cand_names.append(piece)
                cand_vecs.append(emb[i])
    cands = np.stack(cand_vecs)
    cands /= np.linalg.norm(cands, axis=1, keepdims=True)
    return emb, words, vecs, mean, basis, explained, cand_names, cands


def _parse(tok, raw: str) -> list[tuple[str, list[int]]]:
    words = [w.strip() for w in _SEPARATORS.split(raw) if w.strip()]
    if len(words) > MAX_WORDS:
        raise LessonInputError(f"Too many words: {len(words)}; the map takes at most {MAX_WORDS}.",
                               f"詞太多了：{len(words)} 個；地圖最多放 {MAX_WORDS} 個。")
    out = []
    for w in dict.fromkeys(words):  # keep order, drop repeats
        ids = word_ids(tok, w)
        split = [i for i in ids if _is_split(tok, i)]
        if split or len(ids) > MAX_PIECES:
            raise LessonInputError(
                f"Unknown word “{w}”: the course model never learned it as a whole "
                f"(it is cut into {len(ids)} pieces). Try a word from its stories, e.g. coffee, king, mango.",
                f"不認識「{w}」這個詞：課程模型沒有把它當成一整塊學過（它被切成 {len(ids)} 塊）。"
                f"試試課程語料裡出現過的詞，例如咖啡、國王、芒果。")
        out.append((w, ids))
    return out


def _is_split(tok, i: int) -> bool:
    try:
        tok.token_bytes(i).decode("utf-8")
        return False
    except UnicodeDecodeError:
        return True


def _figure_map(words, xy, mine, my_xy, lang) -> dict:
    """The group words (and the reader's, as stars) on the first two principal components."""
    data, rows, grp = [], [], t({"en": "group", "zh-TW": "類別"}, lang)
    for g in SEMANTIC_GROUPS:
        idx = [k for k, (gg, _, _) in enumerate(words) if gg == g]
        name = t(GROUP_LABELS[g], lang)
        data.append({"type": "scatter", "mode": "markers+text", "name": name,
                     "x": floats(xy[idx, 0]), "y": floats(xy[idx, 1]), "text": [words[k][2] for k in idx],
                     "textposition": "top center", "marker": {"size": 10, "color": GROUP_COLORS.get(g, COLORS["grey"]),
                                                              "symbol": ["circle" if words[k][1] == "en" else "diamond" for k in idx]},
                     "hovertemplate": f"%{{text}}<extra>{name}</extra>"})
        rows += [[words[k][2], name, t(LANG_NAMES[words[k][1]], lang), xy[k, 0], xy[k, 1]] for k in idx]
    if mine:
        you = t({"en": "your words", "zh-TW": "你的詞"}, lang)
        data.append({"type": "scatter", "mode": "markers+text", "name": you, "x": floats(my_xy[:, 0]), "y": floats(my_xy[:, 1]),
                     "text": [w for w, _ in mine], "textposition": "bottom center",
                     "marker": {"size": 15, "symbol": "star", "color": COLORS["vermillion"], "line": {"width": 1, "color": "#000"}},
                     "hovertemplate": f"%{{text}}<extra>{you}</extra>"})
        rows += [[w, you, "", p[0], p[1]] for (w, _), p in zip(mine, my_xy)]
    title = t({"en": "The semantic map: embeddings projected to 2-D (PCA)", "zh-TW": "語意地圖：把嵌入向量投影到平面上（PCA）"}, lang)
    lay = layout(t({"en": "principal component 1", "zh-TW": "第一主成分"}, lang),
                 t({"en": "principal component 2", "zh-TW": "第二主成分"}, lang), height=520)
    cols = [t({"en": "word", "zh-TW": "詞"}, lang), grp, t({"en": "language", "zh-TW": "語言"}, lang), "PC1", "PC2"]
    return figure("map", title, data, lay, cols, rows)


def _table_neighbours(mine, my_vecs, cand_names, cands, lang) -> dict:
    rows = []
    if mine:
        sims = (my_vecs / np.linalg.norm(my_vecs, axis=1, keepdims=True)) @ cands.T  # [n, C]
        for (w, _), s in zip(mine, sims):
            # skip the word itself and its own pieces (女王 is made of 女 and 王)
            order = [int(j) for j in np.argsort(-s, kind="stable") if cand_names[j] not in w][:N_NEIGHBOURS]
            rows += [[w, r, cand_names[j], s[j]] for r, j in enumerate(order, start=1)]
    return table(t({"en": "Nearest neighbours of your words (cosine similarity, full vectors)",
                    "zh-TW": "你的詞最接近的鄰居（餘弦相似度，用完整向量計算）"}, lang),
                 [t({"en": "your word", "zh-TW": "你的詞"}, lang), t({"en": "rank", "zh-TW": "名次"}, lang),
                  t({"en": "neighbour", "zh-TW": "鄰居"}, lang), t({"en": "cosine similarity", "zh-TW": "餘弦相似度"}, lang)],
                 rows)


def _notes(words, vecs, explained, d_model, which, lang) -> list[str]:
    """Within-group vs between-group similarity, from the full vectors (not the 2-D picture)."""
    unit = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    cos = unit @ unit.T
    g_of = np.array([g for g, _, _ in words])
    same = (g_of[:, None] == g_of[None, :]) & ~np.eye(len(words), dtype=bool)
    diff = g_of[:, None] != g_of[None, :]
    within, between = fmt_num(cos[same].mean()), fmt_num(cos[diff].mean() + 0.0)
    return [
        t({"en": (f"Each word is the mean of its tokens' {TABLE_NAMES[which]['en']} of {d_model} numbers. "
                  f"The two axes keep {fmt_percent(explained)} of the spread of the group words."),
           "zh-TW": (f"每個詞都是它各個詞元的{TABLE_NAMES[which]['zh-TW']}取平均（每個向量 {d_model} 個數字）。"
                     f"兩條軸保留了這些類別詞 {fmt_percent(explained)} 的分佈變化。")}, lang),
        t({"en": f"Average cosine similarity: {within} between words of the same group, {between} between groups.",
           "zh-TW": f"平均餘弦相似度：同一類別的詞之間 {within}，不同類別之間 {between}。"}, lang),
        t({"en": "Circles are English words, diamonds Chinese; a star is a word you added.",
           "zh-TW": "圓點是英文詞，菱形是中文詞，星號是你加入的詞。"}, lang),
    ]


def run(values: dict, lang: str) -> dict:
    model, tok = load_course_model()
    emb, words, vecs, mean, basis, explained, cand_names, cands = _map(values["table"])
    mine = _parse(tok, values["words"])
    my_vecs = np.stack([word_vector(emb, ids) for _, ids in mine]) if mine else np.zeros((0, vecs.shape[1]))
    xy, my_xy = (vecs - mean) @ basis.T, (my_vecs - mean) @ basis.T  # [N, 2], [n, 2]
    return {"figures": [_figure_map(words, xy, mine, my_xy, lang)],
            "tables": [_table_neighbours(mine, my_vecs, cand_names, cands, lang)],
            "notes": _notes(words, vecs, explained, model.config.d_model, values["table"], lang)}
