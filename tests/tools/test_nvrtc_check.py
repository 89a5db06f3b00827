"""tools/cuda_cpu/nvrtc_check: CUDA C compiled for sm_90 with NVRTC on a CPU-only machine, with
ptxas's register/spill report. The compile tests need the `cuda-check` extra (python3 dev.py test
installs it on Linux x86-64 and aarch64, where its wheels exist, so CI runs them) and skip without it."""
from __future__ import annotations

from pathlib import Path

import pytest

from tools.cuda_cpu import nvrtc_check as nc

KERNELS = Path(__file__).parent / 'cuda_cpu_kernels'
ENGINE_KERNELS = sorted(nc.KERNELS.glob('*.cu'))

# ptxas -v's report in the shape NVRTC 13 prints it (a kernel, a device function, a spilling kernel).
LOG = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'gemv_f16' for 'sm_90'
ptxas info    : Function properties for gemv_f16
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 34 registers, used 0 barriers
ptxas info    : Function properties for warp_sum
ptxas         .     8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Compiling entry function 'attn' for 'sm_90'
ptxas info    : Function properties for attn
ptxas         .     824 bytes stack frame, 1572 bytes spill stores, 1920 bytes spill loads
ptxas info    : Used 24 registers, used 1 barriers, 6208 bytes smem
ptxas info    : Compile time = 12.275 ms
"""


def test_parse_ptxas_reads_each_kernel_and_ignores_device_functions():
    got = nc.parse_ptxas(LOG, 'k.cu')
    assert [(r.kernel, r.registers, r.smem, r.stack, r.spill_stores, r.spill_loads) for r in got] == [
        ('gemv_f16', 34, 0, 0, 0, 0), ('attn', 24, 6208, 824, 1572, 1920)]
    assert [r.spills for r in got] == [False, True]
    lines = nc.table(got).splitlines()
    assert lines[0].split() == ['file', 'kernel', 'registers', 'smem', 'B', 'stack', 'B', 'spill', 'st', 'B',
                                'spill', 'ld', 'B']
    assert lines[3].split() == ['k.cu', 'attn', '24', '6208', '824', '1572', '1920']


@pytest.fixture(scope='module')
def nvrtc():
    try:
        nc._nvrtc()
        nc.cuda_include_dir()
    except nc.NvrtcMissing as e:
        pytest.skip(f'NVRTC wheels not installed (pip install ".[cuda-check]"): {e}')


def test_the_test_kernels_compile_for_sm_90_without_spills(nvrtc, capsys):
    files = sorted(KERNELS.glob('*.cu'))
    assert nc.main([str(f) for f in files]) == 0
    out = capsys.readouterr().out
    assert 'gemv_f16.cu     gemv_f16' in out
    reports, errors = nc.check(files)
    assert not errors
    assert {r.kernel for r in reports} >= {'gemv_f16', 'row_sum_shfl', 'add_rmsnorm', 'softmax_f4', 'sum_ok'}
    assert all(r.registers > 0 and not r.spills for r in reports)
    shfl = next(r for r in reports if r.kernel == 'row_sum_shfl')
    assert shfl.smem == 32 * 4                    # its __shared__ float partial[32]


def test_a_spill_fails_the_check(nvrtc, capsys):
    f = KERNELS / 'nvrtc' / 'many_live.cu'
    assert nc.main([str(f)]) == 0
    assert nc.main([str(f), '--maxrregcount=24']) == 1
    assert 'SPILL many_live.cu:many_live' in capsys.readouterr().err


def test_a_compile_error_fails_the_check_with_nvrtc_s_message(nvrtc, tmp_path, capsys):
    bad = tmp_path / 'bad.cu'
    bad.write_text('extern "C" __global__ void k(float* x)\n{\n    x[0] = INFINITY;\n}\n')
    assert nc.main([str(bad)]) == 1
    err = capsys.readouterr().err
    assert 'bad.cu(3): error: identifier "INFINITY" is undefined' in err


def test_the_engine_kernels_are_where_the_check_looks():
    assert {p.stem for p in ENGINE_KERNELS} >= {'embed', 'gemv', 'attention', 'argmax'}


@pytest.mark.parametrize('path', ENGINE_KERNELS, ids=[p.name for p in ENGINE_KERNELS])
def test_engine_kernels_compile_for_sm_90_without_spills(nvrtc, path):
    reports, errors = nc.check([path])
    assert not errors, errors[0]
    assert reports and not [r.kernel for r in reports if r.spills]
