"""embeddings: the groups are on the map, reader words get neighbours, unknown words an error."""
import numpy as np
import pytest

from engine.training.corpus import SEMANTIC_GROUPS
from lessons.common import registry
from lessons.common.base import LessonInputError

from lesson_checks import check_both_languages, check_describe, check_output, column, number, records


def test_defaults_both_languages(course):
    check_describe("embeddings")
    check_both_languages("embeddings")


def test_every_group_word_is_on_the_map(course):
    out = check_output(registry.run("embeddings", {"words": ""}, "en"))
    words = set(column(out["figures"][0]["table"], "word"))
    for by_lang in SEMANTIC_GROUPS.values():
        assert set(by_lang["en"]) | set(by_lang["zh-TW"]) <= words
    assert out["tables"][0]["rows"] == []


@pytest.mark.parametrize("which", ["input", "output"])
def test_neighbours_are_cosine_sorted(course, which):
    model, tok = course
    out = registry.run("embeddings", {"words": "king, 咖啡", "table": which}, "en")
    rows = [(r["your word"], r["neighbour"], number(r["cosine similarity"])) for r in records(out["tables"][0])]
    for w in ("king", "咖啡"):
        sims = [sim for word, _, sim in rows if word == w]
        assert len(sims) == 5 and sims == sorted(sims, reverse=True)
        assert all(-1 <= s <= 1 for s in sims)
    # independent check: for neighbours that are group words, recompute the cosine here
    emb = np.asarray(model.embed if which == "input" else model.lm_head.T, dtype=np.float64)  # [V, D]

    def vec(w):
        return emb[tok.encode(w if "\u4e00" <= w[0] <= "\u9fff" else " " + w)].mean(axis=0)

    group_words = {w for g in SEMANTIC_GROUPS.values() for ws in g.values() for w in ws}
    for word, neighbour, sim in rows:
        assert neighbour != word and neighbour not in word
        if neighbour in group_words:
            a, b = vec(word), vec(neighbour)
            assert sim == pytest.approx(a @ b / np.linalg.norm(a) / np.linalg.norm(b), abs=1e-3)
    # and no group word is closer to a reader's word than its reported first neighbour
    for w in ("king", "咖啡"):
        a = vec(w)
        best = max(a @ vec(g) / np.linalg.norm(a) / np.linalg.norm(vec(g)) for g in group_words if g != w)
        assert best <= next(sim for word, _, sim in rows if word == w) + 1e-3


@pytest.mark.parametrize("words", ["鬱悶", "<img src=x onerror=alert(1)>", "a, b, c, d, e, f, g, h, i"])
def test_unknown_or_too_many_words(course, words):
    with pytest.raises(LessonInputError) as e:
        registry.run("embeddings", {"words": words}, "en")
    assert e.value.messages["zh-TW"] != e.value.messages["en"]
