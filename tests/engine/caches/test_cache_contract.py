"""The cache contract (engine/caches/base.py): every cache kind keeps it, and a forward pass that
raises anywhere -- at any layer, before or after that layer's write, or after the last layer
-- leaves the cache byte for byte as it was: its arrays, its length, and for a paged cache
the pool's arrays, free list (in order) and reference counts. The next step then reads the
same numbers as a cache that never saw the failure."""
from __future__ import annotations

import numpy as np
import pytest

from engine import BlockPool, KVCache, QuantKVCache, RollingKVCache, Transformer
from engine.caches.base import BaseCache, Cache, write
from engine.config import Config
from engine.caches.evicting import HeavyHitterKVCache

L = 3  # layers: a failure at the first, a middle and the last layer


def _config(**over) -> Config:
    base = dict(vocab_size=61, d_model=32, n_layers=L, n_heads=4, n_kv_heads=2, ffn_dim=48, max_seq_len=40,
                rope_theta=10000.0)
    return Config(**{**base, **over})


# kind -> (Config fields of its own, a factory); every kind is failed at every layer below
KINDS = {
    "contiguous": ({}, lambda cfg: KVCache(cfg, max_len=cfg.max_seq_len)),
    "rolling": ({"sliding_window": 5}, lambda cfg: RollingKVCache(cfg)),
    "per_token4": ({}, lambda cfg: QuantKVCache(cfg, "per_token", 4)),
    "kivi2": ({}, lambda cfg: QuantKVCache(cfg, "kivi", 2, residual=4)),
    "rotated3": ({}, lambda cfg: QuantKVCache(cfg, "rotated", 3)),
    "float16": ({}, lambda cfg: QuantKVCache(cfg, "per_token", 16)),
    "paged": ({}, lambda cfg: BlockPool(cfg, n_blocks=12, block_size=4).new_sequence()),
    # forked after the prefill (_prefilled): the shared, partly filled last block is copied on write
    "paged_shared": ({}, lambda cfg: BlockPool(cfg, n_blocks=12, block_size=4).new_sequence()),
}


# caches that evict (attention sinks, heavy hitters): they keep some of the positions they are given
KINDS["sink"] = ({"sliding_window": 4, "attention_sinks": 2}, lambda cfg: RollingKVCache(cfg))
KINDS["heavy_hitters"] = ({}, lambda cfg: HeavyHitterKVCache(cfg, budget=6, recent=2))


def _prefilled(kind: str, n: int, seed: int):
    """(model, cache holding n positions, the ids fed, whatever else must stay alive)."""
    over, make = KINDS[kind]
    cfg = _config(**over)
    model = Transformer.random(cfg, seed=seed)
    cache = make(cfg)
    ids = np.random.default_rng(seed).integers(1, cfg.vocab_size, size=n).tolist()
    model.forward(ids[: n // 2], cache=cache)  # a prefill, then single steps: every write path
    for t in ids[n // 2 :]:
        model.forward([t], cache=cache)
    keep = cache.fork() if kind == "paged_shared" else None
    return model, cache, ids, keep


def state(obj, depth=0):
    """Everything a cache holds, as comparable values: arrays as (dtype, shape, bytes)."""
    if isinstance(obj, np.ndarray):
        return ("array", obj.dtype.str, obj.shape, obj.tobytes())
    if isinstance(obj, (list, tuple)):
        return tuple(state(x, depth) for x in obj)
    if isinstance(obj, dict):
        return tuple(sorted((str(k), state(v, depth)) for k, v in obj.items()))
    if obj is None or isinstance(obj, (bool, int, float, str, np.generic)):
        return obj
    if isinstance(obj, (BaseCache, BlockPool)) or type(obj).__name__ == "QuantRows":
        skip = {"config", "xp", "_holders"}
        out = {k: state(v, depth + 1) for k, v in vars(obj).items() if k not in skip and k != "pool"}
        if isinstance(obj, BlockPool):
            out["holders"] = sorted(s.length for s in obj._holders.values())
        if getattr(obj, "pool", None) is not None:
            out["pool"] = state(obj.pool, depth + 1)
        return out
    return type(obj).__name__  # plans and the like: compared by kind only


class Boom(RuntimeError):
    pass


def _fail_at(cache, layer: int, after_write: bool):
    """Make cache.store raise at ``layer``, before or after it wrote (an instance attribute)."""
    store = cache.store

    def failing(index, k, v):
        if index == layer and not after_write:
            raise Boom(f"layer {layer}")
        out = store(index, k, v)
        if index == layer:
            raise Boom(f"layer {layer}")
        return out

    cache.store = failing
    return lambda: vars(cache).pop("store")


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("n_new", [1, 6])
@pytest.mark.parametrize("after_write", [False, True])
def test_a_forward_that_raises_at_any_layer_leaves_the_cache_as_it_was(kind, n_new, after_write):
    model, cache, ids, _keep = _prefilled(kind, 9, seed=3)
    twin_model, twin, _, _twin_keep = _prefilled(kind, 9, seed=3)  # never fails
    before = state(cache)
    assert before == state(twin)
    new = list(range(2, 2 + n_new))
    for layer in range(L):
        undo = _fail_at(cache, layer, after_write)
        with pytest.raises(Boom):
            model.forward(new, cache=cache)
        undo()
        assert cache.length == 9
        assert state(cache) == before, f"{kind}: a failure at layer {layer} changed the cache"
    # after the logits too: the last layer wrote, then the output head raised
    model.logits_from_hidden = lambda h: (_ for _ in ()).throw(Boom("head"))
    with pytest.raises(Boom):
        model.forward(new, cache=cache)
    del model.logits_from_hidden
    assert state(cache) == before
    # and the next step reads exactly what an untouched cache reads
    np.testing.assert_array_equal(model.forward(new, cache=cache), twin_model.forward(new, cache=twin))
    assert state(cache) == state(twin)


@pytest.mark.parametrize("kind", ["per_token4", "kivi2", "rotated3"])
def test_a_non_finite_key_in_a_later_layer_rolls_back_the_earlier_layers(kind):
    """The issue's case: KIVI rotated layer 0's value tail, then layer 1 refused a NaN."""
    model, cache, ids, _ = _prefilled(kind, 9, seed=5)
    before = state(cache)
    broken = model.layers[1]
    model.layers[1] = broken._replace(wqkv=broken.wqkv * np.float32(np.inf))  # k, v of layer 1: inf / nan
    with np.errstate(all="ignore"), pytest.raises(ValueError, match="not finite"):
        model.forward([4, 5, 6], cache=cache)  # KIVI: completes a key block (positions 8..11)
    model.layers[1] = broken
    assert state(cache) == before


@pytest.mark.parametrize("n_new", [1, 5, 9])
def test_a_failed_forward_gives_every_block_back_in_order(n_new):
    cfg = _config()
    model = Transformer.random(cfg, seed=2)
    pool = BlockPool(cfg, n_blocks=10, block_size=4)
    seq = pool.new_sequence()
    model.forward([3, 4, 5], cache=seq)
    twin = seq.fork()  # shares the partly filled block: the next write copies it
    free, refs = list(pool._free), pool.refs.copy()
    undo = _fail_at(seq, L - 1, after_write=True)
    with pytest.raises(Boom):
        model.forward(list(range(1, 1 + n_new)), cache=seq)
    undo()
    assert pool._free == free and pool.free_blocks == len(free)
    np.testing.assert_array_equal(pool.refs, refs)
    assert seq.block_table == twin.block_table and pool.copies == 0


class AppendCache(BaseCache):
    """A cache written the simplest way (a growing list per layer) that logs nothing: the
    default undo of BaseCache (a copy of its state at begin) must keep it safe too, as it
    keeps every cache added later that does not log its writes. It has the optional hook."""

    def __init__(self, config):
        super().__init__(config)
        self.k = [[] for _ in range(config.n_layers)]  # per layer: [KV, 1, hd] arrays, one per position
        self.v = [[] for _ in range(config.n_layers)]
        self.seen = []  # what observe_attention saw

    def store(self, layer, k, v):
        self.k[layer].extend(np.split(k, k.shape[1], axis=1))
        self.v[layer].extend(np.split(v, v.shape[1], axis=1))
        return np.concatenate(self.k[layer], axis=1), np.concatenate(self.v[layer], axis=1), None

    def keys(self, layer):
        return np.concatenate(self.k[layer][: self.length], axis=1)

    def values(self, layer):
        return np.concatenate(self.v[layer][: self.length], axis=1)

    def observe_attention(self, layer, weights):  # optional, not part of the Protocol
        self.seen.append(layer)

    free = property(lambda self: self.config.max_seq_len - self.length)
    bytes_used = property(lambda self: self.length * self.config.kv_values_per_token * 4)
    bytes_allocated = bytes_used

    def _clear(self):
        self.k = [[] for _ in self.k]
        self.v = [[] for _ in self.v]


@pytest.mark.parametrize("after_write", [False, True])
def test_a_cache_that_logs_nothing_is_put_back_by_the_default_undo(after_write):
    cfg = _config()
    model = Transformer.random(cfg, seed=6)
    cache, twin = AppendCache(cfg), AppendCache(cfg)
    for c in (cache, twin):
        model.forward([5, 6, 7], cache=c)
    before = state(cache)
    for layer in range(L):
        undo = _fail_at(cache, layer, after_write)
        with pytest.raises(Boom):
            model.forward([8, 9], cache=cache)
        undo()
        assert state(cache) == before
    np.testing.assert_array_equal(model.forward([8, 9], cache=cache), model.forward([8, 9], cache=twin))
    assert isinstance(cache, Cache)


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_cache_kind_keeps_the_protocol(kind):
    over, make = KINDS[kind]
    assert isinstance(make(_config(**over)), Cache)


def _held_positions(cache, layer: int) -> np.ndarray:
    """The positions a cache says it keeps, worked out from its own rule (not from keys())."""
    n = cache.length
    if isinstance(cache, HeavyHitterKVCache):  # its own choice, recorded per layer
        return cache.positions(layer)
    if isinstance(cache, RollingKVCache):  # the sinks (if any), then the last W others
        return np.r_[0 : min(n, cache.sinks), max(cache.sinks, n - cache.window) : n]
    return np.arange(n)


@pytest.mark.parametrize("kind", list(KINDS))
def test_keys_and_values_are_what_attention_read(kind):
    """keys(l) / values(l): the positions a next query could read, oldest first, as the
    numbers attention got from store (a quantized cache decodes them)."""
    model, cache, ids, _ = _prefilled(kind, 9, seed=4)
    store, read = cache.store, {}

    def recording(layer, k, v):
        K, V, key_pos = store(layer, k, v)
        pos = np.arange(K.shape[1]) if key_pos is None else np.asarray(key_pos)  # None: slot i = position i
        read[layer] = {int(p): (K[:, i], V[:, i]) for i, p in enumerate(pos) if p >= 0}
        return K, V, key_pos

    cache.store = recording
    model.forward([7], cache=cache)
    for layer in range(L):
        held = _held_positions(cache, layer)
        k, v = cache.keys(layer), cache.values(layer)
        assert k.shape == v.shape == (model.config.n_kv_heads, len(held), model.config.head_dim)
        np.testing.assert_array_equal(k, np.stack([read[layer][p][0] for p in held], axis=1))
        np.testing.assert_array_equal(v, np.stack([read[layer][p][1] for p in held], axis=1))


class _OtherModule:
    """Stands for CuPy: an array module that is not NumPy."""

    __name__ = "cupy"


def test_the_model_refuses_a_cache_of_another_array_module():
    cfg = _config()
    model = Transformer.random(cfg, seed=0)
    cache = QuantKVCache(cfg, "kivi", 2)  # NumPy only
    model.xp = _OtherModule()  # as a CuPy model would be
    with pytest.raises(TypeError, match="keeps its arrays in numpy but the model runs on cupy"):
        model.forward([1, 2], cache=cache)
    assert cache.length == 0


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_replayed_write_is_one_write_of_the_contract(kind):
    """engine.caches.base.write: the entries a model pass stored, recorded and written again
    into a twin cache with no model (begin .. store per layer .. advance), leave the twin byte
    for byte as the pass left its own cache. A write that raises at its last layer leaves the
    cache as it was."""
    model, cache, ids, _keep = _prefilled(kind, 9, seed=4)
    _twin_model, twin, _, _twin_keep = _prefilled(kind, 9, seed=4)
    keys, values, attention = [], [], []
    store, observe = cache.store, getattr(cache, "observe_attention", None)

    def recording_store(layer, k, v):
        keys.append(k.copy()), values.append(v.copy())
        return store(layer, k, v)

    cache.store = recording_store
    if observe is not None:
        cache.observe_attention = lambda layer, probs: (attention.append(probs.copy()), observe(layer, probs))
    model.forward([5, 6, 7], cache=cache)
    vars(cache).pop("store"), vars(cache).pop("observe_attention", None)
    before = state(twin)
    bad = keys[:-1] + [keys[-1][:, :, :-1]]  # the last layer's keys one number short
    with pytest.raises(ValueError):
        write(twin, bad, values, attention or None)
    assert state(twin) == before
    write(twin, keys, values, attention or None)
    assert twin.length == 12 and state(twin) == state(cache)
