"""Time every lesson's default run in CPython, as the build does (not a test: prints numbers).

    .venv/bin/python -m tools.bench.bench_lessons            # both languages, 5 timed runs each
    .venv/bin/python -m tools.bench.bench_lessons --repeat 20 next_token kv_cache

The first run of a lesson includes loading the course model (load_course_model's cache) and
any per-lesson caches; the median of the later runs is what a reader waits for once warm.
Goal from the brief: well under 200 ms per run in the browser; CPython here is a lower bound
(Pyodide is typically a few times slower).
"""
from __future__ import annotations

import os

# Pyodide runs NumPy on one thread: measure the same way (and avoid BLAS threads fighting
# over a busy machine). Set before NumPy is imported; an explicit setting wins.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402

from engine.timing import HostClock, measure  # noqa: E402
from lessons.common import registry  # noqa: E402

LESSONS = [n for n in registry.LESSONS if not n.startswith("bench")]


def bench(name: str, lang: str, repeat: int) -> dict:
    clock = HostClock()
    clock.start()
    first = json.loads(registry.run_json(name, "{}", lang))
    cold = clock.stop()
    if not first["ok"]:
        return {"lesson": name, "lang": lang, "error": first["error"]}
    warm = measure(lambda: registry.run_json(name, "{}", lang), clock, warmup=0, repeats=repeat)
    return {"lesson": name, "lang": lang, "cold_s": cold, "median_s": warm.median, "max_s": warm.max, "runs": warm.n}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("lessons", nargs="*", default=LESSONS)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", action="store_true", help="print JSON lines instead of a table")
    args = ap.parse_args()
    import numpy

    print(f"# CPython {platform.python_version()}, NumPy {numpy.__version__}, {platform.machine()}, "
          f"{os.environ['OMP_NUM_THREADS']} BLAS thread(s), "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"{'lesson':<15}{'lang':<7}{'cold ms':>10}{'median ms':>11}{'max ms':>10}")
    for name in args.lessons:
        for lang in ("en", "zh-TW"):
            r = bench(name, lang, args.repeat)
            if args.json:
                print(json.dumps(r, ensure_ascii=False))
            elif "error" in r:
                print(f"{name:<15}{lang:<7}  error: {r['error']['message']}")
            else:
                print(f"{name:<15}{lang:<7}{r['cold_s'] * 1e3:>10.1f}{r['median_s'] * 1e3:>11.1f}{r['max_s'] * 1e3:>10.1f}")


if __name__ == "__main__":
    main()
