"""tools/cuda_cpu runs CUDA C on the CPU: small kernels of our own (tests/tools/cuda_cpu_kernels)
checked against NumPy in every thread order, plus the launch plumbing (aliasing, grids, speed)."""
from __future__ import annotations

import shutil
import time
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(shutil.which('g++') is None, reason='tools.cuda_cpu needs g++ to build kernels')

from tools.cuda_cpu import ORDERS, CudaCpuError, RawModule  # noqa: E402

KERNELS = Path(__file__).parent / 'cuda_cpu_kernels'
F16, F32 = np.float16, np.float32


def module(name: str, order: str, options=(), seed: int = 0) -> RawModule:
    """A module from the .cu text, as the kernels pass it (code=, like cupy.RawModule)."""
    return RawModule(code=(KERNELS / name).read_text(), options=options, order=order, seed=seed,
                     source_name=name)


@pytest.fixture(params=list(ORDERS))
def order(request) -> str:
    return request.param


@pytest.mark.parametrize('threads', [32, 96, 256, 1024])
def test_row_sum_with_shuffles_and_static_shared(order, threads):
    rng = np.random.default_rng(threads)
    x = rng.standard_normal((5, 1000)).astype(F32)
    out = np.full(5, np.nan, F32)
    module('reduce.cu', order).get_function('row_sum_shfl')((5,), (threads,), (x, out, np.int32(1000)))
    np.testing.assert_allclose(out, x.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize('threads', [64, 256])
def test_row_sum_tree_in_dynamic_shared_memory(order, threads):
    rng = np.random.default_rng(threads)
    x = rng.standard_normal((7, 333)).astype(F32)
    out = np.zeros(7, F32)
    f = module('reduce.cu', order).get_function('row_sum_tree')
    f((7,), (threads,), (x, out, np.int32(333)), shared_mem=threads * 4)
    np.testing.assert_allclose(out, x.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-4)


def test_row_sum_tree_reads_nan_when_shared_memory_is_too_small(order):
    """Dynamic shared memory starts as NaN: half the buffer missing is a fault or a NaN, never a
    plausible number."""
    x = np.ones((1, 64), F32)
    out = np.zeros(1, F32)
    f = module('reduce.cu', order).get_function('row_sum_tree')
    with pytest.raises(CudaCpuError, match='dynamic shared memory'):
        f((1,), (64,), (x, out, np.int32(64)), shared_mem=32 * 4)


def test_row_argmax_with_ballot_finds_the_first_maximum(order):
    rng = np.random.default_rng(3)
    x = rng.integers(0, 5, (6, 77)).astype(F32)      # many ties: the first index must win
    out = np.full(6, -1, np.int32)
    module('reduce.cu', order).get_function('row_argmax_warp')((6,), (32,), (x, out, np.int32(77)))
    np.testing.assert_array_equal(out, x.argmax(axis=1))


@pytest.mark.parametrize('m,k', [(64, 256), (200, 1024), (33, 8)])
def test_gemv_f16_with_128_bit_loads(order, m, k):
    rng = np.random.default_rng(m)
    W = (rng.standard_normal((m, k)) / np.sqrt(k)).astype(F16)
    x = rng.standard_normal(k).astype(F16)
    y = np.zeros(m, F16)
    blocks = -(-m * 32 // 256)
    module('gemv_f16.cu', order).get_function('gemv_f16')((blocks,), (256,), (W, x, y, np.int32(m), np.int32(k)))
    want = (W.astype(np.float64) @ x.astype(np.float64)).astype(F16)
    np.testing.assert_allclose(y.astype(F32), want.astype(F32), rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize('threads', [64, 128])
def test_add_rmsnorm_updates_the_residual_in_place(order, threads):
    rng = np.random.default_rng(threads)
    x = rng.standard_normal((3, 192)).astype(F16)
    delta = rng.standard_normal((3, 192)).astype(F16)
    w = rng.standard_normal(192).astype(F16)
    out = np.zeros_like(x)
    x0 = x.copy()
    mod = module('rmsnorm_f16.cu', order, options=(f'-DTHREADS={threads}',))
    mod.get_function('add_rmsnorm')((3,), (threads,), (x, delta, w, np.float32(1e-5), out, np.int32(192)))
    new_x = (x0.astype(F32) + delta.astype(F32)).astype(F16)    # one fp16 rounding, as __hadd
    np.testing.assert_array_equal(x, new_x)
    xf = new_x.astype(np.float64)
    want = xf / np.sqrt((xf * xf).mean(axis=1, keepdims=True) + 1e-5) * w.astype(np.float64)
    np.testing.assert_allclose(out.astype(F32), want, rtol=2e-3, atol=2e-3)


def test_launch_bounds_are_enforced():
    mod = module('rmsnorm_f16.cu', 'forward', options=('-DTHREADS=64',))
    x = np.zeros((1, 64), F16)
    with pytest.raises(CudaCpuError, match=r'__launch_bounds__\(64\)'):
        mod.get_function('add_rmsnorm')((1,), (128,), (x, x.copy(), x[0].copy(), np.float32(1e-5), x.copy(),
                                                        np.int32(64)))


def test_float_to_half_rounds_to_nearest_even():
    """__float2half against NumPy's float16 cast, on ties, subnormals, overflow and NaN."""
    one_ulp = np.float32(2.0 ** -10)
    ties = np.array([1 + one_ulp / 2, 1 + 3 * one_ulp / 2, 2049, 2051, -1 - one_ulp / 2], F32)
    special = np.array([6e-8, 3e-8, 2.9e-8, 1e-7, 6.1e-5, 65504, 65520, 65519.99, 1e6, -1e6, np.inf, -0.0], F32)
    rng = np.random.default_rng(0)
    x = np.concatenate([ties, special, rng.standard_normal(200).astype(F32) * 100,
                        (rng.standard_normal(100) * 1e-6).astype(F32), [np.nan]]).astype(F32)
    n = x.size
    h = np.zeros(n, F16)
    back = np.zeros(n, F32)
    sum2 = np.zeros(n // 2 * 2, F16)
    module('misc.cu', 'forward').get_function('half_round')((-(-n // 64),), (64,), (x, h, back, sum2, np.int32(n)))
    with np.errstate(over='ignore'):
        want = x.astype(F16)
        pairs = x[: n // 2 * 2].astype(F16).astype(F32) + F32(1)
    np.testing.assert_array_equal(h.view(np.uint16)[:-1], want.view(np.uint16)[:-1])
    assert np.isnan(h[-1])
    np.testing.assert_array_equal(back[:-1], want.astype(F32)[:-1])
    np.testing.assert_array_equal(sum2[:-2], pairs.astype(F16)[:-2])


def test_histogram_with_atomics_on_a_2d_grid(order):
    rng = np.random.default_rng(1)
    rows, n, bins = 3, 1000, 16
    v = rng.integers(0, bins, (rows, n)).astype(np.int32)
    counts = np.zeros((rows, bins), np.uint32)
    module('misc.cu', order).get_function('histogram')((-(-n // 128), rows), (128,),
                                                       (v, counts, np.int32(n), np.int32(bins)))
    want = np.stack([np.bincount(r, minlength=bins) for r in v])
    np.testing.assert_array_equal(counts, want)


def test_block_scan_with_shfl_up_and_syncthreads_count(order):
    rng = np.random.default_rng(2)
    x = rng.integers(-3, 4, (4, 256)).astype(np.int32)
    y = np.zeros_like(x)
    npos = np.zeros(4, np.int32)
    module('misc.cu', order).get_function('block_scan')((4,), (256,), (x, y, npos))
    np.testing.assert_array_equal(y, np.cumsum(x, axis=1))
    np.testing.assert_array_equal(npos, (x > 0).sum(axis=1))


def test_softmax_with_float4_loads(order):
    rng = np.random.default_rng(4)
    x = (rng.standard_normal((3, 512)) * 4).astype(F32)
    y = np.zeros_like(x)
    module('misc.cu', order).get_function('softmax_f4')((3,), (128,), (x, y, np.int32(128)))
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(y, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize('grid,block', [((2, 3, 4), (4, 2, 3)), ((5,), (33,)), ((1, 1, 2), (1, 64))])
def test_builtin_indices_cover_3d_grids_and_blocks(order, grid, block):
    g3 = tuple(grid) + (1,) * (3 - len(grid))
    b3 = tuple(block) + (1,) * (3 - len(block))
    nb, nt = int(np.prod(g3)), int(np.prod(b3))
    out = np.full((nb, nt, 8), -1, np.int32)
    module('misc.cu', order).get_function('indices')(grid, block, (out,))
    bz, by, bx = np.meshgrid(*(np.arange(d) for d in g3[::-1]), indexing='ij')
    tz, ty, tx = np.meshgrid(*(np.arange(d) for d in b3[::-1]), indexing='ij')
    np.testing.assert_array_equal(out[:, 0, 0], bx.ravel())
    np.testing.assert_array_equal(out[:, 0, 1], by.ravel())
    np.testing.assert_array_equal(out[:, 0, 2], bz.ravel())
    np.testing.assert_array_equal(out[0, :, 3], tx.ravel())
    np.testing.assert_array_equal(out[0, :, 4], ty.ravel())
    np.testing.assert_array_equal(out[0, :, 5], tz.ravel())
    assert (out[:, :, 6] == nt).all() and (out[:, :, 7] == nb).all()


def test_arguments_that_share_memory_alias_in_the_kernel():
    f = module('plumbing.cu', 'forward').get_function('alias_probe')
    buf = np.array([1, 2, 3, 4], F32)
    c = np.zeros(2, F32)
    f((1,), (1,), (buf, buf, c))
    np.testing.assert_array_equal(c, [5, 2])
    buf = np.array([1, 2, 3, 4], F32)
    f((1,), (1,), (buf[1:], buf, c))        # b = buf, a = buf + 1: overlapping views
    np.testing.assert_array_equal(c, [1, 5])
    np.testing.assert_array_equal(buf, [1, 5, 3, 4])
    other = np.array([7, 8], F32)
    f((1,), (1,), (buf, other, c))          # no sharing: b unchanged
    np.testing.assert_array_equal(c, [7, 8])


def test_a_module_keeps_working_after_a_failed_launch(order):
    mod = RawModule(path=KERNELS / 'bugs.cu', order=order)
    x = np.arange(1, 201, dtype=F32)
    out = np.zeros(1, F32)
    for bad in ('sum_barrier_in_if', 'sum_oob_read', 'sum_writes_input', 'sum_assert', 'sum_negative_index'):
        try:
            mod.get_function(bad)((1,), (128,), (x, np.int32(x.size), out))
        except CudaCpuError:
            pass
        mod.get_function('sum_ok')((1,), (128,), (x, np.int32(x.size), out))
        assert out[0] == x.sum()


def test_seeded_order_is_reproducible_and_depends_on_the_seed():
    """The same seed gives the same schedule (a failing test can be rerun); different seeds
    give different ones (the race in sum_missing_barrier shows different wrong sums)."""
    x = np.arange(1, 1001, dtype=F32)

    def run(seed):
        out = np.zeros(1, F32)
        RawModule(path=KERNELS / 'bugs.cu', order='seeded', seed=seed).get_function('sum_missing_barrier')(
            (1,), (128,), (x, np.int32(x.size), out))
        return float(out[0])

    assert run(1) == run(1)
    assert len({run(s) for s in range(6)}) > 1


def test_a_launch_of_64_blocks_of_256_threads_takes_milliseconds():
    """The decode step's launches must stay cheap: 64 x 256 threads, 9 barriers and shuffles."""
    x = np.random.default_rng(0).standard_normal((64, 256)).astype(F32)
    out = np.zeros(64, F32)
    mod = module('reduce.cu', 'seeded')
    shfl, tree = mod.get_function('row_sum_shfl'), mod.get_function('row_sum_tree')
    shfl((64,), (256,), (x, out, np.int32(256)))
    best = np.inf
    for _ in range(5):
        t = time.perf_counter()
        shfl((64,), (256,), (x, out, np.int32(256)))
        tree((64,), (256,), (x, out, np.int32(256)), shared_mem=1024)
        best = min(best, time.perf_counter() - t)
    assert best < 0.25, f'two launches of 64 x 256 threads took {best * 1e3:.0f} ms'


def test_included_headers_are_rewritten_and_part_of_the_cache_key(tmp_path, monkeypatch):
    """A quoted #include found through -I is compiled with its `extern __shared__` rewritten,
    and editing it rebuilds the library (it is part of the cache key)."""
    monkeypatch.setenv('KV_CUDA_CPU_CACHE', str(tmp_path / 'cache'))
    x = np.arange(16, dtype=F32).reshape(2, 8)
    y = np.zeros_like(x)
    src = (KERNELS / 'uses_header.cu').read_text()
    RawModule(code=src, options=(f'-I{KERNELS}',)).get_function('block_totals')((2,), (8,), (x, y), shared_mem=32)
    np.testing.assert_array_equal(y, np.repeat(x.sum(axis=1, keepdims=True), 8, axis=1))
    inc = tmp_path / 'inc'
    inc.mkdir()
    header = (KERNELS / 'block_sum.cuh').read_text()
    (inc / 'block_sum.cuh').write_text(header)
    RawModule(code=src, options=(f'-I{inc}',)).get_function('block_totals')((2,), (8,), (x, y), shared_mem=32)
    np.testing.assert_array_equal(y[:, 0], x.sum(axis=1))
    (inc / 'block_sum.cuh').write_text(header.replace('return t;', 'return 2.f * t;'))
    RawModule(code=src, options=(f'-I{inc}',)).get_function('block_totals')((2,), (8,), (x, y), shared_mem=32)
    np.testing.assert_array_equal(y[:, 0], 2 * x.sum(axis=1))
