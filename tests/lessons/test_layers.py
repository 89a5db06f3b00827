"""layers: one cache per layer; the logit lens ends at the model's own prediction."""
import numpy as np
import pytest

from lessons import registry
from lessons.base import LessonInputError

from lesson_checks import HOSTILE_TEXTS, check_both_languages, check_describe, check_output


def test_defaults_both_languages(course):
    check_describe("layers")
    check_both_languages("layers")


def test_cache_rows_and_final_guess(course):
    model, tok = course
    prompt = "The king and the"
    ids = tok.encode(prompt)
    out = check_output(registry.run("layers", {"prompt": prompt}, "en"))
    rows = out["figures"][0]["table"]["rows"]
    assert [r[0] for r in rows] == list(range(1, len(ids) + 1))
    cache = model.new_cache()
    model.forward(ids, cache=cache)
    assert rows[-1][-1] == cache.bytes_used
    lens = out["figures"][1]["table"]["rows"]
    assert len(lens) == model.config.n_layers + 1
    logits = np.asarray(model.forward(ids))[-1]
    assert lens[-1][1] == tok.pieces([int(np.argmax(logits))])[0]


@pytest.mark.parametrize("text", [s for s in HOSTILE_TEXTS if s.strip() and len(s) < 40])
def test_hostile_prompts_are_data(course, text):
    check_output(registry.run("layers", {"prompt": text}, "en"))


def test_errors(course):
    with pytest.raises(LessonInputError):
        registry.run("layers", {"prompt": ""}, "en")
