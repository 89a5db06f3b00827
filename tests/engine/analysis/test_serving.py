"""engine.analysis.serving: batch bytes per step, and the per-request block counts the engine really makes."""
from __future__ import annotations

import pytest

from engine.analysis import costs
from engine.caches.paged import BlockPool
from engine.analysis.serving import (
    GPUS,
    batch_decode_step_bytes,
    contiguous_slots,
    paged_slots,
    prefix_slots,
    requests_that_fit,
    resident_weight_bytes,
)


def test_one_sequence_is_the_single_step_count(cfg):
    for ctx in (0, 5, 40):
        assert batch_decode_step_bytes(cfg, [ctx]) == costs.decode_step_bytes(cfg, ctx, True)


def test_a_batch_reads_the_weights_once(cfg):
    """By hand for the small config: weights once, then per sequence its embedding row and its
    cache (context + 1 positions read, one written), in float32."""
    D, V, L, KV, hd, F, H = cfg.d_model, cfg.vocab_size, cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, cfg.ffn_dim, cfg.n_heads
    per_layer = 2 * D + D * (H + 2 * KV) * hd + H * hd * D + 3 * D * F
    weights = (L * per_layer + D + D * V) * 4  # blocks, final norm, output head
    contexts = [3, 10, 0]
    own = sum(D * 4 + 2 * L * KV * hd * 4 * (c + 2) for c in contexts)
    assert resident_weight_bytes(cfg) == weights
    assert batch_decode_step_bytes(cfg, contexts) == weights + own
    assert batch_decode_step_bytes(cfg, contexts) < sum(batch_decode_step_bytes(cfg, [c]) for c in contexts)


@pytest.mark.parametrize("bad", [[], "12", None, 5])
def test_batch_needs_a_list_of_contexts(cfg, bad):
    with pytest.raises((ValueError, TypeError)):
        batch_decode_step_bytes(cfg, bad)


@pytest.mark.parametrize("block_size", [1, 3, 4, 16])
@pytest.mark.parametrize("shared,own", [(0, 9), (8, 5), (10, 1), (7, 1), (12, 20)])
def test_paged_slots_match_what_the_pool_allocates(cfg, block_size, shared, own):
    """A cached prefix forked by two requests that then write their own tokens: the pool's
    blocks in use equal the prefix's blocks once plus each request's own blocks."""
    pool = BlockPool(cfg, n_blocks=64, block_size=block_size)
    prefix = pool.new_sequence()
    if shared:
        _write(prefix, shared)
    seqs = []
    for extra in (own, own + 2):
        seq = prefix.fork()
        _write(seq, extra)
        seqs.append((seq, shared + extra))
    expect = prefix_slots(shared, block_size) + sum(paged_slots(n, block_size, shared) for _s, n in seqs)
    assert pool.usage().blocks_used * block_size == expect
    for seq, n in seqs:
        own_blocks = [b for b in seq.block_table if b not in prefix.block_table]
        assert len(own_blocks) * block_size == paged_slots(n, block_size, shared)


def _write(seq, n):
    import numpy as np

    c = seq.config
    if n == 0:
        return
    seq.check_room(n)
    for layer in range(c.n_layers):
        seq.store(layer, np.ones((c.n_kv_heads, n, c.head_dim), c.dtype), np.ones((c.n_kv_heads, n, c.head_dim), c.dtype))
    seq.advance(n)


@pytest.mark.parametrize("memory,per,shared,expect", [(100, 30, 0, 3), (100, 30, 10, 3), (100, 30, 11, 2),
                                                      (10, 30, 0, 0), (10, 3, 20, 0)])
def test_requests_that_fit(memory, per, shared, expect):
    assert requests_that_fit(memory, per, shared) == expect


@pytest.mark.parametrize("call", [lambda: paged_slots(5, 0), lambda: paged_slots(5, 4, 6), lambda: contiguous_slots(-1),
                                  lambda: requests_that_fit(10, 0)])
def test_bad_arguments(call):
    with pytest.raises(ValueError):
        call()


def test_gpu_capacities_are_the_datasheets():
    assert {g.datasheet_gb for g in GPUS.values()} == {80, 141}
    assert all("datasheet" in g.source and f"{g.datasheet_gb}GB" in g.source for g in GPUS.values())
    # the printed figure is a label: what each device reports is more than that many 10**9 bytes
    assert all(g.usable_bytes > g.datasheet_gb * 10**9 for g in GPUS.values())


@pytest.mark.parametrize("key, usable", [("h100_80", 81_559 * 2**20), ("h200_141", 150_109_880_320)])
def test_requests_are_counted_in_the_memory_the_device_reports(key, usable):
    """Less than the datasheet's GB counted as GiB (the old mistake), more than nothing, with its source."""
    g = GPUS[key]
    assert g.bytes == g.usable_bytes == usable and g.usable_source
    assert usable < g.datasheet_gb * 2**30


def test_the_h200_figure_is_this_projects_measurement():
    import json
    from pathlib import Path
    run = json.loads((Path(__file__).parents[3] / "engine/bench_results/results/gpu-cupy-h200.json").read_text())
    assert run["provenance"]["cuda"]["memory_bytes"] == GPUS["h200_141"].usable_bytes
