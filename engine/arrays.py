"""Choose the array namespace ``xp`` once: NumPy (CPU, Pyodide) or CuPy (NVIDIA GPU).

All model maths is written against ``xp``; only this module knows which one it is.
CuPy is imported lazily, so the engine imports (and runs in Pyodide) without it.
"""
from __future__ import annotations

import numpy as np

BACKENDS = ("numpy", "cupy")


def get_xp(name: str = "numpy"):
    """Return the array module for ``name`` ("numpy" or "cupy").

    Raises ValueError for an unknown name and RuntimeError, saying what to install or
    check, when CuPy or a usable GPU is missing.
    """
    if name == "numpy":
        return np
    if name != "cupy":
        raise ValueError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")
    try:
        import cupy  # noqa: PLC0415 - optional dependency, only for the GPU benchmark
    except ImportError as e:
        raise RuntimeError(
            "backend 'cupy' needs CuPy: pip install 'kv-classroom[gpu]' (cupy-cuda13x; cupy-cuda12x on a CUDA 12 driver) "
            f"on a machine with an NVIDIA GPU ({e})"
        ) from None
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # CUDA driver missing or broken
        raise RuntimeError(f"CuPy is installed but no CUDA device is usable: {e}") from None
    if n < 1:
        raise RuntimeError("CuPy is installed but found no CUDA device")
    return cupy


def xp_name(xp) -> str:
    """"numpy" or "cupy" for an array module."""
    return "cupy" if xp.__name__.startswith("cupy") else "numpy"


def to_numpy(a) -> np.ndarray:
    """Host NumPy copy of an xp array (no copy for NumPy input)."""
    if hasattr(a, "get") and type(a).__module__.startswith("cupy"):
        return a.get()
    return np.asarray(a)


def synchronize(xp) -> None:
    """Wait for queued GPU work (timings need it); a no-op for NumPy."""
    if xp_name(xp) == "cupy":
        xp.cuda.get_current_stream().synchronize()
