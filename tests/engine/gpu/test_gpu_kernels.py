"""On a GPU (marker ``gpu``): the CUDA kernel set against the NumPy references, and the whole
fused step on the GPU against the NumPy engine over 32 greedy steps, at contexts 1, 17, 4096
and 8192, float32 within 1e-5 and float16 within 2e-2 (relative, on logits).

Skipped with the reason without CuPy + a CUDA GPU, and while the CuPy kernel set is not
written (engine.gpu.kernel_set("cupy") says so). ``KV_GPU_DRY_RUN=1`` runs these tests with
NumPy and the reference kernels standing in for CuPy and the CUDA ones, so the tests
themselves are exercised on a CPU before GPU time is spent on them.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from decode_checks import TOLERANCE, as_dtype, gqa_config, greedy_compare

from engine import Transformer, load_course_model
from engine.arrays import to_numpy
from engine.gpu import KernelSetMissing, kernel_set
from engine.gpu import kernels_ref as K

pytestmark = pytest.mark.gpu
DTYPES = ["float32", "float16"]


@pytest.fixture(scope="module")
def device():
    """(xp, kernel set) of the GPU, or a skip that says what is missing."""
    if os.environ.get("KV_GPU_DRY_RUN") == "1":
        return np, K.ReferenceKernels(split=256)
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("CuPy is installed but sees no CUDA GPU")
    except Exception as e:  # ImportError, or a CUDA runtime without a driver
        pytest.skip(f"needs CuPy with a CUDA GPU ({type(e).__name__}: {e})")
    try:
        return cupy, kernel_set("cupy")
    except KernelSetMissing as e:
        pytest.skip(str(e))


# --------------------------------------------------------------------------- one kernel at a time


def kernel_inputs(name: str, dtype: str, split: int, rng):
    """(args, indices of the arguments the kernel writes) for one call, as NumPy arrays."""
    H, KV, hd, D, F, M, V = 32, 8, 128, 512, 384, 600, 1000
    r = lambda *shape, s=1.0: (rng.standard_normal(shape) * s).astype(dtype)  # noqa: E731
    f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    if name == "embed":
        return [r(V, D), np.array([V - 3]), np.empty((1, D), dtype)], [2]
    if name == "rmsnorm":
        return [r(1, D, s=3.0), r(D), 1e-5, np.empty((1, D), dtype)], [3]
    if name == "add_rmsnorm":
        return [r(1, D), r(1, D), r(D), 1e-5, np.empty((1, D), dtype)], [0, 4]
    if name == "rope_store":
        return [r(1, (H + 2 * KV) * hd), r(M, hd), r(M, hd), 517, r(KV, M, hd), r(KV, M, hd),
                np.empty((H, hd), dtype)], [4, 5, 6]
    if name == "attention_merge":
        C = K.n_chunks(M, split)
        return [f32(H, C, hd), f32(H, C), np.abs(f32(H, C)) + 1, C, np.empty((1, H * hd), dtype)], [4]
    if name == "swiglu":
        return [r(1, 2 * F, s=3.0), np.empty((1, F), dtype)], [1]
    if name == "matmul":
        return [r(1, D), r(D, V, s=D**-0.5), np.empty((1, V), dtype)], [2]
    if name == "argmax":
        return [r(1, V), np.zeros(1, np.int64)], [1]
    raise KeyError(name)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", [k for k in K.KERNELS if k != "attention_partial"])
def test_each_kernel_matches_its_reference(device, name, dtype):
    xp, kernels = device
    args, outputs = kernel_inputs(name, dtype, kernels.split, np.random.default_rng(0))
    on_gpu = [xp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    getattr(K.ReferenceKernels(kernels.split), name)(*args)
    getattr(kernels, name)(*on_gpu)
    for i in outputs:
        got, want = to_numpy(on_gpu[i]).astype(np.float64), args[i].astype(np.float64)
        scale = max(np.abs(want).max(), 1e-30)
        assert np.abs(got - want).max() / scale <= TOLERANCE[dtype], f"{name}: argument {i}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("start, stop", [(0, 1), (0, 17), (0, 4096), (0, 8192), (4000, 8191)])
def test_split_attention_matches_its_reference(device, dtype, start, stop):
    """Partial + merge over contexts from one position to 8192, across chunk boundaries."""
    xp, kernels = device
    rng = np.random.default_rng(stop)
    H, KV, hd, M = 32, 8, 128, 8192
    q = rng.standard_normal((H, hd)).astype(dtype)
    kc, vc = (rng.standard_normal((KV, M, hd)).astype(dtype) for _ in range(2))
    outs = []
    for ks, x in ((K.ReferenceKernels(kernels.split), np), (kernels, xp)):
        C = K.n_chunks(M, ks.split)
        acc, mx, sm = x.empty((H, C, hd), "float32"), x.empty((H, C), "float32"), x.empty((H, C), "float32")
        out = x.empty((1, H * hd), dtype)
        ks.attention_partial(x.asarray(q), x.asarray(kc), x.asarray(vc), start, stop, acc, mx, sm)
        ks.attention_merge(acc, mx, sm, K.n_chunks(stop - start, ks.split), out=out)
        outs.append(to_numpy(out).astype(np.float64))
    want, got = outs
    assert np.abs(got - want).max() / np.abs(want).max() <= TOLERANCE[dtype]


# --------------------------------------------------------------------------- the whole step


@pytest.fixture(scope="module")
def course():
    return load_course_model()[0]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 17])
def test_course_model_step_on_the_gpu(device, course, dtype, n):
    xp, kernels = device
    reference = as_dtype(course, dtype)
    ids = [int(t) for t in np.random.default_rng(n).integers(0, reference.config.vocab_size, n)]
    r = greedy_compare(reference, as_dtype(course, dtype, xp=xp), kernels, ids)
    assert r.worst <= TOLERANCE[dtype] and r.fused_tokens == r.engine_tokens


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("context", [1, 17, 4096, 8192])
def test_gqa_step_on_the_gpu_at_long_contexts(device, dtype, context):
    """Long contexts start from the same random K/V in both caches (no 8k-token prefill)."""
    xp, kernels = device
    reference = Transformer.random(gqa_config(dtype, max_seq_len=8192 + 64, n_kv_heads=2), seed=context)
    prompt_len = 1 if context > 17 else context
    ids = [int(t) for t in np.random.default_rng(context).integers(0, reference.config.vocab_size, prompt_len)]
    r = greedy_compare(reference, as_dtype(reference, dtype, xp=xp), kernels, ids,
                       random_context=context - prompt_len if context > 17 else 0)
    assert r.worst <= TOLERANCE[dtype] and r.fused_tokens == r.engine_tokens
