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

from engine.analysis import costs
from tools.bench import launches, provenance, steps, sweep_shapes
from tools.bench.backend import Backend, BenchError
from tools.bench.steps import StepPath
from tools.bench.timers import Stats


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
    step: str = "auto"                         # cached step timed: engine | fused | auto (tools/bench/steps.py)
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


def _timing(opts: Options) -> dict:
    return dict(warmup=opts.warmup, repeats=opts.repeats, max_seconds=opts.max_point_seconds,
                min_seconds=opts.min_point_seconds)


def _time_prefill(model, ids, cache, backend: Backend, opts: Options, flops_per_s: float, skipped: dict):
    """Prefill the whole prompt into the empty cache, timed (it leaves real K/V in the cache);
    too expensive: random K/V instead, and the reason in ``skipped``."""
    cfg, ctx = model.config, len(ids) - 1
    why = _affordable(costs.prefill_flops(cfg, ctx), _temp_bytes(cfg, ctx, ctx), opts, flops_per_s, opts.warmup + 3)
    if why is not None:
        skipped["prefill"] = why
        fill_cache_random(cache, ctx, backend.xp, opts.seed + ctx)
        return None
    return backend.timer(lambda: model.forward(ids[:ctx], cache=cache, last_only=True),
                         setup=lambda: cache.truncate(0), **_timing(opts))


def _time_uncached(model, ids, backend: Backend, opts: Options, flops_per_s: float, skipped: dict):
    """The same next token recomputed from scratch over all ctx + 1 positions, when affordable."""
    cfg, ctx = model.config, len(ids) - 1
    why = _affordable(costs.decode_step_flops(cfg, ctx, use_cache=False), _temp_bytes(cfg, ctx + 1, ctx + 1),
                      opts, flops_per_s, opts.warmup + 3)
    if why is not None:
        skipped["decode_uncached"] = why
        return None
    return backend.timer(lambda: model.forward(ids, last_only=True), **_timing(opts))


def measure_point(model, ctx: int, backend: Backend, opts: Options, flops_per_s: float,
                  peak_bw: float, step: StepPath = StepPath("engine")) -> dict:
    cfg = model.config
    ids = _ids(np.random.default_rng(opts.seed + ctx), cfg.vocab_size, ctx + 1)  # the prompt, then the step's token
    cache = model.new_cache(max_len=ctx + 1)
    skipped: dict[str, str] = {}
    prefill = _time_prefill(model, ids, cache, backend, opts, flops_per_s, skipped)
    # decode with the cache: rewind to ctx before each step so every sample sees the same context
    cached = backend.timer(steps.cached_step(model, cache, int(ids[ctx]), step), setup=lambda: cache.truncate(ctx),
                           **_timing(opts))
    del cache
    uncached = _time_uncached(model, ids, backend, opts, flops_per_s, skipped)
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


def run_shape(shape: sweep_shapes.BenchShape, dtype: str, backend: Backend, opts: Options, flops_per_s: float,
              peak_bw: float, log=print, out_of_time=lambda: False,
              step: StepPath = StepPath("engine")) -> tuple[dict, object]:
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
        p = measure_point(model, ctx, backend, opts, flops_per_s, peak_bw, step)
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
        "step": step.to_json(),
    }
    return run, model


class SweepInterrupted(Exception):
    """Ctrl-C or SIGTERM (e.g. from ``timeout``) after some runs were measured: ``doc`` keeps them."""

    def __init__(self, doc: dict):
        super().__init__("interrupted")
        self.doc = doc


COMPARED_SHAPES = {"numpy": ("course", "gpt2-small"), "cupy": ("course", "gpt2-small", "llama3-8b")}


@dataclass
class _Sweep:
    """What a sweep carries from run to run: the device's numbers and what it has found."""

    backend: Backend
    opts: Options
    step: StepPath
    peak_bw: dict
    flops_by_dtype: dict
    main_dtype: str
    started: float
    threads: dict | None
    runs: list = field(default_factory=list)
    comparisons: list = field(default_factory=list)
    notes: list = field(default_factory=list)

    def out_of_time(self) -> bool:
        return self.opts.deadline_s is not None and time.perf_counter() - self.started > self.opts.deadline_s

    def note(self, text: str | None) -> None:
        if text and text not in self.notes:
            self.notes.append(text)


def _start(opts: Options, backend: Backend, threads: dict | None, log) -> _Sweep:
    """Check the options, measure the device's peaks, choose the step path."""
    from tools.bench.backend import peak_bandwidth

    started = time.perf_counter()
    dtypes = opts.dtypes or default_dtypes(backend.name)
    for dt in dtypes:
        if dt not in ("float32", "float16"):
            raise BenchError(f"unknown dtype {dt!r}; choose float32 or float16")
    step = steps.resolve(opts.step, backend.name)
    peak_bw = peak_bandwidth(backend, opts.peak_bw_gbs, measure_mib=256 if opts.quick else 512)
    main_dtype = "float16" if backend.name == "cupy" else "float32"
    flops_by_dtype = {dt: provenance.measure_matmul_flops(backend.xp, backend.timer, dtype=dt,
                                                          n=_matmul_n(backend.name, dt))
                      for dt in dict.fromkeys([main_dtype, *dtypes])}
    log(f"device: {backend.device['name']}; peak bandwidth {peak_bw['value'] / 1e9:.1f} GB/s ({peak_bw['source']}); "
        f"matmul {flops_by_dtype[main_dtype]['flops'] / 1e9:.1f} GFLOP/s {main_dtype} (measured); "
        f"cached step: {step.path}" + (f" ({step.kernels.name} kernels)" if step.kernels else ""))
    sweep = _Sweep(backend, opts, step, peak_bw, flops_by_dtype, main_dtype, started, threads)
    sweep.note(step.note)
    if backend.name == "numpy" and "float16" not in dtypes:
        sweep.note("float16 is not in this CPU run: NumPy has no BLAS for float16, so it would time "
                   "NumPy's fallback loops rather than memory traffic (pass --dtypes float16 to see it).")
    return sweep


def _measure_run(sweep: _Sweep, shape: sweep_shapes.BenchShape, dt: str, log) -> None:
    """One shape in one dtype: the sweep, its launch count, the transformers comparison."""
    opts, backend = sweep.opts, sweep.backend
    run, model = run_shape(shape, dt, backend, opts, sweep.flops_by_dtype[dt]["flops"], sweep.peak_bw["value"],
                           log=log, out_of_time=sweep.out_of_time, step=sweep.step)
    if len(run["points"]) < len(shape.contexts):
        sweep.note(f"Deadline of {opts.deadline_s:g} s reached: {shape.key} {dt} stops at context "
                   f"{run['points'][-1]['context']}.")
    ctx = launches.count_context([p["context"] for p in run["points"]])
    counted, why_not = launches.record(model, ctx, backend, sweep.step)
    if counted:
        run["launches"] = counted
        log(f"[{shape.key} {dt}] {counted['per_step']:g} launches per step at context {ctx} ({counted['method']})")
    sweep.note(why_not)
    sweep.runs.append(run)
    if (opts.compare and not sweep.out_of_time() and dt == sweep.main_dtype
            and shape.key in COMPARED_SHAPES[backend.name]):
        from tools.bench import compare

        try:
            found, note = compare.compare_with_transformers(model, run, backend, opts, sweep.threads,
                                                            step=sweep.step, log=log)
        except Exception as e:  # keep the engine's numbers; say why the comparison is missing
            found, note = [], f"transformers comparison failed for {shape.key}: {type(e).__name__}: {e}"
        sweep.comparisons.extend(found)
        sweep.note(note)


def run_benchmark(opts: Options, backend: Backend | None = None, threads: dict | None = None, log=print) -> dict:
    """Run the whole sweep and return the results document (see schema.json)."""
    from tools.bench.backend import get_backend

    host = provenance.host_info()
    backend = backend or get_backend(opts.backend)
    sweeps = [sweep_shapes.build(k, backend=backend.name, quick=opts.quick, llama_layers=opts.llama_layers,
                           contexts=opts.contexts) for k in opts.shapes]
    sweep = _start(opts, backend, threads, log)
    try:
        for shape in sweeps:
            for dt in opts.dtypes or default_dtypes(backend.name):
                if dt not in shape.dtypes:
                    continue
                if sweep.runs and sweep.out_of_time():  # the first run always gets its first point
                    sweep.note(f"Deadline of {opts.deadline_s:g} s reached: {shape.key} {dt} was not measured.")
                    continue
                _measure_run(sweep, shape, dt, log)
                gc.collect()
    except KeyboardInterrupt:
        if not sweep.runs:
            raise
        sweep.note(f"Interrupted after {len(sweep.runs)} complete run(s); the runs after them were not measured.")
        raise SweepInterrupted(_finish(sweep, host)) from None
    return _finish(sweep, host)


def _finish(sweep: _Sweep, host: dict) -> dict:
    if any(p["skipped"] for r in sweep.runs for p in r["points"]):
        sweep.note("Some prefill / no-cache measurements were skipped at long contexts (see each point's "
                   "'skipped'); there the cache was filled with random keys and values before timing the step.")
    host["loadavg_end"] = provenance.loadavg()
    return _document(sweep, host)


def _document(sweep: _Sweep, host: dict) -> dict:
    opts, backend = sweep.opts, sweep.backend
    peak_flops = sweep.flops_by_dtype[sweep.main_dtype]
    return {
        "schema": "kv-classroom/bench-results",
        "schema_version": 1,
        "provenance": {
            "date": provenance.now_utc(),
            "command": provenance.command_line(opts.argv),
            "backend": backend.name,
            "device": backend.device,
            "peak_bandwidth": sweep.peak_bw,
            "peak_flops": {"value": peak_flops["flops"], "source": "measured", "note": peak_flops["method"]},
            "cuda": backend.cuda,
            "versions": provenance.versions(),
            "git": provenance.git_info(),
            "host": host,
            "threads": sweep.threads or {"pinned": False, "method": "gpu" if backend.name == "cupy" else "none",
                                         "count": None},
            "timing": {"clock": "cuda_events" if backend.name == "cupy" else "perf_counter",
                       "warmup": opts.warmup, "repeats": opts.repeats, "min_seconds": opts.min_point_seconds},
            "quick": opts.quick,
            "elapsed_s": round(time.perf_counter() - sweep.started, 1),
        },
        "runs": sweep.runs,
        "comparisons": sweep.comparisons,
        "notes": sweep.notes,
    }


def _matmul_n(backend: str, dtype: str) -> int:
    if backend == "cupy":
        return 8192
    return 256 if dtype == "float16" else 1024  # CPU float16 has no BLAS: keep it short
