"""next_token: a real distribution, greedy at temperature 0, a loop the reader can step."""
import numpy as np
import pytest

from lessons.common import registry
from lessons.common.base import LessonInputError

from lesson_checks import HOSTILE_TEXTS, check_both_languages, check_describe, check_output, number, records, run_json_ok

MODEL, AFTER = "model (temperature 1)", "after temperature / top-k / top-p"


def _bars(out):
    """The table rows with numbers parsed: id, the model's odds, the odds after the filters, drawn."""
    return [{"id": int(number(r["id"])), "model": number(r[MODEL]), "after": number(r[AFTER]), "drawn": r["drawn"] != ""}
            for r in records(out["figures"][0]["table"])]


def test_defaults_both_languages(course):
    check_describe("next_token")
    check_both_languages("next_token")


@pytest.mark.parametrize("values", [{}, {"temperature": 2.0}, {"top_k": 3}, {"top_p": 0.3}, {"temperature": 0.3, "seed": 7}])
def test_probabilities_are_a_distribution(course, values):
    out = check_output(registry.run("next_token", values, "en"))
    rows = _bars(out)
    bars = out["figures"][0]["figure"]["data"]
    model_p, after = bars[1]["y"], bars[0]["y"]  # the figure's own numbers (6 significant digits)
    assert all(0 <= p <= 1 for p in model_p + after)
    assert sum(model_p) <= 1 + 1e-5 and sum(after) <= 1 + 1e-5
    assert [r["after"] for r in rows] == pytest.approx(after, rel=5e-3, abs=1e-9)  # the table shows the same
    assert sum(r["drawn"] for r in rows) == 1  # exactly one drawn token
    drawn = next(r for r in rows if r["drawn"])
    assert drawn["after"] > 0  # a filtered-out token is never drawn
    if values.get("top_k"):
        assert sum(p > 0 for p in after) <= values["top_k"]


def test_temperature_zero_picks_the_argmax(course):
    model, tok = course
    prompt = "The cat sat on the"
    logits = np.asarray(model.forward(tok.encode(prompt)))[-1]
    out = registry.run("next_token", {"prompt": prompt, "temperature": 0.0, "seed": 123}, "en")
    drawn = next(r for r in _bars(out) if r["drawn"])
    assert drawn["id"] == int(np.argmax(logits))
    assert drawn["after"] == 1.0


def test_same_seed_same_token_and_append_continues(course):
    a = registry.run("next_token", {"seed": 5}, "en")
    b = registry.run("next_token", {"seed": 5}, "en")
    assert a == b
    if a["actions"] and a["actions"][0]["values"]["prompt"] != "The cat sat on the":
        new = a["actions"][0]["values"]["prompt"]
        assert new.startswith("The cat sat on the") and len(new) > len("The cat sat on the")
        check_output(registry.run("next_token", {"prompt": new}, "en"))  # the loop steps on


@pytest.mark.parametrize("text", [s for s in HOSTILE_TEXTS if s.strip() and len(s) <= 300])
def test_hostile_prompts_are_data(course, text):
    out = check_output(registry.run("next_token", {"prompt": text}, "en"))
    assert "".join(c["text"] for c in out["tokens"]) or out["tokens"] == []


@pytest.mark.parametrize("values", [{"prompt": ""}, {"prompt": "   "}, {"prompt": "a" * 301}, {"temperature": -1},
                                    {"top_p": 0}, {"top_k": "many"}, {"seed": 1000}])
def test_bad_input_is_a_bilingual_error(course, values):
    with pytest.raises(LessonInputError):
        registry.run("next_token", values, "en")
    reply = run_json_ok("next_token", values, "zh-TW")
    assert reply["ok"] is False and reply["error"]["message"]


def test_prompt_longer_than_the_context_is_an_error(course):
    model, tok = course
    long_prompt = " cat" * (model.config.max_seq_len + 1)
    if len(long_prompt) > 300:
        long_prompt = "鬱" * 100  # 300 byte tokens in 100 characters
    assert len(tok.encode(long_prompt)) > model.config.max_seq_len, "no prompt the text box allows is too long"
    with pytest.raises(LessonInputError) as e:
        registry.run("next_token", {"prompt": long_prompt}, "en")
    assert str(model.config.max_seq_len) in e.value.messages["en"]
