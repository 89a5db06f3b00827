"""Which cached decode step a benchmark times: the engine's per-op ``model.forward`` or the
fused GPU step (engine/gpu), chosen by ``--step``.

    engine   model.forward([token], cache=cache, last_only=True): the readable NumPy/CuPy path
    fused    engine.gpu.FusedDecoder with the backend's kernel set (NumPy: the reference
             kernels, a correctness path rather than a fast one; CuPy: the CUDA kernels)
    auto     fused on a GPU whose kernel set exists, else engine

Prefill and the step without a cache are always the engine's forward pass.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tools.bench.backend import BenchError

STEP_PATHS = ("engine", "fused", "auto")


@dataclass(frozen=True)
class StepPath:
    path: str                 # "engine" | "fused"
    kernels: object = None    # the kernel set of the fused path
    note: str | None = None   # why auto chose what it chose, for the results' notes

    def to_json(self) -> dict:
        return {"path": self.path, "kernels": None if self.kernels is None else self.kernels.name}


def resolve(choice: str, backend: str) -> StepPath:
    """The step path for ``--step choice`` on ``backend`` (BenchError if fused cannot run)."""
    from engine.gpu import KernelSetMissing, kernel_set

    if choice not in STEP_PATHS:
        raise BenchError(f"unknown --step {choice!r}; choose {', '.join(STEP_PATHS)}")
    if choice == "engine" or (choice == "auto" and backend == "numpy"):
        return StepPath("engine")
    try:
        kernels = kernel_set(backend)
    except KernelSetMissing as e:
        if choice == "fused":
            raise BenchError(f"--step fused: {e}") from None
        return StepPath("engine", note=f"--step auto: {e}, so the cached step timed is the engine's per-op path.")
    return StepPath("fused", kernels)


def cached_step(model, cache, token: int, step: StepPath):
    """A function that decodes ``token`` at position cache.length and returns its logits [1, V].

    The caller rewinds the cache between calls (cache.truncate) to time the same step again.
    """
    if step.path == "engine":
        ids = np.array([token], dtype=np.int64)
        return lambda: model.forward(ids, cache=cache, last_only=True)
    from engine.gpu.fused_step import FusedDecoder

    decoder = FusedDecoder(model, cache, step.kernels)
    decoder.feed(token)
    return decoder.step
