"""The one entry point the site calls, at build time (CPython) and in the browser (Pyodide).

``run_json(name, values_json, lang)`` takes and returns JSON strings, so only JSON crosses
the Pyodide boundary. It never raises: a reader's bad input comes back as
``{"ok": false, "error": {"message": ...}}`` in the reader's language.
"""
from __future__ import annotations

import importlib
import json
import traceback

from lessons.base import LANGS, LessonInputError, tr, validate

# lesson name -> module name inside the lessons package
LESSONS = {
    "next_token": "next_token",
    "tokens": "tokens",
    "embeddings": "embeddings",
    "attention": "attention",
    "kv_cache": "kv_cache",
    "cache_size": "cache_size",
    "data_movement": "data_movement",
    "roofline": "roofline",
    "layers": "layers",
    "shrink_cache": "shrink_cache",
    "kv_quant": "kv_quant",
    "keep_positions": "keep_positions",
    "paging": "paging",
    "batching": "batching",
    "draft_verify": "draft_verify",
    "flash_decoding": "flash_decoding",
    "bench_browser": "bench.browser",
    "bench_results": "bench.page",
}


def load(name: str):
    """Import a lesson module by its registry name (ValueError for an unknown name)."""
    if name not in LESSONS:
        raise ValueError(f"unknown lesson {name!r}; known: {', '.join(sorted(LESSONS))}")
    return importlib.import_module(f"lessons.{LESSONS[name]}")


def describe(name: str, lang: str) -> dict:
    """Title and controls of a lesson, in ``lang`` (what the page draws before Python runs)."""
    mod = load(name)
    return {
        "name": name,
        "title": tr(mod.TITLE, lang),
        "controls": [c.to_json(lang) for c in mod.CONTROLS],
    }


def run(name: str, values: dict | None, lang: str) -> dict:
    """Validate ``values`` and run the lesson; raises LessonInputError on bad input."""
    if lang not in LANGS:
        lang = "en"
    mod = load(name)
    return mod.run(validate(mod.CONTROLS, values, lang), lang)


def run_json(name: str, values_json: str, lang: str) -> str:
    """JSON in, JSON out, never raises (the browser worker's only call)."""
    if lang not in LANGS:
        lang = "en"
    try:
        try:
            values = json.loads(values_json) if values_json else {}
        except (TypeError, ValueError):
            raise LessonInputError("The demo received malformed input.", "示範收到格式錯誤的輸入。") from None
        result = run(name, values, lang)
        return json.dumps({"ok": True, "result": result}, ensure_ascii=False, allow_nan=False)
    except LessonInputError as e:
        return json.dumps({"ok": False, "error": {"message": e.message(lang)}}, ensure_ascii=False)
    except Exception as e:  # a bug, not the reader's fault: say so, keep the details for authors
        msg = {
            "en": "The demo hit an internal error. The figure above is unchanged; try other values.",
            "zh-TW": "示範發生內部錯誤，上方圖表維持原狀；請換個數值再試一次。",
        }
        detail = "".join(traceback.format_exception_only(type(e), e)).strip()
        return json.dumps({"ok": False, "error": {"message": msg[lang], "detail": detail}}, ensure_ascii=False)
