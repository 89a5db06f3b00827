"""batching: the timeline, TTFT and TPOT follow from the step times the demo shows; the
policies differ the way plate 8 says; bad input is a clear bilingual message."""
from __future__ import annotations

import re

import pytest

from lessons.common import registry
from lessons.plate08_serving_the_cache.batching import CONTROLS, STATES

from lesson_checks import check_both_languages, check_describe, check_output, number, records, run_json_ok

DEFAULTS = {c.name: c.default for c in CONTROLS}
FIRST, DECODE = 2, 3  # STATES indices


def _fig(out, key):
    return next(f for f in out["figures"] if f["key"] == key)


def _totals(out) -> dict:
    return {r["policy"]: r for r in records(_fig(out, "totals")["table"])}


@pytest.fixture(scope="module")
def default_en():
    return check_output(registry.run("batching", None, "en"))


def test_defaults_both_languages():
    check_describe("batching")
    check_both_languages("batching")
    check_both_languages("batching", {"batching": "static", "chunked": True, "gap": 0})


def test_every_request_writes_its_answer_once_in_the_timeline(default_en):
    """Per row: one first token, then one decode cell per further answer token; nothing before
    the request arrives."""
    z = _fig(default_en, "timeline")["figure"]["data"][0]["z"]
    rows = records(_fig(default_en, "tpot")["table"])
    arrivals = [number(r["arrives at step"]) for r in records(_fig(default_en, "ttft")["table"])]
    for row, r, arrival in zip(z, rows, arrivals):
        assert row.count(FIRST) == 1
        assert row.count(FIRST) + row.count(DECODE) == number(r["answer (tokens)"])
        assert all(c is None for c in row[: int(arrival) - 1])
        assert row.index(FIRST) < row.index(DECODE)


def test_ttft_is_the_sum_of_the_step_times_from_arrival_to_first_token(default_en):
    step_ms = [number(c) for c in (r["step time (ms)"] for r in records(_fig(default_en, "timeline")["table"]))]
    for r in records(_fig(default_en, "ttft")["table"]):
        a, f = int(number(r["arrives at step"])), int(number(r["first token at step"]))
        assert number(r["TTFT (steps)"]) == f - a + 1
        assert number(r["TTFT (ms)"]) == pytest.approx(sum(step_ms[a - 1 : f]), rel=0.01)


def test_continuous_batching_serves_sooner_and_answers_first_tokens_sooner(default_en):
    t = _totals(default_en)
    assert number(t["continuous"]["steps"]) < number(t["static"]["steps"])
    assert number(t["continuous"]["mean TTFT (ms)"]) < number(t["static"]["mean TTFT (ms)"])


@pytest.mark.parametrize("chunk", [64, 512, 1024])
def test_chunks_bound_each_step_and_shorten_the_longest_wait(chunk):
    """A running request's longest wait between tokens is the step that carried the whole long
    prompt; in chunks, no step carries more than the budget."""
    out = registry.run("batching", {"chunk": chunk}, "en")
    t = _totals(out)
    assert number(t["continuous + chunks"]["most tokens in one step"]) <= chunk
    assert number(t["continuous"]["most tokens in one step"]) >= DEFAULTS["prompt"]
    wait = "longest wait between tokens (ms)"
    assert number(t["continuous + chunks"][wait]) < number(t["continuous"][wait])


def test_the_chosen_policy_is_the_one_drawn(default_en):
    out = registry.run("batching", {"batching": "static"}, "en")
    steps = len(_fig(out, "timeline")["table"]["rows"])
    assert steps == number(_totals(out)["static"]["steps"])
    assert len(_fig(default_en, "timeline")["table"]["rows"]) == number(_totals(default_en)["continuous"]["steps"])


def test_the_cost_note_names_a_memory_bound_decode_and_a_compute_bound_prefill(default_en):
    note = default_en["notes"][0]
    assert "set by memory" in note and "set by arithmetic" in note


def test_state_labels_are_bilingual():
    assert all(label["en"] and label["zh-TW"] for label, _c in STATES)


@pytest.mark.parametrize("values", [
    {"requests": 10, "gap": 0, "prompt": 8192, "answer": 64, "max_batch": 1, "chunked": True, "chunk": 64},
    {"requests": 2, "gap": 12, "prompt": 256, "answer": 2, "max_batch": 8},
    {"batching": "static", "requests": 10, "gap": 1, "max_batch": 8, "chunked": True, "chunk": 4096},
])
def test_controls_at_their_limits(values):
    out = check_output(registry.run("batching", values, "zh-TW"))
    assert len(out["figures"]) == 4


@pytest.mark.parametrize("values", [
    {"batching": "<img src=x onerror=alert(1)>"}, {"requests": 0}, {"chunk": 10**9}, {"gap": float("nan")},
    {"max_batch": "🙂"}, {"nonsense": 1},
])
@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_hostile_input_is_a_clear_message(values, lang):
    reply = run_json_ok("batching", values, lang)
    assert reply["ok"] is False
    message = reply["error"]["message"]
    assert "Traceback" not in message and "<img" not in message
    assert ("必須" in message or "未知" in message) if lang == "zh-TW" else ("must" in message or "Unknown" in message)


# --------------------------------------------------------------------------- the second reader's review (plate 8)

_SAME_TWICE = re.compile(r"從 (\S+ m?s) 變成 \1(?!\d)|分別是 (\S+ m?s) 和 \2(?!\d)|from (\S+ m?s) to \3(?!\d)"
                         r"|(\S+ m?s) against \4(?!\d)|處理 ([\d,]+) 個詞元，不分段時是 \5 個|([\d,]+) tokens instead of \6(?!\d)")


def repeats_a_value(note: str) -> bool:
    """A comparison of a value with itself: 「從 4.64 ms 變成 4.64 ms」, 「分別是 269 ms 和 269 ms」."""
    return bool(_SAME_TWICE.search(note))


@pytest.mark.parametrize("values", [{"gap": 0, "max_batch": 1}, {"chunked": True, "chunk": 4096}, {"prompt": 256},
                                    {}, {"batching": "static", "max_batch": 1}])
@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_equal_values_are_said_once(values, lang):
    notes = registry.run("batching", values, lang)["notes"]
    assert not any(repeats_a_value(n) for n in notes), notes


def test_equal_values_say_both():
    zh = registry.run("batching", {"gap": 0, "max_batch": 1}, "zh-TW")["notes"]
    assert "平均首詞元延遲兩者都是 269 ms" in zh[1] and "兩者都是 4.64 ms" in zh[2]
    assert repeats_a_value("從 4.64 ms 變成 4.64 ms") and repeats_a_value("平均首詞元延遲分別是 269 ms 和 269 ms")
    assert not repeats_a_value("從 66.7 ms 變成 8.33 ms") and not repeats_a_value("從 4.64 ms 變成 4.649 ms")


def test_the_tpot_header_reads_as_one_label():
    """「每詞元輸出時間（平均）（毫秒）」: two brackets in a row; the mean goes in front, as in the last table."""
    cols = _fig(registry.run("batching", None, "zh-TW"), "tpot")["table"]["columns"]
    assert "平均每詞元輸出時間（毫秒）" in cols and not any("）（" in c for c in cols)
    assert "mean TPOT (ms)" in _fig(registry.run("batching", None, "en"), "tpot")["table"]["columns"]
