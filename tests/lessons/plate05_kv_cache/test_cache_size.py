"""cache_size: the calculator's numbers equal the formula on published shapes."""
import math
import re
from fractions import Fraction

import pytest

from engine.analysis.model_shapes import MODEL_SHAPES
from lessons.common import registry
from lessons.common.base import LessonInputError
from lessons.common.cache_bits import VALUES as CACHE_BITS

from lesson_checks import check_both_languages, check_describe, check_output, column, numbers, records, run_json_ok


def test_defaults_both_languages():
    check_describe("cache_size")
    check_both_languages("cache_size")


def _number(s: str) -> int:
    return int(s.replace(",", ""))


def _bytes(text: str) -> float:
    value, unit = text.split()
    return float(value.replace(",", "")) * {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}[unit]


def _formula(s, tokens: int, batch: int, bits: float) -> int:
    """The cache in whole bytes: K and V × layers × KV heads × head_dim × positions kept × batch × bits ÷ 8,
    positions capped at the sliding window where the model has one."""
    kept = tokens if s.sliding_window is None else min(tokens, s.sliding_window)
    return math.ceil(Fraction(2 * s.n_layers * s.n_kv_heads * s.head_dim * kept * batch) * Fraction(str(bits)) / 8)


@pytest.mark.parametrize("model", list(MODEL_SHAPES))
@pytest.mark.parametrize("bits", CACHE_BITS)
def test_total_equals_formula(model, bits):
    s = MODEL_SHAPES[model]
    context, batch = 32768, 3
    out = check_output(registry.run("cache_size", {"model": model, "cache_bits": bits, "context": context, "batch": batch}, "en"))
    expected = _formula(s, context, batch, float(bits))
    m = re.search(r"= ([\d,]+) B =", out["notes"][0])
    assert _number(m.group(1)) == expected
    # the figure's table holds the same number at the reader's context
    tbl = out["figures"][0]["table"]
    sizes = dict(zip(numbers(tbl, "context (tokens)"), numbers(tbl, "KV cache (bytes)")))
    assert sizes[context] == expected
    # and every point of the curve follows the formula
    for ctx, size in sizes.items():
        assert size == _formula(s, int(ctx), batch, float(bits))


@pytest.mark.parametrize("context", [8192, 32768])
def test_mistral_stops_at_its_window(context):
    """Issue 9: the calculator grew Mistral 7B's cache without limit (1 GiB at 8,192 tokens);
    its rolling-buffer cache keeps the last 4,096 positions: 2 × 32 × 8 × 128 × 4,096 × 2 bytes."""
    s = MODEL_SHAPES["Mistral 7B"]
    window_size = 2 * s.n_layers * s.n_kv_heads * s.head_dim * s.sliding_window * 2
    assert window_size == 512 * 2**20
    out = registry.run("cache_size", {"model": "Mistral 7B", "context": context, "batch": 1}, "en")
    assert out["notes"][0].endswith(f"= {window_size:,} B = 512 MiB")
    assert "4,096 × 1 × 16 ÷ 8" in out["notes"][0]
    row = [r for r in records(out["tables"][0]) if r["model"] == "Mistral 7B v0.1"][0]  # the release the shape is
    assert row[f"{context:,} tokens × batch 1"] == "512 MiB" and row["sliding window"] == "4,096"
    sizes = dict(zip(numbers(out["figures"][0]["table"], "context (tokens)"),
                     numbers(out["figures"][0]["table"], "KV cache (bytes)")))
    assert {sizes[c] for c in sizes if c >= 4096} == {window_size}
    assert any("sliding-window attention" in n and "4,096 positions" in n for n in out["notes"])


@pytest.mark.parametrize("bits", ["8", "4", "3.5", "2.5"])
@pytest.mark.parametrize("model", ["Llama 3 8B", "Mistral 7B"])
def test_cache_bits_scale_the_cache_and_leave_the_weights(bits, model):
    values = {"model": model, "context": 65536, "batch": 2}
    full = registry.run("cache_size", values, "en")["figures"][0]["table"]
    fewer = registry.run("cache_size", {**values, "cache_bits": bits}, "en")["figures"][0]["table"]
    assert numbers(fewer, "KV cache (bytes)") == [size * float(bits) / 16 for size in numbers(full, "KV cache (bytes)")]
    assert column(fewer, "weights") == column(full, "weights")


def test_the_weights_format_moves_only_the_weights_line():
    values = {"model": "Llama 3 8B", "context": 8192}
    fp16 = registry.run("cache_size", {**values, "dtype": "fp16"}, "en")
    fp8 = registry.run("cache_size", {**values, "dtype": "fp8"}, "en")
    tables = [o["figures"][0]["table"] for o in (fp16, fp8)]
    assert numbers(tables[0], "KV cache (bytes)") == numbers(tables[1], "KV cache (bytes)")
    weights = [{_bytes(c) for c in column(tbl, "weights")} for tbl in tables]
    assert len(weights[0]) == len(weights[1]) == 1 and weights[0].pop() == pytest.approx(2 * weights[1].pop(), rel=0.01)


def test_published_llama3_8b_is_128_kib_per_token():
    # Meta's config.json: 32 layers, 8 KV heads, head_dim 128; fp16 -> 2*32*8*128*2 = 131072 B
    out = registry.run("cache_size", {"model": "Llama 3 8B", "context": 8192, "batch": 1}, "en")
    assert "128 KiB" in out["notes"][1]
    assert out["notes"][0].endswith("= 1 GiB")


def test_context_beyond_window_is_flagged():
    out = registry.run("cache_size", {"model": "GPT-2 small", "context": 4096}, "en")
    assert any("1,024" in n and "beyond" in n for n in out["notes"])


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_mistral_is_named_v0_1_and_its_training_context_is_not_its_config_limit(lang):
    """Issue 19: the shape is Mistral 7B v0.1's, whose config allows 32,768 positions but which was
    trained on 8,192 (Jiang et al., Table 1): past 8,192 the note says so, and never calls 32,768
    the context it was published with."""
    s = MODEL_SHAPES["Mistral 7B"]
    assert (s.display_name, s.max_seq_len, s.trained_context) == ("Mistral 7B v0.1", 32768, 8192)
    options = {o["value"]: o["label"] for c in registry.describe("cache_size", lang)["controls"] if c["name"] == "model"
               for o in c["options"]}
    assert options["Mistral 7B"] == "Mistral 7B v0.1"
    past = registry.run("cache_size", {"model": "Mistral 7B", "context": 16384}, lang)["notes"]
    within = registry.run("cache_size", {"model": "Mistral 7B", "context": 8192}, lang)["notes"]
    trained = [n for n in past if "8,192" in n and "32,768" in n]
    assert len(trained) == 1 and ("trained on" in trained[0] if lang == "en" else "訓練時的上下文是 8,192" in trained[0])
    assert not any("published with a context window" in n or "公開的上下文視窗" in n for n in past)
    assert not any("32,768" in n for n in within)
    assert all("Mistral 7B " not in n or "Mistral 7B v0.1" in n for n in past + within)


@pytest.mark.parametrize("values", [
    {"model": "GPT-5"}, {"dtype": "fp4"}, {"cache_bits": "3"}, {"cache_bits": 16}, {"cache_bits": "<img src=x onerror=alert(1)>"},
    {"context": 10**9}, {"batch": 0}, {"batch": "many"},
    {"context": float("nan")}, {"nonsense": 1},
])
def test_bad_input_is_a_bilingual_error(values):
    with pytest.raises(LessonInputError) as e:
        registry.run("cache_size", values, "en")
    assert e.value.messages["en"] != e.value.messages["zh-TW"]
    reply = run_json_ok("cache_size", values, "zh-TW")
    assert reply["ok"] is False and "Traceback" not in reply["error"]["message"]


@pytest.mark.parametrize("lang, smaller", [("en", "1/4 of"), ("zh-TW", "1/4")])
def test_gqa_saving_is_said_as_a_fraction(lang, smaller):
    """Llama 3 8B: 32 query heads share 8 KV heads, so its cache is a quarter of MHA's
    (the demo once said 「小 4 倍」, a literal "4× smaller")."""
    notes = registry.run("cache_size", {"model": "Llama 3 8B"}, lang)["notes"]
    assert any(smaller in n for n in notes) and not any("小 4 倍" in n for n in notes)
