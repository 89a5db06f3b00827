"""The sweep itself: for each shape, dtype and context length, time prefill and one decode
step with and without the KV cache, and put the bytes and FLOPs of the step beside it.

    prefill           forward over ``context`` prompt tokens into an empty cache
    decode_cached     one new token with ``context`` tokens already in the cache
    decode_uncached   the same token recomputed from scratch: forward over context + 1 tokens

Every operation asks for the last position's logits only, as generation does.
Expensive measurements (the uncached step and prefill grow with the context) are skipped,
with the reason recorded, when their estimated cost exceeds ``--max-point-seconds`` or their
attention scores would not fit ``--max-temp-gib``; the cached step is always measured.
"""
from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field

import numpy as np

from engine import costs
from engine.bench import provenance, shapes
from engine.bench.backend import Backend, BenchError
from engine.bench.timing import Stats


@dataclass
class Options:
    """Everything that decides what a run measures (the CLI fills it; tests build it directly)."""

    backend: str = "numpy"
    shapes: tuple[str, ...] = ("course", "gpt2-small", "llama3-8b")
    dtypes: tuple[str, ...] | None = None      # None: float32 on NumPy, float16 + float32 on CuPy
    contexts: tuple[int, ...] | None = None    # None: each shape's default sweep
    quick: bool = False
    warmup: int = 2
    repeats: int = 10
    max_point_seconds: float = 20.0
    min_point_seconds: float = 0.3             # cheap steps: sample at least this long
    max_temp_gib: float = 2.0
    llama_layers: int | None = None
    peak_bw_gbs: float | None = None
    compare: bool = True                       # the transformers comparison, when installed
    seed: int = 0
    threads: int | None = None                 # CPU threads pinned (for PyTorch too)
    deadline_s: float | None = None            # stop starting new measurements after this long
    argv: list[str] = field(default_factory=list)


def default_dtypes(backend: str) -> tuple[str, ...]:
    # NumPy has no BLAS for float16 on the CPU (a float16 matmul runs ~50x slower than
    # float32 there), so the CPU default is float32 only; --dtypes float16 still works.
    return ("float16", "float32") if backend == "cupy" else ("float32",)


# --------------------------------------------------------------------------- one point


def _ids(rng, vocab: int, n: int) -> np.ndarray:
    return rng.integers(0, vocab, size=n, dtype=np.int64)


def fill_cache_random(cache, n: int, xp, seed: int) -> None:
    """Give the first n slots of every layer random K/V and set cache.length = n.

    Used when prefill itself is too expensive to run at this context: the time of a decode
    step does not depend on the numbers in the cache, only on how many there are.
    """
    rng = np.random.default_rng(seed)
    for layer in range(len(cache.k)):
        for arr in (cache.k[layer], cache.v[layer]):
            block = rng.standard_normal(arr[:, :n].shape, dtype=np.float32)
            arr[:, :n] = xp.asarray(block, dtype=arr.dtype)
    cache.length = n


def _temp_bytes(cfg, n_queries: int, n_keys: int) -> int:
    """Largest temporaries of a forward pass: ~4 float32 [H, T, S] score arrays + the MLP's [T, 2F]."""
    return 4 * cfg.n_heads * n_queries * n_keys * 4 + n_queries * 2 * cfg.ffn_dim * cfg.dtype_bytes


def _affordable(flops: int, temp: int, opts: Options, flops_per_s: float, runs: int) -> str | None:
    """None when a measurement fits the budgets, else the reason it is skipped."""
    if temp > opts.max_temp_gib * 2**30:
        return f"temporaries ~{temp / 2**30:.1f} GiB > --max-temp-gib {opts.max_temp_gib:g}"
    est = runs * flops / (0.5 * flops_per_s)  # assume half the measured matmul peak
    if est > opts.max_point_seconds:
        return f"estimated {est:.0f} s > --max-point-seconds {opts.max_point_seconds:g}"
    return None


def measure_point(model, ctx: int, backend: Backend, opts: Options, flops_per_s: float,
                  peak_bw: float) -> dict:
    cfg, xp = model.config, backend.xp
    rng = np.random.default_rng(opts.seed + ctx)
    ids = _ids(rng, cfg.vocab_size, ctx + 1)  # the prompt, then the token the step feeds in
    cache = model.new_cache(max_len=ctx + 1)
    skipped: dict[str, str] = {}
    timed_runs = opts.warmup + 3

    # prefill: the whole prompt into an empty cache (fills it with real K/V as a side effect)
    prefill = None
    why = _affordable(costs.prefill_flops(cfg, ctx), _temp_bytes(cfg, ctx, ctx), opts, flops_per_s, timed_runs)
    if why is None:
        def reset():
            cache.truncate(0)

        prefill = backend.timer(lambda: model.forward(ids[:ctx], cache=cache, last_only=True), setup=reset,
                                warmup=opts.warmup, repeats=opts.repeats, max_seconds=opts.max_point_seconds,
                                min_seconds=opts.min_point_seconds)
    else:
        skipped["prefill"] = why
        fill_cache_random(cache, ctx, xp, opts.seed + ctx)

    # decode with the cache: rewind to ctx before each step so every sample sees the same context
    def rewind():
        cache.truncate(ctx)

    step_ids = ids[ctx:]
    cached = backend.timer(lambda: model.forward(step_ids, cache=cache, last_only=True), setup=rewind,
                           warmup=opts.warmup, repeats=opts.repeats, max_seconds=opts.max_point_seconds,
                           min_seconds=opts.min_point_seconds)

    # decode without the cache: recompute all ctx + 1 positions to get the same next token
    uncached = None
    why = _affordable(costs.decode_step_flops(cfg, ctx, use_cache=False), _temp_bytes(cfg, ctx + 1, ctx + 1),
                      opts, flops_per_s, timed_runs)
    if why is None:
        uncached = backend.timer(lambda: model.forward(ids, last_only=True),
                                 warmup=opts.warmup, repeats=opts.repeats, max_seconds=opts.max_point_seconds,
                                 min_seconds=opts.min_point_seconds)
    else:
        skipped["decode_uncached"] = why
    del cache

    step_bytes = costs.decode_step_bytes(cfg, ctx, use_cache=True)
    step_flops = costs.decode_step_flops(cfg, ctx, use_cache=True)
    achieved = step_bytes / cached.median
    return {
        "context": ctx,
        "prefill": _stats(prefill),
        "decode_cached": _stats(cached),
        "decode_uncached": _stats(uncached),
        "skipped": skipped,
        "kv_cache_bytes": costs.kv_cache_bytes(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, ctx,
                                               dtype_bytes=cfg.dtype_bytes),
        "decode_bytes": step_bytes,
        "decode_flops": step_flops,
        "achieved_bandwidth": achieved,
        "bandwidth_fraction": achieved / peak_bw,
        "flops_per_s": step_flops / cached.median,
        "lower_bound_s": step_bytes / peak_bw,
    }


def _stats(s: Stats | None) -> dict | None:
    return None if s is None else s.to_json()


# --------------------------------------------------------------------------- the sweep


def config_json(cfg) -> dict:
    d = cfg.to_dict()
    d["head_dim"] = cfg.head_dim
    return d


def run_shape(shape: shapes.BenchShape, dtype: str, backend: Backend, opts: Options, flops_per_s: float,
              peak_bw: float, log=print, out_of_time=lambda: False) -> tuple[dict, object]:
    """Sweep one shape in one dtype; returns (run JSON, the model, for the comparison)."""
    t0 = time.perf_counter()
    model = shape.make(dtype, backend.xp, max(shape.contexts))
    if max(shape.contexts) + 1 > model.config.max_seq_len:
        raise BenchError(f"{shape.key}: context {max(shape.contexts)} leaves no room for a decode step "
                         f"in its context window of {model.config.max_seq_len}")
    log(f"[{shape.key} {dtype}] weights ready in {time.perf_counter() - t0:.1f} s")
    points = []
    for ctx in shape.contexts:
        if points and out_of_time():
            log(f"[{shape.key} {dtype}] deadline reached: contexts from {ctx} on are not measured")
            break
        p = measure_point(model, ctx, backend, opts, flops_per_s, peak_bw)
        log(f"[{shape.key} {dtype}] context {ctx}: cached {p['decode_cached']['median_s'] * 1e3:.3f} ms"
            + (f", uncached {p['decode_uncached']['median_s'] * 1e3:.3f} ms" if p["decode_uncached"] else ""))
        points.append(p)
    run = {
        "shape": shape.key,
        "label": shape.label,
        "dtype": dtype,
        "weights": shape.weights,
        "config": config_json(model.config),
        "params": model.num_params,
        "weights_bytes": model.weight_bytes,
        "points": points,
    }
    return run, model


def run_benchmark(opts: Options, backend: Backend | None = None, threads: dict | None = None, log=print) -> dict:
    """Run the whole sweep and return the results document (see schema.json)."""
    from engine.bench.backend import get_backend, peak_bandwidth

    started = time.perf_counter()
    host = provenance.host_info()
    backend = backend or get_backend(opts.backend)
    dtypes = opts.dtypes or default_dtypes(backend.name)
    for dt in dtypes:
        if dt not in ("float32", "float16"):
            raise BenchError(f"unknown dtype {dt!r}; choose float32 or float16")
    sweeps = [shapes.build(k, backend=backend.name, quick=opts.quick, llama_layers=opts.llama_layers,
                           contexts=opts.contexts) for k in opts.shapes]

    peak_bw = peak_bandwidth(backend, opts.peak_bw_gbs, measure_mib=256 if opts.quick else 512)
    main_dtype = "float16" if backend.name == "cupy" else "float32"
    flops_by_dtype = {dt: provenance.measure_matmul_flops(backend.xp, backend.timer, dtype=dt,
                                                          n=_matmul_n(backend.name, dt))
                      for dt in dict.fromkeys([main_dtype, *dtypes])}
    peak_flops = flops_by_dtype[main_dtype]
    log(f"device: {backend.device['name']}; peak bandwidth {peak_bw['value'] / 1e9:.1f} GB/s ({peak_bw['source']}); "
        f"matmul {peak_flops['flops'] / 1e9:.1f} GFLOP/s {main_dtype} (measured)")

    runs, notes, comparisons = [], [], []

    def out_of_time() -> bool:
        return opts.deadline_s is not None and time.perf_counter() - started > opts.deadline_s

    if backend.name == "numpy" and "float16" not in dtypes:
        notes.append("float16 is not in this CPU run: NumPy has no BLAS for float16, so it would time "
                     "NumPy's fallback loops rather than memory traffic (pass --dtypes float16 to see it).")
    for shape in sweeps:
        for dt in dtypes:
            if dt not in shape.dtypes:
                continue
            if runs and out_of_time():  # the first run always gets its first point
                notes.append(f"Deadline of {opts.deadline_s:g} s reached: {shape.key} {dt} was not measured.")
                continue
            n_before = len(shape.contexts)
            run, model = run_shape(shape, dt, backend, opts, flops_by_dtype[dt]["flops"], peak_bw["value"], log=log,
                                   out_of_time=out_of_time)
            if len(run["points"]) < n_before:
                notes.append(f"Deadline of {opts.deadline_s:g} s reached: {shape.key} {dt} stops at context "
                             f"{run['points'][-1]['context']}.")
            runs.append(run)
            if opts.compare and not out_of_time() and shape.key in ("course", "gpt2-small"):
                from engine.bench import compare

                try:
                    found, note = compare.compare_with_transformers(model, run, backend, opts, threads, log=log)
                except Exception as e:  # keep the engine's numbers; say why the comparison is missing
                    found, note = [], f"transformers comparison failed for {shape.key}: {type(e).__name__}: {e}"
                comparisons.extend(found)
                if note and note not in notes:
                    notes.append(note)
            del model
            gc.collect()
    skipped_any = any(p["skipped"] for r in runs for p in r["points"])
    if skipped_any:
        notes.append("Some prefill / no-cache measurements were skipped at long contexts (see each point's "
                     "'skipped'); there the cache was filled with random keys and values before timing the step.")

    host["loadavg_end"] = provenance.loadavg()
    doc = {
        "schema": "kv-classroom/bench-results",
        "schema_version": 1,
        "provenance": {
            "date": provenance.now_utc(),
            "command": provenance.command_line(opts.argv),
            "backend": backend.name,
            "device": backend.device,
            "peak_bandwidth": peak_bw,
            "peak_flops": {"value": peak_flops["flops"], "source": "measured", "note": peak_flops["method"]},
            "cuda": backend.cuda,
            "versions": provenance.versions(),
            "git": provenance.git_info(),
            "host": host,
            "threads": threads or {"pinned": False, "method": "gpu" if backend.name == "cupy" else "none",
                                   "count": None},
            "timing": {"clock": "cuda_events" if backend.name == "cupy" else "perf_counter",
                       "warmup": opts.warmup, "repeats": opts.repeats, "min_seconds": opts.min_point_seconds},
            "quick": opts.quick,
            "elapsed_s": round(time.perf_counter() - started, 1),
        },
        "runs": runs,
        "comparisons": comparisons,
        "notes": notes,
    }
    return doc


def _matmul_n(backend: str, dtype: str) -> int:
    if backend == "cupy":
        return 8192
    return 256 if dtype == "float16" else 1024  # CPU float16 has no BLAS: keep it short
