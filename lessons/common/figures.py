"""Shared helpers for lesson output: Plotly figure dicts, data tables, number formats.

Lessons build Plotly figures as plain dicts (Pyodide never imports ``plotly``); these
helpers keep the look (colours, fonts, margins) and the number formats the same in every
demo and in both languages. Nothing here knows about transformers.
"""
from __future__ import annotations

import math
import numbers
from typing import Any, Iterable, Sequence

from lessons.common.base import tr

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

# Fonts with CJK coverage first on the systems that have them; Plotly falls back in order.
FONT_FAMILY = ('"Noto Sans TC", "PingFang TC", "Microsoft JhengHei", "Noto Sans CJK TC", '
               '"Roboto", "Helvetica Neue", Arial, sans-serif')


# --------------------------------------------------------------------------- layouts


# Legends sit in a row above the plot area, left-aligned: below it they collided with the
# x-axis title, and Plotly grows the top margin to fit a legend that wraps on a phone.
LEGEND = {"orientation": "h", "x": 0, "xanchor": "left", "y": 1.02, "yanchor": "bottom"}


def layout(x_title: str = "", y_title: str = "", **extra: Any) -> dict:
    """A Plotly layout dict with the course's common look.

    No title: the demo's ``<figcaption>`` shows the figure's title (and names the plot for
    screen readers); a Plotly title repeated it and cost the top margin. Backgrounds are
    transparent so the page palette shows through; the browser runtime sets font and grid
    colours for light/dark and narrows margins on small screens. ``extra`` is merged in last
    (axis dicts are merged key by key so ``xaxis={"type": "log"}`` keeps the title).
    """
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
    """One entry of Output["figures"]: the Plotly dict plus the data table behind it.

    Table cells may be numbers or text; they leave here as display strings (see :func:`cell`).
    """
    return {"key": key, "title": title, "figure": {"data": data, "layout": layout_},
            "table": _cells(columns, rows)}


def table(title: str, columns: Sequence[str], rows: Iterable[Sequence]) -> dict:
    """One entry of Output["tables"] (cells formatted by :func:`cell`)."""
    return {"title": title, **_cells(columns, rows)}


def _cells(columns: Sequence[str], rows: Iterable[Sequence]) -> dict:
    rows = [[cell(v) for v in r] for r in rows]
    assert all(len(r) == len(columns) for r in rows), "table rows must match the columns"
    return {"columns": list(columns), "rows": rows}


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
#
# Every number a reader sees as text is formatted here, once: the data tables (through
# ``cell``), the notes and the hover texts. The browser places these strings as they are.

_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
DIGITS = 3  # significant digits of a measured or derived value


def cell(value: Any) -> str:
    """The display string of one table cell; the one rule for every demo table.

    * text stays as it is (words, or a number a lesson already formatted with a unit);
    * ``None`` is an empty cell (a masked attention weight, a point that was not measured);
    * an integer is a count: thousands separators, 1234567 -> "1,234,567";
    * any other number is a measured or derived value: 3 significant digits (:func:`fmt_num`).

    A bool has no wording here (yes/no belongs to the reader's language) and NaN or infinity
    has no honest display: both raise, so a lesson bug fails the tests instead of a page.
    """
    # plain isinstance checks first (NumPy's float64 is a float): a demo table has hundreds of cells
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        raise TypeError("a table cell cannot be a bool: write the word in the reader's language")
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return fmt_num(value)
    if value is None:
        return ""
    if isinstance(value, numbers.Integral):
        return fmt_int(value)
    if isinstance(value, numbers.Real):
        return fmt_num(value)
    raise TypeError(f"a table cell must be text or a number, got {type(value).__name__}")


def fmt_num(x: float, digits: int = DIGITS) -> str:
    """``digits`` significant digits, thousands separators, trailing zeros dropped:
    1234567.5 -> '1,230,000', 0.78412 -> '0.784', 640.0 -> '640', 2.5e-07 -> '2.5e-7'."""
    x = float(x)
    if not math.isfinite(x):
        raise ValueError(f"non-finite value {x!r} has no display")
    if x == 0:
        return "0"
    short = f"{x:.{digits}g}"  # already right below 1,000 (no separator needed) unless in e-notation
    if "e" not in short and abs(x) < 1000:
        return short
    # the e-format rounds to `digits` significant digits and says where the first one sits
    # (999.7 -> '1.00e+03'); the fixed format then rounds at that same digit
    mantissa, _, power = f"{x:.{digits - 1}e}".partition("e")
    exponent = int(power)
    if exponent < -4:  # 0.0000123: scientific, without the padding zero of '1.23e-05'
        return f"{_trim(mantissa)}e{exponent}"
    decimals = digits - 1 - exponent
    if decimals < 0:  # 1234567.5 -> 1230000: round left of the point, print no decimals
        return f"{round(x, decimals):,.0f}"
    return _trim(f"{x:,.{decimals}f}")


def _trim(text: str) -> str:
    return text.rstrip("0").rstrip(".") if "." in text else text


def fmt_int(n: int | float) -> str:
    """1234567 -> '1,234,567' (the same in both languages)."""
    return f"{int(round(n)):,}"


def fmt_percent(p: float, digits: int = DIGITS) -> str:
    """A probability or share as a percentage: 0.78412 -> '78.4%'."""
    return f"{fmt_num(100 * float(p), digits)}%"


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


_SI = ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1, ""),
       (1e-3, "m"), (1e-6, "µ"), (1e-9, "n"), (1e-12, "p"))


def fmt_si(n: float, unit: str, digits: int = DIGITS) -> str:
    """Decimal SI prefix: 3.35e12, 'B/s' -> '3.35 TB/s'; 0.000862, 'J' -> '862 µJ'."""
    n = float(f"{float(n):.{digits}g}")  # 999.96e9 is 1 T, not "1e+03 G"
    for scale, prefix in _SI:
        if abs(n) >= scale:
            return f"{fmt_num(n / scale, digits)} {prefix}{unit}"
    return f"{fmt_num(n, digits)} {unit}"


def fmt_seconds(s: float) -> str:
    """Seconds with a readable unit: 0.00042 -> '420 µs', 0.99996 -> '1 s'."""
    s = float(f"{float(s):.{DIGITS}g}")
    if s >= 1:
        return f"{fmt_num(s)} s"
    if s >= 1e-3:
        return f"{fmt_num(s * 1e3)} ms"
    return f"{fmt_num(s * 1e6)} µs"


def t(text: dict, lang: str) -> str:
    """Short alias of :func:`lessons.common.base.tr` for the many labels lessons pick."""
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
