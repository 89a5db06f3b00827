"""Each fused kernel of the GPU decode step, as NumPy maths: the reference a CUDA kernel set
is checked against, and a kernel set that runs (slowly) on the CPU.

Shapes use engine/model.py's alphabet, plus three for the cache and its split:
    M   cache slots (KVCache.max_len)      P   positions per chunk of the split
    C   chunks (ceil(positions read / P))

A kernel set is any object with the methods of ``ReferenceKernels`` below, an ``xp`` (the
array module its arrays live in) and ``split`` (P). Every method writes into arrays the
caller allocated once and returns nothing; on a GPU each call is one kernel launch (matmul:
one cuBLAS call). Inside a kernel everything is float32 and rounded once, to the output's
dtype, when it is written: that is what a CUDA kernel does in registers, and why these
references differ from the per-op engine (which rounds after every op in float16) by a
rounding error only.

    embed(table [V, D], token [1] int, out [1, D])              gather one row
    rmsnorm(x [1, D], w [D], eps, out [1, D])                   out = x / rms(x) * w
    add_rmsnorm(x [1, D], delta [1, D], w [D], eps, out [1, D]) x += delta, then rmsnorm(x) into out
    rope_store(qkv [1, (H+2KV)*hd], cos, sin [M, hd], pos,       rotate q and k of position pos, write
               k_cache, v_cache [KV, M, hd], out [H, hd])       k, v into cache slot pos, q into out
    attention_partial(q [H, hd], k_cache, v_cache, start, stop, flash-decoding, part 1: per KV head and
                      acc [H, C, hd], mx [H, C], sm [H, C])     chunk of P positions, its G query heads'
                                                                  max score, sum of exp and weighted V
    attention_merge(acc, mx, sm, n_chunks, out [1, H*hd])       part 2: log-sum-exp merge of the chunks
    swiglu(gu [1, 2F], out [1, F])                              silu(gate) * up
    matmul(a [1, K], b [K, N], out [1, N])                      the projections (cuBLAS on a GPU)
    argmax(logits [1, V], out [1] int)                          greedy choice, stays on the device
"""
from __future__ import annotations

import numpy as np

F32 = np.float32

KERNELS = ("embed", "rmsnorm", "add_rmsnorm", "rope_store", "attention_partial", "attention_merge",
           "swiglu", "matmul", "argmax")


def n_chunks(n_positions: int, split: int) -> int:
    """C: chunks of ``split`` positions that cover ``n_positions`` (the last may be short)."""
    return -(-n_positions // split)


# --------------------------------------------------------------------------- norms


def _rms(x32, w, eps: float):
    """x32 [1, D] float32 -> x32 / rms(x32) * w in float32 (the kernel's registers)."""
    ms = (x32 * x32).mean(axis=-1, keepdims=True)  # [1, 1]
    return x32 / np.sqrt(ms + F32(eps)) * w.astype(F32)


def rmsnorm(x, w, eps: float, out) -> None:
    """out [1, D] = x / rms(x) * w, in float32 inside, one rounding to out's dtype."""
    out[...] = _rms(x.astype(F32), w, eps)


def add_rmsnorm(x, delta, w, eps: float, out) -> None:
    """x += delta (the residual add, in x's dtype as the engine does), then out = rmsnorm(x)."""
    x[...] = x + delta
    out[...] = _rms(x.astype(F32), w, eps)


# --------------------------------------------------------------------------- rope + cache write


def rope_store(qkv, cos, sin, pos: int, k_cache, v_cache, out) -> None:
    """Rotate q and k of one new position by RoPE, write k and v into cache slot ``pos``.

    qkv [1, (H+2KV)*hd] is the output of the fused Q|K|V projection; the HF convention of
    engine/model.py (rotate_half pairs dimension j with j + hd/2).
    """
    H, (KV, _M, hd) = out.shape[0], k_cache.shape
    x = qkv.reshape(H + 2 * KV, hd)  # [H+2KV, hd]
    qk = x[: H + KV].astype(F32)  # [H+KV, hd]
    half = hd // 2
    rotated = np.concatenate([-qk[:, half:], qk[:, :half]], axis=-1)  # [H+KV, hd]
    qk = qk * cos[pos].astype(F32) + rotated * sin[pos].astype(F32)
    out[...] = qk[:H]
    k_cache[:, pos] = qk[H:]
    v_cache[:, pos] = x[H + KV :]  # V is not rotated: copied in its own dtype


# --------------------------------------------------------------------------- attention


def attention_partial(q, k_cache, v_cache, start: int, stop: int, acc, mx, sm, *, split: int) -> None:
    """Part 1 of flash-decoding over cache positions start .. stop-1, in chunks of ``split``.

    For each KV head and chunk (one GPU thread block each, so long contexts fill every SM),
    the chunk's K and V rows are read once, in the cache's dtype, for all G query heads of
    the group, and accumulated in float32:
        s  = q . k / sqrt(hd)          scores of the chunk        [G, P]
        mx = max(s)                    the chunk's largest score  [G]
        sm = sum(exp(s - mx))          its softmax denominator    [G]
        acc = exp(s - mx) @ V          its unnormalised output    [G, hd]
    Writes chunks 0 .. C-1 of acc [H, C, hd], mx and sm [H, C] (float32); later chunks of the
    workspace are left as they were.
    """
    H, hd = q.shape
    KV = k_cache.shape[0]
    G, n = H // KV, stop - start
    C = n_chunks(n, split)
    pad = C * split - n
    K = np.pad(k_cache[:, start:stop].astype(F32), ((0, 0), (0, pad), (0, 0))).reshape(KV, C, split, hd)
    V = np.pad(v_cache[:, start:stop].astype(F32), ((0, 0), (0, pad), (0, 0))).reshape(KV, C, split, hd)
    qg = q.astype(F32).reshape(KV, G, hd)  # query head h reads KV head h // G
    s = np.einsum("kgd,kcpd->kgcp", qg, K) * F32(1.0 / hd**0.5)  # [KV, G, C, P]
    if pad:
        s[..., C - 1, split - pad :] = -np.inf  # the short last chunk's empty slots
    m = s.max(axis=-1)  # [KV, G, C]
    p = np.exp(s - m[..., None])  # [KV, G, C, P]
    acc[:, :C] = np.einsum("kgcp,kcpd->kgcd", p, V).reshape(H, C, hd)
    mx[:, :C] = m.reshape(H, C)
    sm[:, :C] = p.sum(axis=-1).reshape(H, C)


def attention_merge(acc, mx, sm, C: int, out) -> None:
    """Part 2: merge C chunks by log-sum-exp into out [1, H*hd] (head-major, as wo expects).

    With M the largest chunk maximum, each chunk is rescaled by exp(mx - M):
        out[h] = sum_c exp(mx[h,c] - M) acc[h,c] / sum_c exp(mx[h,c] - M) sm[h,c]
    which is exactly softmax(all scores) @ V, however the positions were split.
    """
    m = mx[:, :C]  # [H, C]
    w = np.exp(m - m.max(axis=1, keepdims=True))  # [H, C]
    num = (w[..., None] * acc[:, :C]).sum(axis=1)  # [H, hd]
    den = (w * sm[:, :C]).sum(axis=1)  # [H]
    out[...] = (num / den[:, None]).reshape(out.shape)


# --------------------------------------------------------------------------- mlp, head


def swiglu(gu, out) -> None:
    """out [1, F] = silu(gate) * up, gu = gate|up [1, 2F] from the fused projection."""
    F = out.shape[-1]
    g, u = gu[:, :F].astype(F32), gu[:, F:].astype(F32)
    out[...] = g * (F32(0.5) + F32(0.5) * np.tanh(F32(0.5) * g)) * u  # g * sigmoid(g), no overflow


def embed(table, token, out) -> None:
    """out [1, D] = table[token[0]]: the token id is read on the device, never by the host."""
    out[...] = table[token]


def matmul(a, b, out) -> None:
    """out = a @ b into the caller's buffer (cuBLAS on a GPU, BLAS here)."""
    np.matmul(a, b, out=out)


def argmax(logits, out) -> None:
    """out [1] = index of the largest logit (the greedy choice), written on the device."""
    out[...] = np.argmax(logits, axis=-1)


# --------------------------------------------------------------------------- the kernel set


class ReferenceKernels:
    """The NumPy kernel set: the maths above behind the kernel-set interface.

    ``split`` is P, the positions per chunk of attention_partial; a CUDA kernel set picks it
    so that KV heads x chunks fills the GPU at long contexts while a short context stays
    one chunk (tests use small values so that short contexts cross chunk boundaries).
    """

    name = "numpy-reference"
    xp = np

    def __init__(self, split: int = 64):
        if isinstance(split, bool) or not isinstance(split, int) or split < 1:
            raise ValueError(f"split (positions per attention chunk) must be an int >= 1, got {split!r}")
        self.split = split

    embed = staticmethod(embed)
    rmsnorm = staticmethod(rmsnorm)
    add_rmsnorm = staticmethod(add_rmsnorm)
    rope_store = staticmethod(rope_store)
    attention_merge = staticmethod(attention_merge)
    swiglu = staticmethod(swiglu)
    matmul = staticmethod(matmul)
    argmax = staticmethod(argmax)

    def attention_partial(self, q, k_cache, v_cache, start, stop, acc, mx, sm) -> None:
        attention_partial(q, k_cache, v_cache, start, stop, acc, mx, sm, split=self.split)
