"""What one step costs a batch: FLOPs, and the bytes of weights and KV cache it moves.

``engine.analysis.costs`` counts one sequence. Serving differs in two ways the cost lessons (roofline,
data movement) both need: a decode step reads the weights once for the whole batch while each
sequence reads its own cache, and the weights and the cache are often stored in different
formats (a laptop runs 4-bit weights beside an fp16 cache; plate 7 quantizes the cache and
leaves the weights alone). The counts come from ``engine.analysis.costs``, sliding window included (a
Mistral 7B step reads at most W cached positions); only the batch and the two formats are
applied here.
"""
from __future__ import annotations

import math

from engine.analysis import costs


def _weight_bytes(n_weights: int, weight_bits: float) -> int:
    return math.ceil(n_weights * weight_bits / 8)


def weights_read(cfg, context: int) -> int:
    """Weights one cached decode step reads: engine.analysis.costs at 1 byte per number counts numbers,
    and taking the step's KV numbers away leaves the weights (the same at every context)."""
    return costs.decode_step_bytes(cfg, context, True, dtype_bytes=1) - int(costs.decode_step_kv_bytes(cfg, context, kv_bits=8))


def decode_step(cfg, context: int, batch: int, weight_bits: float, kv_bits: float) -> tuple[int, int, int]:
    """(FLOPs, weight bytes, KV bytes) of one cached decode step for ``batch`` sequences of
    ``context`` tokens each: weights in ``weight_bits`` per number, the cache in ``kv_bits``
    (whole bytes, rounded up)."""
    flops = costs.decode_step_flops(cfg, context, use_cache=True)
    kv = costs.decode_step_kv_bytes(cfg, context, kv_bits=kv_bits)  # capped at W positions
    return batch * flops, _weight_bytes(weights_read(cfg, context), weight_bits), math.ceil(batch * kv)


def prefill(cfg, n_tokens: int, weight_bits: float, kv_bits: float) -> tuple[int, int]:
    """(FLOPs, bytes) of a prefill of ``n_tokens``: the weights once, the cache written and read."""
    L, KV, hd = cfg.n_layers, cfg.n_kv_heads, cfg.head_dim
    kv_numbers = 2 * costs.kv_cache_bytes(L, KV, hd, n_tokens, dtype_bytes=1)
    n_weights = costs.prefill_bytes(cfg, n_tokens, dtype_bytes=1) - kv_numbers
    return (costs.prefill_flops(cfg, n_tokens),
            _weight_bytes(n_weights, weight_bits) + math.ceil(kv_numbers * kv_bits / 8))
