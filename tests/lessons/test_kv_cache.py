"""kv_cache: per-layer bytes are the engine cache's, both paths agree, the cache saves work."""
import pytest

from lessons import registry
from lessons.base import LessonInputError

from lesson_checks import check_both_languages, check_describe, check_output


def test_defaults_both_languages(course):
    check_describe("kv_cache")
    check_both_languages("kv_cache")


def test_per_layer_bytes_equal_the_cache(course):
    model, tok = course
    c = model.config
    steps = 6
    out = check_output(registry.run("kv_cache", {"steps": steps}, "en"))
    rows = out["figures"][0]["table"]["rows"]
    from lessons.kv_cache import DEFAULT_PROMPT

    n_prompt = len(tok.encode(DEFAULT_PROMPT))
    assert len(rows) == steps + 1
    for i, r in enumerate(rows):
        tokens, per_layer, total = r[2], r[3:-1], r[-1]
        assert tokens == n_prompt + i
        assert len(per_layer) == c.n_layers
        assert sum(per_layer) == total  # = cache.bytes_used reported by the engine
        # independent: 2 (K, V) x kv heads x head_dim x bytes per number, per token and layer
        assert all(b == 2 * c.n_kv_heads * c.head_dim * c.dtype_bytes * tokens for b in per_layer)
        cache = model.new_cache()
        model.forward(list(range(1, tokens + 1)), cache=cache)
        assert total == cache.bytes_used


def test_cache_saves_flops_and_paths_agree(course):
    out = registry.run("kv_cache", {"steps": 10}, "en")
    rows = out["figures"][1]["table"]["rows"]
    assert rows[0][2] == rows[0][4]  # the prefill is the same work either way
    for r in rows[1:]:
        assert r[1] == 1 and r[3] > 1 and r[2] < r[4]
    assert "exactly the same tokens" in out["notes"][0]
    assert any("measured" in n for n in out["notes"])
    secs = out["figures"][2]["table"]["rows"]
    assert all(r[1] > 0 and r[2] > 0 for r in secs)


def test_errors(course):
    for values in ({"prompt": ""}, {"steps": 0}, {"steps": 33}):
        with pytest.raises(LessonInputError):
            registry.run("kv_cache", values, "en")


def test_defaults_stay_cheap_but_still_compare_both_paths(course):
    """The warm-latency goal in Pyodide: the default decodes a handful of steps, both ways."""
    out = registry.run("kv_cache", None, "en")
    rows = out["figures"][1]["table"]["rows"]
    assert 4 <= len(rows) - 1 <= 6  # decode steps after the prefill
    assert all(r[2] < r[4] for r in rows[1:])  # measured for real: the cache still saves work
    assert all(r[1] > 0 and r[2] > 0 for r in out["figures"][2]["table"]["rows"])
