"""Page weight: the bytes a reader's browser downloads for each page, before any interaction.

    .venv/bin/python -m tools.site.page_weight [--site DIR] [--top 3] [--json FILE]

Builds the site (or reads ``--site`` / ``KV_BUILT_SITE``), serves it under its path prefix,
opens every page of both languages in a fresh headless Chromium context (empty cache) and
adds up the uncompressed bytes of every response, the page's workers included, until the
page is settled: loaded, its pre-rendered figures drawn, its diagrams rendered, the network
idle. Prints one row per page: bytes, requests and the biggest files.

The budgets are the project's (tests/browser/test_page_weight.py fails over them): any page
at most 3.5 MB, a page without demos at most 1.5 MB (MB = 1,000,000 bytes). Bytes are
deterministic for a given build, so the test is a test, not a benchmark.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from tools.site import chromium
from tools.site.build import build_or_exit
from tools.site.demo_pages import WAIT_DIAGRAMS, WAIT_PLOTTED, demo_pages, diagram_count
from tools.site.server import serve

BUDGET_BYTES = 3_500_000  # any page
BUDGET_NO_DEMOS_BYTES = 1_500_000  # a page without demos (no plotly.js)
DESKTOP = {"width": 1280, "height": 900}


@dataclass(frozen=True)
class SitePage:
    path: str  # relative to the site root, e.g. "zh-TW/plates/05-kv-cache/"
    figures: int  # pre-rendered demo figures (0: a page without demos)
    diagrams: int  # Mermaid diagrams


@dataclass
class PageWeight:
    path: str
    demos: bool
    bytes: int = 0
    requests: int = 0
    files: list[tuple[str, int]] = field(default_factory=list)  # (URL path, bytes), biggest first
    outside: list[str] = field(default_factory=list)  # requests that left the site (a CDN…)

    @property
    def budget(self) -> int:
        return BUDGET_BYTES if self.demos else BUDGET_NO_DEMOS_BYTES


def site_pages(site: Path) -> list[SitePage]:
    """Every built page (``index.html``; the 404 page aside), in a stable order."""
    figures = {p.path: p.figures for p in demo_pages(site)}
    pages = []
    for html in sorted(site.rglob("index.html")):
        rel = html.parent.relative_to(site).as_posix()
        path = "" if rel == "." else rel + "/"
        pages.append(SitePage(path, figures.get(path, 0), diagram_count(html.read_text(encoding="utf-8"))))
    return pages


def _add_responses(weight: PageWeight, finished) -> None:
    """Sum the body bytes of the finished requests (a redirect or an error counts 0)."""
    sizes: dict[str, int] = {}
    for request in finished:
        response = request.response()
        if response is None or request.url.startswith("data:"):
            continue
        size = len(response.body()) if 200 <= response.status < 300 else 0
        name = urlparse(request.url).path
        sizes[name] = sizes.get(name, 0) + size
        weight.requests += 1
        weight.bytes += size
    weight.files = sorted(sizes.items(), key=lambda kv: -kv[1])


def measure(browser, base_url: str, page: SitePage) -> PageWeight:
    """Open ``page`` in a fresh context (empty cache) and weigh every response it received,
    its workers' included, once it is settled."""
    context = browser.new_context(viewport=DESKTOP)
    finished, outside = [], []
    context.on("requestfinished", lambda request: finished.append(request))
    context.on("request", lambda r: None if r.url.startswith((base_url, "data:")) else outside.append(r.url))
    try:
        pg = context.new_page()
        pg.goto(base_url + page.path, wait_until="load")
        if page.figures:
            pg.wait_for_function(WAIT_PLOTTED, arg=page.figures, timeout=60_000)
        pg.wait_for_function(WAIT_DIAGRAMS, arg=page.diagrams, timeout=30_000)
        pg.wait_for_load_state("networkidle")
        weight = PageWeight(page.path or "/", demos=bool(page.figures), outside=outside)
        _add_responses(weight, finished)
        return weight
    finally:
        context.close()


def measure_site(site: Path) -> list[PageWeight]:
    """Every page of ``site``, measured in one headless Chromium."""
    from playwright.sync_api import sync_playwright

    with serve(site) as base, sync_playwright() as pw:
        browser = chromium.launch(pw)
        try:
            return [measure(browser, base, p) for p in site_pages(site)]
        finally:
            browser.close()


def _short(path: str, prefix_len: int) -> str:
    return path[prefix_len:].rsplit("/", 1)[-1] or path


def table(weights: list[PageWeight], top: int) -> str:
    lines = [f"{'page':36} {'bytes':>11} {'req':>4}  {'budget':>6}  biggest files"]
    for w in weights:
        biggest = ", ".join(f"{_short(n, 0)} {b / 1e6:.2f} MB" for n, b in w.files[:top])
        ok = "ok" if w.bytes <= w.budget else "OVER"
        lines.append(f"{w.path:36} {w.bytes:>11,} {w.requests:>4}  {ok:>6}  {biggest}")
    total = sum(w.bytes for w in weights)
    lines.append(f"{len(weights)} pages, {total:,} bytes in all; budgets: {BUDGET_BYTES:,} bytes a page, "
                 f"{BUDGET_NO_DEMOS_BYTES:,} without demos")
    return "\n".join(lines)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--site", type=Path, default=os.environ.get("KV_BUILT_SITE"),
                    help="a built site (default: build one into a temporary folder)")
    ap.add_argument("--top", type=int, default=3, help="biggest files listed per page")
    ap.add_argument("--json", type=Path, help="also write the numbers to this JSON file")
    args = ap.parse_args(argv)
    if not Path(chromium.path()).is_file():
        sys.exit(f"Chromium not found at {chromium.path()} (install it, or set KV_CHROMIUM)")
    with tempfile.TemporaryDirectory(prefix="kv-weight-site-") as tmp:
        site = Path(args.site) if args.site else Path(tmp)
        if not args.site:
            build_or_exit(site)
        weights = measure_site(site)
    print(table(weights, args.top))
    if args.json:
        args.json.write_text(json.dumps([asdict(w) for w in weights], indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
