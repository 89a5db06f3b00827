"""cache_size: the calculator's numbers equal the formula on published shapes."""
import re

import pytest

from engine.shapes import MODEL_SHAPES
from lessons import registry
from lessons.base import LessonInputError
from lessons.cache_size import DTYPES

from lesson_checks import check_both_languages, check_describe, check_output, numbers, run_json_ok


def test_defaults_both_languages():
    check_describe("cache_size")
    check_both_languages("cache_size")


def _number(s: str) -> int:
    return int(s.replace(",", ""))


@pytest.mark.parametrize("model", list(MODEL_SHAPES))
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_total_equals_formula(model, dtype):
    s = MODEL_SHAPES[model]
    nbytes = {"fp32": 4, "fp16": 2, "fp8": 1, "int8": 1}[dtype]
    context, batch = 32768, 3
    out = check_output(registry.run("cache_size", {"model": model, "dtype": dtype, "context": context, "batch": batch}, "en"))
    expected = 2 * s.n_layers * s.n_kv_heads * s.head_dim * context * batch * nbytes
    m = re.search(r"= ([\d,]+) B =", out["notes"][0])
    assert _number(m.group(1)) == expected
    # the figure's table holds the same number at the reader's context
    tbl = out["figures"][0]["table"]
    sizes = dict(zip(numbers(tbl, "context (tokens)"), numbers(tbl, "KV cache (bytes)")))
    assert sizes[context] == expected
    # and every point of the curve follows the formula
    for ctx, size in sizes.items():
        assert size == 2 * s.n_layers * s.n_kv_heads * s.head_dim * ctx * batch * nbytes


def test_published_llama3_8b_is_128_kib_per_token():
    # Meta's config.json: 32 layers, 8 KV heads, head_dim 128; fp16 -> 2*32*8*128*2 = 131072 B
    out = registry.run("cache_size", {"model": "Llama 3 8B", "dtype": "fp16", "context": 8192, "batch": 1}, "en")
    assert "128 KiB" in out["notes"][1]
    assert out["notes"][0].endswith("= 1 GiB")


def test_context_beyond_window_is_flagged():
    out = registry.run("cache_size", {"model": "GPT-2 small", "context": 4096}, "en")
    assert any("1,024" in n and "beyond" in n for n in out["notes"])


@pytest.mark.parametrize("values", [
    {"model": "GPT-5"}, {"dtype": "fp4"}, {"context": 10**9}, {"batch": 0}, {"batch": "many"},
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
