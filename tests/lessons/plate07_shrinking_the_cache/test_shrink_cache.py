"""shrink_cache: each lever's sizes equal the formula on published shapes, named and capped right.

Table cells are display strings: columns are read by name (lesson_checks), byte sizes through
``_bytes`` below, and every expected size is the formula written out here from the shape."""
import re

import pytest

from engine.analysis.model_shapes import MODEL_SHAPES
from lessons.common import registry
from lessons.common.base import LessonInputError
from lessons.common.figures import HIGHLIGHT
from lessons.plate07_shrinking_the_cache.shrink_cache import LEVERS

from lesson_checks import check_both_languages, check_describe, check_output, column, number, numbers, records

UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}


def _bytes(text: str) -> float:
    """'1.5 GiB' -> bytes (the lesson's display format, one decimal)."""
    value, unit = text.split()
    return number(value) * UNITS[unit]


def _fp16_per_token(s, kv_heads=None) -> int:
    return 2 * s.n_layers * (s.n_kv_heads if kv_heads is None else kv_heads) * s.head_dim * 2


@pytest.mark.parametrize("lever", list(LEVERS))
@pytest.mark.parametrize("model", ["course", "Mistral 7B"])
def test_every_lever_in_both_languages(lever, model, course):
    check_describe("shrink_cache")
    check_both_languages("shrink_cache", {"lever": lever, "model": model})


@pytest.mark.parametrize("model", ["Llama 3 8B", "Llama 3 70B", "Llama 2 7B"])
def test_heads_lever_sweeps_mha_to_mqa_for_the_same_query_heads(model):
    s = MODEL_SHAPES[model]
    out = check_output(registry.run("shrink_cache", {"lever": "heads", "model": model, "context": 4096}, "en"))
    tbl = out["figures"][0]["table"]
    kvs = numbers(tbl, "KV heads")
    assert kvs == [kv for kv in range(s.n_heads, 0, -1) if s.n_heads % kv == 0]
    names = column(tbl, "attention")
    assert names[0] == "MHA" and names[-1] == "MQA" and set(names[1:-1]) == {"GQA"}
    for kv, row in zip(kvs, records(tbl)):
        assert number(row["query heads per KV head"]) * kv == s.n_heads
        # shown with one decimal: 1.2 MiB stands for 1.25 MiB
        assert _bytes(row["per token"]) == pytest.approx(_fp16_per_token(s, kv), rel=0.05)
        assert _bytes(row["cache"]) == pytest.approx(_fp16_per_token(s, kv) * 4096, rel=0.05)
        assert number(row["share of MHA"]) == pytest.approx(kv / s.n_heads, rel=5e-3)
    colors = out["figures"][0]["figure"]["data"][0]["marker"]["color"]
    assert [i for i, c in enumerate(colors) if c == HIGHLIGHT] == [kvs.index(s.n_kv_heads)]
    assert any(f"{s.n_kv_heads} KV heads" in n for n in out["notes"])


@pytest.mark.parametrize("lang, mqa", [("en", "1/32 of what 32 KV heads"), ("zh-TW", "只要 32 個 KV head（MHA）時的 1/32")])
def test_mqa_saving_is_said_as_a_fraction(lang, mqa):
    """Issue 11's review: 「小 32 倍」 ("32x smaller") read as translated; the note says the fraction."""
    notes = registry.run("shrink_cache", {"lever": "heads", "model": "Llama 3 8B"}, lang)["notes"]
    assert any(mqa in n for n in notes) and not any("倍" in n or "smaller" in n for n in notes)


def test_window_lever_caps_at_w_and_the_full_cache_keeps_growing():
    out = registry.run("shrink_cache", {"lever": "window", "model": "Llama 3 8B", "context": 8192, "window": 2048}, "en")
    tbl = out["figures"][0]["table"]
    per_token = _fp16_per_token(MODEL_SHAPES["Llama 3 8B"])
    seen = numbers(tbl, "tokens seen")
    full, windowed = column(tbl, "every position kept"), column(tbl, "window W = 2,048")
    for tokens, f, w in zip(seen, full, windowed):
        assert _bytes(f) == pytest.approx(tokens * per_token, rel=1e-3)
        assert _bytes(w) == pytest.approx(min(tokens, 2048) * per_token, rel=1e-3)
    assert seen[-1] == 8192 and _bytes(windowed[-1]) == 256 * 2**20 and _bytes(full[-1]) == 2**30
    # 32 layers x 2,048 would reach 65,536 back: more than the model's 8,192-token context window
    assert any("anywhere in the 8,192-token context window (32 × 2,048 is more than that)" in n for n in out["notes"])
    assert not any("65,536 positions back" in n for n in out["notes"])
    assert any("trained without a sliding window" in n for n in out["notes"])  # Llama 3 8B: a what-if


def test_the_window_reaches_back_layers_times_w_inside_the_context_window(course):
    model, _tok = course
    out = registry.run("shrink_cache", {"lever": "window", "model": "course", "context": 256, "window": 16}, "en")
    L = model.config.n_layers
    assert 16 * L < model.config.max_seq_len
    assert any(f"through {L} layers, information can reach up to {16 * L} positions back" in n for n in out["notes"])
    mistral = registry.run("shrink_cache", {"lever": "window", "model": "Mistral 7B", "window": 1024}, "en")["notes"]
    assert not any("trained without a sliding window" in n for n in mistral)  # v0.1 was published with one
    clipped = registry.run("shrink_cache", {"lever": "heads", "model": "Mistral 7B", "context": 131072}, "zh-TW")["notes"]
    assert clipped[0] == ("Mistral 7B v0.1 的上下文視窗是 32,768 個詞元（訓練時只用到 8,192），上下文已調為 32,768。")


@pytest.mark.parametrize("context", [8192, 32768])
def test_mistral_is_capped_by_its_own_window_whatever_the_lever(context):
    s = MODEL_SHAPES["Mistral 7B"]
    out = registry.run("shrink_cache", {"lever": "heads", "model": "Mistral 7B", "context": context}, "en")
    published = [r for r in records(out["figures"][0]["table"]) if number(r["KV heads"]) == s.n_kv_heads][0]
    assert _bytes(published["cache"]) == _fp16_per_token(s) * s.sliding_window == 512 * 2**20  # not context x 128 KiB
    assert any("sliding window of 4,096" in n for n in out["notes"])
    out = registry.run("shrink_cache", {"lever": "window", "model": "Mistral 7B", "window": 1024}, "en")
    assert len(out["figures"][0]["figure"]["data"]) == 3  # no window, the reader's W, the published W


@pytest.mark.parametrize("model", ["course", "Llama 3 8B"])
def test_bits_lever_scales_with_bits_per_number(model, course):
    out = registry.run("shrink_cache", {"lever": "bits", "model": model, "context": 256}, "en")
    tbl = out["figures"][0]["table"]
    bits, caches = numbers(tbl, "bits per number"), [_bytes(c) for c in column(tbl, "cache")]
    own = bits[0]
    assert own == (32 if model == "course" else 16)
    assert bits[1:] == [b for b in (16, 8, 4, 3.5, 2.5) if b < own]
    for b, cache, share in zip(bits, caches, numbers(tbl, f"share of the model's own {own:g} bits")):
        assert cache == pytest.approx(caches[0] * b / own, rel=2e-3)
        assert share == pytest.approx(b / own, rel=5e-3)
    m = re.search(r"× 2\.5 ÷ 8 = ([\d,]+) B", " ".join(out["notes"]))
    assert number(m.group(1)) == caches[0] * 2.5 / own


def test_context_past_the_model_window_is_clipped_and_said(course):
    out = registry.run("shrink_cache", {"model": "course", "context": 8192}, "zh-TW")
    assert "上下文已調為 256" in out["notes"][0] and "課程模型（本網站）的" in out["notes"][0]


@pytest.mark.parametrize("values", [{"lever": "depth"}, {"window": 0}, {"window": 10**6}, {"context": "long"},
                                    {"model": "<img src=x onerror=alert(1)>"}])
def test_bad_input_is_a_bilingual_error(values):
    with pytest.raises(LessonInputError) as e:
        registry.run("shrink_cache", values, "en")
    assert e.value.messages["en"] != e.value.messages["zh-TW"]
