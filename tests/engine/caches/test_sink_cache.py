"""The attention-sink cache: the full cache under a mask that hides exactly what it evicts."""
from dataclasses import replace

import numpy as np
import pytest

import engine.model as model_module
from engine import Config, KVCache, Transformer
from engine.caches.rolling import RollingKVCache
from engine.caches.sink import SinkKVCache

# (sinks, window, query heads, KV heads): MHA, GQA and MQA, no sink to more sinks than the window
CASES = [(1, 1, 4, 4), (1, 3, 4, 2), (2, 2, 4, 1), (4, 3, 8, 2), (0, 4, 2, 2), (3, 5, 6, 3)]


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


@pytest.mark.parametrize("S,W,H,KV", CASES)
def test_streamed_sink_cache_equals_the_masked_full_model(S, W, H, KV, monkeypatch):
    cfg = sink_config(S, W, H, KV)
    model = Transformer.random(cfg, seed=10 * S + W)
    ids = np.random.default_rng(S + W).integers(0, cfg.vocab_size, size=cfg.max_seq_len).tolist()
    got = streamed(model, SinkKVCache(cfg), ids)
    np.testing.assert_allclose(got, masked_reference(model, ids, S, W, monkeypatch), rtol=0, atol=1e-5)


@pytest.mark.parametrize("S,W,H,KV", CASES)
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
    sink, full = SinkKVCache(cfg), KVCache(cfg)
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
    np.testing.assert_allclose(streamed(big, SinkKVCache(big.config), ids), plain.forward(ids), rtol=0, atol=1e-5)


def test_without_sinks_it_is_the_rolling_cache():
    cfg = sink_config(0, 3)
    model = Transformer.random(cfg, seed=2)
    ids = list(range(1, 15))
    np.testing.assert_allclose(streamed(model, SinkKVCache(cfg), ids), streamed(model, RollingKVCache(cfg), ids),
                               rtol=0, atol=1e-6)


def test_sinks_stay_and_the_window_rolls():
    S, W = 2, 3
    cfg = sink_config(S, W)
    model = Transformer.random(cfg, seed=3)
    cache = SinkKVCache(cfg)
    streamed(model, cache, list(range(1, 11)))  # positions 0 .. 9
    assert list(cache.slot_pos[:S]) == [0, 1]
    assert sorted(cache.slot_pos[S:]) == [7, 8, 9]
    for p in (7, 8, 9):
        assert cache.slot_pos[S + (p - S) % W] == p


@pytest.mark.parametrize("S,W", [(1, 1), (2, 5), (4, 3)])
def test_bytes_are_s_plus_w_slots(S, W):
    cfg = sink_config(S, W)
    model = Transformer.random(cfg, seed=4)
    cache = SinkKVCache(cfg)
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
        SinkKVCache(sink_config(0, 3, sliding_window=None))


def test_rewind_only_while_nothing_was_overwritten():
    cfg = sink_config(1, 3)
    model = Transformer.random(cfg, seed=5)
    cache = SinkKVCache(cfg)
    model.forward([1, 2, 3], cache=cache)
    cache.truncate(2)
    assert list(cache.slot_pos) == [0, 1, -1, -1]
    model.forward([4, 5, 6, 7], cache=cache)  # 6 positions in 4 slots
    with pytest.raises(ValueError, match="overwritten"):
        cache.truncate(3)
    cache.reset()
    assert cache.length == 0 and (cache.slot_pos == -1).all() and not cache.k[0].any()
