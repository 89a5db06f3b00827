"""Each fused kernel's NumPy maths (engine/gpu/kernels_ref.py) against the plain engine.

float32 within 1e-5 and float16 within 2e-2, relative to the largest magnitude: the kernels
compute in float32 and round once, the per-op engine rounds after every op.
"""
from __future__ import annotations

import numpy as np
import pytest
from decode_checks import TOLERANCE

from engine.gpu import kernels_ref as K
from engine.model import apply_rope, mlp, rmsnorm, attention_softmax

DTYPES = ["float32", "float16"]


def close(got, want, dtype):
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    rel = np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)
    assert rel <= TOLERANCE[dtype], f"relative difference {rel:.3g} > {TOLERANCE[dtype]} ({dtype})"


def rand(rng, shape, dtype, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_norm_matmul_is_rmsnorm_then_the_projection(dtype):
    """The norm's weight folded into the projection's rows gives the engine's rmsnorm(x) @ w."""
    rng = np.random.default_rng(0)
    x, g, w = rand(rng, (1, 96), dtype, 3.0), rand(rng, (96,), dtype), rand(rng, (96, 40), dtype, 96**-0.5)
    out = np.empty((1, 40), dtype)
    K.norm_matmul(x, K.prepare_weight(w, g), 1e-5, out)
    close(out, rmsnorm(x, g, 1e-5) @ w, dtype)


def test_prepare_weight_folds_the_norm_into_the_rows_and_copies_nothing_without_one():
    rng = np.random.default_rng(9)
    w, g = rand(rng, (8, 5), "float32"), rand(rng, (8,), "float32")
    assert K.prepare_weight(w) is w
    np.testing.assert_allclose(K.prepare_weight(w, g), g[:, None] * w, rtol=1e-7)


@pytest.mark.parametrize("dtype", DTYPES)
def test_matmul_add_is_the_residual_add_of_a_projection(dtype):
    rng = np.random.default_rng(1)
    a, w, x = rand(rng, (1, 48), dtype), rand(rng, (48, 64), dtype, 48**-0.5), rand(rng, (1, 64), dtype)
    want = x + (a @ w).astype(dtype)  # the engine: a rounded block output added to x
    K.matmul_add(a, w, x)
    close(x, want, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_norm_matmul_rope_store_is_the_engines_qkv_projection_and_rope(dtype):
    rng = np.random.default_rng(2)
    H, KV, hd, M, D, pos = 8, 2, 16, 32, 64, 11
    x, g = rand(rng, (1, D), dtype), rand(rng, (D,), dtype)
    w = rand(rng, (D, (H + 2 * KV) * hd), dtype, D**-0.5)
    angles = np.outer(np.arange(M), 1.0 / 10000 ** (np.arange(0, hd, 2) / hd))
    angles = np.concatenate([angles, angles], axis=-1)
    cos, sin = np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)
    k_cache, v_cache, q = np.zeros((KV, M, hd), dtype), np.zeros((KV, M, hd), dtype), np.empty((H, hd), dtype)
    K.norm_matmul_rope_store(x, K.prepare_weight(w, g), 1e-5, cos, sin, np.array([pos + 1], np.int32), k_cache,
                             v_cache, q)
    qkv = (rmsnorm(x, g, 1e-5) @ w).reshape(1, H + 2 * KV, hd)
    rotated = apply_rope(qkv[:, : H + KV], cos[pos : pos + 1], sin[pos : pos + 1], np)[0]
    close(q, rotated[:H], dtype)
    close(k_cache[:, pos], rotated[H:], dtype)
    close(v_cache[:, pos], qkv[0, H + KV :], dtype)
    assert not k_cache[:, np.arange(M) != pos].any() and not v_cache[:, np.arange(M) != pos].any()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pos", [0, 5, 31])
def test_rope_store_rotates_q_and_k_and_writes_only_slot_pos(dtype, pos):
    rng = np.random.default_rng(pos)
    H, KV, hd, M = 8, 2, 16, 32
    qkv = rand(rng, (1, (H + 2 * KV) * hd), dtype)
    angles = np.outer(np.arange(M), 1.0 / 10000 ** (np.arange(0, hd, 2) / hd))
    angles = np.concatenate([angles, angles], axis=-1)
    cos, sin = np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)
    k_cache, v_cache = rand(rng, (KV, M, hd), dtype), rand(rng, (KV, M, hd), dtype)
    before_k, before_v = k_cache.copy(), v_cache.copy()
    q = np.empty((H, hd), dtype)
    K.rope_store(qkv, cos, sin, np.array([pos + 1], np.int32), k_cache, v_cache, out=q)

    x = qkv.reshape(1, H + 2 * KV, hd)
    rotated = apply_rope(x[:, : H + KV], cos[pos : pos + 1], sin[pos : pos + 1], np)[0]  # [H+KV, hd]
    close(q, rotated[:H], dtype)
    close(k_cache[:, pos], rotated[H:], dtype)
    np.testing.assert_array_equal(v_cache[:, pos], x[0, H + KV :])
    others = np.arange(M) != pos
    np.testing.assert_array_equal(k_cache[:, others], before_k[:, others])
    np.testing.assert_array_equal(v_cache[:, others], before_v[:, others])


def dense_attention(q, k_cache, v_cache, start, stop):
    """The engine's attention for one query position: grouped scores, float32 softmax, @ V."""
    H, hd = q.shape
    KV = k_cache.shape[0]
    k, v = k_cache[:, start:stop], v_cache[:, start:stop]  # [KV, S, hd]
    scores = (q.reshape(KV, H // KV, hd) @ k.transpose(0, 2, 1)).astype(np.float32) * (1.0 / hd**0.5)
    probs = attention_softmax(scores, np)  # [KV, G, S]
    return (probs.astype(q.dtype) @ v).reshape(1, H * hd)


def run_attention(q, k_cache, v_cache, start, stop, split):
    """Positions start .. stop-1 as a step sees them: length = stop, window = stop - start."""
    H, hd = q.shape
    C_max = K.n_chunks(k_cache.shape[1], split)
    acc = np.full((H, C_max, hd), np.nan, np.float32)  # splits the call does not fill stay NaN
    mx, sm = np.full((H, C_max), np.nan, np.float32), np.full((H, C_max), np.nan, np.float32)
    length, window = np.array([stop], np.int32), (stop - start if start else 0)
    K.attention_partial(q, k_cache, v_cache, length, window, acc, mx, sm, split=split)
    out = np.empty((1, H * hd), q.dtype)
    K.attention_merge(acc, mx, sm, length, window, out, split=split)
    both = np.empty_like(out)
    K.attention(q, k_cache, v_cache, length, window, acc, mx, sm, None, both, split=split)
    np.testing.assert_array_equal(both, out)  # the kernel set's one call is the two parts
    return out


ATTN_CASES = [  # (H, KV, positions read, split): one chunk, exact multiples, a short last chunk, 1 per chunk
    (8, 2, 1, 4), (8, 2, 17, 4), (8, 2, 16, 4), (8, 8, 33, 8), (4, 1, 23, 5), (6, 3, 40, 1), (8, 2, 64, 64),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("H, KV, S, split", ATTN_CASES)
def test_split_attention_equals_the_dense_softmax(dtype, H, KV, S, split):
    rng = np.random.default_rng(S * 31 + split)
    hd, M = 16, 64
    q = rand(rng, (H, hd), dtype, 2.0)
    k_cache, v_cache = rand(rng, (KV, M, hd), dtype), rand(rng, (KV, M, hd), dtype)
    k_cache[:, S:] = np.nan  # slots past the context must never be read
    v_cache[:, S:] = np.nan
    close(run_attention(q, k_cache, v_cache, 0, S, split), dense_attention(q, k_cache, v_cache, 0, S), dtype)


@pytest.mark.parametrize("split", [1, 3, 7, 64])
def test_sliding_window_reads_only_its_positions(split):
    rng = np.random.default_rng(split)
    q, k_cache, v_cache = rand(rng, (4, 8), "float32"), rand(rng, (2, 40, 8), "float32"), rand(rng, (2, 40, 8), "float32")
    k_cache[:, :13] = np.nan  # before the window
    close(run_attention(q, k_cache, v_cache, 13, 30, split), dense_attention(q, k_cache, v_cache, 13, 30), "float32")


def test_merge_is_exact_softmax_whatever_the_split():
    """Huge score differences between chunks: the log-sum-exp rescaling must keep them finite."""
    rng = np.random.default_rng(7)
    q = rand(rng, (2, 8), "float32", 30.0)
    k_cache, v_cache = rand(rng, (1, 32, 8), "float32", 5.0), rand(rng, (1, 32, 8), "float32")
    outs = [run_attention(q, k_cache, v_cache, 0, 32, split) for split in (1, 2, 5, 32)]
    assert all(np.isfinite(o).all() for o in outs)
    for o in outs[1:]:
        np.testing.assert_allclose(o, outs[0], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_swiglu_is_the_engines_mlp_before_w_down(dtype):
    rng = np.random.default_rng(3)
    F = 48
    x, w_gate_up = rand(rng, (1, F), dtype), rand(rng, (F, 2 * F), dtype, F**-0.5 * 4)
    gu = x @ w_gate_up
    out = np.empty((1, F), dtype)
    K.swiglu(gu, out)
    close(out, mlp(x, w_gate_up, np.eye(F, dtype=dtype), F, np), dtype)  # identity w_down
    g = rand(rng, (F,), dtype)
    K.norm_matmul_swiglu(x, K.prepare_weight(w_gate_up, g), 1e-5, out)
    close(out, mlp(rmsnorm(x, g, 1e-5), w_gate_up, np.eye(F, dtype=dtype), F, np), dtype)


def test_embed_matmul_argmax_write_into_their_outputs():
    rng = np.random.default_rng(4)
    table, token, length = rand(rng, (50, 16), "float32"), np.array([37], np.int32), np.array([5], np.int32)
    x = np.empty((1, 16), np.float32)
    K.embed(table, token, length, x)
    np.testing.assert_array_equal(x, table[[37]])
    assert length[0] == 6  # the step claimed slot 5
    w = rand(rng, (16, 50), "float32")
    logits = np.empty((1, 50), np.float32)
    K.matmul(x, w, logits)
    np.testing.assert_allclose(logits, x @ w, rtol=1e-6)
    best = np.zeros(1, np.int32)
    K.argmax(logits, best)
    assert best[0] == np.argmax(x @ w)
    token = np.zeros(1, np.int32)
    K.norm_matmul_argmax(x, w, 1e-5, logits, token)
    assert token[0] == np.argmax(logits) == np.argmax(x @ w)  # a positive scale keeps the order


@pytest.mark.parametrize("split", [0, -1, 2.5, True])
def test_a_bad_split_is_refused(split):
    with pytest.raises(ValueError, match="split"):
        K.ReferenceKernels(split)
