"""On a GPU (marker ``gpu``): the CUDA kernel set against the NumPy references, and the whole
fused step on the GPU against the NumPy engine over 32 greedy steps, at contexts 1, 17, 4096
and 8192, float32 within 1e-5 and float16 within 2e-2 (relative, on logits).

Skipped with the reason without CuPy + a CUDA GPU. ``KV_GPU_DRY_RUN=1`` runs these tests with
NumPy and the reference kernels standing in for CuPy and the CUDA ones, so the tests
themselves are exercised on a CPU before GPU time is spent on them.
"""
from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
from decode_checks import TOLERANCE, as_dtype, gqa_config, greedy_compare
from kernel_cases import SIMPLE, attention_case, check_kernel

from engine import Transformer, load_course_model
from engine.gpu import kernel_set
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
    return cupy, kernel_set("cupy")  # CuPy and a GPU are here: a kernel set that fails to load is a failure


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


def _report_flips(r) -> None:
    """A token the fused step chose differently at a near tie passes, and is reported (pytest's
    warnings summary, which gpu_check keeps in its file)."""
    if r.fused_tokens != r.engine_tokens:
        first = next(i for i, (a, b) in enumerate(zip(r.engine_tokens, r.fused_tokens)) if a != b)
        tie = next((t for t in r.near_ties if t["step"] == first), None)
        margin = f", top-two logit margin {tie['margin']:.3g} of {tie['scale']:.3g}" if tie else ""
        warnings.warn(f"greedy token flip at step {first}: engine {r.engine_tokens[first]}, fused "
                      f"{r.fused_tokens[first]}{margin}")


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
    _report_flips(r)
    assert r.worst <= TOLERANCE[dtype] and r.same_tokens()


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
    _report_flips(r)
    assert r.worst <= TOLERANCE[dtype] and r.same_tokens()


@pytest.mark.parametrize("dtype", DTYPES)
def test_graph_replay_decodes_what_eager_steps_decode(device, dtype):
    """Capture once, replay 32 times: the same greedy tokens and logits as 32 eager steps.
    (Dry run: the recording backend's stand-in streams and graphs, on the reference kernels.)"""
    xp, kernels = device
    if xp is np:
        from engine.gpu.recording import RecordingBackend, RecordingKernels

        rec = RecordingBackend(keep_log=False)
        xp, kernels = rec.xp, RecordingKernels(kernels, rec)
    from engine.gpu.fused_step import FusedDecoder

    model = as_dtype(Transformer.random(gqa_config(max_seq_len=96), seed=11), dtype, xp=xp)
    runs = []
    for graph in (False, True):
        decoder = FusedDecoder(model, model.new_cache(), kernels)
        decoder.feed(7)
        if graph:
            decoder.capture(greedy=True)
        tokens, logits = [], []
        for _ in range(32):
            if graph:
                decoder.replay()
            else:
                decoder.step(greedy=True)
            decoder.synchronize()
            tokens.append(int(decoder.token.get()[0]))
            logits.append(decoder.logits.get().astype(np.float32))
        runs.append((tokens, np.stack(logits)))
    assert runs[0][0] == runs[1][0]
    np.testing.assert_array_equal(runs[0][1], runs[1][1])  # the same kernels on the same data: bit-identical
