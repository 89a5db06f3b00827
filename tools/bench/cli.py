"""Command line of ``python -m tools.bench``: parse options, pin threads, run, print, write JSON."""
from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from engine.bench_results import schema, store
from tools.bench import report
from tools.bench import writer
from tools.bench.backend import BenchError
from tools.bench.runner import Options, SweepInterrupted, run_benchmark
from tools.bench.steps import STEP_PATHS
from tools.bench.sweep_shapes import SHAPE_KEYS

THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
              "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
_REEXEC_MARK = "KV_BENCH_REEXEC"


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit code 2, like argparse, but no usage dump
        raise BenchError(message)


def _csv(kind):
    def parse(text: str):
        try:
            return tuple(kind(x) for x in text.split(",") if x.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}") from None

    return parse


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python -m tools.bench",
                description="Time prefill and decode with and without the KV cache; write results JSON.")
    p.add_argument("--backend", choices=("numpy", "cupy"), default="numpy")
    p.add_argument("--quick", action="store_true", help="a short sweep (under a minute on a CPU)")
    p.add_argument("--shapes", type=_csv(str), default=None,
                   help=f"comma-separated, from {', '.join(SHAPE_KEYS)} "
                        "(default: course,gpt2-small,llama3-8b; --quick: course,gpt2-small)")
    p.add_argument("--dtypes", type=_csv(str), default=None, help="float32,float16 (default: float32 on "
                   "NumPy, both on CuPy)")
    p.add_argument("--contexts", type=_csv(int), default=None, help="override every shape's context lengths")
    p.add_argument("--llama-layers", type=int, default=None, help="layers of the Llama 3 8B-shaped stack "
                   "(default 1 on NumPy, 4 on CuPy)")
    p.add_argument("--warmup", type=int, default=None)
    p.add_argument("--repeats", type=int, default=None)
    p.add_argument("--max-point-seconds", type=float, default=None,
                   help="skip a prefill / no-cache measurement whose estimated cost is larger")
    p.add_argument("--min-point-seconds", type=float, default=None,
                   help="keep sampling a cheap step until this much time is measured (more samples, steadier medians)")
    p.add_argument("--max-temp-gib", type=float, default=None,
                   help="skip a prefill / no-cache measurement whose attention scores need more memory")
    p.add_argument("--peak-bw-gbs", type=float, default=None,
                   help="peak memory bandwidth in GB/s to compare against (default: the GPU's datasheet, "
                        "or a measured copy bandwidth on a CPU)")
    p.add_argument("--threads", type=int, default=1,
                   help="CPU threads for NumPy/BLAS and PyTorch (default 1; 0 leaves them alone)")
    p.add_argument("--deadline-s", type=float, default=None,
                   help="start no new measurement after this many seconds (the file notes what is missing)")
    p.add_argument("--no-compare", action="store_true", help="skip the Hugging Face transformers comparison")
    p.add_argument("--step", choices=STEP_PATHS, default="auto",
                   help="the cached step timed: the engine's forward, the fused GPU step (engine/gpu), or auto "
                        "(fused on a GPU whose kernel set exists, else engine)")
    p.add_argument("--out", type=Path, default=None,
                   help="results file (default engine/bench_results/results/<cpu|gpu>-<backend>-<device>.json)")
    p.add_argument("--no-write", action="store_true", help="print only, write no file")
    p.add_argument("--check", action="store_true",
                   help="check the options and the results file's place, then exit without measuring")
    return p


def options_from_args(args: argparse.Namespace, argv: list[str]) -> Options:
    quick = args.quick
    gpu = args.backend == "cupy"
    shapes = args.shapes or (("course", "gpt2-small") if quick else ("course", "gpt2-small", "llama3-8b"))
    for v, name in ((args.warmup, "--warmup"), (args.repeats, "--repeats"), (args.llama_layers, "--llama-layers")):
        if v is not None and v < (0 if name == "--warmup" else 1):
            raise BenchError(f"{name} must be {'>= 0' if name == '--warmup' else '>= 1'}, got {v}")
    if args.peak_bw_gbs is not None and not args.peak_bw_gbs > 0:
        raise BenchError(f"--peak-bw-gbs must be a positive number, got {args.peak_bw_gbs}")
    if args.contexts and min(args.contexts) < 1:
        raise BenchError("--contexts must be positive token counts")
    return Options(
        backend=args.backend,
        shapes=tuple(shapes),
        dtypes=args.dtypes,
        contexts=args.contexts,
        quick=quick,
        warmup=args.warmup if args.warmup is not None else (1 if quick else 2),
        repeats=args.repeats if args.repeats is not None else (5 if quick else 10),
        max_point_seconds=args.max_point_seconds or (2.0 if quick else (30.0 if gpu else 15.0)),
        min_point_seconds=args.min_point_seconds if args.min_point_seconds is not None else (0.1 if quick else 0.3),
        max_temp_gib=args.max_temp_gib or (32.0 if gpu else 2.0),
        llama_layers=args.llama_layers,
        peak_bw_gbs=args.peak_bw_gbs,
        compare=not args.no_compare,
        deadline_s=args.deadline_s,
        step=args.step,
        argv=list(argv),
    )


# --------------------------------------------------------------------------- threads


def pin_threads(n: int) -> dict | None:
    """Limit BLAS/OpenMP pools to ``n`` threads; None when only a restart can do it.

    threadpoolctl can change the pools of an already-loaded BLAS; without it the pool
    sizes are read from the environment when NumPy loads its BLAS, so the CLI restarts
    itself with the variables set (the results say which way was used).
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        if all(os.environ.get(v) == str(n) for v in THREAD_ENV):
            return {"pinned": True, "method": "env", "count": n}
        return None
    pin_threads.limiter = threadpool_limits(limits=n)  # keep a reference: the limit lasts while it lives
    return {"pinned": True, "method": "threadpoolctl", "count": n}


def _reexec_with_env(n: int, argv: list[str]) -> None:
    env = dict(os.environ, **{v: str(n) for v in THREAD_ENV}, **{_REEXEC_MARK: "1"})
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, "-m", "tools.bench", *argv], env)


# --------------------------------------------------------------------------- main


def resolve_out(args: argparse.Namespace) -> Path | None:
    """The results file this run will write, checked before anything is measured (None: --no-write).

    Without --out the default name needs the device's name, so the backend is asked first
    (a missing CuPy is reported here too, still before any timing).
    """
    if args.no_write:
        return None
    if args.out is not None:
        return writer.check_out_path(args.out)
    from tools.bench.backend import get_backend

    backend = get_backend(args.backend)
    return writer.check_out_path(writer.default_out_path(backend.name, backend.device), option="default results file")


def _threads(args: argparse.Namespace, argv: list[str]) -> dict | None:
    """Pin BLAS threads for a NumPy run (may restart the process; see pin_threads)."""
    if args.backend != "numpy":
        return None
    if args.threads <= 0:
        return {"pinned": False, "method": "none", "count": None}
    threads = pin_threads(args.threads)
    if threads is None:
        if os.environ.get(_REEXEC_MARK):
            raise BenchError("could not pin BLAS threads through the environment")
        _reexec_with_env(args.threads, argv)  # does not return
    return threads


def _validate(doc: dict) -> None:
    """Check the document against schema.json (jsonschema or the built-in check): a
    violation is a bug in the harness, so say so loudly but keep the numbers."""
    try:
        used = schema.validate(doc)
    except schema.ResultsInvalid as e:
        print(f"tools.bench: warning: results do not match schema.json: {e}", file=sys.stderr)
        return
    print(f"tools.bench: results match schema.json ({used} check)", file=sys.stderr)


def save(doc: dict, out: Path) -> int:
    """Write the results; if that fails, keep them anyway (temporary file + printed JSON), exit 1."""
    try:
        writer.write_results(doc, out)
    except OSError as e:
        fallback = writer.write_fallback(doc)
        print(writer.dumps(doc), end="")
        where = f"saved to {fallback} and printed above" if fallback else "printed above (the temporary folder failed too)"
        print(f"tools.bench: error: could not write {out} ({e.strerror or e}); the results are {where}",
              file=sys.stderr)
        return 1
    print(f"wrote {out}")
    return 0


def _terminated(signum, frame):
    """SIGTERM (``timeout``, a job scheduler) stops a sweep like Ctrl-C: the runs done are kept."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    status = 0
    try:
        args = build_parser().parse_args(argv)
        opts = options_from_args(args, argv)
        out = resolve_out(args)
        if args.check:
            print(f"tools.bench: options ok; results would go to {out}" if out else "tools.bench: options ok")
            return 0
        threads = _threads(args, argv)
        if threads and threads["pinned"]:
            opts.threads = threads["count"]
        previous = signal.signal(signal.SIGTERM, _terminated)
        try:
            doc = run_benchmark(opts, threads=threads, log=lambda m: print(m, file=sys.stderr, flush=True))
        finally:
            signal.signal(signal.SIGTERM, previous)
    except SweepInterrupted as e:
        print("tools.bench: interrupted; keeping the runs measured so far", file=sys.stderr)
        doc, status = e.doc, 130
    except BenchError as e:
        print(f"tools.bench: error: {e}", file=sys.stderr)
        return BenchError.exit_code
    except KeyboardInterrupt:
        print("tools.bench: interrupted", file=sys.stderr)
        return 130

    print(report.render(doc))
    _validate(doc)
    saved = 0 if out is None else save(doc, out)
    return status or saved
