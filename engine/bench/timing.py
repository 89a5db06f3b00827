"""Timing: warm-ups, repeats, and robust statistics (median, p10, p90).

Two clocks, one interface. On the CPU (NumPy) work is synchronous, so a host clock
around the call is the truth. On the GPU (CuPy) kernels run asynchronously: a host clock
around the call would time the kernel *launches*, so the GPU path records CUDA events on
the stream and reads the elapsed time between them after the end event completes.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Stats:
    """Summary of repeated timings of one operation, in seconds."""

    median: float
    p10: float
    p90: float
    min: float
    max: float
    n: int

    def to_json(self) -> dict:
        return {"median_s": self.median, "p10_s": self.p10, "p90_s": self.p90,
                "min_s": self.min, "max_s": self.max, "n": self.n}


def percentile(sorted_xs: list[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100) of an already sorted list (NumPy's default)."""
    if not sorted_xs:
        raise ValueError("percentile of an empty list")
    pos = (len(sorted_xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def summarize(samples: list[float]) -> Stats:
    """Median and spread of ``samples`` (seconds)."""
    xs = sorted(float(s) for s in samples)
    return Stats(median=percentile(xs, 50), p10=percentile(xs, 10), p90=percentile(xs, 90),
                 min=xs[0], max=xs[-1], n=len(xs))


Fn = Callable[[], object]


def _more(i: int, spent: float, repeats: int, min_seconds: float | None, max_seconds: float | None) -> bool:
    """Whether to take another sample after ``i + 1`` samples that took ``spent`` seconds.

    At least ``repeats`` samples; beyond that, keep sampling cheap operations until
    ``min_seconds`` of timed work (a median of many short samples shrugs off a busy
    neighbour's bursts), up to MAX_SAMPLES. ``max_seconds`` stops slow ones early, after
    at least three samples.
    """
    n = i + 1
    if max_seconds is not None and n >= 3 and spent > max_seconds:
        return False
    if n < repeats:
        return True
    return min_seconds is not None and spent < min_seconds and n < MAX_SAMPLES


MAX_SAMPLES = 200


def time_host(fn: Fn, *, setup: Fn | None = None, warmup: int = 1, repeats: int = 5,
              max_seconds: float | None = None, min_seconds: float | None = None) -> Stats:
    """Time synchronous ``fn`` with ``time.perf_counter``; ``setup`` runs untimed before each call.

    ``repeats`` samples at least, more for cheap calls until ``min_seconds`` of timed work;
    ``max_seconds`` caps the total (at least 3 samples still run), so a slow configuration
    cannot blow up a sweep. The Stats say how many samples were taken.
    """
    for _ in range(warmup):
        if setup:
            setup()
        fn()
    samples: list[float] = []
    spent, i = 0.0, 0
    while True:
        if setup:
            setup()
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        samples.append(dt)
        spent += dt
        if not _more(i, spent, repeats, min_seconds, max_seconds):
            return summarize(samples)
        i += 1


def time_cuda(fn: Fn, *, setup: Fn | None = None, warmup: int = 1, repeats: int = 5,
              max_seconds: float | None = None, min_seconds: float | None = None) -> Stats:
    """Time ``fn`` on the current CUDA stream with ``cupy.cuda.Event`` pairs.

    The events bracket the GPU's timeline for this call: kernels and the idle gaps while the
    host launches them, i.e. the step time a user sees, without host timers around async work.
    """
    import cupy  # only reached with --backend cupy, after the backend check

    stream = cupy.cuda.get_current_stream()
    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    for _ in range(warmup):
        if setup:
            setup()
        fn()
    stream.synchronize()
    samples: list[float] = []
    spent, i = 0.0, 0
    while True:
        if setup:
            setup()
        start.record(stream)
        fn()
        end.record(stream)
        end.synchronize()
        dt = cupy.cuda.get_elapsed_time(start, end) / 1e3  # ms -> s
        samples.append(dt)
        spent += dt
        if not _more(i, spent, repeats, min_seconds, max_seconds):
            return summarize(samples)
        i += 1


def time_torch_cuda(fn: Fn, *, setup: Fn | None = None, warmup: int = 1, repeats: int = 5,
                    max_seconds: float | None = None, min_seconds: float | None = None) -> Stats:
    """Time ``fn`` on PyTorch's current CUDA stream with ``torch.cuda.Event`` pairs.

    The transformers side of a GPU comparison: the same kind of clock as ``time_cuda``,
    read from PyTorch's stream because that is where transformers queues its kernels.
    """
    import torch

    for _ in range(warmup):
        if setup:
            setup()
        fn()
    torch.cuda.synchronize()
    samples: list[float] = []
    spent, i = 0.0, 0
    while True:
        if setup:
            setup()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        dt = start.elapsed_time(end) / 1e3  # ms -> s
        samples.append(dt)
        spent += dt
        if not _more(i, spent, repeats, min_seconds, max_seconds):
            return summarize(samples)
        i += 1
