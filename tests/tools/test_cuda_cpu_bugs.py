"""tools/cuda_cpu finds the bugs a GPU punishes: planted ones (tests/tools/cuda_cpu_kernels/bugs.cu)
must be reported with a clear error, or give a result that the thread orders or NaN give away;
wrong argument types are refused at the call, as a strict CuPy caller must get them right."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(shutil.which('g++') is None, reason='tools.cuda_cpu needs g++ to build kernels')

from tools.cuda_cpu import ORDERS, CompileError, CudaCpuError, RawModule  # noqa: E402

BUGS = Path(__file__).parent / 'cuda_cpu_kernels' / 'bugs.cu'
PLUMBING = BUGS.parent / 'plumbing.cu'
X = np.arange(1, 1001, dtype=np.float32)       # sum 500500, exact in float32


def run(name: str, order: str = 'forward', args=None, shared_mem: int = 0, **kw) -> float:
    out = np.zeros(1, np.float32)
    mod = RawModule(path=BUGS, order=order, **kw)
    mod.get_function(name)((1,), (128,), args or (X, np.int32(X.size), out), shared_mem=shared_mem)
    return float(out[0])


def test_the_correct_kernel_passes_in_every_order():
    assert {run('sum_ok', o) for o in ORDERS} == {float(X.sum())}


@pytest.mark.parametrize('name', ['sum_missing_barrier', 'sum_missing_first_barrier'])
def test_a_missing_barrier_gives_a_wrong_result_in_some_order(name):
    results = {o: run(name, o) for o in ORDERS}
    assert any(r != X.sum() for r in results.values()), results


def test_reading_shared_memory_nobody_wrote_gives_nan():
    assert all(np.isnan(run('sum_uninit_shared', o)) for o in ORDERS)


@pytest.mark.parametrize('name,message', [
    ('sum_barrier_in_if', r'__syncthreads at bugs\.cu:\d+ is reached by 64 of 128 threads'),
    ('sum_barrier_if_else', r'different __syncthreads \(bugs\.cu:\d+ and bugs\.cu:\d+\)'),
    ('sum_divergent_shuffle', r'__shfl_xor_sync at bugs\.cu:\d+ reads lane \d+, which .* has exited'),
    ('sum_assert', r'assert\(n < 0\) failed at bugs\.cu:\d+'),
])
def test_divergent_barriers_and_collectives_are_errors_not_hangs(name, message):
    for order in ORDERS:
        with pytest.raises(CudaCpuError, match=message) as e:
            run(name, order)
        assert repr(name) in str(e.value)


@pytest.mark.parametrize('name,order,message', [
    ('sum_oob_write', 'forward', r"out-of-bounds write to parameter 2 `float\* out`: byte 4 of a 4-byte array"),
    ('sum_oob_read', 'forward', r"out-of-bounds read of parameter 0 `const float\* x`: byte offset 4000 of a 4000-byte"),
    ('sum_oob_read', 'seeded', r"out-of-bounds read of parameter 0"),
    ('sum_negative_index', 'reverse', r"out-of-bounds read of parameter 0 `const float\* x`: byte offset -4 "),
    ('sum_writes_input', 'forward', r"write through a const pointer into parameter 0"),
])
def test_out_of_bounds_and_const_violations_name_the_parameter(name, order, message):
    with pytest.raises(CudaCpuError, match=message) as e:
        run(name, order)
    assert repr(name) in str(e.value)
    if 'read' in name or 'input' in name:       # a fault knows who; a changed canary is seen after the launch
        assert 'block (0,0,0) thread (0,0,0)' in str(e.value)


def test_a_misaligned_vector_load_is_an_error_as_on_a_gpu():
    with pytest.raises(CudaCpuError, match=r"misaligned __ldg of a 16-byte value at an address 4 bytes past a "
                                           r"multiple of 16 \(a GPU stops with cudaErrorMisalignedAddress\)") as e:
        run('sum_misaligned_vector_load')
    assert "'sum_misaligned_vector_load'" in str(e.value) and 'thread (0,0,0)' in str(e.value)


def test_reads_on_the_other_side_of_an_array_give_nan():
    """One guard page per side can't touch both ends: the order that doesn't fault reads NaN."""
    assert np.isnan(run('sum_oob_read', 'reverse'))
    assert np.isnan(run('sum_negative_index', 'forward'))


def test_dynamic_shared_memory_past_the_launch_size_faults():
    with pytest.raises(CudaCpuError, match=r'dynamic shared memory \(byte \d+ of a 512-byte'):
        run('sum_dyn_shared_oob', shared_mem=512)


def test_a_spinning_thread_hits_the_cpu_time_limit_instead_of_hanging():
    with pytest.raises(CudaCpuError, match='still running after 0.3 s of CPU time'):
        run('sum_spin_wait', cpu_time_limit=0.3)


def test_a_kernel_writing_into_a_read_only_array_is_reported():
    y = np.zeros(4, np.float32)
    y.flags.writeable = False
    with pytest.raises(CudaCpuError, match=r'wrote into parameter 0 `float\* y`, whose NumPy array is read-only'):
        RawModule(path=PLUMBING).get_function('fill')((1,), (4,), (y,))


# ------------------------------------------------------------------ argument checks at the call

@pytest.mark.parametrize('args,message', [
    ((X, 1000, np.zeros(1, np.float32)), r'parameter 1 `int n`: needs np\.int32, got Python int \(CuPy would pass'),
    ((X, np.int64(1000), np.zeros(1, np.float32)), r'parameter 1 `int n`: needs np\.int32, got NumPy int64'),
    ((X, np.float32(1000), np.zeros(1, np.float32)), r'needs np\.int32, got NumPy float32'),
    ((X.astype(np.float64), np.int32(1000), np.zeros(1, np.float32)),
     r'parameter 0 `const float\* x`: array dtype float64, the kernel reads float32'),
    ((X, np.int32(1000), np.zeros(1, np.float16)), r'parameter 2 `float\* out`: array dtype float16'),
    ((X[::2], np.int32(500), np.zeros(1, np.float32)), r'not C-contiguous'),
    ((list(X), np.int32(1000), np.zeros(1, np.float32)), r'needs a NumPy array .*got list'),
    ((X, np.int32(1000)), r"'sum_ok' takes 3 arguments \(const float\* x, int n, float\* out\), got 2"),
])
def test_wrong_argument_types_are_type_errors_naming_kernel_and_parameter(args, message):
    f = RawModule(path=BUGS).get_function('sum_ok')
    with pytest.raises(TypeError, match=message) as e:
        f((1,), (128,), args)
    assert "'sum_ok'" in str(e.value)


def test_each_scalar_type_takes_its_own_numpy_scalar():
    f = RawModule(path=PLUMBING).get_function('scalars')
    out = np.zeros(6, np.float32)
    f((1,), (1,), (out, np.uint32(7), np.int64(-3), np.float64(2.5), np.float16(0.5), np.uint64(9), np.bool_(True)))
    np.testing.assert_array_equal(out, [7, -3, 2.5, 0.5, 9, 1])
    with pytest.raises(TypeError, match=r'parameter 1 `unsigned a`: needs np\.uint32, got NumPy int32'):
        f((1,), (1,), (out, np.int32(7), np.int64(-3), np.float64(2.5), np.float16(0.5), np.uint64(9), np.bool_(True)))


@pytest.mark.parametrize('grid,block,shared,message', [
    ((1,), (2048,), 0, r'2048 threads; a CUDA block holds at most 1024'),
    ((1,), (8, 8, 128), 0, r'at most 1024'),
    ((1,), (128,), 64 * 1024, r'shared_mem=65536 bytes is over 49152 .*max_dynamic_shared_size_bytes'),
    ((0,), (128,), 0, r'grid \(0,\) has a dimension < 1'),
    ((1, 2, 3, 4), (128,), 0, r'grid must be an int or a tuple of 1 to 3 ints'),
])
def test_launch_configurations_a_gpu_refuses_are_refused(grid, block, shared, message):
    f = RawModule(path=BUGS).get_function('sum_ok')
    with pytest.raises((CudaCpuError, TypeError, ValueError), match=message):
        f(grid, block, (X, np.int32(X.size), np.zeros(1, np.float32)), shared_mem=shared)


def test_more_than_48_kib_of_dynamic_shared_memory_needs_the_opt_in():
    f = RawModule(path=BUGS).get_function('sum_dyn_shared_oob')
    f.max_dynamic_shared_size_bytes = 100 * 1024
    out = np.zeros(1, np.float32)
    f((1,), (128,), (X, np.int32(X.size), out), shared_mem=64 * 1024)     # buf[NT + i] fits now
    assert np.isnan(out[0])                                                 # buf[0]: never written


def test_lookup_and_build_errors_are_clear():
    mod = RawModule(path=BUGS)
    with pytest.raises(AttributeError, match=r"no kernel named 'nope' in bugs\.cu; kernels: sum_ok, "):
        mod.get_function('nope')
    with pytest.raises(AttributeError, match=r'not extern "C"'):
        RawModule(path=PLUMBING).get_function('not_exported')
    with pytest.raises(CompileError, match=r"broken\.cu:2.*undeclared"):
        RawModule(code='extern "C" __global__ void k(float* x)\n{ x[0] = undeclared; }',
                  source_name='broken.cu').compile()
    with pytest.raises(ValueError, match=r"option '--bogus' has no meaning"):
        RawModule(code='', options=('--bogus',)).compile()
    with pytest.raises(ValueError, match='order must be one of forward, reverse, seeded'):
        RawModule(code='', order='backwards')


@pytest.mark.parametrize('body,message', [
    ('x[0] = INFINITY;', 'INFINITY'),
    ('x[0] = NAN;', 'NAN'),
    ('int64_t i = 1; x[0] = (float)i;', 'poisoned "int64_t"'),
    ('x[0] = std::max(x[0], 1.f);', r'kernel\.cu:1: std::max: NVRTC has no C\+\+ standard library'),
])
def test_names_nvrtc_lacks_fail_here_too(body, message):
    """NVRTC has no <math.h>, <stdint.h> or std::: a kernel using them must fail on the CPU as it
    would for the GPU (checked with NVRTC 13.5), not pass here and break there."""
    with pytest.raises(CompileError, match=message):
        RawModule(code='extern "C" __global__ void k(float* x) { ' + body + ' }').compile()


def test_cudart_inf_f_from_math_constants_is_the_way_to_write_infinity():
    y = np.zeros(1, np.float32)
    RawModule(path=PLUMBING).get_function('minus_infinity')((1,), (1,), (y,))
    assert y[0] == -np.inf


def test_a_full_mask_shuffle_in_a_partial_warp_reads_poison():
    """48 threads: lanes 16..31 of the second warp don't exist, so xor-shuffles there read an
    undefined value on a GPU; here they read NaN, and the sum says so."""
    x = np.ones((1, 96), np.float32)
    out = np.zeros(1, np.float32)
    reduce = BUGS.parent / 'reduce.cu'
    mod = RawModule(code=reduce.read_text(), source_name=reduce.name)     # as test_cuda_cpu builds it: one library
    mod.get_function('row_sum_shfl')((1,), (48,), (x, out, np.int32(96)))
    assert np.isnan(out[0])
    mod.get_function('row_sum_shfl')((1,), (64,), (x, out, np.int32(96)))
    assert out[0] == 96


def test_a_local_array_too_large_for_the_stack_is_reported():
    y = np.zeros(4, np.float32)
    with pytest.raises(CudaCpuError, match='stack overflow of a CUDA thread'):
        RawModule(path=PLUMBING).get_function('big_local')((1,), (4,), (y, np.int32(65536)))
    RawModule(path=PLUMBING, stack_kb=512).get_function('big_local')((1,), (4,), (y, np.int32(65536)))
    assert (y == 65535).all()
