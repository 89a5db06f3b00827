"""Browser benchmark of the live demos (a benchmark that prints numbers, not a test).

    KV_PYODIDE_DIST=/work/pyodide-dist .venv/bin/python -m tools.bench.bench_live [--site DIR] [--changes 7]

Measures, in headless Chromium with Pyodide answered from a local distribution
(tools/site/pyodide_local.md):

- first paint of each demo page with the demo runtime and with kv-demos.mjs blocked
  (first-contentful-paint, median of --paints loads): the demos must not delay it;
- cold start: click "Run live" on a page's first demo -> first live result drawn
  (Pyodide runtime + NumPy + course wheel + the lesson's first run);
- warm latency per demo: change one control and press "Run live" -> result drawn, median of
  --changes changes; also the part spent inside Python. Goal: warm <= 200 ms for every demo.

Without --site it builds the site (mkdocs build) into a temporary folder first.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path

from tools.site import chromium
from tools.site.build import build_or_exit
from tools.site.demo_pages import WAIT_PLOTTED, demo_pages, serve_pyodide
from tools.site.server import serve

GOAL_MS = 200

# Press "Run live" on demo i and resolve with the wall time (ms) until that run finished.
TIMED_RUN = """async (i) => {
    const d = document.querySelectorAll(".kv-demo")[i];
    const before = Number(d.dataset.kvAttempts || 0);
    const t0 = performance.now();
    d.querySelector(".kv-demo__run").click();
    await new Promise((resolve) => {
        const check = () => Number(d.dataset.kvAttempts || 0) > before ? resolve() : requestAnimationFrame(check);
        check();
    });
    // One more frame: the figure has been handed to the browser to paint.
    await new Promise((r) => requestAnimationFrame(() => r()));
    return {ms: performance.now() - t0, ok: !d.querySelector(".kv-demo__status--error"),
            compute: Number(d.dataset.kvComputeMs || NaN),
            status: d.querySelector(".kv-demo__status").textContent};
}"""

# Flip one control of demo i between two values without firing its events (the timed
# "Run live" click then reads it). Returns a description of the control.
FLIP = """([i, k]) => {
    const d = document.querySelectorAll(".kv-demo")[i];
    const pick = (sel) => d.querySelector(sel);
    let c = pick('input[type="range"]');
    if (c) {
        if (!c.dataset.kvHome) c.dataset.kvHome = c.value;
        const home = Number(c.dataset.kvHome), step = Number(c.step) || 1;
        const other = home + step <= Number(c.max) ? home + step : home - step;
        c.value = String(k % 2 ? other : home);
        return `slider ${c.name}=${c.value}`;
    }
    c = pick("select");
    if (c) {
        if (!c.dataset.kvHome) c.dataset.kvHome = c.value;
        const other = [...c.options].map((o) => o.value).find((v) => v !== c.dataset.kvHome);
        c.value = k % 2 ? other : c.dataset.kvHome;
        return `select ${c.name}=${c.value}`;
    }
    c = pick('input[type="checkbox"]');
    if (c) { c.checked = !c.checked; return `checkbox ${c.name}`; }
    c = pick('input[type="text"]');
    if (c) {
        if (c.dataset.kvHome === undefined) c.dataset.kvHome = c.value;
        c.value = k % 2 ? c.dataset.kvHome + " the" : c.dataset.kvHome;
        return `text ${c.name}`;
    }
    return "run only";
}"""

FCP = """() => new Promise((resolve) => {
    const e = performance.getEntriesByName("first-contentful-paint")[0];
    if (e) return resolve(e.startTime);
    new PerformanceObserver((list) => resolve(list.getEntries()[0].startTime)).observe({type: "paint", buffered: true});
})"""


def first_paint(browser, url: str, block_demos: bool, n: int) -> float:
    times = []
    for _ in range(n):
        ctx = browser.new_context()
        if block_demos:
            ctx.route("**/kv-demos.mjs", lambda r: r.abort())
        pg = ctx.new_page()
        pg.goto(url)
        times.append(pg.evaluate(FCP))
        ctx.close()
    return statistics.median(times)


def warm_rows(pg, p, changes: int) -> list[dict]:
    """Median warm latency of each demo of page ``p`` over ``changes`` control changes."""
    rows = []
    for i, lesson in enumerate(p.lessons):
        e2e, compute, control = [], [], ""
        for k in range(changes + 1):
            control = pg.evaluate(FLIP, [i, k + 1]) or control
            r = pg.evaluate(TIMED_RUN, i)
            if not r["ok"]:
                sys.exit(f"{p.path} {lesson}: {r['status']}")
            if k:  # the first change of a demo pays its own warm-up (model load, caches)
                e2e.append(r["ms"])
                compute.append(r["compute"])
        rows.append({"page": p.path or "/", "lesson": lesson, "control": control,
                     "warm_ms": statistics.median(e2e), "python_ms": statistics.median(compute),
                     "max_ms": max(e2e)})
    return rows


def measure(browser, base: str, pages, args) -> tuple[list, list, list]:
    """(first paints, cold starts, warm rows) of every page, each in a fresh context."""
    paints, colds, rows = [], [], []
    for p in pages:
        url = base + p.path
        paints.append((p.path, first_paint(browser, url, False, args.paints),
                       first_paint(browser, url, True, args.paints)))
        ctx = browser.new_context()
        serve_pyodide(ctx, p.runtime["pyodide"]["indexURL"], Path(args.dist))
        pg = ctx.new_page()
        pg.goto(url)
        pg.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=60_000)
        cold = pg.evaluate(TIMED_RUN, 0)
        if not cold["ok"]:
            sys.exit(f"{p.path}: the first live run failed: {cold['status']}")
        colds.append((p.path, cold["ms"]))
        rows += warm_rows(pg, p, args.changes)
        ctx.close()
    return paints, colds, rows


def report(version: str, args, paints, colds, rows) -> None:
    lock = json.loads((Path(args.dist) / "pyodide-lock.json").read_text())
    print(f"\nChromium {version}, Pyodide {lock['info'].get('version')} (local copy), "
          f"{platform.machine()} with {os.cpu_count()} CPUs, {args.changes} warm changes per demo\n")
    print(f"{'page':32} {'FCP ms':>8} {'FCP ms, no demo JS':>19} {'cold start ms':>14}")
    for (path, with_js, without), (_, cold) in zip(paints, colds):
        print(f"{path or '/':32} {with_js:8.0f} {without:19.0f} {cold:14.0f}")
    print(f"\n{'lesson':16} {'page':30} {'control':30} {'warm ms':>8} {'in Python':>10} {'max':>6}  goal ≤{GOAL_MS}")
    for r in rows:
        ok = "yes" if r["warm_ms"] <= GOAL_MS else "NO"
        print(f"{r['lesson']:16} {r['page']:30} {r['control'][:30]:30} {r['warm_ms']:8.0f} {r['python_ms']:10.1f} {r['max_ms']:6.0f}  {ok}")
    if args.json:
        args.json.write_text(json.dumps({"chromium": version, "pyodide": lock["info"].get("version"),
                                         "first_paint": paints, "cold_start": colds, "warm": rows}, indent=2))


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--site", type=Path, default=os.environ.get("KV_BUILT_SITE"))
    ap.add_argument("--dist", type=Path, default=os.environ.get("KV_PYODIDE_DIST"))
    ap.add_argument("--changes", type=int, default=7, help="warm control changes per demo")
    ap.add_argument("--paints", type=int, default=3, help="page loads per first-paint median")
    ap.add_argument("--lang", default="en")
    ap.add_argument("--json", type=Path, help="also write the numbers to this JSON file")
    args = ap.parse_args(argv)
    if not args.dist or not (Path(args.dist) / "pyodide.mjs").is_file():
        sys.exit("set KV_PYODIDE_DIST (or --dist) to a local Pyodide distribution; see tools/site/pyodide_local.md")
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="kv-bench-site-") as tmp:
        site = Path(args.site) if args.site else Path(tmp)
        if not args.site:
            build_or_exit(site)
        pages = [p for p in demo_pages(site) if p.lang == args.lang]
        if not pages:
            sys.exit(f"no {args.lang} page with a demo in {site}")
        with serve(site) as base, sync_playwright() as pw:
            browser = chromium.launch(pw)
            paints, colds, rows = measure(browser, base, pages, args)
            version = browser.version
            browser.close()
    report(version, args, paints, colds, rows)


if __name__ == "__main__":
    main()
