"""The GPU session in one command: correctness, then every number issue 17 asks for.

    python -m tools.bench.gpu_check --out results.json      (an H200: under 5 minutes)

  1. the GPU tests (pytest -m gpu tests/engine/gpu: each CUDA kernel against the NumPy
     references, the fused step against the NumPy engine over 32 greedy steps); if they fail
     the command still measures, but the JSON says so and the exit code is 1;
  2. gemv: every Llama-3-8B projection and the LM head alone, float16, TB/s and % of peak;
  3. eager vs graph replay, µs per step: the fused step launched kernel by kernel from
     Python, and the same step captured once as a CUDA graph and replayed (greedy: the argmax
     is in the graph); the course model, GPT-2 small and Llama-3-8B x 4 layers at 8192;
  4. the sweep: Llama-3-8B shape, 4 layers, float16, contexts 128 .. 32768, graph replay;
     bytes per step = the weights read (all but the embedding table) + the K/V in use, so
     % of peak = bytes / time / peak bandwidth;
  5. the cache: GPT-2 small's cached graph step at context 1023 against the per-op engine
     recomputing all 1024 positions without a cache;
  6. Hugging Face transformers eager on the same Llama shape and weights (tools/bench/
     compare.py: it also checks both compute the same logits).
Then the goals of issue 17 are checked against these numbers and everything is written to
--out (JSON, with provenance). The path is checked before anything is measured. Committed as
``engine/bench_results/gpu_checks/<device>-<commit>.json`` the file appears on the benchmark
page (lessons/benchmarks/bench_measured.py), beside the per-op engine's H200 file as "before".

``KV_GPU_DRY_RUN=1`` runs the same code on a CPU with NumPy and the reference kernels on
tiny shapes (no tests, no graph, no transformers): the command's plumbing, tested in CI.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from tools.bench import provenance
from tools.bench import writer
from tools.bench.backend import BenchError, get_backend, peak_bandwidth

LLAMA_CONTEXTS = (128, 512, 2048, 8192, 16384, 32768)
GOALS = {  # issue 17, on an H200
    "llama_8192_pct_peak": 60.0,         # % of 4.8 TB/s at context 8192 (stretch: 80)
    "llama_8192_vs_transformers": 2.5,   # times faster than transformers eager
    "llama_growth_128_to_32768": 1.3,    # step time at 32768 / at 128, at most
    "course_ms_per_step": 0.5,           # at most
    "gpt2_cache_speedup_1023": 5.0,      # uncached / cached, at least
}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m tools.bench.gpu_check", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="results file (.json); checked before anything is measured")
    p.add_argument("--steps", type=int, default=50, help="steps per timed run (default 50)")
    p.add_argument("--repeats", type=int, default=5, help="timed runs per point; the median is kept (default 5)")
    p.add_argument("--no-tests", action="store_true", help="skip the GPU tests (numbers of an unchecked kernel)")
    p.add_argument("--no-transformers", action="store_true", help="skip the transformers comparison")
    return p


# --------------------------------------------------------------------------- the machine


class Session:
    """Backend, kernels and clock: CuPy + the CUDA kernel set, or (dry run) NumPy + references."""

    def __init__(self, dry_run: bool):
        from engine.gpu import kernel_set

        self.dry_run = dry_run
        self.backend = get_backend("numpy" if dry_run else "cupy")
        self.xp = self.backend.xp
        self.kernels = kernel_set(self.backend.name)
        self.peak = peak_bandwidth(self.backend, None, measure_mib=8 if dry_run else 512)

    def sync(self) -> None:
        self.backend.sync()

    def seconds(self, fn, repeats: int) -> float:
        """Median seconds of ``fn()`` (which may run many steps), CUDA events on a GPU."""
        stats = self.backend.timer(fn, warmup=1, repeats=repeats)
        return stats.median


# --------------------------------------------------------------------------- models and steps


def make_model(session: Session, shape: str, dtype: str, max_context: int):
    from tools.bench import sweep_shapes

    if shape == "tiny" or session.dry_run:
        return sweep_shapes._tiny(dtype, session.xp, max_context)
    layers = 4 if shape == "llama3-8b" else None
    return sweep_shapes.build(shape, backend="cupy", quick=True, llama_layers=layers).make(dtype, session.xp, max_context)


def step_bytes(model, context: int) -> int:
    """Bytes one decode step must read: every weight but the embedding table (one row of it
    is read), plus K and V of ``context`` positions in every layer."""
    c = model.config
    weights = model.weight_bytes - c.vocab_size * c.d_model * c.dtype_bytes
    return weights + context * c.kv_values_per_token * c.dtype_bytes


def time_steps(session: Session, model, context: int, steps: int, repeats: int) -> dict:
    """µs per step at ``context``: eager (kernel by kernel) and, on a GPU, graph replay."""
    from engine.gpu.fused_step import FusedDecoder

    cache = model.new_cache(max_len=context + steps)
    cache.length = context  # the values in the cache do not change the time, only their number
    decoder = FusedDecoder(model, cache, session.kernels)
    k = session.kernels

    def eager():
        cache.truncate(context)
        for _ in range(steps):
            decoder.step()
            k.argmax(decoder.logits, out=decoder.token)

    out = {"context": context, "steps": steps, "bytes": step_bytes(model, context)}
    out["eager_us"] = session.seconds(eager, repeats) / steps * 1e6
    if not session.dry_run:
        decoder.capture(greedy=True)

        def replay():
            cache.truncate(context)
            for _ in range(steps):
                decoder.replay()

        out["graph_us"] = session.seconds(replay, repeats) / steps * 1e6
    best = min(v for key, v in out.items() if key.endswith("_us"))
    out["tb_s"] = out["bytes"] / (best * 1e-6) / 1e12
    out["pct_peak"] = 100 * out["bytes"] / (best * 1e-6) / session.peak["value"]
    return out


def gemv_rates(session: Session, repeats: int) -> list[dict]:
    """Each Llama-3-8B projection and the LM head as one gemv, float16: TB/s and % of peak."""
    from engine.analysis.model_shapes import MODEL_SHAPES

    s = MODEL_SHAPES["Llama 3 8B"]
    D, hd = s.d_model, s.d_model // s.n_heads
    projections = {"wqkv": (D, (s.n_heads + 2 * s.n_kv_heads) * hd), "wo": (D, D), "w_gate_up": (D, 2 * s.ffn_dim),
              "w_down": (s.ffn_dim, D), "lm_head": (D, s.vocab_size)}
    if session.dry_run:
        projections = {name: (K // 64, N // 64) for name, (K, N) in projections.items()}
    xp, k, rows = session.xp, session.kernels, []
    dtype = "float32" if session.dry_run else "float16"  # NumPy has no fast float16 matmul
    rng = np.random.default_rng(0)
    for name, (K, N) in projections.items():
        w = k.prepare_weight(xp.asarray((rng.standard_normal((K, N), dtype=np.float32) * K**-0.5).astype(dtype)))
        x = xp.asarray(rng.standard_normal((1, K), dtype=np.float32).astype(dtype))
        y = xp.empty((1, N), dtype=dtype)
        n = 20

        def run():
            for _ in range(n):
                k.matmul(x, w, out=y)

        sec = session.seconds(run, repeats) / n
        nbytes = (K * N + K + N) * np.dtype(dtype).itemsize
        rows.append({"name": name, "K": K, "N": N, "dtype": dtype, "us": sec * 1e6, "tb_s": nbytes / sec / 1e12,
                     "pct_peak": 100 * nbytes / sec / session.peak["value"]})
        del w
    return rows


def cache_speedup(session: Session, steps: int, repeats: int) -> dict:
    """GPT-2 small at context 1023: the cached fused step vs the engine recomputing 1024 positions."""
    ctx = 1023 if not session.dry_run else 31
    model = make_model(session, "gpt2-small", "float16" if not session.dry_run else "float32", ctx)
    cached = time_steps(session, model, ctx, 1, max(repeats, 20))  # the last slot: one step per run
    ids = np.random.default_rng(1).integers(0, model.config.vocab_size, size=ctx + 1)
    uncached_s = session.seconds(lambda: model.forward(ids, last_only=True), repeats)
    cached_us = cached.get("graph_us", cached["eager_us"])
    return {"context": ctx, "cached_us": cached_us, "uncached_us": uncached_s * 1e6,
            "speedup": uncached_s * 1e6 / cached_us}


def transformers_rows(session: Session, model, contexts, log) -> tuple[list, str | None]:
    """transformers eager beside the fused (eager) step, through tools/bench/compare.py."""
    from tools.bench.compare import compare_with_transformers
    from tools.bench.runner import Options
    from tools.bench.steps import StepPath

    run = {"shape": "llama3-8b", "dtype": model.config.dtype, "points": [{"context": c} for c in contexts]}
    opts = Options(backend=session.backend.name, warmup=2, repeats=10, max_point_seconds=10.0, min_point_seconds=0.2)
    return compare_with_transformers(model, run, session.backend, opts, None, StepPath("fused", session.kernels),
                                     log=log)


# --------------------------------------------------------------------------- the checks


def run_tests(dry_run: bool) -> dict:
    if dry_run:
        return {"ran": False, "note": "dry run: the GPU tests are not run"}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider",
                           "tests/engine/gpu"], cwd=provenance.REPO_ROOT, capture_output=True, text=True, timeout=150)
    lines = proc.stdout.strip().splitlines()
    return {"ran": True, "passed": proc.returncode == 0, "summary": lines[-1] if lines else proc.stderr[-300:],
            "seconds": time.perf_counter() - t0}


def goals(doc: dict) -> dict:
    """Each goal of issue 17 with the measured value and whether it is met (None: not measured)."""
    sweep = {p["context"]: p for p in doc.get("sweep", [])}
    t = lambda p: p.get("graph_us", p.get("eager_us")) if p else None  # noqa: E731
    hf = {r["context"]: r for r in doc.get("transformers", [])}
    at8k = sweep.get(8192)
    values = {
        "llama_8192_pct_peak": at8k["pct_peak"] if at8k else None,
        "llama_8192_vs_transformers": (hf[8192]["transformers"]["median_s"] * 1e6 / t(at8k))
        if at8k and 8192 in hf else None,
        "llama_growth_128_to_32768": t(sweep[32768]) / t(sweep[128]) if 128 in sweep and 32768 in sweep else None,
        "course_ms_per_step": t(doc.get("steps", {}).get("course")) / 1e3 if doc.get("steps", {}).get("course") else None,
        "gpt2_cache_speedup_1023": doc.get("cache", {}).get("speedup"),
    }
    out = {}
    for name, target in GOALS.items():
        v = None if doc.get("dry_run") else values[name]  # a CPU stand-in's numbers meet nothing
        at_most = name in ("llama_growth_128_to_32768", "course_ms_per_step")
        met = None if v is None else (v <= target if at_most else v >= target)
        out[name] = {"value": v, "target": target, "at_most" if at_most else "at_least": True, "met": met}
    return out


# --------------------------------------------------------------------------- main


def measure(args, dry_run: bool, log=print) -> dict:
    t0 = time.perf_counter()
    doc = {"kind": "gpu_check", "dry_run": dry_run, "started": provenance.now_utc(),
           "command": provenance.command_line(sys.argv), "git": provenance.git_info(),
           "host": provenance.host_info(), "versions": provenance.versions()}
    session = Session(dry_run)  # no CuPy or no GPU: one line, exit 2, before the tests run
    doc["tests"] = {"ran": False, "note": "--no-tests"} if args.no_tests else run_tests(dry_run)
    log(f"gpu_check: tests: {doc['tests'].get('summary', doc['tests'].get('note'))}")
    doc.update(device=session.backend.device, cuda=session.backend.cuda, peak_bandwidth=session.peak)
    doc["gemv"] = gemv_rates(session, args.repeats)
    for r in doc["gemv"]:
        log(f"gemv {r['name']:<10} [{r['K']} -> {r['N']}]  {r['us']:8.1f} us  {r['tb_s']:.2f} TB/s  {r['pct_peak']:.0f} %")
    dtype = "float32" if dry_run else "float16"
    doc["steps"] = {}
    for shape, ctx in (("course", 128), ("gpt2-small", 512)):
        model = make_model(session, shape, "float32" if shape == "course" else dtype, ctx + args.steps + 1)
        doc["steps"][shape] = time_steps(session, model, ctx if not dry_run else 8, args.steps, args.repeats)
        _log_step(log, shape, doc["steps"][shape])
        del model
    contexts = LLAMA_CONTEXTS if not dry_run else (8, 16, 32)
    model = make_model(session, "llama3-8b", dtype, max(contexts) + args.steps + 1)
    doc["sweep"] = []
    for ctx in contexts:
        doc["sweep"].append(time_steps(session, model, ctx, args.steps, args.repeats))
        _log_step(log, f"llama3-8b x4 {dtype}", doc["sweep"][-1])
    doc["cache"] = cache_speedup(session, args.steps, args.repeats)
    log(f"gpt2-small cache at {doc['cache']['context']}: {doc['cache']['speedup']:.1f}x")
    if dry_run or args.no_transformers:
        doc["transformers"], doc["transformers_note"] = [], "not run (dry run or --no-transformers)"
    else:
        doc["transformers"], doc["transformers_note"] = transformers_rows(session, model, contexts, log)
    doc["goals"] = goals(doc)
    doc["finished"] = provenance.now_utc()
    doc["seconds"] = time.perf_counter() - t0
    for name, g in doc["goals"].items():
        log(f"goal {name}: {g['value'] if g['value'] is None else round(g['value'], 3)} (target {g['target']}): "
            f"{'not measured' if g['met'] is None else 'met' if g['met'] else 'NOT met'}")
    return doc


def _log_step(log, label: str, p: dict) -> None:
    graph = f", graph {p['graph_us']:.1f} us" if "graph_us" in p else ""
    log(f"{label} at {p['context']}: eager {p['eager_us']:.1f} us{graph}, {p['pct_peak']:.1f} % of peak")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        out = writer.check_out_path(Path(args.out))
        if args.steps < 1 or args.repeats < 1:
            raise BenchError("--steps and --repeats must be at least 1")
        print(f"gpu_check: results will be written to {out}")
        dry_run = os.environ.get("KV_GPU_DRY_RUN") == "1"
        doc = measure(args, dry_run)
    except BenchError as e:
        print(f"gpu_check: {e}", file=sys.stderr)
        return e.exit_code
    writer.write_results(doc, out)
    print(f"gpu_check: wrote {out}")
    return 0 if doc["tests"].get("passed", True) else 1


if __name__ == "__main__":
    sys.exit(main())
