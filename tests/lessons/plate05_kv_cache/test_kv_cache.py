"""kv_cache: per-layer bytes are the engine cache's, both paths agree, the cache saves work."""
import pytest

from lessons.common import registry
from lessons.common.base import LessonInputError

from lesson_checks import check_both_languages, check_describe, check_output, number, numbers, records


def test_defaults_both_languages(course):
    check_describe("kv_cache")
    check_both_languages("kv_cache")


def test_per_layer_bytes_equal_the_cache(course):
    model, tok = course
    c = model.config
    steps = 6
    out = check_output(registry.run("kv_cache", {"steps": steps}, "en"))
    rows = records(out["figures"][0]["table"])
    from lessons.plate05_kv_cache.kv_cache import DEFAULT_PROMPT

    n_prompt = len(tok.encode(DEFAULT_PROMPT))
    assert len(rows) == steps + 1
    for i, r in enumerate(rows):
        tokens, total = number(r["tokens in the cache"]), number(r["total (bytes)"])
        per_layer = [number(r[f"layer {n} (bytes)"]) for n in range(1, c.n_layers + 1)]
        assert tokens == n_prompt + i
        assert sum(per_layer) == total  # = cache.bytes_used reported by the engine
        # independent: 2 (K, V) x kv heads x head_dim x bytes per number, per token and layer
        assert all(b == 2 * c.n_kv_heads * c.head_dim * c.dtype_bytes * tokens for b in per_layer)
        cache = model.new_cache()
        model.forward(list(range(1, int(tokens) + 1)), cache=cache)
        assert total == cache.bytes_used


def _flops(out):
    tbl = out["figures"][1]["table"]
    return list(zip(numbers(tbl, "tokens fed (with cache)"), numbers(tbl, "FLOPs with cache"),
                    numbers(tbl, "tokens fed (without cache)"), numbers(tbl, "FLOPs without cache")))


def test_cache_saves_flops_and_paths_agree(course):
    out = registry.run("kv_cache", {"steps": 10}, "en")
    rows = _flops(out)
    assert rows[0][1] == rows[0][3]  # the prefill is the same work either way
    for fed_c, flops_c, fed_n, flops_n in rows[1:]:
        assert fed_c == 1 and fed_n > 1 and flops_c < flops_n
    assert "exactly the same tokens" in out["notes"][0]
    assert any("measured" in n for n in out["notes"])
    secs = out["figures"][2]["table"]
    assert all(v > 0 for v in numbers(secs, "with cache (ms)") + numbers(secs, "without cache (ms)"))


@pytest.mark.parametrize("values", [{"prompt": ""}, {"steps": 0}, {"steps": 33}])
def test_errors(course, values):
    with pytest.raises(LessonInputError):
        registry.run("kv_cache", values, "en")


def test_defaults_stay_cheap_but_still_compare_both_paths(course):
    """The warm-latency goal in Pyodide: the default decodes a handful of steps, both ways."""
    out = registry.run("kv_cache", None, "en")
    rows = _flops(out)
    assert 4 <= len(rows) - 1 <= 6  # decode steps after the prefill
    assert all(flops_c < flops_n for _, flops_c, _, flops_n in rows[1:])  # the cache still saves work
    secs = out["figures"][2]["table"]
    assert all(v > 0 for v in numbers(secs, "with cache (ms)"))
