"""The block allocator of the paged KV cache: N blocks of B slots per layer, a free list and
a reference count per block. It knows no sequence: who holds a block is the business of the
block tables (engine/caches/paged.py), which take, retain, drop and copy blocks through it.

    k[l], v[l]   [KV, N, B, hd]     N blocks of B slots (one pair per layer l)
    refs         [N] ints           how many block tables hold each block; 0 = free
    free list    a stack of block ids: block 0 is lent first, a dropped block is lent next
"""
from __future__ import annotations

import numpy as np

from engine.checks import check_int
from engine.config import Config


class PoolFullError(ValueError):
    """The pool has too few free blocks for what a sequence is about to write."""


def blocks_for(n_positions: int, block_size: int) -> int:
    """Blocks that hold n_positions positions: ceil(n / B)."""
    return -(-n_positions // block_size)


class BlockAllocator:
    """N blocks of B slots per layer, a free list and a reference count per block."""

    def __init__(self, config: Config, n_blocks: int, block_size: int = 16, xp=np):
        if not isinstance(config, Config):
            raise TypeError(f"{type(self).__name__} needs an engine Config, got {type(config).__name__}")
        self.config = config
        self.xp = xp
        self.n_blocks = check_int("BlockPool n_blocks", n_blocks, minimum=1)
        self.block_size = check_int("BlockPool block_size", block_size, minimum=1)
        c = config
        shape = (c.n_kv_heads, self.n_blocks, self.block_size, c.head_dim)  # [KV, N, B, hd]
        self.k = [xp.zeros(shape, dtype=c.dtype) for _ in range(c.n_layers)]
        self.v = [xp.zeros(shape, dtype=c.dtype) for _ in range(c.n_layers)]
        self.refs = np.zeros(self.n_blocks, dtype=np.int64)  # [N] holders per block (host)
        self._free = list(range(self.n_blocks - 1, -1, -1))  # a stack: block 0 is lent first
        self.copies = 0  # blocks copied by copy-on-write so far

    # ------------------------------------------------------------------ sizes

    @property
    def bytes_per_slot(self) -> int:
        """One position in every layer, K and V."""
        return self.config.kv_values_per_token * self.config.dtype_bytes

    @property
    def bytes_per_block(self) -> int:
        return self.block_size * self.bytes_per_slot

    @property
    def free_blocks(self) -> int:
        return len(self._free)

    # ------------------------------------------------------------------ lending

    def take(self) -> int:
        """A free block, its count set to 1 (callers checked there is one)."""
        block = self._free.pop()
        self.refs[block] = 1
        return block

    def retain(self, block: int) -> None:
        self.refs[block] += 1

    def drop(self, block: int) -> None:
        """One holder fewer; a block nobody holds goes back on the free list."""
        if self.refs[block] <= 0:
            raise RuntimeError(f"block {block} released more often than it was taken (a bug)")
        self.refs[block] -= 1
        if self.refs[block] == 0:
            self._free.append(block)

    def snapshot(self) -> tuple:
        """The lending state (free list in order, reference counts, copies), for ``restore``:
        a holder that undoes a failed write gives back exactly the blocks it took, in order."""
        return list(self._free), self.refs.copy(), self.copies

    def restore(self, snap: tuple) -> None:
        free, refs, copies = snap
        self._free[:] = free
        self.refs[:] = refs
        self.copies = copies

    def copy_block(self, src: int, dst: int) -> None:
        """Block src -> block dst in every layer (copy-on-write)."""
        for a in self.k + self.v:
            a[:, dst] = a[:, src]
        self.copies += 1

    def full_error(self, n_new: int, length: int, needed: int, holders: str = "") -> PoolFullError:
        """The error for n_new positions after ``length`` when ``needed`` blocks are not free."""
        return PoolFullError(
            f"the block pool is full: {n_new} new positions for a sequence of {length} need "
            f"{needed} free block(s) of {self.block_size} slots, and {self.free_blocks} of "
            f"{self.n_blocks} are free{holders}. Release a finished sequence (seq.release()), "
            f"wait, or make a larger pool (BlockPool(n_blocks=...)).")
