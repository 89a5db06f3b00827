"""Shared helpers for lesson output: Plotly figure dicts, data tables, number formats.

Lessons build Plotly figures as plain dicts (Pyodide never imports ``plotly``); these
helpers keep the look (colours, fonts, margins) and the number formats the same in every
demo and in both languages. Nothing here knows about transformers.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

from lessons.base import tr

# Okabe–Ito palette: distinguishable with the common colour-vision deficiencies and
# readable on both Material palettes (the browser runtime re-themes paper/font colours).
COLORS = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "sky": "#56B4E9",
    "purple": "#CC79A7",
    "yellow": "#F0E442",
    "grey": "#8C8C8C",
}
SEQUENCE = [COLORS[k] for k in ("blue", "orange", "green", "vermillion", "sky", "purple", "yellow", "grey")]
HIGHLIGHT = COLORS["vermillion"]
MUTED = COLORS["sky"]

# Fonts with CJK coverage first on the systems that have them; Plotly falls back in order.
FONT_FAMILY = ('"Noto Sans TC", "PingFang TC", "Microsoft JhengHei", "Noto Sans CJK TC", '
               '"Roboto", "Helvetica Neue", Arial, sans-serif')


# --------------------------------------------------------------------------- layouts


# Legends sit in a row above the plot area, left-aligned: below it they collided with the
# x-axis title, and Plotly grows the top margin to fit a legend that wraps on a phone.
LEGEND = {"orientation": "h", "x": 0, "xanchor": "left", "y": 1.02, "yanchor": "bottom"}


def layout(title: str, x_title: str = "", y_title: str = "", **extra: Any) -> dict:
    """A Plotly layout dict with the course's common look.

    ``title`` is *not* put into the layout: the demo's ``<figcaption>`` shows the figure's
    title (and names the plot for screen readers); a Plotly title repeated it and cost the
    top margin. The argument stays so every call site reads as "this layout is for that
    title". Backgrounds are transparent so the page palette shows through; the browser
    runtime sets font and grid colours for light/dark and narrows margins on small screens.
    ``extra`` is merged in last (axis dicts are merged key by key so
    ``xaxis={"type": "log"}`` keeps the title).
    """
    del title  # shown by the figcaption, see the docstring
    base = {
        "font": {"family": FONT_FAMILY, "size": 13},
        "margin": {"l": 60, "r": 20, "t": 20, "b": 55},
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "xaxis": {"title": {"text": x_title}, "automargin": True},
        "yaxis": {"title": {"text": y_title}, "automargin": True},
        "legend": dict(LEGEND),
        "colorway": SEQUENCE,
        "hoverlabel": {"font": {"family": FONT_FAMILY}},
    }
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            base[key] = {**base[key], **value}
        else:
            base[key] = value
    return base


def zero_based_axis(max_value: float, headroom: float = 1.08) -> dict:
    """Axis settings for a quantity that starts at 0: an explicit range ``[0, max·headroom]``
    and a tick format with just enough decimals for ``max_value``.

    Plotly's own ``rangemode: "tozero"`` can still put a tick at a floating-point dust value
    (a "2.74e-15" under the 0 on a secondary axis); a fixed range and a fixed-point format
    rule that out: dust prints as "0".
    """
    top = float(max_value) * headroom if max_value > 0 else 1.0
    decimals = max(0, 2 - math.floor(math.log10(top)))
    return {"range": [0, top], "autorange": False, "rangemode": "tozero", "tick0": 0,
            "tickformat": f",.{decimals}~f"}


def figure(key: str, title: str, data: list, layout_: dict, columns: Sequence[str], rows: Iterable[Sequence]) -> dict:
    """One entry of Output["figures"]: the Plotly dict plus the data table behind it."""
    rows = [list(r) for r in rows]
    assert all(len(r) == len(columns) for r in rows), "table rows must match the columns"
    return {
        "key": key,
        "title": title,
        "figure": {"data": data, "layout": layout_},
        "table": {"columns": list(columns), "rows": rows},
    }


def table(title: str, columns: Sequence[str], rows: Iterable[Sequence]) -> dict:
    """One entry of Output["tables"]."""
    rows = [list(r) for r in rows]
    assert all(len(r) == len(columns) for r in rows), "table rows must match the columns"
    return {"title": title, "columns": list(columns), "rows": rows}


def floats(values: Iterable, digits: int = 6) -> list[float]:
    """Plain Python floats (JSON-safe, rounded to ``digits`` significant digits).

    NumPy scalars are not JSON types, and NaN/inf are not valid JSON: both would break
    the Pyodide boundary, so they are caught here instead of in the browser.
    """
    out = []
    for v in values:
        f = float(v)
        if not math.isfinite(f):
            raise ValueError(f"non-finite value {f!r} in figure data")
        out.append(float(f"{f:.{digits}g}"))
    return out


# --------------------------------------------------------------------------- formats

_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def fmt_int(n: int | float) -> str:
    """1234567 -> '1,234,567' (the same in both languages)."""
    return f"{int(round(n)):,}"


def fmt_bytes(n: int | float) -> str:
    """Binary units with one decimal where needed: 4096 -> '4 KiB', 2.4e6 -> '2.3 MiB'."""
    n = float(n)
    if n < 1024:
        return f"{int(round(n)):,} B"
    i = min(int(math.log(n, 1024)), len(_BINARY_UNITS) - 1)
    value = n / 1024**i
    if value >= 1023.95 and i < len(_BINARY_UNITS) - 1:  # 1023.97 KiB would print as "1,024.0"
        i, value = i + 1, value / 1024
    text = f"{value:,.1f}"
    if text.endswith(".0"):
        text = text[:-2]
    return f"{text} {_BINARY_UNITS[i]}"


_SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def fmt_si(n: float, unit: str, digits: int = 3) -> str:
    """Decimal SI prefix for rates and counts: 3.35e12, 'B/s' -> '3.35 TB/s'."""
    n = float(n)
    for scale, prefix in _SI:
        if abs(n) >= scale:
            return f"{n / scale:.{digits}g} {prefix}{unit}"
    return f"{n:.{digits}g} {unit}"


def fmt_seconds(s: float) -> str:
    """Seconds with a readable unit: 0.00042 -> '420 µs'."""
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def t(text: dict, lang: str) -> str:
    """Short alias of :func:`lessons.base.tr` for the many labels lessons pick."""
    return tr(text, lang)


def show_piece(piece: str) -> str:
    """A token piece made visible as an axis label: leading space as ␣, newline as ↵, tab as ⇥."""
    out = piece.replace("\n", "↵").replace("\t", "⇥").replace("\r", "␍")
    if out.startswith(" "):
        out = "␣" + out[1:]
    return out or "∅"


def unique_labels(labels: Sequence[str], ids: Sequence[int]) -> list[str]:
    """Category labels for a Plotly axis: a label shown twice gets its token id appended,
    because Plotly merges equal categories into one bar."""
    seen: dict[str, int] = {}
    for lbl in labels:
        seen[lbl] = seen.get(lbl, 0) + 1
    return [f"{lbl} #{i}" if seen[lbl] > 1 else lbl for lbl, i in zip(labels, ids)]
