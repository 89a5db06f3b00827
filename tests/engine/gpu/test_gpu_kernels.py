"""On a GPU (marker ``gpu``): the CUDA kernel set against the NumPy references, and the whole
fused step on the GPU against the NumPy engine over 32 greedy steps, at contexts 1, 17, 4096
and 8192, float32 within 1e-5 and float16 within 2e-2 (relative, on logits).

Skipped with the reason without CuPy + a CUDA GPU. ``KV_GPU_DRY_RUN=1`` runs these tests with
NumPy and the reference kernels standing in for CuPy and the CUDA ones, so the tests
themselves are exercised on a CPU before GPU time is spent on them.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from decode_checks import TOLERANCE, as_dtype, gqa_config, greedy_compare
from kernel_cases import SIMPLE, attention_case, check_kernel

from engine import Transformer, load_course_model
from engine.gpu import KernelSetMissing, kernel_set
from engine.gpu.kernels_ref import ReferenceKernels

pytestmark = pytest.mark.gpu
DTYPES = ["float32", "float16"]


@pytest.fixture(scope="module")
def device():
    """(xp, kernel set) of the GPU, or a skip that says what is missing."""
    if os.environ.get("KV_GPU_DRY_RUN") == "1":
        return np, ReferenceKernels(split=256)
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


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", SIMPLE)
def test_each_kernel_matches_its_reference(device, name, dtype):
    xp, kernels = device
    check_kernel(kernels, xp, name, dtype, np.random.default_rng(0))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("start, stop", [(0, 1), (0, 17), (0, 4096), (0, 8192), (4000, 8191)])
def test_split_attention_matches_its_reference(device, dtype, start, stop):
    """Partial + merge over contexts from one position to 8192, across split boundaries."""
    xp, kernels = device
    assert attention_case(kernels, xp, dtype, start, stop, np.random.default_rng(stop)) <= TOLERANCE[dtype]


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
