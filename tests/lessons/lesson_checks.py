"""Shared checks for lesson outputs: every lesson's Output must satisfy the contract.

Imported by the tests of this folder as ``lesson_checks`` (a unique name: pytest puts this
folder on sys.path, and other test folders have their own helpers)."""
from __future__ import annotations

import json

import plotly.graph_objects as go
import pytest

from lessons import registry
from lessons.base import LANGS

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


def check_output(out: dict) -> dict:
    """Assert ``out`` follows lessons/base.py's Output contract; return it."""
    assert isinstance(out, dict)
    # JSON only: no NumPy scalars, no NaN/inf.
    json.dumps(out, allow_nan=False)
    assert set(out) <= {"figures", "tokens", "tables", "notes", "actions"}
    for f in out.get("figures", []):
        assert f["key"] and isinstance(f["title"], str) and f["title"]
        go.Figure(f["figure"])  # raises on invalid Plotly properties
        check_layout(f["figure"]["layout"])
        cols, rows = f["table"]["columns"], f["table"]["rows"]
        assert cols and all(len(r) == len(cols) for r in rows)
    for t in out.get("tables", []):
        assert all(len(r) == len(t["columns"]) for r in t["rows"])
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


