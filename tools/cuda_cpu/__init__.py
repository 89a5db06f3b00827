"""CUDA C kernels run on the CPU, for tests without a GPU (a development tool, not shipped).

    from tools.cuda_cpu import RawModule
    mod = RawModule(code=open('k.cu').read(), options=('-DN=4',), order='seeded', seed=1)
    mod.get_function('name')(grid, block, (x, y, np.int32(n)), shared_mem=0)

The same call shape as cupy.RawModule / RawKernel; see README.md for what is emulated.
`python -m tools.cuda_cpu.nvrtc_check` compiles kernels for sm_90 with NVRTC (no GPU needed).
"""
from .build import CompileError
from .module import ORDERS, CudaCpuError, Function, RawModule

__all__ = ['RawModule', 'Function', 'CudaCpuError', 'CompileError', 'ORDERS']
