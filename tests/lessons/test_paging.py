"""paging: every number from the engine's allocations, the three servers in the same memory,
Llama 3 8B beside it from the formula, clear bilingual errors."""
from __future__ import annotations

import json

import pytest

from lessons import registry
from lessons.base import LessonInputError
from lessons.paging import CONTROLS

from lesson_checks import check_both_languages, check_describe, check_output, run_json_ok

DEFAULTS = {c.name: c.default for c in CONTROLS}
GIB = 1024**3


def _slot(cfg) -> int:
    return 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 4  # K and V, every layer, float32


def _fig(out, key):
    return next(f for f in out["figures"] if f["key"] == key)


def test_defaults_both_languages(course):
    check_describe("paging")
    check_both_languages("paging")


def test_defaults_tell_the_story_and_stay_cheap(course):
    """At the defaults the three servers differ (2 / 3 / 4 at once is what the plate describes)
    while the model writes few enough tokens for the warm-update budget."""
    out = registry.run("paging", None, "en")
    rows = {r[0][:3]: r for r in _fig(out, "fit")["table"]["rows"]}
    assert rows["(a)"][1] < rows["(b)"][1] < rows["(c)"][1] == DEFAULTS["requests"]
    answers = [r[2] for r in out["tables"][0]["rows"]]
    assert sum(answers) <= 30


@pytest.mark.parametrize("key", ["block_map_paged", "block_map_shared"])
def test_block_map_cells_are_the_blocks_lent(course, key):
    """Each step's coloured cells are the blocks the pool lent (its refcounts), and the memory
    figure's paged bytes are those blocks."""
    cfg = course[0].config
    out = registry.run("paging", None, "en")
    z = _fig(out, key)["figure"]["data"][0]["z"]
    col = 3 if key == "block_map_paged" else 5  # (b) reserved / (c) reserved in the memory table
    memory_rows = _fig(out, "memory")["table"]["rows"]
    for row, mem in zip(z, memory_rows):
        assert sum(c is not None for c in row) * DEFAULTS["block"] * _slot(cfg) == mem[col]


def test_contiguous_reserves_prompt_plus_longest_answer(course):
    cfg = course[0].config
    out = registry.run("paging", None, "en")
    reserve = (DEFAULTS["prompt"] + DEFAULTS["answer"]) * _slot(cfg)
    memory = DEFAULTS["pool"] * _slot(cfg)
    for row in _fig(out, "memory")["table"]["rows"]:
        if row[1] != "—":
            assert row[1] % reserve == 0 and row[1] <= memory
    assert _fig(out, "fit")["table"]["rows"][0][1] == memory // reserve


def test_llama3_8b_fits_follow_the_formula(course):
    """Contiguous on an 80 GB GPU: (80 GiB - 8,030,261,248 fp16 weights) / (32 x (prompt + answer)
    tokens x 128 KiB); 32 = 8,192 / 256 context windows, the published counts of Llama 3 8B."""
    out = registry.run("paging", None, "en")
    per = 32 * (DEFAULTS["prompt"] + DEFAULTS["answer"]) * 128 * 1024
    expect = (80 * GIB - 8_030_261_248 * 2) // per
    fits = _fig(out, "real_shape")["figure"]["data"]
    assert fits[0]["y"][0] == expect
    assert fits[0]["y"][0] < fits[1]["y"][0] < fits[2]["y"][0]  # contiguous < paging < sharing
    assert fits[0]["y"][0] < fits[0]["y"][1]  # the 141 GB GPU holds more


def test_parallel_samples_copy_the_shared_partial_block_once_each(course):
    out = registry.run("paging", {"mix": "parallel", "requests": 3, "prompt": 10, "block": 4, "pool": 512}, "en")
    assert "copy-on-write copied 3 block(s)" in out["notes"][1]


def test_distinct_prompts_share_nothing(course):
    out = registry.run("paging", {"mix": "distinct"}, "en")
    rows = _fig(out, "waste")["table"]["rows"]
    assert rows[1][1:] == rows[2][1:]
    assert "nothing in common" in out["notes"][1]


@pytest.mark.parametrize("values", [
    {"requests": 8, "prompt": 64, "answer": 32, "block": 1, "pool": 512},
    {"requests": 1, "prompt": 2, "answer": 1, "block": 1, "pool": 8},
    {"mix": "parallel", "requests": 8, "prompt": 2, "answer": 32, "block": 16, "pool": 512},
    {"mix": "distinct", "requests": 8, "prompt": 64, "answer": 32, "block": 16, "pool": 112},
])
def test_controls_at_their_limits(course, values):
    out = check_output(registry.run("paging", values, "zh-TW"))
    assert len(out["figures"]) == 6


def test_too_small_a_pool_says_how_much_is_needed(course):
    with pytest.raises(LessonInputError) as e:
        registry.run("paging", {"prompt": 64, "answer": 32, "block": 16, "pool": 16}, "en")
    assert "at least" in e.value.messages["en"] and "至少" in e.value.messages["zh-TW"]


@pytest.mark.parametrize("values", [
    {"mix": "<img src=x onerror=alert(1)>"}, {"mix": "a" * 5000}, {"requests": "🙂🚀"}, {"requests": 0},
    {"prompt": 10**9}, {"answer": float("nan")}, {"block": 0}, {"pool": -8}, {"nonsense": 1}, {"pool": ""},
])
@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_hostile_input_is_a_clear_message(course, values, lang):
    reply = run_json_ok("paging", values, lang)
    assert reply["ok"] is False
    message = reply["error"]["message"]
    assert "Traceback" not in message and "<img" not in message and "detail" not in reply["error"]
    assert ("必須" in message or "未知" in message) if lang == "zh-TW" else ("must" in message or "Unknown" in message)


def test_malformed_json_is_refused(course):
    reply = json.loads(registry.run_json("paging", "{not json", "zh-TW"))
    assert reply["ok"] is False and "格式錯誤" in reply["error"]["message"]
