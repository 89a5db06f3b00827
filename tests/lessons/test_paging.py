"""paging: every number from the engine's allocations, the three servers in the same memory,
Llama 3 8B beside it from the formula, clear bilingual errors."""
from __future__ import annotations

import json

import pytest

from lessons import paging, registry
from lessons.base import LessonInputError
from lessons.paging import CONTROLS

from lesson_checks import check_both_languages, check_describe, check_output, column, number, numbers, records, run_json_ok

DEFAULTS = {c.name: c.default for c in CONTROLS}
GIB = 1024**3
# the memory table's columns of each server, as the English page reads them
RESERVED = {"block_map_paged": "(b) paging: reserved (B)", "block_map_shared": "(c) paging + prefix sharing: reserved (B)"}
CONTIGUOUS_RESERVED = "(a) contiguous, max length reserved: reserved (B)"


def _slot(cfg) -> int:
    return 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 4  # K and V, every layer, float32


def _fig(out, key):
    return next(f for f in out["figures"] if f["key"] == key)


def _fit(out) -> dict:
    """server -> {column: cell} of the 'requests running at once' table."""
    return {r["server"]: r for r in records(_fig(out, "fit")["table"])}


@pytest.fixture(scope="module")
def default_en(course):
    return check_output(registry.run("paging", None, "en"))


def test_defaults_both_languages(course):
    check_describe("paging")
    check_both_languages("paging")


def test_defaults_tell_the_story_and_stay_cheap(default_en):
    """At the defaults the three servers differ (2 / 3 / 4 at once is what the plate describes)
    while the model writes few enough tokens for the warm-update budget."""
    fit = _fit(default_en)
    at_once = [number(fit[s]["requests at once (most)"]) for s in ("(a) contiguous", "(b) paging", "(c) paging + sharing")]
    assert at_once[0] < at_once[1] < at_once[2] == DEFAULTS["requests"]
    assert sum(numbers(default_en["tables"][0], "answer tokens")) <= 30


@pytest.mark.parametrize("key", ["block_map_paged", "block_map_shared"])
def test_block_map_cells_are_the_blocks_lent(course, default_en, key):
    """Each step's coloured cells are the blocks the pool lent (its refcounts), and the memory
    figure's paged bytes are those blocks."""
    cfg = course[0].config
    z = _fig(default_en, key)["figure"]["data"][0]["z"]
    reserved = column(_fig(default_en, "memory")["table"], RESERVED[key])
    assert len(z) == len([c for c in reserved if c])  # one map row per step the server ran
    for row, cell in zip(z, reserved):
        assert sum(c is not None for c in row) * DEFAULTS["block"] * _slot(cfg) == number(cell)


def test_block_map_table_counts_every_block_once(default_en):
    """Per step: the blocks each holder has plus the free ones make the whole pool."""
    n_blocks = DEFAULTS["pool"] // DEFAULTS["block"]
    for r in records(_fig(default_en, "block_map_shared")["table"]):
        held = [int(part.rsplit(": ", 1)[1]) for part in r["blocks held (shared ones once)"].split(", ")]
        assert sum(held) + number(r["free blocks"]) == n_blocks


def test_contiguous_reserves_prompt_plus_longest_answer(course, default_en):
    cfg = course[0].config
    reserve = (DEFAULTS["prompt"] + DEFAULTS["answer"]) * _slot(cfg)
    memory = DEFAULTS["pool"] * _slot(cfg)
    reserved = numbers(_fig(default_en, "memory")["table"], CONTIGUOUS_RESERVED)
    assert reserved and all(b % reserve == 0 and b <= memory for b in reserved)
    assert number(_fit(default_en)["(a) contiguous"]["requests at once (most)"]) == memory // reserve


def test_llama3_8b_fits_follow_the_formula(default_en):
    """Contiguous on an 80 GB GPU: (81,559 MiB, the memory an H100 80GB HBM3 reports, - 8,030,261,248
    fp16 weights) / (32 x (prompt + answer) tokens x 128 KiB); 32 = 8,192 / 256 context windows,
    the published counts of Llama 3 8B."""
    per = 32 * (DEFAULTS["prompt"] + DEFAULTS["answer"]) * 128 * 1024
    expect = (81_559 * 2**20 - 8_030_261_248 * 2) // per
    rows = {r["GPU"]: r for r in records(_fig(default_en, "real_shape")["table"])}
    h100, h200 = rows["NVIDIA H100 SXM (80 GB)"], rows["NVIDIA H200 SXM (141 GB)"]
    fits = [number(h100[f"{s}: fit"]) for s in ("(a) contiguous, max length reserved", "(b) paging",
                                                "(c) paging + prefix sharing")]
    assert fits[0] == expect
    assert fits[0] < fits[1] < fits[2]  # contiguous < paging < sharing
    assert fits[0] < number(h200["(a) contiguous, max length reserved: fit"])  # the 141 GB GPU holds more


def test_parallel_samples_copy_the_shared_partial_block_once_each(course):
    out = registry.run("paging", {"mix": "parallel", "requests": 3, "prompt": 10, "block": 4, "pool": 512}, "en")
    assert "copy-on-write copied 3 block(s)" in out["notes"][1]


def test_a_prompt_of_whole_blocks_copies_nothing(course):
    """The page's suggestion: a prompt length that is a multiple of the block size leaves no
    shared block partly filled, so nothing is copied on write."""
    out = registry.run("paging", {"mix": "parallel", "requests": 3, "prompt": 12, "block": 4, "pool": 512}, "en")
    assert "copy-on-write copied 0 block(s)" in out["notes"][1]


def test_a_small_memory_preempts_and_the_answers_stay_the_same(course):
    """The page's other suggestion: shrink the memory until the notes report preemptions; the
    answers the requests table shows do not change."""
    answers = "answer (course model, run c)"
    roomy = registry.run("paging", {"pool": 512}, "en")
    tight = registry.run("paging", {"pool": 24}, "en")
    preempted = [number(r["preemptions"]) for r in records(_fig(tight, "fit")["table"])]
    assert preempted[1] > 0 and preempted[2] > 0 and "Preemptions: 0 in (b), 0 in (c)" in roomy["notes"][1]
    assert column(tight["tables"][0], answers) == column(roomy["tables"][0], answers)


def test_distinct_prompts_share_nothing(course):
    out = registry.run("paging", {"mix": "distinct"}, "en")
    rows = {r["server"]: r for r in records(_fig(out, "waste")["table"])}
    assert {k: v for k, v in rows["(b) paging"].items() if k != "server"} == \
        {k: v for k, v in rows["(c) paging + sharing"].items() if k != "server"}
    assert "nothing in common" in out["notes"][1]


@pytest.mark.parametrize("mix", ["system", "parallel", "distinct"])
def test_zh_tw_readers_get_chinese_prompts_and_answers(course, mix):
    """Issue 19: the prompts were English only, so a zh-TW reader saw English answers. Each language
    has its own prompts; the schedules (answer lengths, steps, blocks) are the same in both, and
    the zh-TW answers are Chinese, written by the course model after the Chinese prompts."""
    en, zh = (registry.run("paging", {"mix": mix}, lang) for lang in ("en", "zh-TW"))
    assert [r[:6] for r in en["tables"][0]["rows"]] == [r[:6] for r in zh["tables"][0]["rows"]]
    answers = column(zh["tables"][0], "課程模型在（c）寫出的回答")
    assert answers and all(any("\u4e00" <= ch <= "\u9fff" for ch in a) for a in answers), answers
    assert not any(any("\u4e00" <= ch <= "\u9fff" for ch in a) for a in column(en["tables"][0], "answer (course model, run c)"))


def test_the_zh_tw_prompts_cut_cleanly_and_start_differently(course):
    """A prompt of P tokens is the first P tokens of these texts, so every character is one token
    (a cut never splits one), and the requests' first tokens differ (so do their answers)."""
    tok = course[1]
    texts = (paging.SYSTEM_TEXT["zh-TW"],) + paging.QUESTIONS["zh-TW"]
    assert all(len(tok.encode(ch)) == 1 for text in texts for ch in text), [
        ch for text in texts for ch in text if len(tok.encode(ch)) != 1]
    starts = {tuple(tok.encode(q)[:3]) for q in paging.QUESTIONS["zh-TW"]}
    assert len(paging.QUESTIONS["zh-TW"]) == len(paging.QUESTIONS["en"]) == len(starts)


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
