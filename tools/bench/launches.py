"""Kernel launches per cached decode step, recorded in the results beside the step's time.

On a GPU a batch-1 step can be bound by the host launching kernels (~10 us each from
Python) rather than by the bytes it moves, so the count explains the time. Two methods:

    counted  the fused step's calls to its kernel set (kernels + matmuls), on any backend:
             exact by construction, one call is one launch (tests/engine/gpu prove it on a CPU)
    cupti    every GPU operation the profiler sees during real steps (torch.profiler, which
             reads CUDA's CUPTI and sees CuPy's kernels too): needs PyTorch with CUDA
"""
from __future__ import annotations

from tools.bench.steps import StepPath, cached_step


class CountingKernels:
    """A kernel set that counts its calls and passes them on unchanged."""

    def __init__(self, inner):
        self.inner, self.calls = inner, 0
        self.xp, self.split, self.name = inner.xp, inner.split, inner.name

    def prepare_weight(self, w, norm=None):
        """Not a launch of the step: a weight laid out once, when the decoder is built."""
        return self.inner.prepare_weight(w, norm)

    def __getattr__(self, name: str):
        kernel = getattr(self.inner, name)

        def call(*args, **kwargs):
            self.calls += 1
            return kernel(*args, **kwargs)

        return call


def count_context(contexts: list[int], near: int = 8192) -> int:
    """The measured context where launches are recorded: the one nearest ``near`` tokens."""
    return min(contexts, key=lambda c: (abs(c - near), c))


def _cache_at(model, ctx: int):
    """A cache holding ``ctx`` positions (zeros: a launch count does not depend on the numbers)."""
    cache = model.new_cache(max_len=ctx + 1)
    cache.length = ctx
    return cache


def record(model, ctx: int, backend, step: StepPath) -> tuple[dict | None, str | None]:
    """(launches JSON, None) or (None, why nothing was recorded) for one run.

    On a GPU the profiler's count is the truth for either path (a kernel-set call that
    launched two kernels would show); the fused path's own count is the fallback, and the
    only count on a CPU.
    """
    L = model.config.n_layers
    n = profiled_operations(model, ctx, step) if backend.name == "cupy" else None
    if n is not None:
        method = "cupti"
        note = f"GPU operations (kernels and copies) per {step.path} step, torch.profiler (CUPTI), mean of 20 steps"
    elif step.path == "fused":
        counting = CountingKernels(step.kernels)
        cached_step(model, _cache_at(model, ctx), 0, StepPath("fused", counting))()
        n, method = counting.calls, "counted"
        note = f"calls to the {step.kernels.name} kernel set (kernels and matmuls) in one fused step"
    elif backend.name == "cupy":
        return None, "Kernel launches were not recorded: PyTorch with CUDA (its profiler) is not installed."
    else:
        return None, None  # the engine's NumPy path launches nothing
    return {"context": ctx, "per_step": n, "per_layer": n / L, "method": method, "note": note}, None


def profiled_operations(model, ctx: int, path: StepPath = StepPath("engine"), steps: int = 20) -> float | None:
    """GPU operations per cached step seen by torch.profiler, or None without PyTorch + CUDA."""
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    cache = _cache_at(model, ctx)
    step = cached_step(model, cache, 0, path)
    for _ in range(3):  # warm-up: CuPy compiles its kernels on first use
        cache.truncate(ctx)
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            cache.truncate(ctx)
            step()
        torch.cuda.synchronize()
    gpu_ops = [e for e in prof.events() if getattr(e.device_type, "name", "") == "CUDA"]
    return len(gpu_ops) / steps
