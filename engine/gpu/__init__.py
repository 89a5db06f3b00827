"""The GPU decode path: one cached decode step as a few fused kernels per layer, replayable
as one CUDA graph.

    fused_step.py    FusedDecoder: the step's orchestration over the engine's own weights and
                     KVCache (workspaces allocated once; the token and the cache length live in
                     device int32 buffers, so every launch has the same arguments at every
                     step and ``capture()`` records the step once as a CUDA graph)
    kernels/*.cu     the CUDA C kernels, one source per kernel (+ common.cuh)
    kernels_cuda.py  the CUDA kernel set: launches those sources with cupy.RawKernel's call
                     shape, through whatever module factory it is given
    kernels_cupy.py  the GPU binding: cupy.RawModule + CuPy arrays (imports CuPy)
    kernels_ref.py   each kernel's maths in NumPy: the reference, and a CPU kernel set
    recording.py     a recording NumPy backend that proves the step's structure on a CPU,
                     including that every launch's arguments repeat from step to step

On a CPU the tests run the same .cu text through the project's CPU execution of CUDA C
(tools/cuda_cpu, handed in as the module factory); the engine never imports tools/.
GPU-only code goes in this package only.
"""
from __future__ import annotations

KERNEL_SETS = ("numpy-reference", "cupy")


class KernelSetMissing(RuntimeError):
    """The kernel set asked for cannot run here (no CuPy, no GPU)."""


def kernel_set(backend: str, split: int | None = None):
    """The kernel set for an array backend ("numpy" or "cupy"), or KernelSetMissing saying why not."""
    if backend == "numpy":
        from engine.gpu.kernels_ref import ReferenceKernels

        return ReferenceKernels() if split is None else ReferenceKernels(split)
    if backend == "cupy":
        try:
            from engine.gpu.kernels_cupy import cupy_kernels
        except ImportError as e:
            raise KernelSetMissing(f"the CUDA kernel set needs CuPy ({e})") from None
        return cupy_kernels() if split is None else cupy_kernels(split)
    raise ValueError(f"unknown backend {backend!r}; choose numpy or cupy")
