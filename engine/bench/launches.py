"""Kernel launches per cached decode step, recorded in the results beside the step's time.

On a GPU a batch-1 step can be bound by the host launching kernels (~10 us each from
Python) rather than by the bytes it moves, so the count explains the time. Two methods:

    counted  the fused step's calls to its kernel set (kernels + matmuls), on any backend:
             exact by construction, one call is one launch (tests/engine/gpu prove it on a CPU)
    cupti    every GPU operation the profiler sees during real steps (torch.profiler, which
             reads CUDA's CUPTI and sees CuPy's kernels too): needs PyTorch with CUDA
"""
from __future__ import annotations

from engine.bench.steps import StepPath, cached_step


class CountingKernels:
    """A kernel set that counts its calls and passes them on unchanged."""

    def __init__(self, inner):
        self.inner, self.calls = inner, 0
        self.xp, self.split, self.name = inner.xp, inner.split, inner.name

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
    """(launches JSON, None) or (None, why nothing was recorded) for one run."""
    L = model.config.n_layers
    if step.path == "fused":
        counting = CountingKernels(step.kernels)
        fn = cached_step(model, _cache_at(model, ctx), 0, StepPath("fused", counting))
        fn()
        n, method = counting.calls, "counted"
        note = f"calls to the {step.kernels.name} kernel set (kernels and matmuls) in one fused step"
    elif backend.name == "cupy":
        n = profiled_operations(model, ctx)
        if n is None:
            return None, "Kernel launches were not recorded: PyTorch with CUDA (its profiler) is not installed."
        method = "cupti"
        note = "GPU operations (kernels and copies) per engine step, torch.profiler (CUPTI), mean of 20 steps"
    else:
        return None, None  # the engine's NumPy path launches nothing
    return {"context": ctx, "per_step": n, "per_layer": n / L, "method": method, "note": note}, None


def profiled_operations(model, ctx: int, steps: int = 20) -> float | None:
    """GPU operations per engine step seen by torch.profiler, or None without PyTorch + CUDA."""
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    cache = _cache_at(model, ctx)
    step = cached_step(model, cache, 0, StepPath("engine"))
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
