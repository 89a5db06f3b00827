"""Browser benchmark of the live demos (a benchmark that prints numbers, not a test).

    KV_PYODIDE_DIST=/work/pyodide-dist .venv/bin/python -m tools.bench.bench_live [--site DIR] [--changes 7]

Measures, in headless Chromium with Pyodide answered from a local distribution
(tools/site/pyodide_local.md):

- first paint of each demo page with the demo runtime and with kv-demos.mjs blocked
  (first-contentful-paint, median of --paints loads): the demos must not delay it;
- cold start: click "Run live" on a page's first demo -> first live result drawn
  (Pyodide runtime + NumPy + course wheel + the lesson's first run);
- warm latency per demo and control: change that control and press "Run live" -> result
  drawn, median of --changes changes of each control in turn (engine.timing's loop, read from
  the page's own clock); also the part spent inside Python. Goal: warm <= 200 ms for every
  demo and control.

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

from engine.timing import measure_in_turn
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

# Flip control c of demo i (its controls in page order) between its value and another one,
# without firing its events (the timed "Run live" click then reads it). Returns a
# description of the control, or null when the demo has no control c.
FLIP = """([i, c, k]) => {
    const d = document.querySelectorAll(".kv-demo")[i];
    const ctl = [...d.querySelectorAll("[data-kind]")][c];
    if (!ctl) return null;
    const kind = ctl.dataset.kind;
    if (ctl.dataset.kvHome === undefined) ctl.dataset.kvHome = kind === "checkbox" ? String(ctl.checked) : ctl.value;
    const home = ctl.dataset.kvHome;
    if (kind === "slider") {
        const step = Number(ctl.step) || 1;
        const other = Number(home) + step <= Number(ctl.max) ? Number(home) + step : Number(home) - step;
        ctl.value = String(k % 2 ? other : home);
    } else if (kind === "select") {
        const other = [...ctl.options].map((o) => o.value).find((v) => v !== home);
        ctl.value = k % 2 && other !== undefined ? other : home;
    } else if (kind === "checkbox") {
        ctl.checked = k % 2 ? home !== "true" : home === "true";
    } else {
        ctl.value = k % 2 ? home + " the" : home;
    }
    return `${kind} ${ctl.name}=${kind === "checkbox" ? ctl.checked : ctl.value}`;
}"""


class PageClock:
    """The page's own clock (engine.timing's Clock interface): a timed run reports the
    milliseconds it measured with performance.now(), from the click to the drawn figure."""

    name = "performance.now"

    def __init__(self):
        self.last: dict | None = None

    def sync(self) -> None:
        pass

    def start(self) -> None:
        self.last = None

    def stop(self) -> float:
        return self.last["ms"] / 1e3


FCP = """() => new Promise((resolve) => {
    const e = performance.getEntriesByName("first-contentful-paint")[0];
    if (e) return resolve(e.startTime);
    new PerformanceObserver((list) => resolve(list.getEntries()[0].startTime)).observe({type: "paint", buffered: true});
})"""


def first_paint(browser, url: str, block_demos: bool, n: int) -> float:
    """Median first-contentful-paint (ms) of ``n`` loads of ``url``, each in a fresh context."""
    clock = PageClock()

    def load() -> None:
        ctx = browser.new_context()
        if block_demos:
            ctx.route("**/kv-demos.mjs", lambda r: r.abort())
        pg = ctx.new_page()
        pg.goto(url)
        clock.last = {"ms": pg.evaluate(FCP)}
        ctx.close()

    return measure_in_turn({"load": load}, clock, warmup=0, repeats=n)["load"].median * 1e3


def warm_rows(pg, p, changes: int) -> list[dict]:
    """Warm latency of each control of each demo of page ``p``: ``changes`` changes of that
    control, after one that pays its own warm-up (caches of a new value); the median, the
    maximum and the part spent inside Python."""
    rows = []
    for i, lesson in enumerate(p.lessons):
        c = 0
        while (row := _control_row(pg, p, i, lesson, c, changes)) is not None:
            rows.append(row)
            c += 1
        if c == 0:  # a demo without controls: its "Run live" alone
            rows.append(_control_row(pg, p, i, lesson, None, changes))
    return rows


def _control_row(pg, p, i: int, lesson: str, c: int | None, changes: int) -> dict | None:
    clock, flips, compute = PageClock(), [0], []
    control = "run only" if c is None else pg.evaluate(FLIP, [i, c, 0])
    if control is None:
        return None

    def change() -> None:
        flips[0] += 1
        if c is not None:
            pg.evaluate(FLIP, [i, c, flips[0]])
        r = pg.evaluate(TIMED_RUN, i)
        if not r["ok"]:
            sys.exit(f"{p.path} {lesson} ({control}): {r['status']}")
        clock.last = r
        compute.append(r["compute"])

    stats = measure_in_turn({control: change}, clock, warmup=1, repeats=changes)[control]
    if c is not None:
        pg.evaluate(FLIP, [i, c, 0])  # back to its value for the next control
    return {"page": p.path or "/", "lesson": lesson, "control": control.split("=")[0], "warm_ms": stats.median * 1e3,
            "python_ms": statistics.median(compute[1:]), "max_ms": stats.max * 1e3}


def measure_pages(browser, base: str, pages, args) -> tuple[list, list, list]:
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
          f"{platform.machine()} with {os.cpu_count()} CPUs, {args.changes} warm changes per control\n")
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
    ap.add_argument("--changes", type=int, default=5, help="warm changes of each control of each demo")
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
            paints, colds, rows = measure_pages(browser, base, pages, args)
            version = browser.version
            browser.close()
    report(version, args, paints, colds, rows)


if __name__ == "__main__":
    main()
