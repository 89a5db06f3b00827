"""Analytic cost of one step: matmul FLOPs and bytes moved, from the config alone.

Conventions (the lessons and the benchmark page quote these, so they are spelled out):

* FLOPs count matrix multiplications only, 2*m*n*k for an [m, k] @ [k, n] product. Norms,
  RoPE, softmax and SiLU are O(T*D) and left out. Attention counts Q.K^T and probs.V:
  2*hd*S each per query head and query. For a block of T tokens it counts the full T x S
  score matrix the engine computes, masked entries included (a causal kernel skips ~half).
* ``context_len`` is the number of tokens already in the context before the step, i.e.
  what the KV cache holds. The step adds one token at position ``context_len``.
  With the cache, that token's K/V are computed and it attends to context_len + 1 keys.
  Without it, all context_len + 1 tokens go through the model again (a full prefill).
* Logits are computed for the last position only, which is all that generation needs.
* Bytes count weights read once (layers, final norm, output head, and only the embedding
  rows that are looked up) plus KV traffic: with the cache, K/V of context_len + 1 positions
  read and of 1 position written; without it, K/V of all context_len + 1 positions written
  and read once. Other activations are ignored: they are small next to weights.
* A model with a sliding window W (``Config.sliding_window``, Mistral 7B) keeps at most W
  positions (the rolling-buffer cache, engine/caches/rolling.py): its cache size, and the
  keys a cached step reads and scores, stop growing at W.
* The cache's number format is its own: ``kv_bits`` (bits per cached value, e.g. 16, 8, 4,
  or an effective 3.5 or 2.5 once scales are counted) is independent of the weights' bytes.
"""
from __future__ import annotations

from engine.checks import check_int
from engine.config import Config


def _check(cfg, **ints):
    if not isinstance(cfg, Config):
        raise TypeError(f"expected an engine Config, got {type(cfg).__name__}")
    for name, v in ints.items():
        check_int(name, v, minimum=0)


def layer_params(cfg: Config) -> int:
    """Weights in one block: two norm gains, Q/K/V/O projections and the SwiGLU MLP."""
    D, H, KV, hd, F = cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.ffn_dim
    return 2 * D + D * (H + 2 * KV) * hd + H * hd * D + 3 * D * F


def param_count(cfg: Config) -> int:
    """All weights: embedding [V, D], L blocks, final norm [D], untied output head [D, V]."""
    _check(cfg)
    return 2 * cfg.vocab_size * cfg.d_model + cfg.n_layers * layer_params(cfg) + cfg.d_model


def _projection_flops(cfg: Config, n_rows: int) -> int:
    """Per layer, n_rows tokens through Q/K/V/O and the MLP's three matrices."""
    D, H, KV, hd, F = cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim, cfg.ffn_dim
    return 2 * n_rows * (D * (H + 2 * KV) * hd + H * hd * D + 3 * D * F)


def _attention_flops(cfg: Config, n_queries: int, n_keys: int) -> int:
    """Per layer: Q.K^T and probs.V, each 2 * hd * n_keys per query head and query."""
    return 2 * (2 * cfg.n_heads * cfg.head_dim * n_queries * n_keys)


def _lm_head_flops(cfg: Config, n_rows: int) -> int:
    return 2 * n_rows * cfg.d_model * cfg.vocab_size


def prefill_flops(cfg: Config, n_tokens: int, all_logits: bool = False) -> int:
    """Matmul FLOPs of one forward pass over n_tokens from position 0 (no cache content).

    ``all_logits``: count the output head for every position (as ``model.forward(ids)``
    does) instead of the last one only (as generation does).
    """
    _check(cfg, n_tokens=n_tokens)
    per_layer = _projection_flops(cfg, n_tokens) + _attention_flops(cfg, n_tokens, n_tokens)
    head_rows = n_tokens if all_logits else min(n_tokens, 1)
    return cfg.n_layers * per_layer + _lm_head_flops(cfg, head_rows)


def decode_step_flops(cfg: Config, context_len: int, use_cache: bool) -> int:
    """Matmul FLOPs to produce the next token when context_len tokens came before it."""
    _check(cfg, context_len=context_len)
    if not use_cache:
        return prefill_flops(cfg, context_len + 1)
    per_layer = _projection_flops(cfg, 1) + _attention_flops(cfg, 1, cached_positions(cfg, context_len + 1))
    return cfg.n_layers * per_layer + _lm_head_flops(cfg, 1)


def block_flops(cfg: Config, context_len: int, n_tokens: int, all_logits: bool = True) -> int:
    """Matmul FLOPs of one cached pass over n_tokens placed after context_len cached ones: a
    verification pass of speculative decoding, a prefill that reuses a cached prefix. Logits
    for every one of them, or (``all_logits=False``) for the last only. n_tokens = 1 with
    ``all_logits`` either way is :func:`decode_step_flops`'s cached step."""
    _check(cfg, context_len=context_len)
    n = check_int("n_tokens", n_tokens, minimum=1)
    keys = cached_positions(cfg, context_len + n)
    per_layer = _projection_flops(cfg, n) + _attention_flops(cfg, n, keys)
    return cfg.n_layers * per_layer + _lm_head_flops(cfg, n if all_logits else 1)


def block_bytes(cfg: Config, context_len: int, n_tokens: int) -> int:
    """Bytes of one cached pass over n_tokens after context_len: the weights once (plus n
    embedding rows), the cache's kept positions read and the n new ones written. n_tokens = 1
    is :func:`decode_step_bytes`' cached step."""
    _check(cfg, context_len=context_len)
    n = check_int("n_tokens", n_tokens, minimum=1)
    b = cfg.dtype_bytes
    one = decode_step_bytes(cfg, context_len, True)  # n = 1: resident weights + 1 row + KV
    weights = one - decode_step_kv_bytes(cfg, context_len) + (n - 1) * cfg.d_model * b
    positions = cached_positions(cfg, context_len + n) + n
    return int(weights + cfg.kv_values_per_token * positions * b)


def kv_cache_bytes(n_layers: int, n_kv_heads: int, head_dim: int, seq_len: int, batch: int = 1,
                   dtype_bytes: int = 2) -> int:
    """Size of a KV cache: 2 (K and V) * L * KV * hd * T * B * bytes per number.

    Example: Llama 3 8B (L=32, KV=8, hd=128) in float16 holds 128 KiB per token.
    """
    for name, v in dict(n_layers=n_layers, n_kv_heads=n_kv_heads, head_dim=head_dim, seq_len=seq_len,
                        batch=batch, dtype_bytes=dtype_bytes).items():
        check_int(name, v, minimum=0)
    return 2 * n_layers * n_kv_heads * head_dim * seq_len * batch * dtype_bytes


def latent_cache_bytes(n_layers: int, kv_lora_rank: int, rope_dim: int, seq_len: int, batch: int = 1,
                       bits: float = 16) -> float:
    """Size of a multi-head latent attention (MLA) cache: (d_c + d_h^R) * l * T * B * bits / 8.

    Per layer and token MLA keeps one latent vector of d_c numbers (keys and values of every
    head are rebuilt from it) and one RoPE key of d_h^R numbers, both shared by all heads:
    DeepSeek-V2's Table 1, against 2 * n_h * d_h per layer for multi-head attention.
    ``bits`` per number may be fractional (a quantized cache). A float: whole bytes for whole bits.
    """
    for name, v in dict(n_layers=n_layers, kv_lora_rank=kv_lora_rank, rope_dim=rope_dim, seq_len=seq_len,
                        batch=batch).items():
        check_int(name, v, minimum=0)
    values = (kv_lora_rank + rope_dim) * n_layers * seq_len * batch
    if isinstance(bits, bool) or not isinstance(bits, (int, float)) or not 0 < bits <= 64:
        raise ValueError(f"bits must be a number of bits per cached value in (0, 64], got {bits!r}")
    return values * bits / 8


def cached_positions(cfg: Config, seq_len: int) -> int:
    """Positions a cache keeps for seq_len tokens: all of them, or the last W with a sliding
    window (plus the first ``attention_sinks`` ones, which the window never drops)."""
    _check(cfg, seq_len=seq_len)
    W = cfg.sliding_window
    return seq_len if W is None else min(seq_len, W + cfg.attention_sinks)


def _bits(cfg: Config, kv_bits) -> float:
    """Bits per cached value: the model's dtype, or the cache's own format (any number > 0)."""
    if kv_bits is None:
        return 8 * cfg.dtype_bytes
    if isinstance(kv_bits, bool) or not isinstance(kv_bits, (int, float)) or not 0 < kv_bits <= 64:
        raise ValueError(f"kv_bits must be a number of bits per cached value in (0, 64], got {kv_bits!r}")
    return float(kv_bits)


def kv_cache_size(cfg: Config, seq_len: int, batch: int = 1, kv_bits: float | None = None) -> float:
    """Bytes of the KV cache of ``cfg`` after seq_len tokens per sequence, for ``batch`` sequences:

        2 (K and V) * L * KV * hd * min(seq_len, W) * batch * kv_bits / 8

    W caps the positions only for a windowed model; kv_bits defaults to the model's dtype and
    may be fractional (3.5 bits: codes plus their share of the scales). A float: whole bytes
    for whole bits.
    """
    _check(cfg, batch=batch)
    values = cfg.kv_values_per_token * cached_positions(cfg, seq_len) * batch
    return values * _bits(cfg, kv_bits) / 8


def decode_step_kv_bytes(cfg: Config, context_len: int, kv_bits: float | None = None) -> float:
    """KV traffic of one cached decode step: read the positions kept after it, write one
    (the KV part of :func:`decode_step_bytes`; the rest is weights, read once per batch)."""
    _check(cfg, context_len=context_len)
    return kv_cache_size(cfg, context_len + 1, kv_bits=kv_bits) + kv_cache_size(cfg, 1, kv_bits=kv_bits)


def decode_step_bytes(cfg: Config, context_len: int, use_cache: bool, dtype_bytes: int | None = None,
                      kv_bits: float | None = None):
    """Bytes moved between memory and the compute units for one decode step (see module doc).

    ``dtype_bytes``: the weights' bytes per number, and the cache's unless ``kv_bits`` gives
    the cache its own format. An int, or a float when ``kv_bits`` is given.
    """
    _check(cfg, context_len=context_len)
    b = cfg.dtype_bytes if dtype_bytes is None else dtype_bytes
    try:
        b = check_int("dtype_bytes", b, minimum=1)
    except TypeError as e:
        raise ValueError(str(e)) from None
    resident = cfg.n_layers * layer_params(cfg) + cfg.d_model + cfg.d_model * cfg.vocab_size  # all but embed
    n_rows = 1 if use_cache else context_len + 1  # tokens that go through the model
    weights = (resident + n_rows * cfg.d_model) * b
    # positions whose K/V move: cached, read the kept ones and write one; else write and read all
    positions = cached_positions(cfg, context_len + 1) + 1 if use_cache else 2 * (context_len + 1)
    values = cfg.kv_values_per_token * positions
    return weights + (values * b if kv_bits is None else values * _bits(cfg, kv_bits) / 8)


def prefill_bytes(cfg: Config, n_tokens: int, dtype_bytes: int | None = None) -> int:
    """Bytes moved by a prefill of n_tokens: the same traffic as a cache-less step over them."""
    _check(cfg, n_tokens=n_tokens)
    if n_tokens == 0:
        return 0
    return decode_step_bytes(cfg, n_tokens - 1, use_cache=False, dtype_bytes=dtype_bytes)
