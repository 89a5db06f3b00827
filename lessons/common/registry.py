"""The one entry point the site calls, at build time (CPython) and in the browser (Pyodide).

``run_json(name, values_json, lang)`` takes and returns JSON strings, so only JSON crosses
the Pyodide boundary. It never raises: a reader's bad input comes back as
``{"ok": false, "error": {"message": ...}}`` in the reader's language.

Nothing here lists the lessons by hand. A demo is a module in one of the lesson folders
(``lessons/plate07_shrinking_the_cache/``, ``lessons/benchmarks/``, ...) that declares, at its
top level, one line each::

    NAME = "kv_quant"                          # the name a page's kv-demo block uses
    PLATE = "plates/07-shrinking-the-cache"    # the page that teaches it: docs/<PLATE>.md

``LESSONS`` (name -> module) is built from those lines, read from the modules' source rather
than by importing every demo: the browser worker imports this module to run one demo, and
importing all of them would cost it every other lesson's import. :func:`load` checks that the
imported module declares the name it was found under.
"""
from __future__ import annotations

import importlib
import json
import re
import traceback
from importlib import resources

from lessons.common.base import LANGS, LessonInputError, tr, validate

# One declaration per line, at the start of the line, a plain string literal.
_DECLARATION = re.compile(r'^(NAME|PLATE) = "([^"\\]+)"$', re.MULTILINE)


def declared_lessons(package: str = "lessons") -> dict[str, str]:
    """{lesson name: module path} of every module in a subfolder of ``package`` that declares a NAME."""
    found: dict[str, str] = {}
    for folder in sorted(resources.files(package).iterdir(), key=lambda f: f.name):
        if not folder.joinpath("__init__.py").is_file():
            continue  # data, __pycache__
        for source in sorted(folder.iterdir(), key=lambda f: f.name):
            if not source.name.endswith(".py") or source.name == "__init__.py":
                continue
            module = f"{package}.{folder.name}.{source.name[:-3]}"
            decl = dict(_DECLARATION.findall(source.read_text(encoding="utf-8")))
            if "NAME" not in decl:
                continue  # a helper, not a demo
            if "PLATE" not in decl:
                raise RuntimeError(f"{module} declares NAME = {decl['NAME']!r} but no PLATE")
            if decl["NAME"] in found:
                raise RuntimeError(f"two lessons are named {decl['NAME']!r}: {found[decl['NAME']]} and {module}")
            found[decl["NAME"]] = module
    return found


# lesson name -> module path, e.g. "kv_quant" -> "lessons.plate07_shrinking_the_cache.kv_quant"
LESSONS = declared_lessons()


def load(name: str):
    """Import a lesson module by its registry name (ValueError for an unknown name)."""
    if name not in LESSONS:
        raise ValueError(f"unknown lesson {name!r}; known: {', '.join(sorted(LESSONS))}")
    mod = importlib.import_module(LESSONS[name])
    declared = getattr(mod, "NAME", None)
    if declared != name:
        raise RuntimeError(f"{LESSONS[name]} was registered as {name!r} but declares NAME = {declared!r}")
    return mod


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
