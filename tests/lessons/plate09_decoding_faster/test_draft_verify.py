"""draft_verify: the rounds are the engine's, the text is greedy's, the cache chart shows the
rollbacks, and the time estimate follows the engine's cost model."""
import pytest

from engine import Generator, SamplingParams
from engine.speculative import LayerDrafter, NgramDrafter, estimate_time, pass_bytes, speculative_generate
from lessons.plate09_decoding_faster import draft_verify
from lessons.common import registry
from lessons.common.base import LessonInputError
from lessons.common.devices import DEVICES
from lessons.common.figures import fmt_percent, fmt_seconds

from lesson_checks import check_both_languages, check_describe, check_output, number, records


def test_defaults_both_languages(course):
    check_describe("draft_verify")
    check_both_languages("draft_verify", {"prompt": "The cat sat"})


@pytest.mark.parametrize("drafter", ["layers1", "layers2", "ngram"])
@pytest.mark.parametrize("prompt", ["The teacher wants to", "我們今天", "The cat sat"])
def test_text_equals_greedy_and_rounds_add_up(course, drafter, prompt):
    model, tok = course
    out = check_output(registry.run("draft_verify", {"prompt": prompt, "drafter": drafter, "k": 3, "tokens": 20}, "en"))
    ids = tok.encode(prompt)
    greedy = tok.decode([s.token_id for s in Generator(model, tok, SamplingParams(temperature=0), n_top=0).generate(ids, 20)])
    assert out["notes"][0] == f"Generated “{greedy}”: the same text as plain greedy decoding, token for token."
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
            assert c["truncated to"] == "—" and r["kind"] in ("bonus", "no guess", "end of text")
            before += 1 + n_drafted
        else:  # a rejection (or guesses past the end of the text): back to pending + the accepted guesses
            assert number(c["truncated to"]) == before + 1 + n_acc and r["kind"] in ("correction", "end of text")
            before += 1 + n_acc
    ended = rounds[-1]["kind"] == "end of text"
    assert ended == ("<|eos|>" in rounds[-1]["accepted guesses"] + rounds[-1]["the model's own token"])
    if ended:  # the text stops at the end-of-text token, and the page says so
        assert rounds[-1]["accepted guesses"].endswith("<|eos|>") or rounds[-1]["the model's own token"] == "<|eos|>"
        assert any("end-of-text token <|eos|>" in n for n in out["notes"])


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


@pytest.mark.parametrize("drafter", ["layers1", "layers2", "ngram"])
def test_the_time_figure_and_note_are_the_engines_estimate(course, drafter):
    """The third chart's bars (µs), its table's times and the note's saving are estimate_time's
    for the same run on the same device, not only in the right order (issue 19)."""
    model, tok = course
    values = {"prompt": "The cat sat on the mat. The cat", "drafter": drafter, "k": 3, "tokens": 12}
    out = registry.run("draft_verify", values, "en")
    ids = tok.encode(values["prompt"])
    drafter_obj = NgramDrafter(3) if drafter == "ngram" else LayerDrafter(model, int(drafter[-1]))
    run = speculative_generate(model, ids, values["tokens"], drafter_obj, values["k"], eos_id=tok.eos_id)
    device = DEVICES[draft_verify.DEVICE]
    est = estimate_time(model.config, run, device.peak_flops, device.bandwidth,
                        None if drafter == "ngram" else drafter_obj.draft.config)
    model_bars, draft_bars = out["figures"][2]["figure"]["data"]
    assert model_bars["y"] == pytest.approx([est.greedy_s * 1e6, est.verify_s * 1e6], rel=1e-5)  # floats() keeps 6 digits
    assert draft_bars["y"] == pytest.approx([0.0, est.draft_s * 1e6], rel=1e-5, abs=1e-12)
    time = records(out["figures"][2]["table"])
    assert [r["time"] for r in time] == [fmt_seconds(est.greedy_s), fmt_seconds(est.speculative_s)]
    assert f"{fmt_percent(abs(est.saved))} ({fmt_seconds(est.speculative_s)} instead of {fmt_seconds(est.greedy_s)})" \
        in out["notes"][2]


def test_the_draft_note_says_what_a_draft_step_reads(course):
    """One embedding row and the whole output head per draft step (engine.speculative.pass_bytes),
    not the embedding table (issue 19); the share is pass_bytes' own."""
    model, _tok = course
    draft = LayerDrafter(model, 1).draft.config
    for lang, says in (("en", "looks up one embedding row and reads the whole output head"),
                       ("zh-TW", "要查一次嵌入向量，還要把整個輸出層讀一遍")):
        note = registry.run("draft_verify", {"drafter": "layers1"}, lang)["notes"][-1]
        assert says in note and "table" not in note and "嵌入向量表" not in note
    ids = _tok.encode(draft_verify.CONTROLS[0].default_for("en"))
    share = fmt_percent(pass_bytes(draft, len(ids), 1) / pass_bytes(model.config, len(ids), 1))
    assert share in registry.run("draft_verify", {"drafter": "layers1"}, "en")["notes"][-1]


def test_a_pass_is_one_word_in_zh_tw(course):
    """Issue 19: the demo called a pass of the model 驗證, a prefill included; the page says 執行."""
    out = registry.run("draft_verify", {"drafter": "layers1", "k": 6}, "zh-TW")
    strings = [f["title"] for f in out["figures"]] + [c for f in out["figures"] for c in f["table"]["columns"]]
    strings += [out["figures"][1]["figure"]["layout"]["xaxis"]["title"]["text"]] + out["notes"]
    strings += [d["name"] for f in out["figures"] for d in f["figure"]["data"] if d.get("name")]
    assert not [s for s in strings if "驗證" in s], strings
    assert "模型的第幾次執行（0 = 預填）" in strings and "執行" in out["figures"][0]["table"]["columns"]


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
