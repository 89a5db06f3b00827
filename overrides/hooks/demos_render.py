"""Turn ```kv-demo blocks in a page's Markdown into pre-rendered demo HTML.

The MkDocs hook (``demos.py``) stays thin and calls the functions here:

- :func:`find_demo_fences` finds the blocks (top-level fences only, so a page can show the
  block itself inside a longer ```` fence as an example);
- :func:`parse_block` reads the block body (``lesson: NAME``) and rejects anything else;
- :func:`build_demo` runs the lesson with its defaults, in the page's language, and checks
  every figure with Plotly's own validators and against the trace types the served
  plotly.js draws;
- :func:`render_demo` fills ``templates/demo.html`` (autoescaped). Table cells are placed
  as the lesson wrote them: the lessons format numbers, the template and the browser
  runtime only place text.

Nothing here knows about transformers: it only sees the lesson contract
(``lessons/common/base.py``) through ``describe`` and ``run``.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import jinja2
import yaml
from markupsafe import Markup

import demos_plotly
from demos_config import CHIP_COLOURS
from demos_strings import strings

FENCE_INFO = "kv-demo"
ALLOWED_KEYS = {"lesson"}
OUTPUT_PARTS = ("figures", "tokens", "tables", "notes", "actions")
_TEMPLATES = Path(__file__).parent / "templates"
_OPEN_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^\s`]*)?.*$")
_KEY = re.compile(r"[A-Za-z0-9_-]+")


class DemoBlockError(ValueError):
    """A ```kv-demo block the build cannot use (the hook adds the page to the message)."""


# --------------------------------------------------------------------------- finding blocks


@dataclass(frozen=True)
class Fence:
    start: int  # first line index (the opening fence)
    end: int  # last line index (the closing fence), inclusive
    body: str  # the lines between, joined


def find_demo_fences(markdown: str) -> list[Fence]:
    """Every top-level ```kv-demo fence, in order.

    Fences nested inside another fenced block (for example a ````markdown example that
    shows how to write a demo block) are left alone. An unclosed kv-demo fence is an error
    rather than silently swallowing the rest of the page.
    """
    lines = markdown.split("\n")
    found: list[Fence] = []
    i = 0
    while i < len(lines):
        m = _OPEN_FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m.group("fence"), (m.group("info") or "")
        close = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j]):
            j += 1
        if info == FENCE_INFO:
            if j >= len(lines):
                raise DemoBlockError(f"the ```{FENCE_INFO} block on line {i + 1} is never closed")
            found.append(Fence(i, j, "\n".join(lines[i + 1 : j])))
        i = j + 1
    return found


def parse_block(body: str, known_lessons) -> dict:
    """The block's settings: ``{"lesson": name}``; DemoBlockError for anything else."""
    try:
        data = yaml.safe_load(body) if body.strip() else None
    except yaml.YAMLError as e:
        raise DemoBlockError(f"the ```{FENCE_INFO} block is not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise DemoBlockError(f"the ```{FENCE_INFO} block must say which lesson to show, e.g. 'lesson: next_token'")
    unknown = sorted(map(str, set(data) - ALLOWED_KEYS))
    if unknown:
        raise DemoBlockError(f"unknown key(s) in the ```{FENCE_INFO} block: {', '.join(unknown)}")
    lesson = data.get("lesson")
    if not isinstance(lesson, str) or not lesson:
        raise DemoBlockError(f"the ```{FENCE_INFO} block needs 'lesson: NAME'")
    if lesson not in known_lessons:
        raise DemoBlockError(f"unknown lesson {lesson!r}; known: {', '.join(sorted(known_lessons))}")
    return {"lesson": lesson}


# --------------------------------------------------------------------------- one demo


def validate_figure(fig: dict, where: str) -> None:
    """Check a figure dict with Plotly's own validators, and that the served plotly.js
    draws every trace in it (raises DemoBlockError)."""
    import plotly.graph_objects as go

    try:
        go.Figure(fig)
        demos_plotly.check_traces(fig, where)
    except demos_plotly.PlotlyBundleError as e:
        raise DemoBlockError(str(e)) from None
    except (ValueError, TypeError) as e:
        raise DemoBlockError(f"{where}: invalid Plotly figure: {e}") from None


def script_json(obj: Any) -> Markup:
    """JSON that is safe inside <script type="application/json">: no '<', '>' or '&' survive
    literally, so lesson text such as '</script>' cannot end the element."""
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for ch, esc in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return Markup(text)


def checked_output(lesson: str, output: Any) -> dict:
    """The lesson's output with every part present, its figures valid (DemoBlockError)."""
    if not isinstance(output, dict):
        raise DemoBlockError(f"lesson {lesson!r} returned {type(output).__name__}, not a dict")
    output = {part: list(output.get(part) or []) for part in OUTPUT_PARTS}
    keys = [f.get("key") for f in output["figures"]]
    if len(set(keys)) != len(keys) or not all(isinstance(k, str) and _KEY.fullmatch(k) for k in keys):
        raise DemoBlockError(f"lesson {lesson!r}: figure keys must be unique [A-Za-z0-9_-] names, got {keys}")
    for f in output["figures"]:
        validate_figure(f["figure"], f"lesson {lesson!r}, figure {f['key']!r}")
    return output


def build_demo(
    lesson: str,
    lang: str,
    index: int,
    describe: Callable[[str, str], dict],
    run: Callable[[str, dict | None, str], dict],
) -> dict:
    """Everything the template needs for demo number ``index`` on a page.

    ``describe``/``run`` are ``lessons.common.registry.describe``/``run``: the defaults run here,
    with CPython, and the very same code runs later in Pyodide.
    """
    info = describe(lesson, lang)
    output = checked_output(lesson, run(lesson, None, lang))
    dom_id = f"kv-demo-{index}"
    controls = [dict(c, dom_id=f"{dom_id}-{c['name']}") for c in info["controls"]]
    actions = [dict(a, values_json=json.dumps(a.get("values", {}), ensure_ascii=False)) for a in output["actions"]]
    data = {
        "lesson": lesson,
        "lang": lang,
        "defaults": {c["name"]: c["default"] for c in info["controls"]},
        "output": output,
    }
    return {
        "lesson": lesson,
        "lang": lang,
        "dom_id": dom_id,
        "title": info["title"],
        "controls": controls,
        "output": dict(output, actions=actions),
        "data_json": script_json(data),
    }


# --------------------------------------------------------------------------- HTML


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
    )


_ENV = _environment()


def render_demo(demo: dict) -> str:
    """The demo's HTML (one block, no blank lines, so Markdown never re-wraps it)."""
    html = _ENV.get_template("demo.html").render(demo=demo, s=strings(demo["lang"]), chip_colours=CHIP_COLOURS)
    return "\n".join(line for line in html.split("\n") if line.strip())


def render_runtime_config(config: dict) -> str:
    return f'<script type="application/json" id="kv-demo-runtime">{script_json(config)}</script>'


def replace_fences(markdown: str, fences: list[Fence], placeholders: list[str]) -> str:
    """Swap each fence for its placeholder line (a paragraph of its own)."""
    lines = markdown.split("\n")
    for fence, ph in sorted(zip(fences, placeholders), key=lambda p: p[0].start, reverse=True):
        lines[fence.start : fence.end + 1] = ["", ph, ""]
    return "\n".join(lines)
