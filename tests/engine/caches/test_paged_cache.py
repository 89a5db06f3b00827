"""The paged KV cache: same logits as the contiguous cache, an allocator that never leaks or
double-lends a block, copy-on-write that keeps forked sequences apart, exact byte counts."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from engine import KVCache, Transformer
from engine.analysis.costs import kv_cache_bytes
from engine.caches.paged import BlockPool, PagedCache
from engine.caches.allocator import PoolFullError

BLOCK_SIZES = (1, 3, 16)


def _config_crossing_blocks(cfg, block_size):
    """The config with a window long enough for a sequence to span at least two full blocks."""
    return dataclasses.replace(cfg, max_seq_len=max(cfg.max_seq_len, 2 * block_size + 3))


def _decode(model, cache, ids, n_prompt, rng):
    """Prefill ids[:n_prompt], then feed the rest in chunks of 1..4 tokens; logits [n, V]."""
    out, i = [model.forward(ids[:n_prompt], cache=cache)], n_prompt
    while i < len(ids):
        j = min(len(ids), i + int(rng.integers(1, 5)))
        out.append(model.forward(ids[i:j], cache=cache))
        i = j
    return np.concatenate(out)


# --------------------------------------------------------------------------- paged = contiguous


@pytest.mark.parametrize("block_size", BLOCK_SIZES)
@pytest.mark.parametrize("case", range(12))
def test_logits_equal_the_contiguous_cache(case, block_size, make_random_configs):
    cfg = _config_crossing_blocks(list(make_random_configs(12, seed=31))[case], block_size)
    model = Transformer.random(cfg, seed=case)
    rng = np.random.default_rng(case)
    n = int(rng.integers(block_size + 2, cfg.max_seq_len + 1))  # crosses at least one block boundary
    ids = rng.integers(0, cfg.vocab_size, size=n).tolist()
    n_prompt = int(rng.integers(1, n + 1))
    pool = BlockPool(cfg, n_blocks=-(-n // block_size), block_size=block_size)  # exactly enough
    paged = _decode(model, pool.new_sequence(), ids, n_prompt, np.random.default_rng(case))
    contiguous = _decode(model, model.new_cache(), ids, n_prompt, np.random.default_rng(case))
    np.testing.assert_allclose(paged, contiguous, rtol=0, atol=1e-5)
    assert pool.free_blocks == 0


@pytest.mark.parametrize("block_size", BLOCK_SIZES)
@pytest.mark.parametrize("case", range(4))
def test_greedy_tokens_identical(case, block_size, make_random_configs):
    cfg = _config_crossing_blocks(list(make_random_configs(4, seed=41))[case], block_size)
    model = Transformer.random(cfg, seed=50 + case)
    prompt = [1, 2, 3]

    def greedy(cache):
        ids, logits = list(prompt), model.forward(prompt, cache=cache)
        while len(ids) < cfg.max_seq_len:
            ids.append(int(np.argmax(logits[-1])))
            logits = model.forward(ids[-1:], cache=cache)
        return ids

    pool = BlockPool(cfg, n_blocks=-(-cfg.max_seq_len // block_size), block_size=block_size)
    assert greedy(pool.new_sequence()) == greedy(model.new_cache())


@pytest.mark.parametrize("block_size", BLOCK_SIZES)
@pytest.mark.parametrize("fork_at", [1, 4, 5, 16, 17])
def test_forked_sequences_each_match_their_own_contiguous_run(fork_at, block_size, make_config):
    """Parent and child share the prefix, then write different tokens: copy-on-write must keep
    each one's keys and values its own (checked through the logits of both)."""
    cfg = make_config(max_seq_len=fork_at + 12)
    model = Transformer.random(cfg, seed=fork_at)
    prefix = list(range(1, fork_at + 1))
    tails = {"parent": [10, 11, 12, 13, 14, 15], "child": [20, 21, 22, 23, 24, 25]}
    pool = BlockPool(cfg, n_blocks=2 * (-(-(fork_at + 6) // block_size)), block_size=block_size)
    parent = pool.new_sequence()
    model.forward(prefix, cache=parent)
    seqs = {"parent": parent, "child": parent.fork()}
    got = {name: [] for name in seqs}
    for step in range(6):  # interleaved, as two samples of one request decode side by side
        for name in ("child", "parent"):
            got[name].append(model.forward([tails[name][step]], cache=seqs[name]))
    for name in seqs:
        expect = model.forward(prefix + tails[name])[fork_at:]  # no cache at all
        np.testing.assert_allclose(np.concatenate(got[name]), expect, rtol=0, atol=1e-5)


# --------------------------------------------------------------------------- copy-on-write, refs


@pytest.fixture
def pool4(cfg):
    return BlockPool(cfg, n_blocks=8, block_size=4)


def _write(seq, n, rng=None):
    """Append n positions through the BaseCache contract, as Transformer.forward does."""
    c, rng = seq.config, rng or np.random.default_rng(0)
    seq.check_room(n)
    for layer in range(c.n_layers):
        k = rng.standard_normal((c.n_kv_heads, n, c.head_dim)).astype(c.dtype)
        seq.store(layer, k, -k)
    seq.advance(n)


def test_fork_shares_every_block_and_counts_it(pool4):
    seq = pool4.new_sequence()
    _write(seq, 6)  # blocks: one full, one with 2 of 4 slots
    child = seq.fork()
    assert child.block_table == seq.block_table and child.length == 6
    assert [int(pool4.refs[b]) for b in seq.block_table] == [2, 2]
    assert pool4.free_blocks == 6  # a fork takes no block


def test_writing_into_a_shared_partial_block_copies_it_first(pool4):
    seq = pool4.new_sequence()
    _write(seq, 6)
    child = seq.fork()
    shared_full, shared_last = seq.block_table
    before = child.keys(0).copy()
    _write(child, 1)
    assert child.block_table[0] == shared_full and child.block_table[1] != shared_last
    assert int(pool4.refs[shared_full]) == 2 and int(pool4.refs[shared_last]) == 1
    np.testing.assert_array_equal(child.keys(0)[:, :6], before)  # the copy carried the old entries
    np.testing.assert_array_equal(seq.keys(0), before)  # the parent's block is untouched
    taken = pool4.free_blocks
    _write(seq, 1)  # the parent is now the only holder of its last block: writes in place
    assert seq.block_table[1] == shared_last and pool4.free_blocks == taken


def test_a_fork_at_a_block_boundary_needs_no_copy(pool4):
    seq = pool4.new_sequence()
    _write(seq, 8)
    child = seq.fork()
    _write(child, 1)
    assert child.block_table[:2] == seq.block_table  # both full blocks stay shared
    assert all(int(pool4.refs[b]) == 2 for b in seq.block_table)


def test_release_returns_only_blocks_nobody_else_holds(pool4):
    seq = pool4.new_sequence()
    _write(seq, 6)
    child = seq.fork()
    _write(child, 3)  # copy of the last block, then a third block
    seq.release()
    assert seq.length == 0 and seq.block_table == []
    assert pool4.free_blocks == 8 - len(child.block_table)
    child.release()
    assert pool4.free_blocks == 8 and int(pool4.refs.sum()) == 0


def test_truncate_gives_back_the_blocks_past_the_new_end(pool4):
    seq = pool4.new_sequence()
    _write(seq, 9)
    seq.truncate(4)
    assert len(seq.block_table) == 1 and pool4.free_blocks == 7


# --------------------------------------------------------------------------- a full pool


def test_full_pool_is_a_clear_error_and_changes_nothing(model, cfg):
    pool = BlockPool(cfg, n_blocks=2, block_size=4)
    a, b = pool.new_sequence(), pool.new_sequence()
    model.forward([1, 2, 3, 4, 5], cache=a)  # both blocks
    keys, table, refs = a.keys(0).copy(), list(a.block_table), pool.refs.copy()
    with pytest.raises(PoolFullError, match="block pool is full"):
        model.forward([1], cache=b)
    with pytest.raises(PoolFullError, match=r"need 1 free block"):
        model.forward([6, 7, 8, 9], cache=a)  # 5 + 4 = 9 positions: a third block
    assert a.length == 5 and a.block_table == table and b.block_table == []
    np.testing.assert_array_equal(pool.refs, refs)
    np.testing.assert_array_equal(a.keys(0), keys)
    model.forward([6, 7, 8], cache=a)  # exactly fills the second block
    assert a.free == 0


def test_a_shared_last_block_needs_a_free_block_to_write(cfg):
    pool = BlockPool(cfg, n_blocks=2, block_size=4)
    seq = pool.new_sequence()
    _write(seq, 6)
    child = seq.fork()
    assert child.free == 0  # room in its last block, but writing there costs a copy
    with pytest.raises(PoolFullError):
        _write(child, 1)


# --------------------------------------------------------------------------- bytes


@pytest.mark.parametrize("block_size,length,blocks", [(4, 10, 3), (4, 8, 2), (1, 7, 7), (16, 1, 1)])
def test_bytes_are_exact(cfg, block_size, length, blocks):
    pool = BlockPool(cfg, n_blocks=8, block_size=block_size)
    seq = pool.new_sequence()
    _write(seq, length)
    per_slot = kv_cache_bytes(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, 1, dtype_bytes=cfg.dtype_bytes)
    assert pool.bytes_per_slot == per_slot == KVCache(cfg, max_len=1).bytes_per_token
    assert seq.bytes_used == length * per_slot
    assert seq.bytes_allocated == blocks * block_size * per_slot
    u = pool.usage()
    assert (u.blocks_used, u.slots_filled, u.tokens_held) == (blocks, length, length)
    assert u.bytes_fragmented == (blocks * block_size - length) * per_slot
    assert u.bytes_reserved == 8 * block_size * per_slot


def test_usage_counts_a_shared_slot_once(pool4):
    seq = pool4.new_sequence()
    _write(seq, 6)
    child = seq.fork()
    _write(child, 1)  # child: shared full block + its own copy of the second one (3 slots)
    u = pool4.usage()
    assert (u.blocks_used, u.slots_filled, u.tokens_held, u.sequences) == (3, 4 + 2 + 3, 6 + 7, 2)


# --------------------------------------------------------------------------- misuse


@pytest.mark.parametrize("kwargs,error", [
    ({"n_blocks": 0}, ValueError), ({"n_blocks": 2, "block_size": 0}, ValueError),
    ({"n_blocks": 2.5}, TypeError), ({"n_blocks": True}, TypeError),
])
def test_bad_pool_arguments(cfg, kwargs, error):
    with pytest.raises(error):
        BlockPool(cfg, **kwargs)


def test_bad_owners_are_refused(cfg):
    with pytest.raises(TypeError, match="Config"):
        BlockPool("not a config", n_blocks=2)
    with pytest.raises(TypeError, match="BlockPool"):
        PagedCache(KVCache(cfg))


def test_model_refuses_a_pool_of_another_config(model, make_config):
    other = BlockPool(make_config(d_model=64), n_blocks=4, block_size=4)
    with pytest.raises(ValueError, match="different model config"):
        model.forward([1, 2], cache=other.new_sequence())


def test_context_window_still_applies(model, cfg):
    pool = BlockPool(cfg, n_blocks=cfg.max_seq_len + 4, block_size=1)
    seq = pool.new_sequence()
    model.forward([1] * cfg.max_seq_len, cache=seq)
    with pytest.raises(ValueError, match="context window"):
        model.forward([1], cache=seq)
    with pytest.raises(ValueError, match="truncate"):
        seq.truncate(cfg.max_seq_len + 1)


def test_sliding_window_model_reads_the_same_through_pages(make_config):
    cfg = make_config(sliding_window=5, max_seq_len=24)
    model = Transformer.random(cfg, seed=3)
    ids = list(range(1, 20))
    pool = BlockPool(cfg, n_blocks=8, block_size=3)
    rng = np.random.default_rng(0)
    paged = _decode(model, pool.new_sequence(), ids, 4, rng)
    np.testing.assert_allclose(paged, model.forward(ids), rtol=0, atol=1e-5)


# --------------------------------------------------------------------------- the allocator, at random


class _Server:
    """Random add / fork / append / truncate / free on one pool, each checked against a
    reference kept outside the pool: the keys each sequence must read back."""

    def __init__(self, cfg, n_blocks, block_size, rng):
        self.pool = BlockPool(cfg, n_blocks=n_blocks, block_size=block_size)
        self.cfg, self.B, self.rng = cfg, block_size, rng
        self.seqs, self.ref, self.log = {}, {}, []  # name -> PagedCache, name -> keys [KV, n, hd]
        self.next_name = 0

    def step(self) -> None:
        ops = ["add"] + (["fork", "append", "append", "truncate", "free"] if self.seqs else [])
        op = ops[int(self.rng.integers(len(ops)))]
        name = None if op == "add" else list(self.seqs)[int(self.rng.integers(len(self.seqs)))]
        getattr(self, op)(name)

    def add(self, _):
        name, self.next_name = f"s{self.next_name}", self.next_name + 1
        self.seqs[name] = self.pool.new_sequence()
        self.ref[name] = np.zeros((self.cfg.n_kv_heads, 0, self.cfg.head_dim), dtype=self.cfg.dtype)
        self.log.append(f"add {name}")
        self.append(name)

    def fork(self, name):
        child, self.next_name = f"s{self.next_name}", self.next_name + 1
        self.seqs[child], self.ref[child] = self.seqs[name].fork(), self.ref[name].copy()
        self.log.append(f"fork {name} -> {child}")

    def append(self, name):
        seq, n = self.seqs[name], int(self.rng.integers(1, 2 * self.B + 2))
        n = min(n, self.cfg.max_seq_len - seq.length)
        if n == 0:
            return
        self.log.append(f"append {name} {n} (length {seq.length}, table {seq.block_table})")
        k = self.rng.standard_normal((self.cfg.n_kv_heads, n, self.cfg.head_dim)).astype(self.cfg.dtype)
        if self._blocks_needed(name, n) > self.n_blocks - len(self._held()):
            before = (list(seq.block_table), seq.length, self.pool.refs.copy())
            with pytest.raises(PoolFullError):
                seq.check_room(n)
            assert (seq.block_table, seq.length) == before[:2] and (self.pool.refs == before[2]).all()
            self.log[-1] += " -> pool full"
            return
        seq.check_room(n)
        for layer in range(self.cfg.n_layers):
            seq.store(layer, k * (layer + 1), -k * (layer + 1))
        seq.advance(n)
        self.ref[name] = np.concatenate([self.ref[name], k], axis=1)

    def truncate(self, name):
        m = int(self.rng.integers(0, self.seqs[name].length + 1))
        self.log.append(f"truncate {name} {m}")
        self.seqs[name].truncate(m)
        self.ref[name] = self.ref[name][:, :m]

    def free(self, name):
        self.log.append(f"free {name}")
        self.seqs.pop(name).release()
        del self.ref[name]

    # ------------------------------------------------------------------ the reference's view

    @property
    def n_blocks(self):
        return self.pool.n_blocks

    def _held(self) -> dict[int, int]:
        """block -> number of tables holding it, counted from the tables themselves."""
        held = {}
        for seq in self.seqs.values():
            for b in seq.block_table:
                held[b] = held.get(b, 0) + 1
        return held

    def _blocks_needed(self, name, n):
        seq, B = self.seqs[name], self.B
        need = -(-(seq.length + n) // B) - len(seq.block_table)
        return need + int(seq.length % B != 0 and self._held()[seq.block_table[-1]] > 1)

    def check(self) -> None:
        held = self._held()
        for b in range(self.n_blocks):
            assert self.pool.refs[b] == held.get(b, 0), f"block {b}: refs {self.pool.refs[b]}, held by {held.get(b, 0)}"
        free = self.pool._free
        assert len(free) == len(set(free)), f"a block is on the free list twice: {free}"
        assert set(free) == set(range(self.n_blocks)) - set(held), "free list != blocks nobody holds"
        assert self.pool.usage().blocks_used == len(held)
        for name, seq in self.seqs.items():
            assert len(seq.block_table) == -(-seq.length // self.B), f"{name}: table {seq.block_table}"
            assert len(set(seq.block_table)) == len(seq.block_table), f"{name} holds a block twice"
            for layer in (0, self.cfg.n_layers - 1):
                np.testing.assert_array_equal(seq.keys(layer), self.ref[name] * (layer + 1), err_msg=name)
                np.testing.assert_array_equal(seq.values(layer), -self.ref[name] * (layer + 1), err_msg=name)


@pytest.mark.parametrize("group", range(10))
def test_random_operations_never_leak_or_double_lend_a_block(group, make_config):
    """30 seeded random runs per group, 40 operations each; a failure prints its operations."""
    cfg = make_config(d_model=16, n_heads=2, n_kv_heads=1, n_layers=2, max_seq_len=40)
    for seed in range(30 * group, 30 * group + 30):
        rng = np.random.default_rng(seed)
        block_size = int(rng.choice([1, 2, 3, 4, 7]))
        server = _Server(cfg, n_blocks=int(rng.integers(3, 24)), block_size=block_size, rng=rng)
        try:
            for _ in range(40):
                server.step()
                server.check()
            for name in list(server.seqs):
                server.free(name)
            server.check()
            assert server.pool.free_blocks == server.n_blocks
        except AssertionError as e:
            pytest.fail(f"seed {seed}, block size {block_size}, {server.n_blocks} blocks; operations:\n  "
                        + "\n  ".join(server.log) + f"\n{e}")
