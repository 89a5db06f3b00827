"""The rolling-buffer cache: the same logits as a full cache with the window mask, in W slots;
with attention sinks, the full cache under a mask that hides exactly what it evicts."""
from dataclasses import replace

import numpy as np
import pytest

import engine.model as model_module
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


# --------------------------------------------------------------------------- attention sinks (StreamingLLM)

# (sinks, window, query heads, KV heads): MHA, GQA and MQA, no sink to more sinks than the window
SINK_CASES = [(1, 1, 4, 4), (1, 3, 4, 2), (2, 2, 4, 1), (4, 3, 8, 2), (0, 4, 2, 2), (3, 5, 6, 3)]


def sink_config(S: int, W: int, H: int = 4, KV: int = 2, **over) -> Config:
    base = dict(vocab_size=61, d_model=8 * H, n_layers=2, n_heads=H, n_kv_heads=KV, ffn_dim=40,
                max_seq_len=3 * (S + W) + 8, sliding_window=W, attention_sinks=S)
    return Config(**{**base, **over})


def streamed(model, cache, ids):
    """Logits [len(ids), V], one token at a time: the streaming setting of StreamingLLM."""
    return np.concatenate([model.forward([t], cache=cache) for t in ids])


def masked_reference(model, ids, S: int, W: int, monkeypatch):
    """One forward pass of a model without any window, under an explicit mask written here:
    query i reads key j when j <= i and (j < S or i - j < W). Not the model's own window logic."""
    plain = Transformer(replace(model.config, sliding_window=None, attention_sinks=0), model.weights)

    def mask(c, pos, T, key_pos, xp):
        i, j = np.arange(pos, pos + T)[:, None], np.arange(pos + T)[None, :]
        return ~((j <= i) & ((j < S) | (i - j < W)))

    monkeypatch.setattr(model_module, "attention_mask", mask)
    return plain.forward(ids)


@pytest.mark.parametrize("S,W,H,KV", SINK_CASES)
def test_streamed_sink_cache_equals_the_masked_full_model(S, W, H, KV, monkeypatch):
    cfg = sink_config(S, W, H, KV)
    model = Transformer.random(cfg, seed=10 * S + W)
    ids = np.random.default_rng(S + W).integers(0, cfg.vocab_size, size=cfg.max_seq_len).tolist()
    got = streamed(model, RollingKVCache(cfg), ids)
    np.testing.assert_allclose(got, masked_reference(model, ids, S, W, monkeypatch), rtol=0, atol=1e-5)


@pytest.mark.parametrize("S,W,H,KV", SINK_CASES)
def test_blocks_of_any_size_equal_the_full_cache_with_the_same_mask(S, W, H, KV):
    cfg = sink_config(S, W, H, KV)
    model = Transformer.random(cfg, seed=S * W + 1)
    rng = np.random.default_rng(W)
    n = cfg.max_seq_len
    ids = rng.integers(0, cfg.vocab_size, size=n).tolist()
    blocks, done = [], 0
    while done < n:  # a prefill that may be longer than S + W, then steps and small blocks
        b = int(min(rng.choice([1, 1, 2, 3, S + W + 2]), n - done))
        blocks.append(b)
        done += b
    sink, full = RollingKVCache(cfg), KVCache(cfg)
    i = 0
    for b in blocks:
        np.testing.assert_allclose(model.forward(ids[i : i + b], cache=sink), model.forward(ids[i : i + b], cache=full),
                                   rtol=0, atol=1e-5, err_msg=f"blocks={blocks}")
        i += b


@pytest.mark.parametrize("n", [3, 9])
def test_with_room_for_every_position_it_is_the_full_cache(n):
    cfg = sink_config(2, 4, max_seq_len=12)
    model = Transformer.random(cfg, seed=1)
    plain = Transformer(replace(cfg, sliding_window=None, attention_sinks=0), model.weights)
    ids = list(range(1, n + 1))
    big = Transformer(replace(cfg, sliding_window=n - 2, attention_sinks=2), model.weights)  # S + W = n
    np.testing.assert_allclose(streamed(big, RollingKVCache(big.config), ids), plain.forward(ids), rtol=0, atol=1e-5)


def test_sinks_stay_and_the_window_rolls():
    S, W = 2, 3
    cfg = sink_config(S, W)
    model = Transformer.random(cfg, seed=3)
    cache = RollingKVCache(cfg)
    streamed(model, cache, list(range(1, 11)))  # positions 0 .. 9
    assert list(cache.slot_pos[:S]) == [0, 1]
    assert sorted(cache.slot_pos[S:]) == [7, 8, 9]
    for p in (7, 8, 9):
        assert cache.slot_pos[S + (p - S) % W] == p


@pytest.mark.parametrize("S,W", [(1, 1), (2, 5), (4, 3)])
def test_bytes_are_s_plus_w_slots(S, W):
    cfg = sink_config(S, W)
    model = Transformer.random(cfg, seed=4)
    cache = RollingKVCache(cfg)
    per_token = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 4  # K and V, float32
    assert cache.bytes_allocated == (S + W) * per_token == sum(a.nbytes for a in cache.k + cache.v)
    for n in range(1, 3 * (S + W)):
        model.forward([n % cfg.vocab_size], cache=cache)
        assert cache.bytes_used == min(n, S + W) * per_token


def test_costs_count_the_sinks_too():
    from engine.analysis import costs

    cfg = sink_config(4, 16, max_seq_len=100)
    assert costs.cached_positions(cfg, 10) == 10
    assert costs.cached_positions(cfg, 90) == 20


def test_bad_arguments():
    with pytest.raises(ValueError, match="needs a sliding_window"):
        sink_config(2, 3, sliding_window=None)
    with pytest.raises(ValueError, match="attention_sinks must be >= 0"):
        sink_config(-1, 3)
    with pytest.raises(TypeError, match="attention_sinks must be an int"):
        sink_config(1.5, 3, max_seq_len=20)
    with pytest.raises(ValueError, match="needs a sliding window"):
        RollingKVCache(sink_config(0, 3, sliding_window=None))


def test_rewind_with_sinks_only_while_nothing_was_overwritten():
    cfg = sink_config(1, 3)
    model = Transformer.random(cfg, seed=5)
    cache = RollingKVCache(cfg)
    model.forward([1, 2, 3], cache=cache)
    cache.truncate(2)
    assert list(cache.slot_pos) == [0, 1, -1, -1]
    model.forward([4, 5, 6, 7], cache=cache)  # 6 positions in 4 slots
    with pytest.raises(ValueError, match="overwritten"):
        cache.truncate(3)
    cache.reset()
    assert cache.length == 0 and (cache.slot_pos == -1).all() and not cache.k[0].any()


def test_a_trace_names_the_position_of_every_key_column():
    """Trace.key_pos[l]: the rolling cache hands back its slots out of order once the window
    wraps (and the sinks first); the trace says which position each attention column is."""
    S, W = 2, 3
    cfg = sink_config(S, W)
    model = Transformer.random(cfg, seed=6)
    cache = RollingKVCache(cfg)
    streamed(model, cache, list(range(1, 9)))  # positions 0 .. 7
    _logits, tr = model.forward([9], cache=cache, trace=True)  # position 8
    for l in range(cfg.n_layers):
        assert sorted(tr.key_pos[l].tolist()) == [0, 1, 6, 7, 8] == cache.held_positions().tolist()
        assert list(tr.key_pos[l]) == list(cache.slot_pos)  # column i is slot i
        assert tr.attn[l].shape[-1] == len(tr.key_pos[l])
    plain = Transformer(replace(cfg, sliding_window=None, attention_sinks=0), model.weights)
    _logits, tr = plain.forward([1, 2, 3], trace=True)
    assert [k.tolist() for k in tr.key_pos] == [[0, 1, 2]] * cfg.n_layers
