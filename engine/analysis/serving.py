"""What serving many sequences at once costs, from the config alone (built on engine.analysis.costs).

Why batching pays: a decode step reads every weight once whatever the batch size, while each
sequence reads only its own cache. Why paging pays: a contiguous cache reserves a request's
longest possible length up front; a paged one holds whole blocks of what was written; with
a shared prefix, those blocks are held once for all requests that start with it.

    batch_decode_step_bytes(cfg, contexts)    one step for len(contexts) sequences
    contiguous_slots(max_tokens)              what a max-length reservation holds
    paged_slots(tokens, block_size, shared)   what one request holds in blocks of its own
    requests_that_fit(memory, per_request, shared)

A slot is one position in every layer, K and V (engine.analysis.costs.kv_cache_bytes of one token).
A GPU is two facts with their sources, like engine.analysis.model_shapes: the datasheet's capacity (the
"80 GB" it is sold as) and the memory the device reports (what requests are counted in).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.analysis import costs
from engine.caches.allocator import blocks_for
from engine.checks import check_int
from engine.config import Config

# --------------------------------------------------------------------------- batching


def resident_weight_bytes(cfg: Config, dtype_bytes: int | None = None) -> int:
    """Weights a decode step reads in full: all but the embedding table (only looked-up rows)."""
    b = cfg.dtype_bytes if dtype_bytes is None else check_int("dtype_bytes", dtype_bytes, minimum=1)
    return (costs.param_count(cfg) - cfg.vocab_size * cfg.d_model) * b


def batch_decode_step_bytes(cfg: Config, contexts: Sequence[int], dtype_bytes: int | None = None) -> int:
    """Bytes one decode step moves for a batch, sequence i having contexts[i] tokens before it.

    The weights are read once for the whole batch; every sequence adds its own traffic as
    engine.analysis.costs counts it for one sequence (its embedding row, its cache read and written).
    """
    if isinstance(contexts, (str, bytes)) or not isinstance(contexts, Sequence) or not contexts:
        raise ValueError("contexts must be a non-empty list of token counts, one per sequence")
    weights = resident_weight_bytes(cfg, dtype_bytes)
    own = sum(costs.decode_step_bytes(cfg, ctx, True, dtype_bytes) - weights for ctx in contexts)
    return weights + own


# --------------------------------------------------------------------------- memory per request


def contiguous_slots(max_tokens: int) -> int:
    """A contiguous cache reserves every position a request might reach, before its first token."""
    return check_int("max_tokens", max_tokens, minimum=0)


def paged_slots(tokens: int, block_size: int, shared: int = 0) -> int:
    """Slots in the blocks a request holds alone, its first ``shared`` tokens being a prefix
    whose blocks it holds with others.

    The prefix's full blocks are shared; a partly filled last prefix block is copied when the
    request first writes into it (copy-on-write), so it counts as the request's own: the count
    holds once the request has written a token past the prefix.
    """
    tokens = check_int("tokens", tokens, minimum=0)
    block_size = check_int("block_size", block_size, minimum=1)
    shared = check_int("shared", shared, minimum=0, maximum=tokens)
    return (blocks_for(tokens, block_size) - shared // block_size) * block_size


def prefix_slots(shared: int, block_size: int) -> int:
    """Slots held once, for every request, by a cached prefix of ``shared`` tokens."""
    return blocks_for(check_int("shared", shared, minimum=0), check_int("block_size", block_size, minimum=1)) * block_size


def requests_that_fit(memory_bytes: int, per_request_bytes: int, shared_bytes: int = 0) -> int:
    """Whole requests of per_request_bytes that fit next to shared_bytes held once (0 if none)."""
    memory_bytes = check_int("memory_bytes", memory_bytes, minimum=0)
    per_request_bytes = check_int("per_request_bytes", per_request_bytes, minimum=1)
    shared_bytes = check_int("shared_bytes", shared_bytes, minimum=0)
    return max(0, (memory_bytes - shared_bytes) // per_request_bytes)


# --------------------------------------------------------------------------- GPUs


@dataclass(frozen=True)
class GpuMemory:
    """One GPU's memory as two facts, each with its source; everything else is derived.

    The datasheet's capacity is the name the GPU is sold under ("80 GB", "141 GB"), not a byte
    count to compute with: the H100 reports 79.6 GiB (85.5e9 bytes), the H200 139.8 GiB (150.1e9
    bytes), neither of them 80e9 or 141e9. What a server can fill is what the device reports as
    its total memory, so requests that fit are computed from ``usable_bytes``.
    """

    key: str
    name: str
    datasheet_gb: int  # the capacity the datasheet prints, "80 GB" (a label, not 80e9 bytes)
    source: str  # that datasheet
    usable_bytes: int  # the total memory the device reports
    usable_source: str  # where that number was read
    short: str  # a label that fits under a bar on a phone

    @property
    def bytes(self) -> int:
        """What a server can hold: the usable memory."""
        return self.usable_bytes


GPUS: dict[str, GpuMemory] = {g.key: g for g in (
    GpuMemory("h100_80", "NVIDIA H100 SXM (80 GB)", 80,
              "NVIDIA H100 Tensor Core GPU datasheet: 80GB HBM3 (SXM5)",
              81_559 * 2**20,
              "nvidia-smi's total for an NVIDIA H100 80GB HBM3: 81559MiB (about 79.6 GiB), as public "
              "logs of that card print it; not measured by this project (no H100 run yet). CUDA's "
              "totalGlobalMem on the same card reads a few hundred MiB lower, so this is an upper bound.",
              "H100 (80 GB)"),
    GpuMemory("h200_141", "NVIDIA H200 SXM (141 GB)", 141,
              "NVIDIA H200 Tensor Core GPU datasheet: 141GB HBM3e",
              150_109_880_320,
              "CUDA's totalGlobalMem on this project's H200 run (engine/bench_results/results/gpu-cupy-h200.json, "
              "cuda.memory_bytes): about 139.8 GiB",
              "H200 (141 GB)"),
)}
