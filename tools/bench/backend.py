"""The array backend a benchmark runs on: NumPy (CPU) or CuPy (CUDA GPU).

A backend bundles the array module, the right clock (host timer or CUDA events), and the
device's description, including the peak memory bandwidth the results are measured
against and where that number comes from. Asking for CuPy where there is none is an
error with one clear line, never a silent fall-back to the CPU.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from tools.bench import provenance
from tools.bench.timers import time_cuda, time_host


class BenchError(Exception):
    """A user-facing problem (bad option, missing CuPy or GPU): one line, exit code 2."""

    exit_code = 2


# Peak HBM bandwidth from the vendors' datasheets, for GPUs we know; any other GPU needs
# --peak-bw-gbs or gets a measured copy bandwidth (and says so).
GPU_SPEC_BANDWIDTH = {
    "H200": (4.8e12, "NVIDIA H200 Tensor Core GPU datasheet (SXM): 4.8 TB/s HBM3e"),
    "H100 80GB HBM3": (3.35e12, "NVIDIA H100 Tensor Core GPU datasheet (SXM5): 3.35 TB/s HBM3"),
}


@dataclass
class Backend:
    name: str                      # "numpy" | "cupy"
    xp: Any                        # the array module
    timer: Callable                # time_host or time_cuda (same signature)
    device: dict = field(default_factory=dict)
    cuda: dict | None = None

    def sync(self) -> None:
        if self.name == "cupy":
            self.xp.cuda.get_current_stream().synchronize()

    def to_host(self, a):
        return self.xp.asnumpy(a) if self.name == "cupy" else a


def get_backend(name: str) -> Backend:
    """Return the backend, or raise BenchError saying exactly what is missing."""
    if name == "numpy":
        import numpy

        return Backend("numpy", numpy, time_host,
                       device={"kind": "cpu", "name": provenance.cpu_model_name()})
    if name == "cupy":
        return _cupy_backend()
    raise BenchError(f"unknown backend {name!r}; choose numpy or cupy")


def _cupy_backend() -> Backend:
    try:
        import cupy
    except ImportError:
        raise BenchError("--backend cupy needs CuPy, which is not installed "
                         "(pip install 'kv-classroom[gpu]' on a machine with an NVIDIA GPU)") from None
    except Exception as e:  # a broken CUDA install can fail at import with other errors
        raise BenchError(f"--backend cupy: CuPy failed to import ({type(e).__name__}: {_one_line(e)})") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        raise BenchError(f"--backend cupy: no usable CUDA GPU ({_one_line(e)})") from None
    if count < 1:
        raise BenchError("--backend cupy: CuPy is installed but no CUDA GPU is visible")
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    gpu_name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    cuda = {
        "driver": _cuda_version(cupy.cuda.runtime.driverGetVersion()),
        "runtime": _cuda_version(cupy.cuda.runtime.runtimeGetVersion()),
        "memory_bytes": int(props.get("totalGlobalMem", 0)) or None,
    }
    return Backend("cupy", cupy, time_cuda, device={"kind": "gpu", "name": gpu_name}, cuda=cuda)


def _cuda_version(v: int) -> str:
    """CUDA encodes 12.4 as 12040."""
    return f"{v // 1000}.{(v % 1000) // 10}"


def _one_line(e: BaseException) -> str:
    return " ".join(str(e).split())[:200]


def peak_bandwidth(backend: Backend, user_gbs: float | None, *, measure_mib: int = 512) -> dict:
    """The peak bandwidth results are compared against, and where it comes from.

    Order: the user's --peak-bw-gbs; for a GPU we know, its datasheet; otherwise a
    measured STREAM-like copy on this device (labelled "measured").
    """
    if user_gbs is not None:
        if not user_gbs > 0:
            raise BenchError(f"--peak-bw-gbs must be a positive number, got {user_gbs}")
        return {"value": user_gbs * 1e9, "source": "user",
                "note": "given on the command line with --peak-bw-gbs"}
    if backend.device.get("kind") == "gpu":
        for key, (bw, note) in GPU_SPEC_BANDWIDTH.items():
            if key in backend.device["name"]:
                return {"value": bw, "source": "spec", "note": note}
    m = provenance.measure_copy_bandwidth(backend.xp, backend.timer, mib=measure_mib)
    return {"value": m["gbs"] * 1e9, "source": "measured", "note": m["method"]}
