"""The plotly.js the site serves: the cartesian partial bundle, vendored with its zh-TW locale.

``overrides/assets/vendor/plotly/`` holds ``plotly-cartesian.min.js`` (npm
``plotly.js-cartesian-dist-min``, 1.5 MB instead of the full bundle's 4.8 MB) and
``plotly-locale-zh-tw.js`` (npm ``plotly.js``) of the same version; the theme copies the
folder into the site. This module reads what the build must know about that file: its
version (from its banner), the trace types it registers (a figure with any other type would
stay blank in a reader's browser, so the build refuses it) and the paths the runtime loads.
"""
from __future__ import annotations

import functools
import re
from pathlib import Path

VENDOR = Path(__file__).resolve().parents[1] / "assets" / "vendor" / "plotly"
SITE_DIR = "assets/vendor/plotly"  # where the theme puts VENDOR in the built site
BUNDLE = "plotly-cartesian.min.js"
# plotly.js's own translations of its chrome (mode-bar tooltips, date names); English is
# built in. A locale of another plotly.js version may name buttons that do not exist.
LOCALES = {"zh-TW": "plotly-locale-zh-tw.js"}

_BANNER = re.compile(r"plotly\.js \([^)]*\) v(\d+\.\d+\.\d+)")
# Every trace module in a plotly.js dist bundle registers itself as {moduleType:"trace",name}.
_TRACE = re.compile(r'moduleType:"trace",name:"(\w+)"')


class PlotlyBundleError(ValueError):
    """The vendored bundle is missing or unreadable, or a figure needs a trace it lacks."""


@functools.cache
def _bundle_text() -> str:
    path = VENDOR / BUNDLE
    if not path.is_file():
        raise PlotlyBundleError(f"the vendored plotly.js is missing: {path} (see the folder's README)")
    return path.read_text(encoding="utf-8")


def version() -> str:
    """The bundle's plotly.js version, e.g. ``"4.1.1"``."""
    match = _BANNER.search(_bundle_text()[:500])
    if not match:
        raise PlotlyBundleError(f"{VENDOR / BUNDLE} has no 'plotly.js (…) vX.Y.Z' banner")
    return match.group(1)


def trace_types() -> frozenset[str]:
    """The trace types the served bundle can draw (``scatter``, ``bar``, ``heatmap``, …)."""
    return frozenset(_TRACE.findall(_bundle_text()))


def bundle_path() -> str:
    """The bundle's URL relative to the site root; the version in the query busts caches."""
    return f"{SITE_DIR}/{BUNDLE}?v={version()}"


def locale_path(lang: str) -> str | None:
    """The locale file a page in ``lang`` loads, or None (English is built in)."""
    name = LOCALES.get(lang)
    return f"{SITE_DIR}/{name}?v={version()}" if name else None


def figure_trace_types(figure: dict) -> set[str]:
    """The trace types a figure dict uses (plotly.js draws a trace without a type as scatter)."""
    return {str(trace.get("type", "scatter")) for trace in figure.get("data") or []}


def check_traces(figure: dict, where: str) -> None:
    """PlotlyBundleError when ``figure`` uses a trace type the served bundle lacks."""
    missing = sorted(figure_trace_types(figure) - trace_types())
    if missing:
        raise PlotlyBundleError(
            f"{where}: trace type(s) {', '.join(missing)} are not in the served plotly.js "
            f"({BUNDLE} {version()} draws {', '.join(sorted(trace_types()))}); "
            "use one of those, or serve a bundle that has it (overrides/assets/vendor/plotly/README.md)")
