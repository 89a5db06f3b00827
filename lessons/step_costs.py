"""What one step costs a batch: FLOPs, and the bytes of weights and KV cache it moves.

``engine.costs`` counts one sequence with every number in one format. Serving differs in two
ways the cost lessons (roofline, data movement) both need: a decode step reads the weights
once for the whole batch while each sequence reads its own cache, and the weights and the
cache are often stored in different formats (a laptop runs 4-bit weights beside an fp16
cache). The counts come from ``engine.costs``; only the batch and the formats are applied here.
"""
from __future__ import annotations

import math

from engine import costs


def kv_traffic(cfg, context: int, kv_bytes: int) -> int:
    """Cache bytes one cached decode step moves for one sequence: read ``context`` + 1
    positions (the new one included), write 1."""
    L, KV, hd = cfg.n_layers, cfg.n_kv_heads, cfg.head_dim
    return (costs.kv_cache_bytes(L, KV, hd, context + 1, dtype_bytes=kv_bytes)
            + costs.kv_cache_bytes(L, KV, hd, 1, dtype_bytes=kv_bytes))


def _weight_bytes(n_weights: int, weight_bits: float) -> int:
    return math.ceil(n_weights * weight_bits / 8)


def decode_step(cfg, context: int, batch: int, weight_bits: float, kv_bytes: int) -> tuple[int, int, int]:
    """(FLOPs, weight bytes, KV bytes) of one cached decode step for ``batch`` sequences of
    ``context`` tokens each."""
    flops = costs.decode_step_flops(cfg, context, use_cache=True)
    # engine.costs at 1 byte per number counts numbers: weights read + cache traffic
    kv_numbers = kv_traffic(cfg, context, 1)
    n_weights = costs.decode_step_bytes(cfg, context, use_cache=True, dtype_bytes=1) - kv_numbers
    return batch * flops, _weight_bytes(n_weights, weight_bits), batch * kv_numbers * kv_bytes


def prefill(cfg, n_tokens: int, weight_bits: float, kv_bytes: int) -> tuple[int, int]:
    """(FLOPs, bytes) of a prefill of ``n_tokens``: the weights once, the cache written and read."""
    L, KV, hd = cfg.n_layers, cfg.n_kv_heads, cfg.head_dim
    kv_numbers = 2 * costs.kv_cache_bytes(L, KV, hd, n_tokens, dtype_bytes=1)
    n_weights = costs.prefill_bytes(cfg, n_tokens, dtype_bytes=1) - kv_numbers
    return costs.prefill_flops(cfg, n_tokens), _weight_bytes(n_weights, weight_bits) + kv_numbers * kv_bytes
