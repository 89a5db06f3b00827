"""shrink_cache: each lever's sizes equal the formula on published shapes, named and capped right."""
import re

import pytest

from engine.shapes import MODEL_SHAPES
from lessons import registry
from lessons.base import LessonInputError
from lessons.figures import HIGHLIGHT
from lessons.shrink_cache import LEVERS

from lesson_checks import check_both_languages, check_describe, check_output


def _bytes(text: str) -> float:
    """'1.5 GiB' -> bytes (the lesson's display format)."""
    value, unit = text.split()
    return float(value.replace(",", "")) * {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}[unit]


@pytest.mark.parametrize("lever", list(LEVERS))
@pytest.mark.parametrize("model", ["course", "Mistral 7B"])
def test_every_lever_in_both_languages(lever, model, course):
    check_describe("shrink_cache")
    check_both_languages("shrink_cache", {"lever": lever, "model": model})


@pytest.mark.parametrize("model", ["Llama 3 8B", "Llama 3 70B", "Llama 2 7B"])
def test_heads_lever_sweeps_mha_to_mqa_for_the_same_query_heads(model):
    s = MODEL_SHAPES[model]
    out = check_output(registry.run("shrink_cache", {"lever": "heads", "model": model, "context": 4096}, "en"))
    rows = out["figures"][0]["table"]["rows"]
    assert [r[0] for r in rows] == [kv for kv in range(s.n_heads, 0, -1) if s.n_heads % kv == 0]
    assert rows[0][1] == "MHA" and rows[-1][1] == "MQA" and {r[1] for r in rows[1:-1]} == {"GQA"}
    for kv, _, shared, per_token, cache, _ in rows:
        assert shared * kv == s.n_heads
        # shown with one decimal: 1.2 MiB stands for 1.25 MiB
        assert _bytes(per_token) == pytest.approx(2 * s.n_layers * kv * s.head_dim * 2, rel=0.05)  # fp16
        assert _bytes(cache) == pytest.approx(2 * s.n_layers * kv * s.head_dim * 4096 * 2, rel=0.05)
    colors = out["figures"][0]["figure"]["data"][0]["marker"]["color"]
    assert [i for i, c in enumerate(colors) if c == HIGHLIGHT] == [[r[0] for r in rows].index(s.n_kv_heads)]
    assert any(f"{s.n_kv_heads} KV heads" in n for n in out["notes"])


def test_window_lever_caps_at_w_and_the_full_cache_keeps_growing():
    out = registry.run("shrink_cache", {"lever": "window", "model": "Llama 3 8B", "context": 8192, "window": 2048}, "en")
    rows = out["figures"][0]["table"]["rows"]
    per_token = 2 * 32 * 8 * 128 * 2
    for tokens, full, windowed in rows:
        assert _bytes(full) == pytest.approx(tokens * per_token, rel=1e-3)
        assert _bytes(windowed) == pytest.approx(min(tokens, 2048) * per_token, rel=1e-3)
    assert rows[-1][0] == 8192 and _bytes(rows[-1][2]) == 256 * 2**20 and _bytes(rows[-1][1]) == 2**30
    assert any("65,536 positions back" in n for n in out["notes"])  # 32 layers x 2,048


def test_mistral_is_capped_by_its_own_window_whatever_the_lever():
    out = registry.run("shrink_cache", {"lever": "heads", "model": "Mistral 7B", "context": 32768}, "en")
    published = [r for r in out["figures"][0]["table"]["rows"] if r[0] == 8][0]
    assert published[4] == "512 MiB"  # 4,096 positions x 128 KiB, not 32,768 x 128 KiB = 4 GiB
    assert any("sliding window of 4,096" in n for n in out["notes"])
    out = registry.run("shrink_cache", {"lever": "window", "model": "Mistral 7B", "window": 1024}, "en")
    assert len(out["figures"][0]["figure"]["data"]) == 3  # no window, the reader's W, the published W


@pytest.mark.parametrize("model", ["course", "Llama 3 8B"])
def test_bits_lever_scales_with_bits_per_number(model, course):
    out = registry.run("shrink_cache", {"lever": "bits", "model": model, "context": 256}, "en")
    rows = out["figures"][0]["table"]["rows"]
    own = rows[0][0]
    assert own == (32 if model == "course" else 16)
    assert [r[0] for r in rows[1:]] == [b for b in (16, 8, 4, 3.5, 2.5) if b < own]
    for b, _, cache, share in rows:
        assert _bytes(cache) == pytest.approx(_bytes(rows[0][2]) * b / own, rel=2e-3)
        assert share == f"{b / own:.1%}"
    m = re.search(r"× 2\.5 ÷ 8 = ([\d,]+) B", " ".join(out["notes"]))
    assert int(m.group(1).replace(",", "")) == _bytes(rows[0][2]) * 2.5 / own


def test_context_past_the_model_window_is_clipped_and_said(course):
    out = registry.run("shrink_cache", {"model": "course", "context": 8192}, "zh-TW")
    assert "上下文已調為 256" in out["notes"][0] and "課程模型（本網站）的" in out["notes"][0]


@pytest.mark.parametrize("values", [{"lever": "depth"}, {"window": 0}, {"window": 10**6}, {"context": "long"},
                                    {"model": "<img src=x onerror=alert(1)>"}])
def test_bad_input_is_a_bilingual_error(values):
    with pytest.raises(LessonInputError) as e:
        registry.run("shrink_cache", values, "en")
    assert e.value.messages["en"] != e.value.messages["zh-TW"]
