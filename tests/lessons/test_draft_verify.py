"""draft_verify: the rounds are the engine's, the text is greedy's, the cache chart shows the
rollbacks, and the time estimate follows the engine's cost model."""
import pytest

from engine.speculative import LayerDrafter, NgramDrafter, greedy_ids, speculative_generate
from lessons import registry
from lessons.base import LessonInputError

from lesson_checks import check_both_languages, check_describe, check_output, column, number, numbers, records


def test_defaults_both_languages(course):
    check_describe("draft_verify")
    check_both_languages("draft_verify", {"prompt": "The cat sat"})


@pytest.mark.parametrize("drafter", ["layers1", "layers2", "ngram"])
@pytest.mark.parametrize("prompt", ["The teacher wants to", "我們今天", "The cat sat"])
def test_text_equals_greedy_and_rounds_add_up(course, drafter, prompt):
    model, tok = course
    out = check_output(registry.run("draft_verify", {"prompt": prompt, "drafter": drafter, "k": 3, "tokens": 20}, "en"))
    ids = tok.encode(prompt)
    greedy = tok.decode(greedy_ids(model, ids, 20, eos_id=tok.eos_id)[len(ids):])
    assert out["notes"][0] == f"Generated: “{greedy}”: the same text as plain greedy decoding, token for token."
    cache = records(out["figures"][1]["table"])
    rounds = records(out["figures"][0]["table"])
    assert len(cache) == len(rounds)
    before = len(ids)  # the prefill wrote the prompt
    for c, r in zip(cache, rounds):
        n_drafted = 0 if r["guesses"] == "—" else len(r["guesses"].split(" "))
        n_acc = 0 if r["accepted guesses"] == "—" else len(r["accepted guesses"].split(" "))
        assert number(c["cache before"]) == before
        assert number(c["after the pass"]) == before + 1 + n_drafted  # every fed token written
        if r["rejected guesses"] == "—":
            assert c["truncated to"] == "—" and r["kind"] in ("bonus", "no guess")
            before += 1 + n_drafted
        else:  # a rejection: back to pending + the accepted guesses
            assert number(c["truncated to"]) == before + 1 + n_acc and r["kind"] == "correction"
            before += 1 + n_acc


def test_the_cache_chart_steps_up_and_back(course):
    out = registry.run("draft_verify", {"drafter": "layers1", "k": 6}, "en")
    fig = out["figures"][1]["figure"]
    line, cuts = fig["data"]
    ys = line["y"]
    xs = line["x"]
    assert all(a <= b for a, b in zip(xs, xs[1:]))  # a step chart: x never goes back
    drops = [(a, b) for a, b in zip(ys, ys[1:]) if b < a]
    assert drops and len(drops) == len(cuts["y"])  # every drop is marked as a truncation
    assert [b for _a, b in drops] == cuts["y"]


def test_tokens_per_pass_and_time_follow_the_engine(course):
    model, tok = course
    values = {"prompt": "我們今天", "drafter": "ngram", "k": 4, "tokens": 30}
    out = registry.run("draft_verify", values, "en")
    run = speculative_generate(model, tok.encode("我們今天"), 30, NgramDrafter(3), 4, eos_id=tok.eos_id)
    time = records(out["figures"][2]["table"])
    assert number(time[1]["passes of the model"]) == len(run.rounds)
    assert number(time[0]["passes of the model"]) == len(run.generated) - 1
    assert number(time[1]["tokens per pass"]) == pytest.approx((len(run.generated) - 1) / len(run.rounds), rel=5e-3)
    assert f"{len(run.rounds)} passes of the model wrote {len(run.generated) - 1} tokens" in out["notes"][1]
    # n-gram lookup runs no model: the draft bar is empty, the passes are cheaper than greedy's
    bars = out["figures"][2]["figure"]["data"]
    assert bars[1]["y"] == [0, 0]
    assert bars[0]["y"][1] < bars[0]["y"][0] and "saved" in out["notes"][2]


def test_a_layer_draft_costs_time_of_its_own(course):
    out = registry.run("draft_verify", {"drafter": "layers2"}, "en")
    assert out["figures"][2]["figure"]["data"][1]["y"][1] > 0
    assert "draft model's passes" in out["notes"][2]


@pytest.mark.parametrize("values", [{"prompt": ""}, {"prompt": "   "}, {"k": 0}, {"k": 9}, {"tokens": 1},
                                    {"tokens": 49}, {"drafter": "layers9"}, {"prompt": "字" * 240}])
@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_errors_in_both_languages(course, values, lang):
    with pytest.raises(LessonInputError) as e:
        registry.run("draft_verify", values, lang)
    msg = e.value.message(lang)
    assert msg and (any("\u4e00" <= ch <= "\u9fff" for ch in msg) == (lang == "zh-TW"))
