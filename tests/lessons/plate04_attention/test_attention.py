"""attention: rows are distributions, the future is masked, softmax of the scores."""
import numpy as np
import pytest

from lessons.common import registry
from lessons.common.base import LessonInputError

from lesson_checks import HOSTILE_TEXTS, check_both_languages, check_describe, check_output


def _heatmap(out):
    """The weights as the figure draws them: z[query][key], None where the key is in the future."""
    return out["figures"][0]["figure"]["data"][0]["z"]


def test_defaults_both_languages(course):
    check_describe("attention")
    check_both_languages("attention")


@pytest.mark.parametrize("head", ["1", "2", "mean"])
def test_rows_sum_to_one_and_future_is_blank(course, head):
    model, _ = course
    for layer in range(1, model.config.n_layers + 1):
        out = check_output(registry.run("attention", {"layer": str(layer), "head": head}, "en"))
        rows = out["figures"][0]["table"]["rows"]
        for i, (z, r) in enumerate(zip(_heatmap(out), rows)):
            assert all(w is None for w in z[i + 1:]) and all(c == "" for c in r[1:][i + 1:])
            assert sum(z[: i + 1]) == pytest.approx(1.0, abs=1e-3)


def test_newest_weights_are_softmax_of_scores(course):
    out = registry.run("attention", {"layer": "2", "head": "1"}, "en")
    scores_bar, weights_bar = out["figures"][1]["figure"]["data"]
    scores, weights = np.array(scores_bar["y"]), np.array(weights_bar["y"])
    e = np.exp(scores - scores.max())
    assert np.allclose(e / e.sum(), weights, atol=1e-3)


def test_matches_an_independent_forward(course):
    model, tok = course
    prompt = "今天天氣真好"
    ids = tok.encode(prompt)
    _, tr = model.forward(ids, trace=True)
    out = registry.run("attention", {"prompt": prompt, "layer": "1", "head": "1"}, "en")
    last = _heatmap(out)[-1]
    assert np.allclose(last, np.asarray(tr.attn[0])[0, -1], atol=1e-3)


@pytest.mark.parametrize("text", [s for s in HOSTILE_TEXTS if s.strip() and len(s) < 40])
def test_hostile_prompts_are_data(course, text):
    check_output(registry.run("attention", {"prompt": text}, "zh-TW"))


@pytest.mark.parametrize("values", [{"prompt": ""}, {"prompt": "word " * 60}, {"layer": "99"}, {"head": "0"}])
def test_errors(course, values):
    with pytest.raises(LessonInputError):
        registry.run("attention", values, "en")


@pytest.mark.parametrize("lang, looks_back", [("en", "looks back"), ("zh-TW", "回頭看")])
def test_the_mask_note_says_tokens_look_back(course, lang, looks_back):
    """The pages say a token looks back at earlier tokens; the demo once said 「永遠不會往後看」."""
    note = registry.run("attention", None, lang)["notes"][0]
    assert looks_back in note and "往後看" not in note
