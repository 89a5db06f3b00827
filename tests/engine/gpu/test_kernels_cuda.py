"""The CUDA C sources of engine/gpu/kernels/ on a CPU: the same .cu text, grids, blocks and
arguments as on a GPU, executed by the project's CPU execution of CUDA C (tools.cuda_cpu,
handed to CudaKernels as its module factory, where a GPU gets cupy.RawModule).

  * each kernel against kernels_ref.py, in forward, reverse and seeded thread orders;
  * the whole fused step against model.forward: the course model and a random GQA config,
    float32 within 1e-5 and float16 within 2e-2 (relative, on logits), the same greedy
    tokens over 32 steps; shorter runs in the reverse and seeded orders;
  * every launch of every step has the same arguments (the CUDA graph's precondition),
    recorded at the launch itself: grid, block, scalars and buffer addresses;
  * planted bugs in these very kernels are caught: a missing barrier, a barrier inside an
    if, an out-of-bounds access.

Sizes are small (a 2-core CI machine runs every simulated thread); the GPU tests
(test_gpu_kernels.py) repeat the kernel checks at Llama-3-8B's head sizes.
"""
from __future__ import annotations

import functools

import numpy as np
import pytest
from decode_checks import TOLERANCE, as_dtype, gqa_config, greedy_compare
from kernel_cases import LARGE, SIMPLE, SMALL, attention_case, check_kernel

from engine import Transformer, load_course_model
from engine.gpu import kernels_cuda
from engine.gpu.fused_step import FusedDecoder
from engine.gpu.kernels_cuda import CudaKernels, check_attention_shape
from engine.gpu.recording import RecordingBackend, launch_changes

DTYPES = ["float32", "float16"]
ORDERS = ["forward", "reverse", "seeded"]
SPLIT = 8  # small splits: short contexts cross split boundaries


@pytest.fixture(scope="module")
def cuda_cpu():
    from tools import cuda_cpu  # the project's own: an import error is a failure, not a skip

    return cuda_cpu


@functools.lru_cache(maxsize=None)
def _kernels(order: str, split: int, sources: tuple = ()) -> CudaKernels:
    from tools import cuda_cpu

    return CudaKernels(functools.partial(cuda_cpu.RawModule, order=order, seed=7), np, split=split,
                       name=f"cuda-cpu-{order}")


@pytest.fixture
def kernels(cuda_cpu):
    return lambda order="forward", split=SPLIT: _kernels(order, split)


# --------------------------------------------------------------------------- one kernel at a time


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", SIMPLE)
def test_each_kernel_matches_its_reference(kernels, name, dtype, order):
    check_kernel(kernels(order), np, name, dtype, np.random.default_rng(1), SMALL)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", SIMPLE)
def test_each_kernel_at_the_gpu_test_sizes(kernels, name, dtype):
    """32 query heads on 8 KV heads of 128, a 1000-token vocabulary (test_gpu_kernels' sizes)."""
    check_kernel(kernels(), np, name, dtype, np.random.default_rng(2), LARGE)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("K", [8, 1160, 4096])
def test_gemv_rows_long_enough_for_the_unrolled_loads(kernels, dtype, K):
    """K = 4096 (Llama's width) runs the four-loads-in-flight loop; 1160 mixes it with the tail."""
    rng = np.random.default_rng(K)
    x, w = rng.standard_normal((1, K)).astype(dtype), (rng.standard_normal((K, 37)) * K**-0.5).astype(dtype)
    y = np.empty((1, 37), dtype)
    ks = kernels()
    ks.matmul(x, ks.prepare_weight(w), out=y)
    want = x.astype(np.float64) @ w.astype(np.float64)
    assert np.abs(y - want).max() / np.abs(want).max() <= TOLERANCE[dtype]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("start, stop", [(0, 1), (0, 8), (0, 21), (11, 40)])
def test_split_attention_matches_its_reference(kernels, dtype, order, start, stop):
    """One position; one full split; a short last split; a window that starts mid-split."""
    err = attention_case(kernels(order), np, dtype, start, stop, np.random.default_rng(stop), H=8, KV=2,
                         hd=32, M=40)
    assert err <= TOLERANCE[dtype]


@pytest.mark.parametrize("H, KV, hd", [(4, 1, 16), (8, 8, 64), (6, 3, 8)])
def test_attention_over_other_head_shapes(kernels, H, KV, hd):
    """G = 4, 1 and 2 query heads per KV head; 1 to 8 lanes per K row."""
    for dtype in DTYPES:
        err = attention_case(kernels(), np, dtype, 0, 19, np.random.default_rng(hd), H=H, KV=KV, hd=hd, M=24)
        assert err <= TOLERANCE[dtype], dtype


def test_more_splits_than_the_merge_has_warps(kernels):
    """Splits of 2 over 37 positions: 19 splits, so each of the merge's 8 warps takes several."""
    for order in ORDERS:
        err = attention_case(kernels(order, split=2), np, "float32", 0, 37, np.random.default_rng(2), H=4, KV=2,
                             hd=16, M=40)
        assert err <= TOLERANCE["float32"], order


@pytest.mark.parametrize("dtype", DTYPES)
def test_attention_at_the_gpu_shape_and_split(kernels, dtype):
    """Llama-3-8B's heads (32 query heads on 8 KV heads of 128) with the GPU's default split,
    over 300 positions: three splits, the last one short."""
    err = attention_case(kernels(split=kernels_cuda.DEFAULT_SPLIT), np, dtype, 0, 300, np.random.default_rng(9),
                         H=32, KV=8, hd=128, M=384)
    assert err <= TOLERANCE[dtype]


# --------------------------------------------------------------------------- the whole step


def prompt(n: int, vocab: int) -> list[int]:
    return [int(t) for t in np.random.default_rng(n).integers(0, vocab, n)]


@pytest.fixture(scope="module")
def course():
    return load_course_model()[0]


@pytest.mark.parametrize("dtype", DTYPES)
def test_course_model_32_greedy_steps(kernels, course, dtype):
    model = as_dtype(course, dtype)
    r = greedy_compare(model, model, kernels(), prompt(5, model.config.vocab_size), steps=32)
    assert r.worst <= TOLERANCE[dtype]
    assert r.same_tokens()


@pytest.mark.parametrize("dtype", DTYPES)
def test_random_gqa_config_32_greedy_steps(kernels, dtype):
    """From a 3-token prompt across splits 0 .. 4 of 8 positions (G = 4)."""
    model = Transformer.random(gqa_config(dtype, max_seq_len=40), seed=4)
    r = greedy_compare(model, model, kernels(), prompt(3, model.config.vocab_size), steps=32)
    assert r.worst <= TOLERANCE[dtype]
    assert r.same_tokens()


@pytest.mark.parametrize("order", ["reverse", "seeded"])
def test_the_step_in_other_thread_orders(kernels, order):
    model = Transformer.random(gqa_config("float16", max_seq_len=24, n_layers=2), seed=4)
    r = greedy_compare(model, model, kernels(order), prompt(6, model.config.vocab_size), steps=6)
    assert r.worst <= TOLERANCE["float16"] and r.same_tokens()


def test_sliding_window_step(kernels):
    model = Transformer.random(gqa_config(max_seq_len=24, n_layers=2, sliding_window=5), seed=6)
    r = greedy_compare(model, model, kernels(), prompt(9, model.config.vocab_size), steps=6)
    assert r.worst <= TOLERANCE["float32"] and r.same_tokens()


def test_every_launch_repeats_its_arguments(cuda_cpu):
    """Recorded at the launch (grid, block, scalars, buffer addresses), across split boundaries."""
    rec = RecordingBackend()
    ks = CudaKernels(functools.partial(cuda_cpu.RawModule, order="forward"), np, split=2, on_launch=rec.on_launch)
    model = Transformer.random(gqa_config(n_layers=2, max_seq_len=12, vocab_size=64), seed=2)
    decoder = FusedDecoder(model, model.new_cache(), ks)
    phases = [f"step {i}" for i in range(5)]
    for phase in phases:  # contexts 1 .. 5: one to three splits of 2
        with rec.phase(phase):
            decoder.step(greedy=True)
    assert launch_changes(rec.log, phases) == []
    launches = rec.events("step 0", "launch")
    assert len(launches) == 1 + 5 * 2 + 1  # embed, 5 per layer, the LM head with its argmax
    grids = {e.name: e.args[0] for e in launches}
    assert grids["attention_f32"] == (2, 6)  # KV heads x splits of the whole capacity (12 / 2)
    assert int(decoder.length[0]) == decoder.cache.length == 5  # the device counted the steps


# --------------------------------------------------------------------------- planted bugs


def planted(module: str, old: str, new: str, cuda_cpu, order: str = "forward") -> CudaKernels:
    """The kernel set with one source edited (the edit must apply: the bug is really planted)."""
    text = kernels_cuda.source(module)
    assert text.count(old) >= 1, f"{module}: {old!r} not found"
    bad = text.replace(old, new, 1)

    def factory(code, options=()):
        return cuda_cpu.RawModule(code=bad if code == text else code, options=options, order=order, seed=3)


    return CudaKernels(factory, np, split=SPLIT)


def test_a_missing_barrier_is_caught(cuda_cpu):
    """attention without the barrier between the warps adding their P.V sums into shared
    memory one after the other: a warp copies the split's sums out before the others have
    added theirs (and their read-modify-writes race). Some thread order must show it."""
    caught = []
    barrier = "part[g * HD + piece * E + e] += a[g][e];\n        __syncthreads();"
    for order in ORDERS:
        bad = planted("attention", barrier, "part[g * HD + piece * E + e] += a[g][e];", cuda_cpu, order=order)
        err = attention_case(bad, np, "float32", 0, 21, np.random.default_rng(5), H=8, KV=2, hd=32, M=40)
        if not err <= TOLERANCE["float32"]:  # NaN counts as caught
            caught.append(order)
    assert caught, "no thread order exposed the missing barrier"


def test_a_barrier_inside_an_if_is_caught(cuda_cpu):
    bad = planted("attention", "part[i] = 0.f;\n    __syncthreads();",
                  "part[i] = 0.f;\n    if (tid < 64) __syncthreads();", cuda_cpu)
    with pytest.raises(Exception, match="(?i)barrier|syncthreads|diverg|deadlock"):
        attention_case(bad, np, "float32", 0, 21, np.random.default_rng(0), H=8, KV=2, hd=32, M=40)


def test_an_out_of_bounds_access_is_caught(cuda_cpu):
    """embed without its guard: the block's 256 threads copy 256 values into out [1, 64]."""
    bad = planted("embed", "if (i < D) out[i]", "out[i]", cuda_cpu)
    with pytest.raises(Exception, match="(?i)bound|range|overflow|outside"):
        check_kernel(bad, np, "embed", "float32", np.random.default_rng(0), SMALL)


# --------------------------------------------------------------------------- shapes the kernels refuse


@pytest.mark.parametrize("G, hd, split, dtype, words", [
    (4, 24, 256, "float16", "power of two"), (16, 128, 256, "float16", "query heads"),
    (4, 128, 2048, "float16", "scores"), (4, 256, 256, "float32", "power of two"),
])
def test_shapes_the_attention_kernel_cannot_take_are_refused(G, hd, split, dtype, words):
    with pytest.raises(ValueError, match=words):
        check_attention_shape(G, hd, split, dtype)


@pytest.mark.parametrize("G, hd, split", [(4, 128, 256), (1, 64, 1), (8, 256, 512)])
def test_real_shapes_pass_the_attention_bounds(G, hd, split):
    check_attention_shape(G, hd, split, "float16")  # Llama-3-8B; GPT-2 small; 8 heads of 256


def test_a_gemv_needs_16_byte_rows():
    ks = CudaKernels(lambda code, options: None, np)
    with pytest.raises(ValueError, match="multiple of 8"):
        ks.prepare_weight(np.zeros((12, 5), np.float16))
    assert ks.prepare_weight(np.zeros((16, 5), np.float16)).shape == (5, 16)
