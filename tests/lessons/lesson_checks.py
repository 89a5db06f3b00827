"""Shared checks for lesson outputs: every lesson's Output must satisfy the contract.

Imported by the tests of this folder as ``lesson_checks`` (a unique name: pytest puts this
folder on sys.path, and other test folders have their own helpers)."""
from __future__ import annotations

import json
import re

import pytest

from lessons.common import registry
from lessons.common.base import LANGS

# Inputs a reader could type into any text box: each must give an answer or a clear
# LessonInputError, never a traceback, and must come back as plain data.
HOSTILE_TEXTS = [
    "",
    "   ",
    "<img src=x onerror=alert(1)>",
    "🙂🚀 emoji ✨",
    "The 貓 sat on 墊子 mixed 文字",
    "a" * 5000,
]


def plotly_figure():
    """plotly.graph_objects.Figure. Pyodide-side lessons never need Plotly, but the checks
    validate every figure with its own validators: it is part of the test extra, and a missing
    Plotly fails every check that needs it (a skip would hide 100-odd checks)."""
    try:
        import plotly.graph_objects as go
    except ImportError:
        pytest.fail("plotly is not installed: pip install -e '.[test]' (it validates the figures)")
    return go.Figure


def check_output(out: dict) -> dict:
    """Assert ``out`` follows lessons/common/base.py's Output contract; return it."""
    assert isinstance(out, dict)
    # JSON only: no NumPy scalars, no NaN/inf.
    json.dumps(out, allow_nan=False)
    assert set(out) <= {"figures", "tokens", "tables", "notes", "actions"}
    Figure = plotly_figure()
    for f in out.get("figures", []):
        assert f["key"] and isinstance(f["title"], str) and f["title"]
        Figure(f["figure"])  # raises on invalid Plotly properties
        check_layout(f["figure"]["layout"])
        check_table(f["table"])
    for t in out.get("tables", []):
        check_table(t)
    for n in out.get("notes", []):
        assert isinstance(n, str)
    for tok in out.get("tokens", []):
        assert isinstance(tok["text"], str) and isinstance(tok["id"], int)
    for a in out.get("actions", []):
        assert isinstance(a["label"], str) and isinstance(a["values"], dict)
    return out


def check_layout(lay: dict) -> None:
    """The look every demo shares: the <figcaption> is the only title (a Plotly title
    repeated it), and a legend sits above the plot area, where it cannot cover the x-axis
    title (a legend at y = -0.22 did)."""
    title = lay.get("title")
    assert not (title.get("text") if isinstance(title, dict) else title), f"Plotly title {title!r}"
    legend = lay.get("legend")
    if legend is not None and lay.get("showlegend", True):
        assert legend.get("y", 1) >= 1 and legend.get("yanchor") == "bottom", legend


def check_table(t: dict) -> None:
    """Columns are named, every row has a cell per column, and every cell is already the
    text a reader sees (lessons/common/figures.py's cell() is the only formatter)."""
    assert t["columns"] and all(isinstance(c, str) and c for c in t["columns"])
    for r in t["rows"]:
        assert len(r) == len(t["columns"]) and all(isinstance(c, str) for c in r), r


# --------------------------------------------------------------------------- reading tables

_NUMBER = re.compile(r"[-+]?[\d,]*\.?\d+(?:e[-+]?\d+)?%?")


def number(cell: str) -> float:
    """The number in a display cell: '1,234' -> 1234, '78.4%' -> 0.784, '2.5e-7' -> 2.5e-07.

    Only for cells that are a plain number (with an optional %); anything else fails loudly.
    """
    assert _NUMBER.fullmatch(cell), f"not a number cell: {cell!r}"
    value = float(cell.rstrip("%").replace(",", ""))
    return value / 100 if cell.endswith("%") else value


def column(table: dict, name: str) -> list[str]:
    """The cells of the column called ``name`` (KeyError lists the columns there are)."""
    cols = table["columns"]
    if name not in cols:
        raise KeyError(f"no column {name!r}; columns: {cols}")
    i = cols.index(name)
    return [r[i] for r in table["rows"]]


def numbers(table: dict, name: str) -> list[float]:
    """The column ``name`` parsed with :func:`number` (empty cells left out)."""
    return [number(c) for c in column(table, name) if c != ""]


def records(table: dict) -> list[dict]:
    """Each row as {column name: cell}."""
    return [dict(zip(table["columns"], r)) for r in table["rows"]]


def shape_of(obj):
    """The structure of an Output with every string blanked (to compare languages)."""
    if isinstance(obj, dict):
        return {k: shape_of(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [shape_of(v) for v in obj]
    if isinstance(obj, str):
        return "<str>"
    if isinstance(obj, (int, float)) and not isinstance(obj, bool):
        return "<num>"  # measured seconds differ from run to run; the structure does not
    return obj


def strings_of(obj) -> list[str]:
    if isinstance(obj, dict):
        return [s for v in obj.values() for s in strings_of(v)]
    if isinstance(obj, list):
        return [s for v in obj for s in strings_of(v)]
    return [obj] if isinstance(obj, str) else []


def check_both_languages(name: str, values: dict | None = None):
    """Run a lesson in both languages: same structure, different reader strings."""
    outs = {lang: check_output(registry.run(name, values, lang)) for lang in LANGS}
    assert shape_of(outs["en"]) == shape_of(outs["zh-TW"])
    en, zh = strings_of(outs["en"]), strings_of(outs["zh-TW"])
    assert en != zh
    # Titles, notes and figure titles must actually be translated.
    for fe, fz in zip(outs["en"].get("figures", []), outs["zh-TW"].get("figures", [])):
        assert fe["title"] != fz["title"]
        assert fe["table"]["columns"] != fz["table"]["columns"]
    return outs


def check_describe(name: str):
    for lang in LANGS:
        d = registry.describe(name, lang)
        assert d["title"] and d["controls"] is not None
        for c in d["controls"]:
            assert c["label"]
    en, zh = registry.describe(name, "en"), registry.describe(name, "zh-TW")
    assert en["title"] != zh["title"]


def run_json_ok(name: str, values: dict, lang: str = "en") -> dict:
    reply = json.loads(registry.run_json(name, json.dumps(values), lang))
    return reply


