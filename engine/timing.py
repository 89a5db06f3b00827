"""Timing: one loop (warm-ups, repeats, robust statistics) and the clocks it reads.

Every measurement in the project -- the benchmark sweep, the transformers comparison, the
reader's own browser, the developer tools -- goes through :func:`measure_in_turn`, so warm-up,
sample count and statistics mean the same everywhere. What differs is the clock:

    HostClock        time.perf_counter around the call: the truth for synchronous work
                     (NumPy on a CPU, Pyodide in a browser)
    CupyEventClock   CUDA events on CuPy's current stream: GPU work is asynchronous, so a host
                     clock would time the kernel *launches*; the events bracket the GPU's own
                     timeline (kernels and the idle gaps while the host launches them)
    TorchEventClock  the same events on PyTorch's stream, where transformers queues its kernels

A clock has ``sync()`` (wait for queued work), ``start()`` and ``stop() -> seconds``.
Pure Python: no NumPy, so it runs wherever the engine does.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Protocol

Fn = Callable[[], object]
MAX_SAMPLES = 200


@dataclass(frozen=True)
class Stats:
    """Summary of repeated timings of one operation, in seconds (per call)."""

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


# --------------------------------------------------------------------------- clocks


class Clock(Protocol):
    name: str

    def sync(self) -> None: ...
    def start(self) -> None: ...
    def stop(self) -> float: ...


class HostClock:
    """time.perf_counter: for synchronous work."""

    name = "perf_counter"

    def sync(self) -> None:
        pass

    def start(self) -> None:
        self._t0 = time.perf_counter()

    def stop(self) -> float:
        return time.perf_counter() - self._t0


class CupyEventClock:
    """A pair of cupy.cuda.Event on one stream: ``stream`` (a benchmark passes the stream its
    work goes to, so that the events bracket exactly that work), else the current one.
    ``cuda`` is the module the events come from (cupy.cuda, imported when made; a test hands
    in a stand-in)."""

    name = "cuda_events"

    def __init__(self, stream=None, cuda=None):
        if cuda is None:
            import cupy  # only on a GPU run

            cuda = cupy.cuda
        self._cuda = cuda
        self._stream = cuda.get_current_stream() if stream is None else stream
        self._start, self._end = cuda.Event(), cuda.Event()

    def sync(self) -> None:
        self._stream.synchronize()

    def start(self) -> None:
        self._start.record(self._stream)

    def stop(self) -> float:
        self._end.record(self._stream)
        self._end.synchronize()
        return self._cuda.get_elapsed_time(self._start, self._end) / 1e3  # ms -> s


class TorchEventClock:
    """A pair of torch.cuda.Event on PyTorch's current stream (fresh ones each sample)."""

    name = "torch_cuda_events"

    def __init__(self):
        import torch  # only for the transformers comparison on a GPU

        self._torch = torch

    def sync(self) -> None:
        self._torch.cuda.synchronize()

    def start(self) -> None:
        Event = self._torch.cuda.Event
        self._start, self._end = Event(enable_timing=True), Event(enable_timing=True)
        self._start.record()

    def stop(self) -> float:
        self._end.record()
        self._end.synchronize()
        return self._start.elapsed_time(self._end) / 1e3  # ms -> s


# --------------------------------------------------------------------------- the loop


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


def measure_in_turn(fns: dict[str, Fn], clock: Clock | None = None, *, setup: dict[str, Fn] | None = None,
                    warmup: int = 1, repeats: int = 5, max_seconds: float | None = None,
                    min_seconds: float | None = None, batch: int = 1) -> dict[str, Stats]:
    """Time each of ``fns`` with ``clock``, one sample of each in turn (so a slow drift of the
    machine touches them alike); ``setup[name]`` runs before each call, untimed.

    ``repeats`` samples at least, more until the fastest one has ``min_seconds`` of timed
    work; ``max_seconds`` caps the slowest one's total (at least 3 samples still run).
    ``batch`` > 1: each sample times ``batch`` calls, their setups included (keep those cheap),
    and reports seconds per call -- for calls shorter than the clock's tick.
    """
    clock = HostClock() if clock is None else clock
    setup = setup or {}
    noop = lambda: None  # noqa: E731

    def sample(name: str) -> float:
        fn, prepare = fns[name], setup.get(name, noop)
        if batch == 1:
            prepare()
            clock.start()
            fn()
            return clock.stop()
        clock.start()
        for _ in range(batch):
            prepare()
            fn()
        return clock.stop() / batch

    for _ in range(warmup):
        for name in fns:
            setup.get(name, noop)()
            fns[name]()
    clock.sync()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    spent, i = dict.fromkeys(fns, 0.0), 0
    while True:
        for name in fns:
            dt = sample(name)
            samples[name].append(dt)
            spent[name] += dt * batch
        too_long = max_seconds is not None and i + 1 >= 3 and max(spent.values()) > max_seconds
        if too_long or not _more(i, min(spent.values()), repeats, min_seconds, None):
            return {name: summarize(xs) for name, xs in samples.items()}
        i += 1


def measure(fn: Fn, clock: Clock | None = None, *, setup: Fn | None = None, **opts) -> Stats:
    """Time one ``fn`` (see measure_in_turn for the options)."""
    return measure_in_turn({"": fn}, clock, setup=None if setup is None else {"": setup}, **opts)[""]


def calibrate_batch(fn: Fn, setup: Fn | None = None, clock: Clock | None = None, *, min_s: float,
                    max_batch: int = 256) -> int:
    """Calls per sample so that a sample lasts at least ``min_s`` (a coarse clock's tick):
    the batch doubles from 1 until it does, up to ``max_batch``."""
    clock, batch = HostClock() if clock is None else clock, 1
    while True:
        clock.start()
        for _ in range(batch):
            if setup:
                setup()
            fn()
        if clock.stop() >= min_s or batch >= max_batch:
            return batch
        batch *= 2
