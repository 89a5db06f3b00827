"""Where a result comes from: device, peak bandwidth (and its source), versions, commit, date.

A benchmark number without its provenance cannot be compared with anything, so every
results file carries this block; the page prints it beside the figures.
"""
from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- host and software


def git_info(root: Path = REPO_ROOT) -> dict:
    """Commit hash and whether the working tree had uncommitted changes (None outside git)."""

    def git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def package_version(name: str) -> str | None:
    """Installed version of a distribution, or None when it is absent."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def blas_info() -> str | None:
    """The BLAS NumPy was built against (name and version), from numpy's build config."""
    try:
        import numpy as np

        cfg = np.show_config(mode="dicts")
        blas = cfg.get("Build Dependencies", {}).get("blas", {})
        name, version = blas.get("name"), blas.get("version")
        return f"{name} {version}".strip() if name else None
    except Exception:  # numpy < 1.26 has no mode="dicts"; the field is informative only
        return None


def cpu_model_name() -> str:
    """The CPU's marketing name (Linux /proc/cpuinfo, else platform.processor())."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def slug(text: str) -> str:
    """'Intel(R) Xeon(R) Processor' -> 'intel-xeon-processor' (for file names)."""
    text = re.sub(r"\((r|tm|c)\)", "", text.lower())
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-") or "unknown"


def loadavg() -> list[float] | None:
    """1/5/15-minute load averages (None where the OS has none): a busy machine skews timings."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def host_info() -> dict:
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": cpu_model_name(),
        "cpu_count": os.cpu_count(),
        "loadavg_start": loadavg(),
    }


def versions() -> dict:
    """Versions of everything that can change a timing."""
    return {
        "python": platform.python_version(),
        "numpy": package_version("numpy"),
        "blas": blas_info(),
        "cupy": _cupy_version(),
        "torch": package_version("torch"),
        "transformers": package_version("transformers"),
    }


def _cupy_version() -> str | None:
    if "cupy" in sys.modules:
        return sys.modules["cupy"].__version__
    return package_version("cupy-cuda12x") or package_version("cupy-cuda13x") or package_version("cupy")


def now_utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def command_line(argv: list[str] | None) -> str:
    """The exact command, as a user would retype it."""
    argv = sys.argv[1:] if argv is None else argv
    return shlex.join(["python", "-m", "tools.bench", *argv])


# --------------------------------------------------------------------------- measured peaks


def measure_copy_bandwidth(xp, timer, *, mib: int = 512, repeats: int = 5) -> dict:
    """STREAM-like memory bandwidth: the best of a copy and a read-only dot product.

    Two float32 arrays of ``mib`` MiB each (pick more than the last-level cache, or the
    cache is measured instead of memory). Copy counts its bytes twice (one read, one write),
    as STREAM's "Copy" does; the dot product reads both arrays once, like a decode step
    that streams weights. The faster of the two, best of ``repeats``, is reported.
    ``timer`` is the backend's clock (host clock for NumPy, CUDA events for CuPy).
    """
    n = mib * 2**20 // 4
    a = xp.ones(n, dtype=xp.float32)
    b = xp.ones(n, dtype=xp.float32)
    copy = 2 * a.nbytes / timer(lambda: xp.copyto(b, a), warmup=1, repeats=repeats).min
    read = 2 * a.nbytes / timer(lambda: xp.dot(a, b), warmup=1, repeats=repeats).min
    del a, b
    kernel, gbs = ("copy", copy) if copy >= read else ("dot (read-only)", read)
    return {
        "gbs": gbs / 1e9,
        "method": (f"{xp.__name__} STREAM-like test on 2 x {mib} MiB float32 arrays, best of {repeats}: "
                   f"copy {copy / 1e9:.1f} GB/s (read + write counted), dot {read / 1e9:.1f} GB/s; "
                   f"the higher ({kernel}) is used"),
    }


def measure_matmul_flops(xp, timer, *, n: int = 1024, dtype: str = "float32", repeats: int = 5) -> dict:
    """Peak-ish FLOP/s from a square matmul: 2 n^3 FLOPs, best of ``repeats``."""
    a = xp.ones((n, n), dtype=dtype)
    b = xp.ones((n, n), dtype=dtype)
    stats = timer(lambda: a @ b, warmup=1, repeats=repeats)
    return {
        "flops": 2 * n**3 / stats.min,
        "method": f"{xp.__name__} {n}x{n} {dtype} matmul, best of {stats.n}",
    }
