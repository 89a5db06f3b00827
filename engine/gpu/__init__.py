"""The GPU decode path: one cached decode step as a few fused kernels per layer.

    fused_step.py   FusedDecoder: the step's orchestration over the engine's own weights and
                    KVCache (workspaces allocated once, only kernels and matmuls per step)
    kernels_ref.py  each fused kernel's maths in NumPy: the reference, and a CPU kernel set
    recording.py    a recording NumPy backend that proves the step's structure on a CPU

The CuPy kernel set is not written yet (no GPU was available to run it); ``--backend cupy``
times the engine's per-op path until it exists. GPU-only code goes in this package only.
"""
from __future__ import annotations

KERNEL_SETS = ("numpy-reference", "cupy")


class KernelSetMissing(RuntimeError):
    """The kernel set asked for does not exist (yet) or cannot run here."""


def kernel_set(backend: str, split: int | None = None):
    """The kernel set for an array backend ("numpy" or "cupy"), or KernelSetMissing saying why not."""
    if backend == "numpy":
        from engine.gpu.kernels_ref import ReferenceKernels

        return ReferenceKernels() if split is None else ReferenceKernels(split)
    if backend == "cupy":
        raise KernelSetMissing("the CuPy kernel set (engine/gpu/kernels_cupy.py) is not written yet")
    raise ValueError(f"unknown backend {backend!r}; choose numpy or cupy")
