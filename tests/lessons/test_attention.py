"""attention: rows are distributions, the future is masked, softmax of the scores."""
import numpy as np
import pytest

from lessons import registry
from lessons.base import LessonInputError

from lesson_checks import HOSTILE_TEXTS, check_both_languages, check_describe, check_output


def test_defaults_both_languages(course):
    check_describe("attention")
    check_both_languages("attention")


@pytest.mark.parametrize("head", ["1", "2", "mean"])
def test_rows_sum_to_one_and_future_is_blank(course, head):
    model, _ = course
    for layer in range(1, model.config.n_layers + 1):
        out = check_output(registry.run("attention", {"layer": str(layer), "head": head}, "en"))
        rows = out["figures"][0]["table"]["rows"]
        for i, r in enumerate(rows):
            weights = r[1:]
            assert all(w == "" for w in weights[i + 1:])
            assert sum(weights[: i + 1]) == pytest.approx(1.0, abs=1e-3)


def test_newest_weights_are_softmax_of_scores(course):
    out = registry.run("attention", {"layer": "2", "head": "1"}, "en")
    rows = out["figures"][1]["table"]["rows"]
    scores = np.array([r[2] for r in rows])
    weights = np.array([r[3] for r in rows])
    e = np.exp(scores - scores.max())
    assert np.allclose(e / e.sum(), weights, atol=1e-3)


def test_matches_an_independent_forward(course):
    model, tok = course
    prompt = "今天天氣真好"
    ids = tok.encode(prompt)
    _, tr = model.forward(ids, trace=True)
    out = registry.run("attention", {"prompt": prompt, "layer": "1", "head": "1"}, "en")
    last = out["figures"][0]["table"]["rows"][-1][1:]
    assert np.allclose(last, np.asarray(tr.attn[0])[0, -1], atol=1e-3)


@pytest.mark.parametrize("text", [s for s in HOSTILE_TEXTS if s.strip() and len(s) < 40])
def test_hostile_prompts_are_data(course, text):
    check_output(registry.run("attention", {"prompt": text}, "zh-TW"))


def test_errors(course):
    for values in ({"prompt": ""}, {"prompt": "word " * 60}, {"layer": "99"}, {"head": "0"}):
        with pytest.raises(LessonInputError):
            registry.run("attention", values, "en")
