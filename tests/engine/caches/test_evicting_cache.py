"""The heavy-hitter (H2O) cache: a budget of recent positions plus the most attended ones."""
import numpy as np
import pytest

from engine import Config, KVCache, Transformer
from engine.caches.evicting import HeavyHitterKVCache

CASES = [(4, 4), (4, 2), (4, 1), (8, 2), (6, 3)]  # (query heads, KV heads)


def config(H: int = 4, KV: int = 2, **over) -> Config:
    base = dict(vocab_size=61, d_model=8 * H, n_layers=2, n_heads=H, n_kv_heads=KV, ffn_dim=40, max_seq_len=24)
    return Config(**{**base, **over})


@pytest.mark.parametrize("H,KV", CASES)
@pytest.mark.parametrize("recent", [0, 3])
def test_a_budget_as_long_as_the_text_is_the_full_cache(H, KV, recent):
    cfg = config(H, KV)
    model = Transformer.random(cfg, seed=H + KV)
    ids = np.random.default_rng(H).integers(0, cfg.vocab_size, size=cfg.max_seq_len).tolist()
    h2o, full = HeavyHitterKVCache(cfg, budget=cfg.max_seq_len, recent=recent), KVCache(cfg)
    for i, b in enumerate([5, 1, 1, 3, 1, 6, 1, 1, 5]):  # a prefill, then steps and blocks
        start = sum([5, 1, 1, 3, 1, 6, 1, 1, 5][:i])
        np.testing.assert_allclose(model.forward(ids[start : start + b], cache=h2o),
                                   model.forward(ids[start : start + b], cache=full), rtol=0, atol=1e-5)


class Attention:
    """A hand-made attention pattern fed to the cache without a model: store, observe, advance."""

    def __init__(self, budget: int, recent: int, n_layers: int = 1):
        self.cfg = config(n_layers=n_layers)
        self.cache = HeavyHitterKVCache(self.cfg, budget=budget, recent=recent)

    def step(self, weights_per_layer):
        """One decode step; weights_per_layer[l] maps a held position -> the weight it gets."""
        c = self.cfg
        kv = np.zeros((c.n_kv_heads, 1, c.head_dim), dtype=np.float32)
        for layer, weights in enumerate(weights_per_layer):
            _, _, key_pos = self.cache.store(layer, kv, kv)
            probs = np.zeros((c.n_heads, 1, len(key_pos)), dtype=np.float32)
            for p, w in weights.items():
                probs[0, 0, list(key_pos).index(p)] = w  # one head is enough: heads are summed
            self.cache.observe_attention(layer, probs)
        self.cache.advance(1)


def test_keeps_the_recent_positions_and_the_heaviest_hitters():
    run = Attention(budget=4, recent=2)
    run.step([{0: 1.0}])  # position 0 arrives and takes all the attention
    run.step([{0: 0.5, 1: 0.5}])
    run.step([{0: 0.9, 1: 0.0, 2: 0.1}])
    run.step([{0: 0.2, 1: 0.0, 2: 0.1, 3: 0.7}])  # 4 positions: the budget is full
    assert list(run.cache.positions(0)) == [0, 1, 2, 3]
    run.step([{0: 0.1, 1: 0.0, 2: 0.0, 3: 0.4, 4: 0.5}])
    # scores: 0 -> 2.7, 1 -> 0.5, 2 -> 0.2, 3 -> 1.1; recent = 3, 4; heavy hitters of 0..2: 0 then 1
    assert list(run.cache.positions(0)) == [0, 1, 3, 4]
    run.step([{0: 0.0, 1: 0.0, 3: 0.0, 4: 0.9, 5: 0.1}])
    # scores: 0 -> 2.7, 1 -> 0.5, 3 -> 1.1, 4 -> 1.4; recent = 4, 5; heavy: 0 (2.7) and 3 (1.1)
    assert list(run.cache.positions(0)) == [0, 3, 4, 5]
    np.testing.assert_allclose(run.cache.score[0][:4], [2.7, 1.1, 1.4, 0.1], atol=1e-6)


def test_each_layer_keeps_its_own_heavy_hitters():
    run = Attention(budget=2, recent=1, n_layers=2)
    run.step([{0: 1.0}, {0: 1.0}])
    run.step([{0: 0.9, 1: 0.1}, {0: 0.1, 1: 0.9}])
    run.step([{0: 0.5, 1: 0.0, 2: 0.5}, {0: 0.0, 1: 0.5, 2: 0.5}])
    assert list(run.cache.positions(0)) == [0, 2]
    assert list(run.cache.positions(1)) == [1, 2]


def test_without_recent_slots_only_scores_count_and_ties_go_to_the_newer():
    run = Attention(budget=2, recent=0)
    run.step([{0: 1.0}])
    run.step([{0: 0.5, 1: 0.5}])  # 0 -> 1.5, 1 -> 0.5
    run.step([{0: 0.0, 1: 0.5, 2: 0.5}])  # 0 -> 1.5, 1 -> 1.0, 2 -> 0.5
    assert list(run.cache.positions(0)) == [0, 1]
    run.step([{0: 0.0, 1: 0.0, 3: 1.0}])  # 0 -> 1.5, 1 -> 1.0, 3 -> 1.0: the tie goes to 3
    assert list(run.cache.positions(0)) == [0, 3]


@pytest.mark.parametrize("budget", [1, 3, 7])
def test_bytes_are_the_budget(budget):
    cfg = config()
    model = Transformer.random(cfg, seed=2)
    cache = HeavyHitterKVCache(cfg, budget=budget, recent=1)
    per_token = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 4  # K and V, float32
    assert cache.bytes_allocated == budget * per_token == sum(a.nbytes for a in cache.k + cache.v)
    for n in range(1, 12):
        model.forward([n], cache=cache)
        assert cache.bytes_used == min(n, budget) * per_token
        assert all(len(cache.positions(l)) == min(n, budget) for l in range(cfg.n_layers))


@pytest.mark.parametrize("kwargs,error,match", [
    (dict(budget=0, recent=0), ValueError, "budget must be >= 1"),
    (dict(budget=25, recent=0), ValueError, "budget must be <= 24"),
    (dict(budget=4, recent=5), ValueError, "recent must be <= 4"),
    (dict(budget=4, recent=-1), ValueError, "recent must be >= 0"),
    (dict(budget=4.0, recent=1), TypeError, "budget must be an int"),
])
def test_bad_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        HeavyHitterKVCache(config(), **kwargs)


def test_refuses_a_window_and_a_rewind_and_a_step_without_weights():
    with pytest.raises(ValueError, match="sliding window"):
        HeavyHitterKVCache(config(sliding_window=4), budget=4, recent=1)
    cfg = config()
    model = Transformer.random(cfg, seed=3)
    cache = HeavyHitterKVCache(cfg, budget=4, recent=1)
    model.forward([1, 2, 3], cache=cache)
    with pytest.raises(ValueError, match="cannot rewind"):
        cache.truncate(1)
    kv = np.zeros((cfg.n_kv_heads, 1, cfg.head_dim), dtype=np.float32)
    for layer in range(cfg.n_layers):
        cache.store(layer, kv, kv)
    with pytest.raises(RuntimeError, match="observe_attention"):
        cache.advance(1)
    with pytest.raises(ValueError, match="must follow store"):
        cache.observe_attention(0, np.zeros((cfg.n_heads, 1, 2), dtype=np.float32))
    cache.reset()
    assert cache.length == 0 and (cache.pos[0] == -1).all()
    np.testing.assert_allclose(model.forward([5], cache=cache), model.forward([5]), atol=1e-5)


def test_a_step_one_layer_never_observed_is_refused_before_any_layer_evicts(monkeypatch):
    """A model that skips observe_attention in its last layer: advance refuses before it evicts
    in the layers that were observed, so the failed forward leaves the cache as it was."""
    cfg = config()
    model = Transformer.random(cfg, seed=4)
    cache = HeavyHitterKVCache(cfg, budget=4, recent=1)
    model.forward([1, 2, 3, 4], cache=cache)  # full: the next step evicts in every layer
    before = [(a.copy(), b.copy(), p.copy(), s.copy()) for a, b, p, s in zip(cache.k, cache.v, cache.pos, cache.score)]
    observe = cache.observe_attention
    monkeypatch.setattr(cache, "observe_attention",
                        lambda layer, probs: None if layer == cfg.n_layers - 1 else observe(layer, probs))
    with pytest.raises(RuntimeError, match=f"layer {cfg.n_layers - 1} stored keys"):
        model.forward([5], cache=cache)
    assert cache.length == 4
    for (k, v, p, s), k2, v2, p2, s2 in zip(before, cache.k, cache.v, cache.pos, cache.score):
        np.testing.assert_array_equal(k, k2), np.testing.assert_array_equal(v, v2)
        np.testing.assert_array_equal(p, p2), np.testing.assert_array_equal(s, s2)
    monkeypatch.undo()  # the same step, observed everywhere, now goes through
    model.forward([5], cache=cache)
    assert cache.length == 5


def reference_keep(key_pos, score, B, R):
    """Written out plainly: the R newest, then the others by score (ties: newer first), up to B."""
    order = sorted(range(len(key_pos)), key=lambda i: -key_pos[i])
    newest, rest = order[:R], order[R:]
    heavy = sorted(rest, key=lambda i: (-score[i], -key_pos[i]))[: B - R]
    return sorted(newest + heavy)


@pytest.mark.parametrize("B,R,extra", [(4, 2, 1), (4, 0, 1), (4, 4, 1), (5, 2, 3), (3, 1, 6), (6, 3, 2)])
def test_keep_matches_the_rule_for_steps_and_blocks(B, R, extra):
    cache = HeavyHitterKVCache(config(), budget=B, recent=R)
    rng = np.random.default_rng(B * 10 + R + extra)
    for _ in range(20):
        S = B + extra
        key_pos = np.sort(rng.choice(40, size=S, replace=False))
        score = rng.integers(0, 4, size=S).astype(float)  # small integers: many ties
        assert list(cache.keep(key_pos, score)) == reference_keep(list(key_pos), list(score), B, R)
