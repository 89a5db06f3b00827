"""The rolling-buffer cache: the same logits as a full cache with the window mask, in W slots."""
import numpy as np
import pytest

from engine import Config, KVCache, Transformer
from engine.caches.rolling import RollingKVCache

# (window, query heads, KV heads): MHA, GQA and MQA, windows from 1 to wider than a block
CASES = [(1, 4, 4), (2, 4, 2), (3, 4, 1), (4, 8, 2), (5, 2, 2), (7, 6, 3)]


def windowed_config(W: int, H: int, KV: int, **over) -> Config:
    base = dict(vocab_size=61, d_model=8 * H, n_layers=2, n_heads=H, n_kv_heads=KV, ffn_dim=40,
                max_seq_len=3 * W + 8, sliding_window=W)
    return Config(**{**base, **over})


def feed(model, cache, ids, blocks):
    """Logits [len(ids), V] fed in consecutive blocks of the given sizes (prefill, then the rest)."""
    out, i = [], 0
    for b in blocks:
        out.append(model.forward(ids[i : i + b], cache=cache))
        i += b
    return np.concatenate(out)


@pytest.mark.parametrize("W,H,KV", CASES)
def test_rolling_equals_full_cache_with_window_mask_for_every_context(W, H, KV):
    cfg = windowed_config(W, H, KV)
    model = Transformer.random(cfg, seed=W * 10 + KV)
    rng = np.random.default_rng(W)
    for n in range(1, 3 * W + 1):
        ids = rng.integers(0, cfg.vocab_size, size=n).tolist()
        prefill = int(rng.integers(1, n + 1))  # may be longer than W
        rest = []
        while prefill + sum(rest) < n:  # decode steps and small blocks after the prefill
            rest.append(int(min(rng.choice([1, 1, 2, 3]), n - prefill - sum(rest))))
        rolling = feed(model, RollingKVCache(cfg), ids, [prefill] + rest)
        full = feed(model, KVCache(cfg), ids, [prefill] + rest)
        np.testing.assert_allclose(rolling, full, rtol=0, atol=1e-5, err_msg=f"n={n}, blocks={[prefill] + rest}")
        np.testing.assert_allclose(rolling, model.forward(ids), rtol=0, atol=1e-5)


@pytest.mark.parametrize("W", [1, 3, 6])
def test_one_prefill_longer_than_the_window(W):
    cfg = windowed_config(W, 4, 2)
    model = Transformer.random(cfg, seed=5)
    ids = list(range(1, 3 * W + 1))
    cache = RollingKVCache(cfg)
    np.testing.assert_allclose(model.forward(ids, cache=cache), model.forward(ids), rtol=0, atol=1e-5)
    np.testing.assert_allclose(model.forward([7], cache=cache)[-1], model.forward(ids + [7])[-1], rtol=0, atol=1e-5)


def test_position_p_lives_in_slot_p_mod_w():
    W = 4
    cfg = windowed_config(W, 4, 2)
    model = Transformer.random(cfg, seed=2)
    ids = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]
    rolling, full = RollingKVCache(cfg), KVCache(cfg)
    model.forward(ids[:3], cache=rolling)
    model.forward(ids[:3], cache=full)
    for t in ids[3:]:
        model.forward([t], cache=rolling)
        model.forward([t], cache=full)
    n = len(ids)
    assert sorted(rolling.slot_pos) == list(range(n - W, n))
    for p in range(n - W, n):
        assert rolling.slot_pos[p % W] == p
        for layer in range(cfg.n_layers):
            # layer 0 gets identical inputs; later layers differ by summation order (masked keys)
            np.testing.assert_allclose(rolling.k[layer][:, p % W], full.k[layer][:, p], rtol=0, atol=1e-6)
            np.testing.assert_allclose(rolling.v[layer][:, p % W], full.v[layer][:, p], rtol=0, atol=1e-6)


@pytest.mark.parametrize("W", [1, 4, 9])
def test_memory_is_w_slots_however_long_the_text(W):
    cfg = windowed_config(W, 4, 2)
    model = Transformer.random(cfg, seed=1)
    cache = RollingKVCache(cfg)
    per_token = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 4  # K and V, float32
    assert cache.bytes_allocated == W * per_token
    assert cache.bytes_allocated == sum(a.nbytes for a in cache.k + cache.v)
    for n in range(1, 3 * W + 1):
        model.forward([n % cfg.vocab_size], cache=cache)
        assert cache.bytes_used == min(n, W) * per_token
        assert cache.bytes_allocated == W * per_token
    assert all(a.shape == (cfg.n_kv_heads, W, cfg.head_dim) for a in cache.k + cache.v)


def test_needs_a_window():
    cfg = windowed_config(3, 4, 2, sliding_window=None)
    with pytest.raises(ValueError, match="needs a sliding window"):
        RollingKVCache(cfg)


def test_rewind_only_while_nothing_was_overwritten():
    W = 4
    cfg = windowed_config(W, 4, 2)
    model = Transformer.random(cfg, seed=3)
    cache = RollingKVCache(cfg)
    model.forward([1, 2, 3], cache=cache)
    cache.truncate(1)  # positions 0 .. 2 are all still in their slots
    assert cache.length == 1 and list(cache.slot_pos) == [0, -1, -1, -1]
    np.testing.assert_allclose(model.forward([5], cache=cache)[-1], model.forward([1, 5])[-1], atol=1e-5)
    model.forward([6, 7, 8, 9], cache=cache)  # 6 positions: 0 and 1 were overwritten
    with pytest.raises(ValueError, match="overwritten"):
        cache.truncate(5)
    cache.reset()
    assert cache.length == 0 and (cache.slot_pos == -1).all() and not cache.k[0].any()


def test_context_window_still_limits_positions():
    cfg = windowed_config(2, 4, 2, max_seq_len=6)
    model = Transformer.random(cfg, seed=4)
    cache = RollingKVCache(cfg)
    model.forward([1, 2, 3, 4, 5, 6], cache=cache)
    with pytest.raises(ValueError, match="context window is 6"):
        model.forward([1], cache=cache)
