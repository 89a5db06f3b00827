"""The built pages that hold demos, and the browser helpers the demo tests and tools share.

They read what the build wrote (which pages hold which demos, the runtime config) rather
than a hand-kept list, so new demos are covered as soon as a page embeds them. Used by
tests/browser and by ``python -m tools.bench.bench_live`` / ``tools.site.page_weight``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from tools.site.server import content_type

_DATA = re.compile(r'<script type="application/json" class="kv-demo__data">(.*?)</script>', re.S)
_RUNTIME = re.compile(r'<script type="application/json" id="kv-demo-runtime">(.*?)</script>', re.S)


@dataclass(frozen=True)
class DemoPage:
    path: str  # relative to the site root, e.g. "zh-TW/plates/05-kv-cache/"
    lang: str
    lessons: tuple[str, ...]
    figures: int  # pre-rendered figures on the page
    runtime: dict


def demo_pages(site: Path) -> list[DemoPage]:
    """Every built page that embeds at least one demo, in a stable order."""
    pages = []
    for html in sorted(site.rglob("index.html")):
        text = html.read_text(encoding="utf-8")
        found = [json.loads(m) for m in _DATA.findall(text)]
        if not found:
            continue
        runtime = json.loads(_RUNTIME.search(text).group(1))
        rel = html.parent.relative_to(site).as_posix()
        pages.append(DemoPage(
            path="" if rel == "." else rel + "/",
            lang=runtime["lang"],
            lessons=tuple(d["lesson"] for d in found),
            figures=sum(len(d["output"]["figures"]) for d in found),
            runtime=runtime,
        ))
    return pages


def prefix_of(template: str) -> str:
    """The fixed start of a message template (before its first {field})."""
    return template.split("{", 1)[0]


def block_pyodide(context, index_url: str) -> list[str]:
    """Make the Pyodide index unreachable (as offline or a blocked CDN would); returns the
    list that collects the URLs the page tried."""
    tried: list[str] = []

    def abort(route):
        tried.append(route.request.url)
        route.abort("internetdisconnected")

    context.route(index_url + "**", abort)
    return tried


def serve_pyodide(context, index_url: str, dist: Path) -> list[str]:
    """Answer requests for the Pyodide index from a local distribution (KV_PYODIDE_DIST).
    Context routes also see the module worker's requests."""
    served: list[str] = []

    def fulfil(route):
        name = route.request.url[len(index_url):].split("?", 1)[0]
        f = (dist / name).resolve()
        if dist.resolve() not in f.parents or not f.is_file():
            route.fulfill(status=404, body=f"not in {dist}: {name}")
            return
        served.append(name)
        route.fulfill(
            status=200,
            body=f.read_bytes(),
            headers={
                "content-type": content_type(f),
                "access-control-allow-origin": "*",
            },
        )

    context.route(index_url + "**", fulfil)
    return served


def diagram_count(html: str) -> int:
    """Mermaid diagrams in a built page (``<pre class="mermaid">`` blocks before rendering)."""
    return html.count('<pre class="mermaid">')


# Resolves when `n` Mermaid diagrams are drawn. Material takes the `mermaid` class off each
# `pre` as it starts (so "no pre.mermaid left" is true too early) and swaps in a
# `div.mermaid` holding the SVG once Mermaid has rendered it.
WAIT_DIAGRAMS = "(n) => document.querySelectorAll('div.mermaid').length >= n"

WAIT_PLOTTED = """(n) => document.documentElement.dataset.kvDemosPlotted === "true"
    && document.querySelectorAll(".kv-demo .kv-plot.js-plotly-plot svg.main-svg").length >= n"""

# Resolves when demo `i` has finished more than `attempts` live runs (with an answer or an
# error) and is idle: no run in flight (aria-busy), none queued or waiting for its debounce.
WAIT_RUN = """([i, attempts]) => {
    const d = document.querySelectorAll(".kv-demo")[i];
    return Number(d.dataset.kvAttempts || 0) > attempts
        && !d.hasAttribute("aria-busy") && d.dataset.kvPending === undefined;
}"""


def attempts(page, i: int) -> int:
    """How many live runs demo ``i`` has finished so far."""
    return int(page.locator(".kv-demo").nth(i).get_attribute("data-kv-attempts") or 0)
