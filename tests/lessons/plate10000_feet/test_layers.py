"""layers: one cache per layer; the logit lens ends at the model's own prediction, and the
default prompts show the guess changing on the way up."""
import numpy as np
import pytest

from lessons.common import registry
from lessons.common.base import LessonInputError
from lessons.plate10000_feet.layers import EXAMPLES

from lesson_checks import HOSTILE_TEXTS, check_both_languages, check_describe, check_output, column, numbers


def test_defaults_both_languages(course):
    check_describe("layers")
    check_both_languages("layers")


def test_cache_rows_and_final_guess(course):
    model, tok = course
    prompt = "The king and the"
    ids = tok.encode(prompt)
    out = check_output(registry.run("layers", {"prompt": prompt}, "en"))
    tbl = out["figures"][0]["table"]
    assert numbers(tbl, "tokens read") == list(range(1, len(ids) + 1))
    cache = model.new_cache()
    model.forward(ids, cache=cache)
    assert numbers(tbl, "total (bytes)")[-1] == cache.bytes_used
    lens = out["figures"][1]["table"]
    assert len(lens["rows"]) == model.config.n_layers + 1
    logits = np.asarray(model.forward(ids))[-1]
    assert column(lens, "1st guess")[-1] == tok.pieces([int(np.argmax(logits))])[0]


def _top_guess_per_layer(model, tok, prompt):
    """Independent logit lens: one full forward pass (not the lesson's token-by-token feed)."""
    _, tr = model.forward(tok.encode(prompt), trace=True)
    return [int(np.argmax(np.asarray(model.logits_from_hidden(h[-1:]))[0])) for h in tr.hidden[1:]]


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_each_languages_example_changes_its_guess_between_layers(course, lang):
    """Issue 11: 「我點了一杯珍珠」 gave 奶 from layer 1 on, so the demo showed nothing forming."""
    model, tok = course
    tops = _top_guess_per_layer(model, tok, EXAMPLES[lang])
    assert len(set(tops)) >= 2, tok.pieces(tops)
    out = registry.run("layers", None, lang)
    assert registry.describe("layers", lang)["controls"][0]["default"] == EXAMPLES[lang]
    assert column(out["figures"][1]["table"], {"en": "1st guess", "zh-TW": "第 1 名"}[lang])[1:] == tok.pieces(tops)


def test_the_other_example_is_one_click_away(course):
    en = registry.run("layers", None, "en")
    assert [a["values"] for a in en["actions"]] == [{"prompt": EXAMPLES["zh-TW"]}]
    assert registry.run("layers", {"prompt": "abc"}, "en")["actions"] != en["actions"]


@pytest.mark.parametrize("text", [s for s in HOSTILE_TEXTS if s.strip() and len(s) < 40])
def test_hostile_prompts_are_data(course, text):
    check_output(registry.run("layers", {"prompt": text}, "en"))


def test_errors(course):
    with pytest.raises(LessonInputError):
        registry.run("layers", {"prompt": ""}, "en")
