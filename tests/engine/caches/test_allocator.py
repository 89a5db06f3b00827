"""engine/caches/allocator.py: the block allocator alone -- blocks, a free list, reference counts --
and nothing about sequences (those are engine/caches/paged.py's)."""
import ast
from pathlib import Path

import numpy as np
import pytest

from engine.caches.allocator import BlockAllocator, PoolFullError, blocks_for


def test_blocks_are_lent_in_order_and_a_dropped_block_is_lent_next(cfg):
    pool = BlockAllocator(cfg, n_blocks=4, block_size=2)
    assert [pool.take() for _ in range(3)] == [0, 1, 2] and pool.free_blocks == 1
    pool.retain(1)
    pool.drop(1)
    assert pool.free_blocks == 1 and pool.refs.tolist() == [1, 1, 1, 0]  # still held once
    pool.drop(1)
    assert pool.take() == 1  # the free list is a stack
    with pytest.raises(RuntimeError, match="released more often"):
        pool.drop(3)


def test_copy_block_copies_every_layer(cfg):
    pool = BlockAllocator(cfg, n_blocks=3, block_size=2)
    for layer, (k, v) in enumerate(zip(pool.k, pool.v)):
        k[:, 0], v[:, 0] = layer + 1, -(layer + 1)
    pool.copy_block(0, 2)
    for k, v in zip(pool.k, pool.v):
        np.testing.assert_array_equal(k[:, 2], k[:, 0])
        np.testing.assert_array_equal(v[:, 2], v[:, 0])
    assert pool.copies == 1


@pytest.mark.parametrize("n,b,want", [(0, 4, 0), (1, 4, 1), (4, 4, 1), (5, 4, 2), (17, 16, 2)])
def test_blocks_for(n, b, want):
    assert blocks_for(n, b) == want


def test_the_full_error_says_what_is_free(cfg):
    pool = BlockAllocator(cfg, n_blocks=2, block_size=8)
    err = pool.full_error(20, 3, 3)
    assert isinstance(err, PoolFullError) and isinstance(err, ValueError)
    assert "need 3 free block(s) of 8 slots, and 2 of 2 are free" in str(err)


def test_the_allocator_knows_no_sequence():
    source = Path(__import__("engine.caches.allocator", fromlist=["x"]).__file__).read_text(encoding="utf-8")
    imported = {n.module for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ImportFrom)}
    assert imported <= {"__future__", "engine.checks", "engine.config"}
    assert "PagedCache" not in source and "_holders" not in source  # no table, no registry of sequences


def test_restore_gives_back_the_lending_state_of_a_snapshot(cfg):
    pool = BlockAllocator(cfg, n_blocks=5, block_size=2)
    a = pool.take()
    snap = pool.snapshot()
    b, c = pool.take(), pool.take()
    pool.retain(a), pool.drop(b), pool.copy_block(a, c)
    pool.restore(snap)
    assert pool.snapshot()[0] == snap[0] and list(pool.refs) == [1, 0, 0, 0, 0] and pool.copies == 0
    assert [pool.take(), pool.take()] == [b, c]  # lent again in the same order
    snap[1][:] = 9  # the snapshot is a copy: changing it changes nothing in the pool
    assert list(pool.refs) == [1, 1, 1, 0, 0]
