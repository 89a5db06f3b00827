"""The contract between a lesson and the site.

A lesson is a module in its page's folder (``lessons/plate05_kv_cache/kv_cache.py``) that holds:

    NAME = "kv_cache"                # the name pages use in a kv-demo block (= the file's name)
    PLATE = "plates/05-kv-cache"     # the page that teaches it, docs/<PLATE>.md (= the folder)
    TITLE: Text                      # {"en": "...", "zh-TW": "..."}
    CONTROLS: tuple[Control, ...]    # the reader's inputs, declared as data
    def run(values: dict, lang: str) -> dict   # pure: control values -> Output

``run`` receives values already checked and coerced by :func:`validate` (every control
present, in range, of the right type) and returns an *Output* dict made only of JSON types:

    {
      "figures": [                          # Plotly figures as plain dicts (no plotly import)
        {"key": "probs",                    # stable id inside the lesson
         "title": "...",                    # in ``lang``
         "figure": {"data": [...], "layout": {...}},
         "table": {"columns": [...], "rows": [[...], ...]}},   # data table behind the figure
      ],
      "tokens": [{"text": "...", "id": 12, "title": "..."}],   # optional token chips
      "tables": [{"title": "...", "columns": [...], "rows": [[...]]}],  # optional
      "notes": ["..."],                     # optional plain-text lines (never HTML)
      "actions": [{"label": "...", "values": {...}}],  # optional buttons: set controls, rerun
    }

Every string a reader sees is in ``lang`` ("en" or "zh-TW"). Bad input raises
:class:`LessonInputError` with both languages; the site shows the reader's one.
The same code runs at build time (CPython) and in the browser (Pyodide), so it may
import only the standard library, NumPy, ``engine`` and ``lessons``.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

LANGS = ("en", "zh-TW")

Text = dict  # {"en": str, "zh-TW": str}


class LessonInputError(ValueError):
    """A reader's input that a lesson cannot use; carries the message in both languages."""

    def __init__(self, en: str, zh: str):
        super().__init__(en)
        self.messages = {"en": en, "zh-TW": zh}

    def message(self, lang: str) -> str:
        return self.messages.get(lang, self.messages["en"])


def tr(text: Text, lang: str) -> str:
    """Pick ``lang`` from a bilingual dict (English when the language is unknown)."""
    return text.get(lang) or text["en"]


# --------------------------------------------------------------------------- controls


@dataclass(frozen=True)
class Control:
    """One input of a demo. ``kind`` decides the widget the browser runtime draws."""

    name: str
    kind: str  # "text" | "slider" | "select" | "checkbox"
    label: Text
    default: Any  # a Text dict gives a text box a different example in each language
    help: Text = field(default_factory=lambda: {"en": "", "zh-TW": ""})
    # slider: numeric range and step; text: max_length; select: options
    min: float | None = None
    max: float | None = None
    step: float | None = None
    max_length: int | None = None
    options: tuple[tuple[str, Text], ...] = ()  # select: (value, label)

    def default_for(self, lang: str) -> Any:
        """The starting value on a page in ``lang``."""
        return tr(self.default, lang) if isinstance(self.default, dict) else self.default

    def to_json(self, lang: str) -> dict:
        """The control as the browser runtime and the pre-rendered HTML need it."""
        d = {k: v for k, v in asdict(self).items() if v is not None and v != ()}
        d["default"] = self.default_for(lang)
        d["label"] = tr(self.label, lang)
        d["help"] = tr(self.help, lang)
        if self.options:
            d["options"] = [{"value": v, "label": tr(lbl, lang)} for v, lbl in self.options]
        return d


def text(name, label, default, help=None, max_length=200) -> Control:
    return Control(name, "text", label, default, help or {"en": "", "zh-TW": ""}, max_length=max_length)


def slider(name, label, default, min, max, step, help=None) -> Control:
    return Control(name, "slider", label, default, help or {"en": "", "zh-TW": ""}, min=min, max=max, step=step)


def select(name, label, default, options, help=None) -> Control:
    return Control(name, "select", label, default, help or {"en": "", "zh-TW": ""}, options=tuple(options))


def checkbox(name, label, default, help=None) -> Control:
    return Control(name, "checkbox", label, bool(default), help or {"en": "", "zh-TW": ""})


# --------------------------------------------------------------------------- validation


def validate(controls: tuple[Control, ...], values: dict | None, lang: str = "en") -> dict:
    """Return a complete, type-checked copy of ``values`` (the defaults for ``lang`` fill the gaps).

    Raises LessonInputError for anything a reader could type or a page could send that
    the lesson cannot use: wrong type, out of range, too long, unknown option or name.
    """
    values = {} if values is None else values
    if not isinstance(values, dict):
        raise LessonInputError("The demo received malformed input.", "示範收到格式錯誤的輸入。")
    known = {c.name for c in controls}
    unknown = sorted(set(values) - known)
    if unknown:
        raise LessonInputError(
            f"Unknown control: {', '.join(map(str, unknown))}.",
            f"未知的控制項：{', '.join(map(str, unknown))}。",
        )
    out = {}
    for c in controls:
        v = values.get(c.name, c.default_for(lang))
        out[c.name] = _coerce(c, v)
    return out


def _coerce(c: Control, v: Any) -> Any:
    en_label, zh_label = c.label["en"], c.label["zh-TW"]
    if c.kind == "text":
        if not isinstance(v, str):
            raise LessonInputError(f"“{en_label}” must be text.", f"「{zh_label}」必須是文字。")
        if c.max_length is not None and len(v) > c.max_length:
            raise LessonInputError(
                f"“{en_label}” is too long: {len(v)} characters, at most {c.max_length}.",
                f"「{zh_label}」太長了：{len(v)} 個字元，最多 {c.max_length} 個。",
            )
        return v
    if c.kind == "slider":
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            try:
                v = float(v)
            except (TypeError, ValueError):
                raise LessonInputError(f"“{en_label}” must be a number.", f"「{zh_label}」必須是數字。") from None
        if not math.isfinite(v) or v < c.min or v > c.max:
            raise LessonInputError(
                f"“{en_label}” must be between {c.min:,g} and {c.max:,g}.",
                f"「{zh_label}」必須介於 {c.min:,g} 與 {c.max:,g} 之間。",
            )
        is_int = all(float(x).is_integer() for x in (c.min, c.max, c.step))
        return int(round(v)) if is_int else float(v)
    if c.kind == "select":
        allowed = [o[0] for o in c.options]
        if v not in allowed:
            raise LessonInputError(
                f"“{en_label}” must be one of: {', '.join(allowed)}.",
                f"「{zh_label}」必須是以下其中之一：{'、'.join(allowed)}。",
            )
        return v
    if c.kind == "checkbox":
        if not isinstance(v, bool):
            raise LessonInputError(f"“{en_label}” must be on or off.", f"「{zh_label}」只能開或關。")
        return v
    raise ValueError(f"control {c.name!r} has unknown kind {c.kind!r}")
