"""The CUDA kernel set on a GPU: engine/gpu/kernels/*.cu compiled by NVRTC through
``cupy.RawModule`` and launched on CuPy arrays (the launch code is engine/gpu/kernels_cuda.py,
shared with the CPU tests). Imports CuPy: GPU-only."""
from __future__ import annotations

import cupy

from engine.gpu.kernels_cuda import DEFAULT_SPLIT, CudaKernels

NVRTC_OPTIONS = ()  # CuPy adds the architecture and -ftz=true; NVRTC 12+ compiles C++17 by default


def raw_module(code: str, options=()):
    return cupy.RawModule(code=code, options=NVRTC_OPTIONS + tuple(options))


def cupy_kernels(split: int = DEFAULT_SPLIT, on_launch=None) -> CudaKernels:
    return CudaKernels(raw_module, cupy, split=split, name="cupy", on_launch=on_launch)
