"""The paged KV cache: one pool of fixed-size blocks, lent to many sequences a block at a time.

Why: the contiguous cache (contiguous.py) reserves max_len slots per sequence before the first
token. A server holding many sequences of unknown length keeps most of that empty. Here the
keys and values of every sequence live in one shared pool of N blocks of B slots; a sequence
owns a *block table* (its block ids in position order) and takes a new block from the free
list only when its last one is full, so at most B - 1 slots per sequence stand empty.
Sequences that start alike can hold the same blocks (reference counts), as vLLM's
PagedAttention does (Kwon et al., SOSP 2023).

The allocator (engine/caches/allocator.py) lends the blocks and knows no sequence; here are the
block tables (PagedCache) and the pool of sequences built on it (BlockPool).

Layout of a BlockPool (one pair per layer l, shared by all its sequences):

    k[l], v[l]   [KV, N, B, hd]     N blocks of B slots
    refs         [N] ints           how many block tables hold each block; 0 = free

Position p of a sequence lives in block table[p // B], slot p % B, in every layer. A
sequence only ever writes at positions >= its length, so a full block is never written
again; the one block two sequences may both want to write is a shared, partly filled last
block. Before writing into a block whose refs > 1 a sequence copies it into a fresh block
and writes there (copy-on-write), and the other holders keep the original.

PagedCache (one sequence) keeps the BaseCache contract, so ``model.forward(ids, cache=seq)``
runs unchanged: ``store`` writes the new K/V through the table and hands back K, V gathered
in position order ([KV, S, hd], slot i = position i, key_pos None), so attention computes
exactly what it computes over the contiguous cache. The gather is a copy of the S positions
(the contiguous cache hands back a view): that copy is the price of paging here.

    pool = BlockPool(model.config, n_blocks=64, block_size=16)
    seq = pool.new_sequence()
    model.forward(prompt_ids, cache=seq)     # blocks taken as the prompt needs them
    twin = seq.fork()                        # same blocks, refs + 1; no copy yet
    model.forward([tok], cache=twin)         # copy-on-write of the shared last block
    seq.release(); twin.release()            # every block back on the free list
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.caches.base import BaseCache
from engine.caches.allocator import BlockAllocator, PoolFullError, blocks_for
from engine.config import Config


@dataclass(frozen=True)
class PoolUsage:
    """What a pool holds at one moment, counted from its block tables (exact, in slots).

    A slot is one position in every layer, K and V: ``bytes_per_slot`` bytes.
    """

    block_size: int  # B
    bytes_per_slot: int  # 2 * L * KV * hd * bytes per number
    blocks_total: int  # N, allocated up front
    blocks_used: int  # blocks some table holds (refs > 0)
    slots_filled: int  # slots of those blocks holding an entry; a shared slot counts once
    tokens_held: int  # sum of the sequences' lengths; a shared slot counts once per holder
    sequences: int  # sequences holding at least one block

    @property
    def bytes_reserved(self) -> int:
        """The whole pool, free blocks included."""
        return self.blocks_total * self.block_size * self.bytes_per_slot

    @property
    def bytes_allocated(self) -> int:
        """Blocks lent to sequences."""
        return self.blocks_used * self.block_size * self.bytes_per_slot

    @property
    def bytes_used(self) -> int:
        """Slots holding an entry."""
        return self.slots_filled * self.bytes_per_slot

    @property
    def bytes_fragmented(self) -> int:
        """Internal fragmentation: empty slots inside lent blocks."""
        return self.bytes_allocated - self.bytes_used


# --------------------------------------------------------------------------- the pool of sequences


class BlockPool(BlockAllocator):
    """The allocator (engine/caches/allocator.py) plus the sequences drawing on it."""

    def __init__(self, config: Config, n_blocks: int, block_size: int = 16, xp=np):
        super().__init__(config, n_blocks, block_size, xp)
        self._holders: dict[int, PagedCache] = {}  # sequences holding blocks, by id()

    def new_sequence(self) -> "PagedCache":
        """An empty sequence drawing its blocks from this pool."""
        return PagedCache(self)

    def usage(self) -> PoolUsage:
        """Blocks lent, slots filled and tokens held right now (see PoolUsage)."""
        filled = np.zeros(self.n_blocks, dtype=np.int64)  # [N] filled slots per block
        tokens = 0
        for seq in self._holders.values():
            tokens += seq.length
            for i, block in enumerate(seq.block_table):
                filled[block] = max(filled[block], min(self.block_size, seq.length - i * self.block_size))
        return PoolUsage(self.block_size, self.bytes_per_slot, self.n_blocks, int((self.refs > 0).sum()),
                         int(filled.sum()), tokens, len(self._holders))

    def _full_error(self, seq: "PagedCache", n_new: int, needed: int) -> PoolFullError:
        return self.full_error(n_new, seq.length, needed, f" ({len(self._holders)} sequence(s) hold the rest)")

    def __repr__(self) -> str:
        u = self.usage()
        return (f"BlockPool(blocks={self.n_blocks}, block_size={self.block_size}, used={u.blocks_used}, "
                f"sequences={u.sequences}, dtype={self.config.dtype})")


# --------------------------------------------------------------------------- one sequence


@dataclass(frozen=True)
class _Plan:
    """Where one forward call's T new positions go, and which blocks attention reads."""

    key: tuple  # (length, T) it was made for
    write_blocks: object  # [T] block id of each new position (an int when T == 1)
    write_slots: object  # [T] slot inside that block (an int when T == 1)
    read_blocks: object  # [nb] the table up to the last new position


class PagedCache(BaseCache):
    """One sequence's view of a BlockPool: its block table, its length, the BaseCache contract.

    A failed forward (abort) gives back the blocks it took, puts back the copy-on-write and the
    slots it wrote, and restores the pool's free list and reference counts exactly.
    """

    _logs_writes = True

    def __init__(self, pool: BlockPool):
        if not isinstance(pool, BlockPool):
            raise TypeError(f"PagedCache needs a BlockPool, got {type(pool).__name__}")
        super().__init__(pool.config, pool.xp)
        self.pool = pool
        self.block_table: list[int] = []  # block ids, position order: p lives in [p // B]
        self._plan: _Plan | None = None
        self._txn_saved: tuple | None = None  # an open write's table and pool bookkeeping, before it

    # ------------------------------------------------------------------ sizes

    @property
    def bytes_per_token(self) -> int:
        return self.pool.bytes_per_slot

    @property
    def bytes_used(self) -> int:
        """Bytes holding this sequence's entries (shared ones included)."""
        return self.length * self.pool.bytes_per_slot

    @property
    def bytes_allocated(self) -> int:
        """Bytes of the blocks in this sequence's table (a shared block counts in full)."""
        return len(self.block_table) * self.pool.bytes_per_block

    @property
    def shared_blocks(self) -> int:
        """Blocks of this table that another sequence holds too."""
        return sum(int(self.pool.refs[b] > 1) for b in self.block_table)

    def blocks_needed(self, n_new: int) -> int:
        """Free blocks that n_new more positions take: new blocks, plus one copy when the first
        write lands in a shared block."""
        B, n = self.pool.block_size, self.length
        fresh = blocks_for(n + n_new, B) - len(self.block_table)
        cow = n_new > 0 and n % B != 0 and self.pool.refs[self.block_table[-1]] > 1
        return max(fresh, 0) + int(cow)

    @property
    def free(self) -> int:
        """How many more positions fit, given the pool's free blocks and the context window."""
        B, n, free_blocks = self.pool.block_size, self.length, self.pool.free_blocks
        room_in_last = (B - n % B) % B
        if room_in_last and self.pool.refs[self.block_table[-1]] > 1:  # shared: writing costs a copy
            room_in_last = room_in_last if free_blocks else 0
            free_blocks = max(free_blocks - 1, 0)
        return min(self.config.max_seq_len - n, room_in_last + free_blocks * B)

    def check_room(self, n_new: int) -> None:
        """PoolFullError (a ValueError) before anything is written when the pool cannot take n_new."""
        if n_new > self.config.max_seq_len - self.length:
            raise ValueError(f"the sequence holds {self.length} positions; {n_new} more would pass the "
                             f"context window of {self.config.max_seq_len}")
        needed = self.blocks_needed(n_new)
        if needed > self.pool.free_blocks:
            raise self.pool._full_error(self, n_new, needed)

    # ------------------------------------------------------------------ sharing and freeing

    def fork(self) -> "PagedCache":
        """A new sequence holding the same blocks (refs + 1 each) and the same length."""
        child = PagedCache(self.pool)
        child.block_table = list(self.block_table)
        child.length = self.length
        for block in child.block_table:
            self.pool.retain(block)
        child._register()
        self._plan = None  # this table's last block may now be shared: plan the next write again
        return child

    def release(self) -> None:
        """Give every block back (a block others still hold stays theirs); length becomes 0."""
        self.reset()

    def truncate(self, n: int) -> None:
        """Keep the first n positions; blocks past them go back to the pool."""
        super().truncate(n)
        keep = blocks_for(self.length, self.pool.block_size)
        for block in self.block_table[keep:]:
            self.pool.drop(block)
        del self.block_table[keep:]
        self._plan = None
        self._register()

    def _clear(self) -> None:
        for block in self.block_table:
            self.pool.drop(block)
        self.block_table = []
        self._plan = None
        self._register()

    def _register(self) -> None:
        """The pool counts usage over sequences that hold blocks."""
        if self.block_table:
            self.pool._holders[id(self)] = self
        else:
            self.pool._holders.pop(id(self), None)

    # ------------------------------------------------------------------ writes

    def advance(self, n_new: int) -> None:
        super().advance(n_new)
        self._plan = self._txn_saved = None

    def abort(self) -> None:
        """Undo the open write: slots and copied blocks as they were, the blocks it took back on
        the free list in the same order, reference counts and the table as before."""
        super().abort()  # the pool's array regions this write changed
        if self._txn_saved is not None:
            table, lending = self._txn_saved
            self.block_table = table
            self.pool.restore(lending)
            self._register()
        self._plan = self._txn_saved = None

    def store(self, layer: int, k, v):
        """Write k, v [KV, T, hd] at positions length .. length+T-1 of ``layer`` through the
        block table; return K, V [KV, S, hd] (S = length + T) gathered in position order, and
        key_pos None (slot i holds position i)."""
        T = k.shape[1]
        plan = self._plan if self._plan is not None and self._plan.key == (self.length, T) else self._prepare(T)
        K, V = self.pool.k[layer], self.pool.v[layer]  # [KV, N, B, hd]
        where = (slice(None), plan.write_blocks, plan.write_slots)
        self._keep_for_undo(K, where)
        self._keep_for_undo(V, where)
        if T == 1:  # a decode step: plain int indices, the cheapest write NumPy has
            K[:, plan.write_blocks, plan.write_slots] = k[:, 0]  # [KV, hd]
            V[:, plan.write_blocks, plan.write_slots] = v[:, 0]
        else:
            K[:, plan.write_blocks, plan.write_slots] = k  # [KV, T, hd]
            V[:, plan.write_blocks, plan.write_slots] = v
        S, KV, hd = self.length + T, self.config.n_kv_heads, self.config.head_dim
        # take() hands back a C-ordered copy [KV, nb, B, hd], so the reshape below is free
        keys = K.take(plan.read_blocks, axis=1).reshape(KV, -1, hd)[:, :S]  # [KV, S, hd]
        values = V.take(plan.read_blocks, axis=1).reshape(KV, -1, hd)[:, :S]  # [KV, S, hd]
        return keys, values, None

    def _prepare(self, T: int) -> _Plan:
        """Take the blocks T new positions need (copy-on-write first) and plan where they go.

        Runs once per forward call (at the first layer's store); every check is made before
        the first block changes hands, so a full pool leaves the sequence as it was.
        """
        pool, B, n = self.pool, self.pool.block_size, self.length
        needed = self.blocks_needed(T)
        if needed > pool.free_blocks:
            raise pool._full_error(self, T, needed)
        if self._txn_log is not None and self._txn_saved is None:  # inside begin .. advance: keep the bookkeeping
            self._txn_saved = (list(self.block_table), pool.snapshot())
        if T and n % B and pool.refs[self.block_table[-1]] > 1:
            self._copy_on_write()
        while len(self.block_table) < blocks_for(n + T, B):
            self.block_table.append(pool.take())
        self._register()
        xp = self.xp
        table = np.asarray(self.block_table, dtype=np.int64)
        read = xp.asarray(table[: blocks_for(n + T, B)])
        if T == 1:
            self._plan = _Plan((n, T), self.block_table[n // B], n % B, read)
        else:
            pos = np.arange(n, n + T)  # [T] the new positions
            self._plan = _Plan((n, T), xp.asarray(table[pos // B]), xp.asarray(pos % B), read)
        return self._plan

    def _copy_on_write(self) -> None:
        """The shared last block -> a fresh copy only this sequence holds."""
        pool, old = self.pool, self.block_table[-1]
        new = pool.take()
        for a in pool.k + pool.v:
            self._keep_for_undo(a, (slice(None), new))
        pool.copy_block(old, new)
        pool.drop(old)
        self.block_table[-1] = new

    # ------------------------------------------------------------------ reads

    def keys(self, layer: int):
        """K [KV, length, hd] of ``layer`` (a gathered copy)."""
        return self._gather(self.pool.k[layer])

    def values(self, layer: int):
        """V [KV, length, hd] of ``layer`` (a gathered copy)."""
        return self._gather(self.pool.v[layer])

    def _gather(self, a):
        c = self.config
        blocks = self.xp.asarray(np.asarray(self.block_table, dtype=np.int64))
        return a.take(blocks, axis=1).reshape(c.n_kv_heads, -1, c.head_dim)[:, : self.length]  # [KV, length, hd]

    def __repr__(self) -> str:
        return (f"PagedCache(length={self.length}, blocks={self.block_table}, shared={self.shared_blocks}, "
                f"block_size={self.pool.block_size})")
