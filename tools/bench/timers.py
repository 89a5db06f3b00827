"""The benchmark's timers: engine/timing.py's one loop read through each clock (host, CuPy events, torch events).

Two clocks, one interface. On the CPU (NumPy) work is synchronous, so a host clock
around the call is the truth. On the GPU (CuPy) kernels run asynchronously: a host clock
around the call would time the kernel *launches*, so the GPU path records CUDA events on
the stream and reads the elapsed time between them after the end event completes.
"""
from __future__ import annotations

from engine.timing import (MAX_SAMPLES, CupyEventClock, Fn, HostClock, Stats, TorchEventClock, _more,  # noqa: F401
                           measure, percentile, summarize)


def time_host(fn: Fn, *, setup: Fn | None = None, warmup: int = 1, repeats: int = 5,
              max_seconds: float | None = None, min_seconds: float | None = None) -> Stats:
    """Time synchronous ``fn`` with ``time.perf_counter``; ``setup`` runs untimed before each call.

    ``repeats`` samples at least, more for cheap calls until ``min_seconds`` of timed work;
    ``max_seconds`` caps the total (at least 3 samples still run), so a slow configuration
    cannot blow up a sweep. The Stats say how many samples were taken.
    """
    return measure(fn, HostClock(), setup=setup, warmup=warmup, repeats=repeats, max_seconds=max_seconds,
                   min_seconds=min_seconds)


def time_cuda(fn: Fn, *, setup: Fn | None = None, warmup: int = 1, repeats: int = 5,
              max_seconds: float | None = None, min_seconds: float | None = None) -> Stats:
    """Time ``fn`` on the current CUDA stream with ``cupy.cuda.Event`` pairs.

    The events bracket the GPU's timeline for this call: kernels and the idle gaps while the
    host launches them, i.e. the step time a user sees, without host timers around async work.
    """
    return measure(fn, CupyEventClock(), setup=setup, warmup=warmup, repeats=repeats, max_seconds=max_seconds,
                   min_seconds=min_seconds)


def time_torch_cuda(fn: Fn, *, setup: Fn | None = None, warmup: int = 1, repeats: int = 5,
                    max_seconds: float | None = None, min_seconds: float | None = None) -> Stats:
    """Time ``fn`` on PyTorch's current CUDA stream with ``torch.cuda.Event`` pairs.

    The transformers side of a GPU comparison: the same kind of clock as ``time_cuda``,
    read from PyTorch's stream because that is where transformers queues its kernels.
    """
    return measure(fn, TorchEventClock(), setup=setup, warmup=warmup, repeats=repeats, max_seconds=max_seconds,
                   min_seconds=min_seconds)
