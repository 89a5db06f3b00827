"""Each fused kernel of the GPU decode step, as NumPy maths: the reference a CUDA kernel set
is checked against, and a kernel set that runs (slowly) on the CPU.

Shapes use engine/model.py's alphabet, plus three for the cache and its split:
    M   cache slots (KVCache.max_len)      P   positions per split of the attention
    C   splits of the whole cache (ceil(M / P)): the attention grid, the same at every step

A kernel set is any object with the methods of ``ReferenceKernels`` below, an ``xp`` (the
array module its arrays live in) and ``split`` (P). Every method writes into arrays the
caller allocated once and returns nothing; on a GPU each call is one kernel launch. Inside
a kernel everything is float32 and rounded once, to the output's dtype, when it is written:
that is what a CUDA kernel does in registers, and why these references differ from the
per-op engine (which rounds after every op in float16) by a rounding error only.

Nothing that changes from token to token is an argument: the token id and ``length`` (the
positions in the cache, counting the token being decoded) live in device int32 arrays of
one element. ``embed`` increments ``length`` (the step claims its slot) and the later
kernels read it there; so every launch of a step has the same arguments at every step, and
a GPU can capture the step once as a CUDA graph and replay it.

A projection is fused with its neighbours: RMSNorm before it (the norm's weight folded into
the projection's rows once, by ``prepare_weight(w, norm)``, so the kernel only needs
1 / rms(x)), and after it the residual add, SwiGLU, RoPE with the cache write, or the greedy
argmax. A layer is five launches:

    embed(table [V, D], token [1], length [1], out [1, D])      gather one row; length += 1
    prepare_weight(w [K, N], norm [K] | None) -> prepared w      (here w, or diag(norm) @ w;
                                                                  CUDA: transposed to [N, K])
    norm_matmul_rope_store(x [1, D], wqkv, eps, cos, sin          qkv = rmsnorm(x) @ wqkv; rotate q
                 [max_seq_len, hd], length, k_cache, v_cache       and k of position length-1, write k,
                 [KV, M, hd], out [H, hd])                         v into that slot, q into out
    attention(q [H, hd], k_cache, v_cache, length, window,        flash-decoding: per KV head and split
              acc [H, C, hd], mx [H, C], sm [H, C],                of P positions, the G query heads'
              tickets [KV], out [1, H*hd])                         statistics, then their merge
    matmul_add(a [1, K], w, x [1, N])                             x += a @ w   (wo, w_down)
    norm_matmul_swiglu(x [1, D], w_gate_up, eps, out [1, F])      silu(gate) * up of rmsnorm(x) @ w
    norm_matmul(x [1, D], lm_head, eps, out [1, V])               the logits
    norm_matmul_argmax(x, lm_head, eps, out [1, V], token [1],    the logits, and token = argmax
                       best [1] uint64, tickets [1])               (greedy: stays on the device)
    matmul(a [1, K], w, out [1, N])                               a lone projection (benchmarks)
    argmax(logits [1, V], out [1])                                greedy choice, stays on the device

``window`` is the sliding window in positions, 0 for none (positions max(0, length - window)
.. length-1 are read). Split c always covers positions c*P .. c*P+P-1, so only the splits
that hold positions are computed, and the merge reads only those. ``tickets`` and ``best``
are the CUDA kernels' scratch (the last block of a grid finishes the work; they leave them
zeroed); the references do not need them.
"""
from __future__ import annotations

import numpy as np

F32 = np.float32

KERNELS = ("embed", "norm_matmul_rope_store", "attention", "matmul_add", "norm_matmul_swiglu", "norm_matmul",
           "norm_matmul_argmax", "matmul", "argmax")


def n_chunks(n_positions: int, split: int) -> int:
    """C: splits of ``split`` positions that cover ``n_positions`` (the last may be short)."""
    return -(-n_positions // split)


# --------------------------------------------------------------------------- rope + cache write


def rope_store(qkv, cos, sin, length, k_cache, v_cache, out) -> None:
    """Rotate q and k of the new position (length[0] - 1) by RoPE, write k and v into its slot.

    qkv [1, (H+2KV)*hd] is the output of the fused Q|K|V projection; the HF convention of
    engine/model.py (rotate_half pairs dimension j with j + hd/2).
    """
    H, (KV, _M, hd) = out.shape[0], k_cache.shape
    pos = int(length[0]) - 1
    x = qkv.reshape(H + 2 * KV, hd)  # [H+2KV, hd]
    qk = x[: H + KV].astype(F32)  # [H+KV, hd]
    half = hd // 2
    rotated = np.concatenate([-qk[:, half:], qk[:, :half]], axis=-1)  # [H+KV, hd]
    qk = qk * cos[pos].astype(F32) + rotated * sin[pos].astype(F32)
    out[...] = qk[:H]
    k_cache[:, pos] = qk[H:]
    v_cache[:, pos] = x[H + KV :]  # V is not rotated: copied in its own dtype


# --------------------------------------------------------------------------- attention


def read_range(length, window: int) -> tuple[int, int]:
    """(start, stop): the positions a step attends to, from the device length and the window."""
    stop = int(length[0])
    return (max(0, stop - window) if window else 0), stop


def split_range(start: int, stop: int, split: int) -> tuple[int, int]:
    """(c0, c1): the first and last split holding positions start .. stop-1 (split c = c*P ..)."""
    return start // split, (stop - 1) // split


def attention_partial(q, k_cache, v_cache, length, window: int, acc, mx, sm, *, split: int) -> None:
    """Part 1 of flash-decoding over the positions read_range(length, window).

    For each KV head and split (one GPU thread block each, so long contexts fill every SM),
    the split's K and V rows are read once, in the cache's dtype, for all G query heads of
    the group, and accumulated in float32:
        s  = q . k / sqrt(hd)          scores of the split        [G, P]
        mx = max(s)                    the split's largest score  [G]
        sm = sum(exp(s - mx))          its softmax denominator    [G]
        acc = exp(s - mx) @ V          its unnormalised output    [G, hd]
    Writes splits c0 .. c1 of acc [H, C, hd], mx and sm [H, C] (float32); the other splits of
    the workspace are left as they were (their blocks exit at once on a GPU).
    """
    H, hd = q.shape
    KV, M = k_cache.shape[:2]
    G = H // KV
    start, stop = read_range(length, window)
    c0, c1 = split_range(start, stop, split)
    lo, n_c = c0 * split, c1 - c0 + 1
    hi = min(M, lo + n_c * split)
    pad = n_c * split - (hi - lo)
    K = np.pad(k_cache[:, lo:hi].astype(F32), ((0, 0), (0, pad), (0, 0))).reshape(KV, n_c, split, hd)
    V = np.pad(v_cache[:, lo:hi].astype(F32), ((0, 0), (0, pad), (0, 0))).reshape(KV, n_c, split, hd)
    absolute = lo + np.arange(n_c * split).reshape(n_c, split)  # position of each slot
    outside = (absolute < start) | (absolute >= stop)  # [n_c, P]: slots not read
    K[:, outside], V[:, outside] = 0, 0  # (a GPU block never loads them)
    qg = q.astype(F32).reshape(KV, G, hd)  # query head h reads KV head h // G
    s = np.einsum("kgd,kcpd->kgcp", qg, K) * F32(1.0 / hd**0.5)  # [KV, G, n_c, P]
    s[..., outside] = -np.inf
    m = s.max(axis=-1)  # [KV, G, n_c]
    p = np.exp(s - m[..., None])  # [KV, G, n_c, P]
    acc[:, c0 : c1 + 1] = np.einsum("kgcp,kcpd->kgcd", p, V).reshape(H, n_c, hd)
    mx[:, c0 : c1 + 1] = m.reshape(H, n_c)
    sm[:, c0 : c1 + 1] = p.sum(axis=-1).reshape(H, n_c)


def attention_merge(acc, mx, sm, length, window: int, out, *, split: int) -> None:
    """Part 2: merge the splits c0 .. c1 by log-sum-exp into out [1, H*hd] (head-major).

    With M the largest split maximum, each split is rescaled by exp(mx - M):
        out[h] = sum_c exp(mx[h,c] - M) acc[h,c] / sum_c exp(mx[h,c] - M) sm[h,c]
    which is exactly softmax(all scores) @ V, however the positions were split.
    """
    c0, c1 = split_range(*read_range(length, window), split)
    m = mx[:, c0 : c1 + 1]  # [H, n]
    w = np.exp(m - m.max(axis=1, keepdims=True))  # [H, n]
    num = (w[..., None] * acc[:, c0 : c1 + 1]).sum(axis=1)  # [H, hd]
    den = (w * sm[:, c0 : c1 + 1]).sum(axis=1)  # [H]
    out[...] = (num / den[:, None]).reshape(out.shape)


# --------------------------------------------------------------------------- mlp, head


def swiglu(gu, out) -> None:
    """out [1, F] = silu(gate) * up, gu = gate|up [1, 2F] from the fused projection."""
    F = out.shape[-1]
    g, u = gu[:, :F].astype(F32), gu[:, F:].astype(F32)
    out[...] = g * (F32(0.5) + F32(0.5) * np.tanh(F32(0.5) * g)) * u  # g * sigmoid(g), no overflow


def embed(table, token, length, out) -> None:
    """out [1, D] = table[token[0]] (the token id is read on the device, never by the host),
    and length[0] += 1: the step claims its cache slot before any later kernel reads it."""
    out[...] = table[token[:1]]
    length[0] += 1


def argmax(logits, out) -> None:
    """out [1] = index of the largest logit (the greedy choice), written on the device."""
    out[...] = np.argmax(logits, axis=-1)


# --------------------------------------------------------------------------- the projections


def prepare_weight(w, norm=None):
    """The weight as the projections read it: w itself, or with the RMSNorm weight that comes
    before it folded into its rows (diag(norm) @ w, in float32, rounded once to w's dtype)."""
    if norm is None:
        return w
    return (w.astype(F32) * norm.astype(F32)[:, None]).astype(w.dtype)


def _f32(a):
    return a.astype(F32, copy=False)


def _normed(x, eps: float):
    """x [1, D] / rms(x) in float32 (the norm's weight is in the prepared projection)."""
    x32 = _f32(x)
    return x32 / np.sqrt((x32 * x32).mean(axis=-1, keepdims=True) + F32(eps))


def _stored(a, dtype):
    """a as a buffer of ``dtype`` holds it: the rounding a kernel's intermediate would get."""
    return a.astype(dtype).astype(F32)


def matmul(a, b, out) -> None:
    """out = a @ b into the caller's buffer (float32 inside; the CUDA set's gemv reads b as [N, K])."""
    out[...] = _f32(a) @ _f32(b)


def norm_matmul(x, w, eps: float, out) -> None:
    """out = rmsnorm(x) @ w, the norm's weight folded into w (prepare_weight)."""
    out[...] = _normed(x, eps) @ _f32(w)


def norm_matmul_argmax(x, w, eps: float, out, token, best=None, tickets=None) -> None:
    """The logits (norm_matmul) and token [1] = their argmax, as stored."""
    norm_matmul(x, w, eps, out)
    argmax(out, token)


def matmul_add(a, w, x) -> None:
    """x += a @ w: a block's output projection and the residual add (the product rounded to
    x's dtype first, as the engine adds a stored block output)."""
    x[...] = _f32(x) + _stored(_f32(a) @ _f32(w), x.dtype)


def norm_matmul_swiglu(x, w, eps: float, out) -> None:
    """out [1, F] = swiglu(rmsnorm(x) @ w_gate_up), gate|up rounded as the engine stores them."""
    swiglu(_stored(_normed(x, eps) @ _f32(w), out.dtype), out)


def norm_matmul_rope_store(x, w, eps: float, cos, sin, length, k_cache, v_cache, out) -> None:
    """qkv = rmsnorm(x) @ wqkv (rounded as the engine stores it), then rope_store: q into out,
    k and v into slot length[0] - 1 of the caches."""
    qkv = (_normed(x, eps) @ _f32(w)).astype(out.dtype)
    rope_store(qkv, cos, sin, length, k_cache, v_cache, out)


def attention(q, k_cache, v_cache, length, window: int, acc, mx, sm, tickets, out, *, split: int) -> None:
    """Flash-decoding in one call: attention_partial per split, then attention_merge."""
    attention_partial(q, k_cache, v_cache, length, window, acc, mx, sm, split=split)
    attention_merge(acc, mx, sm, length, window, out, split=split)


# --------------------------------------------------------------------------- the kernel set


class ReferenceKernels:
    """The NumPy kernel set: the maths above behind the kernel-set interface.

    ``split`` is P, the positions per chunk of the attention; a CUDA kernel set picks it
    so that KV heads x splits fills the GPU at long contexts while a short context stays
    one split (tests use small values so that short contexts cross split boundaries).
    """

    name = "numpy-reference"
    xp = np

    def __init__(self, split: int = 64):
        if isinstance(split, bool) or not isinstance(split, int) or split < 1:
            raise ValueError(f"split (positions per attention chunk) must be an int >= 1, got {split!r}")
        self.split = split

    embed = staticmethod(embed)
    prepare_weight = staticmethod(prepare_weight)
    matmul = staticmethod(matmul)
    norm_matmul = staticmethod(norm_matmul)
    norm_matmul_argmax = staticmethod(norm_matmul_argmax)
    matmul_add = staticmethod(matmul_add)
    norm_matmul_swiglu = staticmethod(norm_matmul_swiglu)
    norm_matmul_rope_store = staticmethod(norm_matmul_rope_store)
    argmax = staticmethod(argmax)

    def attention(self, q, k_cache, v_cache, length, window, acc, mx, sm, tickets, out) -> None:
        attention(q, k_cache, v_cache, length, window, acc, mx, sm, tickets, out, split=self.split)
