"""Build-time benchmark of the site: seconds for both languages, for each alone, page counts.

    python tools/bench/bench_build.py [--repeat 3] [--json]

Each run is a real ``mkdocs build --strict`` into a temporary folder, in a fresh process (as a
writer or CI would run it); the wall time includes Python start-up and the demo hook's
pre-rendering. A benchmark, not a test: it prints numbers and asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from engine.timing import HostClock, measure

ROOT = Path(__file__).resolve().parents[2]
LOCALES = ("en", "zh-TW")


def build(only_locale: str | None) -> tuple[Path, tempfile.TemporaryDirectory]:
    tmp = tempfile.TemporaryDirectory(prefix="kv-bench-site-")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    env.pop("KV_ONLY_LOCALE", None)
    if only_locale:
        env["KV_ONLY_LOCALE"] = only_locale
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q",
                           "--site-dir", tmp.name], cwd=ROOT, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"mkdocs build failed ({only_locale or 'all languages'}):\n{proc.stderr[-3000:]}")
    return Path(tmp.name), tmp


def page_counts(site: Path, only_locale: str | None) -> dict[str, int]:
    """HTML pages per language (404.html not counted). A full build puts zh-TW under zh-TW/;
    a one-language build puts that language at the root."""
    pages = [p for p in site.rglob("index.html")]
    if only_locale:
        return {only_locale: len(pages)}
    zh = sum(1 for p in pages if p.relative_to(site).parts[0] == "zh-TW")
    return {"en": len(pages) - zh, "zh-TW": zh}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="builds per configuration (median)")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead")
    args = parser.parse_args()

    results: dict = {"python": platform.python_version(), "cpus": os.cpu_count(), "builds": {}}
    for only in (None, *LOCALES):
        counts = {}

        def one_build(only=only) -> None:
            site, tmp = build(only)
            counts.update(page_counts(site, only))
            tmp.cleanup()

        stats = measure(one_build, HostClock(), warmup=0, repeats=args.repeat)  # the one timing loop
        results["builds"][only or "both"] = {"seconds_median": round(stats.median, 2), "seconds_min": round(stats.min, 2),
                                             "seconds_max": round(stats.max, 2), "runs": stats.n, "pages": counts}
    if args.json:
        print(json.dumps(results, indent=2))
        return
    print(f"mkdocs build --strict, median of {args.repeat} run(s); "
          f"Python {results['python']}, {results['cpus']} CPUs")
    for name, r in results["builds"].items():
        pages = ", ".join(f"{k}: {v}" for k, v in r["pages"].items() if v)
        print(f"  {name:6s} {r['seconds_median']:7.2f} s   pages ({pages})")


if __name__ == "__main__":
    main()
