"""The paged KV cache's decode step against the contiguous one (a benchmark: prints numbers).

    .venv/bin/python -m tools.bench.bench_paged                     # course model, block sizes 1, 4, 16
    .venv/bin/python -m tools.bench.bench_paged --blocks 16 --contexts 32 128 250 --samples 400

One cached decode step of the course model (forward of one token, logits of the last
position) after ``context`` tokens, timed with the contiguous KVCache and with a PagedCache
whose blocks are scattered through the pool (a second sequence took every other block, as
in a server where sequences grow side by side). Samples of the two alternate, so a busy
machine slows both alike; after each sample the cache is truncated back to ``context``
(not timed). Prints the medians side by side and paged / contiguous. Goal (issue 10):
paged within 1.3x of contiguous on CPU.
"""
from __future__ import annotations

import os

# One BLAS thread, as Pyodide runs and as tools/bench/bench_lessons.py measures. Before NumPy loads.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from engine import load_course_model  # noqa: E402
from engine.caches.paged import BlockPool  # noqa: E402
from engine.caches.allocator import blocks_for
from engine.timing import measure_in_turn  # noqa: E402


def scattered_sequence(model, context: int, block_size: int):
    """A PagedCache holding ``context`` tokens in every other block of its pool."""
    n = blocks_for(context + 1, block_size)
    pool = BlockPool(model.config, n_blocks=2 * n + 1, block_size=block_size)
    seq, other = pool.new_sequence(), pool.new_sequence()
    rng = np.random.default_rng(0)
    ids = rng.integers(1, model.config.vocab_size, size=context).tolist()
    for start in range(0, context, block_size):
        model.forward(ids[start : start + block_size], cache=seq)
        model.forward(ids[start : start + block_size], cache=other)  # takes the block in between
    return seq, ids


def time_pair(model, caches: dict, context: int, samples: int, warmup: int = 20) -> dict[str, float]:
    """Median seconds of one decode step per cache, samples taken in turn (engine.timing)."""
    steps = {name: (lambda cache=cache: model.forward([7], cache=cache, last_only=True)) for name, cache in caches.items()}
    rewinds = {name: (lambda cache=cache: cache.truncate(context)) for name, cache in caches.items()}
    stats = measure_in_turn(steps, setup=rewinds, warmup=warmup, repeats=samples)
    return {name: s.median for name, s in stats.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--blocks", type=int, nargs="+", default=[1, 4, 16], help="block sizes")
    ap.add_argument("--contexts", type=int, nargs="+", default=[16, 64, 128, 250])
    ap.add_argument("--samples", type=int, default=300)
    args = ap.parse_args()
    model, _tok = load_course_model()
    c = model.config
    print(f"# course model: {c.n_layers} layers, d_model {c.d_model}, {c.n_kv_heads} KV heads, "
          f"head_dim {c.head_dim}, {c.dtype}; CPython {platform.python_version()}, NumPy {np.__version__}, "
          f"{os.environ['OMP_NUM_THREADS']} BLAS thread(s), load {os.getloadavg()[0]:.2f}, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"{'block':>6}{'context':>9}{'contiguous ms':>15}{'paged ms':>10}{'paged/contig':>14}")
    worst = 0.0
    for B in args.blocks:
        for ctx in args.contexts:
            if ctx + 1 > c.max_seq_len:
                sys.exit(f"context {ctx} leaves no room in the course model's window of {c.max_seq_len}")
            paged, ids = scattered_sequence(model, ctx, B)
            contiguous = model.new_cache()
            model.forward(ids, cache=contiguous)
            m = time_pair(model, {"contiguous": contiguous, "paged": paged}, ctx, args.samples)
            ratio = m["paged"] / m["contiguous"]
            worst = max(worst, ratio)
            print(f"{B:>6}{ctx:>9}{m['contiguous'] * 1e3:>15.3f}{m['paged'] * 1e3:>10.3f}{ratio:>14.2f}")
    print(f"# worst paged/contiguous: {worst:.2f} (goal <= 1.3)")


if __name__ == "__main__":
    main()
