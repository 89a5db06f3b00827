"""The KV cache: cached and cache-less decoding agree, sizes are right, misuse is refused."""
import numpy as np
import pytest

from engine import Generator, KVCache, SamplingParams, Transformer
from engine.analysis.costs import kv_cache_bytes



@pytest.mark.parametrize("case", range(36))
def test_cached_logits_match_full_recompute_at_every_step(case, make_random_configs):
    cfg = list(make_random_configs(36, seed=7))[case]
    model = Transformer.random(cfg, seed=case)
    rng = np.random.default_rng(case)
    n = int(rng.integers(2, cfg.max_seq_len + 1))
    ids = rng.integers(0, cfg.vocab_size, size=n).tolist()
    n_prompt = int(rng.integers(1, n + 1))

    cache = model.new_cache()
    cached = [model.forward(ids[:n_prompt], cache=cache)]  # prefill: [n_prompt, V]
    for t in ids[n_prompt:]:  # decode: one position at a time
        cached.append(model.forward([t], cache=cache))
    cached = np.concatenate(cached)  # [n, V]
    full = model.forward(ids)  # [n, V], no cache
    assert cached.shape == full.shape == (n, cfg.vocab_size)
    np.testing.assert_allclose(cached, full, rtol=0, atol=1e-5)
    # prefix property: the full pass over a prefix sees nothing of the tokens after it
    for end in {1, n_prompt, n}:
        np.testing.assert_allclose(model.forward(ids[:end])[-1], full[end - 1], rtol=0, atol=1e-5)
    assert cache.length == n


@pytest.mark.parametrize("case", range(8))
def test_greedy_tokens_identical_with_and_without_cache(case, make_random_configs, make_config, tok):
    cfg = list(make_random_configs(8, seed=11))[case]
    cfg = make_config(**{**cfg.to_dict(), "vocab_size": 257})
    model = Transformer.random(cfg, seed=100 + case)
    params = SamplingParams(temperature=0)
    n_new = cfg.max_seq_len - 3
    a = Generator(model, tok, params, use_cache=True).generate("abc", n_new, stop_at_eos=False)
    b = Generator(model, tok, params, use_cache=False).generate("abc", n_new, stop_at_eos=False)
    assert [s.token_id for s in a] == [s.token_id for s in b]
    assert len(a) == n_new


def test_sizes_grow_one_position_per_step_and_match_the_formula(model):
    cfg = model.config
    cache = model.new_cache(max_len=20)
    assert cache.k[0].shape == (cfg.n_kv_heads, 20, cfg.head_dim)
    per_token = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 4  # float32
    assert cache.bytes_allocated == 20 * per_token
    model.forward([1, 2, 3], cache=cache)
    for expected in range(3, 10):
        assert cache.length == expected
        assert cache.bytes_used == expected * per_token
        assert cache.bytes_used == kv_cache_bytes(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, expected, dtype_bytes=4)
        model.forward([expected], cache=cache)


def test_decode_writes_in_place_without_reallocating(model):
    cache = model.new_cache()
    k0, v0 = cache.k[0], cache.v[0]
    ptr = k0.__array_interface__["data"][0]
    model.forward([5, 6, 7], cache=cache)
    before = cache.keys(1).copy()
    model.forward([8], cache=cache)
    assert cache.k[0] is k0 and cache.v[0] is v0
    assert cache.k[0].__array_interface__["data"][0] == ptr
    np.testing.assert_array_equal(cache.keys(1)[:, :3], before)  # old notes untouched
    assert np.abs(cache.k[1][:, 4:]).max() == 0  # nothing written past the new slot


def test_cached_keys_equal_keys_of_a_full_pass(model):
    """Cache built step by step holds exactly the K/V a one-shot prefill computes."""
    ids = [3, 1, 4, 1, 5, 9, 2, 6]
    stepwise, oneshot = model.new_cache(), model.new_cache()
    for t in ids:
        model.forward([t], cache=stepwise)
    model.forward(ids, cache=oneshot)
    for layer in range(model.config.n_layers):
        np.testing.assert_allclose(stepwise.keys(layer), oneshot.keys(layer), atol=1e-5)
        np.testing.assert_allclose(stepwise.values(layer), oneshot.values(layer), atol=1e-5)


def test_overflow_is_a_clear_error_and_changes_nothing(model):
    cache = model.new_cache(max_len=5)
    model.forward([1, 2, 3, 4], cache=cache)
    keys = cache.keys(0).copy()
    with pytest.raises(ValueError, match="KV cache is full"):
        model.forward([5, 6], cache=cache)
    assert cache.length == 4
    np.testing.assert_array_equal(cache.keys(0), keys)
    model.forward([5], cache=cache)  # exactly fills it
    with pytest.raises(ValueError, match="reset"):
        model.forward([6], cache=cache)


def test_reset_empties_and_reuses(model):
    cache = model.new_cache()
    first = model.forward([1, 2, 3], cache=cache)
    cache.reset()
    assert cache.length == 0 and cache.bytes_used == 0
    assert np.abs(cache.k[0]).max() == 0
    np.testing.assert_allclose(model.forward([1, 2, 3], cache=cache), first, atol=0)


def test_context_window_is_enforced_with_and_without_cache(model):
    window = model.config.max_seq_len
    with pytest.raises(ValueError, match="context window"):
        model.forward([1] * (window + 1))
    cache = model.new_cache()
    model.forward([1] * window, cache=cache)
    with pytest.raises(ValueError, match="context window"):
        model.forward([1], cache=cache)


def test_bad_cache_arguments(model, cfg, make_config):
    with pytest.raises(ValueError, match="between 1 and"):
        KVCache(cfg, max_len=cfg.max_seq_len + 1)
    with pytest.raises(ValueError, match="between 1 and"):
        KVCache(cfg, max_len=0)
    with pytest.raises(TypeError, match="int"):
        KVCache(cfg, max_len=2.5)
    with pytest.raises(TypeError, match="Config"):
        KVCache({"n_layers": 2})
    other = Transformer.random(make_config(n_kv_heads=4), seed=0)
    with pytest.raises(ValueError, match="different model config"):
        model.forward([1], cache=other.new_cache())
    with pytest.raises(TypeError, match="KVCache"):
        model.forward([1], cache=[])


def test_float16_cache_halves_the_bytes(make_config):
    c32, c16 = make_config(), make_config(dtype="float16")
    a, b = KVCache(c32), KVCache(c16)
    assert a.bytes_allocated == 2 * b.bytes_allocated
    assert b.k[0].dtype == np.float16


def test_truncate_rewinds_to_an_earlier_position(model):
    cache = model.new_cache()
    ids = [9, 8, 7, 6, 5]
    model.forward(ids[:3], cache=cache)
    fourth = model.forward([ids[3]], cache=cache)
    cache.truncate(3)
    np.testing.assert_allclose(model.forward([ids[3]], cache=cache), fourth, atol=0)  # same step again
    cache.truncate(2)
    np.testing.assert_allclose(model.forward([50, 51], cache=cache), model.forward(ids[:2] + [50, 51])[2:], atol=1e-5)
    with pytest.raises(ValueError, match="truncate to 0 .. 4"):
        cache.truncate(5)
