"""Turn ```kv-demo blocks in a page's Markdown into pre-rendered demo HTML.

The MkDocs hook (``demos.py``) stays thin and calls the functions here:

- :func:`find_demo_fences` finds the blocks (top-level fences only, so a page can show the
  block itself inside a longer ```` fence as an example);
- :func:`parse_block` reads the block body (``lesson: NAME``) and rejects anything else;
- :func:`build_demo` runs the lesson with its defaults, in the page's language, and checks
  every figure with Plotly's own validators;
- :func:`render_demo` fills ``templates/demo.html`` (autoescaped);
- :func:`runtime_config` is the page-level JSON the browser runtime reads.

Nothing here knows about transformers: it only sees the lesson contract
(``lessons/base.py``) through ``describe`` and ``run``.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import jinja2
import yaml
from markupsafe import Markup

from demo_strings import strings

FENCE_INFO = "kv-demo"
ALLOWED_KEYS = {"lesson"}
DEFAULT_PYODIDE = {
    "version": "314.0.7",
    "index_url": "https://cdn.jsdelivr.net/pyodide/v314.0.7/full/",
    "load_timeout_s": 240,  # a slow link needs minutes for runtime + NumPy; a hang is caught
    "run_timeout_s": 30,
}
_TEMPLATES = Path(__file__).parent / "templates"
# plotly.js's own translations of its chrome (mode-bar tooltips, date names), vendored from
# the npm package of the plotly.js version the site serves (see the folder's README); paths
# relative to the site root. English is plotly.js's built-in language.
PLOTLY_LOCALES = {"zh-TW": "assets/vendor/plotly-locales/plotly-locale-zh-tw.js"}
_OPEN_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})\s*(?P<info>[^\s`]*)?.*$")


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
    """Check a figure dict with Plotly's own validators (raises DemoBlockError)."""
    import plotly.graph_objects as go

    try:
        go.Figure(fig)
    except (ValueError, TypeError) as e:
        raise DemoBlockError(f"{where}: invalid Plotly figure: {e}") from None


def script_json(obj: Any) -> Markup:
    """JSON that is safe inside <script type="application/json">: no '<', '>' or '&' survive
    literally, so lesson text such as '</script>' cannot end the element."""
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for ch, esc in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"), ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(ch, esc)
    return Markup(text)


def format_cell(value: Any) -> str:
    """How a table cell reads: integers as they are, floats to 6 significant digits."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        return f"{value:.6g}"
    return str(value)


def build_demo(
    lesson: str,
    lang: str,
    index: int,
    describe: Callable[[str, str], dict],
    run: Callable[[str, dict | None, str], dict],
) -> dict:
    """Everything the template needs for demo number ``index`` on a page.

    ``describe``/``run`` are ``lessons.registry.describe``/``run``: the defaults run here,
    with CPython, and the very same code runs later in Pyodide.
    """
    info = describe(lesson, lang)
    output = run(lesson, None, lang)
    if not isinstance(output, dict):
        raise DemoBlockError(f"lesson {lesson!r} returned {type(output).__name__}, not a dict")
    output = {
        "figures": list(output.get("figures") or []),
        "tokens": list(output.get("tokens") or []),
        "tables": list(output.get("tables") or []),
        "notes": list(output.get("notes") or []),
        "actions": list(output.get("actions") or []),
    }
    keys = [f.get("key") for f in output["figures"]]
    if len(set(keys)) != len(keys) or not all(isinstance(k, str) and re.fullmatch(r"[A-Za-z0-9_-]+", k) for k in keys):
        raise DemoBlockError(f"lesson {lesson!r}: figure keys must be unique [A-Za-z0-9_-] names, got {keys}")
    for f in output["figures"]:
        validate_figure(f["figure"], f"lesson {lesson!r}, figure {f['key']!r}")
    dom_id = f"kv-demo-{index}"
    controls = []
    for c in info["controls"]:
        c = dict(c)
        c["dom_id"] = f"{dom_id}-{c['name']}"
        controls.append(c)
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
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(_TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
    )
    env.filters["kv_cell"] = format_cell
    return env


_ENV = _environment()


def render_demo(demo: dict) -> str:
    """The demo's HTML (one block, no blank lines, so Markdown never re-wraps it)."""
    html = _ENV.get_template("demo.html").render(demo=demo, s=strings(demo["lang"]))
    return "\n".join(line for line in html.split("\n") if line.strip())


def runtime_config(extra: dict | None, lang: str, wheel_path: str | None, plotly_path: str) -> dict:
    """What kv-demos.js needs on a page with demos. Paths are relative to the site root
    (the runtime resolves them against the site base, never against the page URL)."""
    pyo = dict(DEFAULT_PYODIDE)
    user = (extra or {}).get("pyodide") or {}
    if not isinstance(user, dict):
        raise DemoBlockError("extra.pyodide in mkdocs.yml must be a mapping (version, index_url)")
    pyo.update(user)
    index_url = str(pyo["index_url"])
    if not index_url.endswith("/"):
        index_url += "/"
    for key in ("load_timeout_s", "run_timeout_s"):
        if not isinstance(pyo[key], (int, float)) or pyo[key] <= 0:
            raise DemoBlockError(f"extra.pyodide.{key} must be a positive number of seconds")
    return {
        "lang": lang,
        "strings": strings(lang),
        "pyodide": {
            "version": str(pyo["version"]),
            "indexURL": index_url,
            "loadTimeoutMs": int(pyo["load_timeout_s"] * 1000),
            "runTimeoutMs": int(pyo["run_timeout_s"] * 1000),
        },
        "wheel": wheel_path,
        "plotly": plotly_path,
        "plotlyLocale": PLOTLY_LOCALES.get(lang),
        "worker": "assets/javascripts/kv-worker.js",
    }


def render_runtime_config(config: dict) -> str:
    return f'<script type="application/json" id="kv-demo-runtime">{script_json(config)}</script>'


def replace_fences(markdown: str, fences: list[Fence], placeholders: list[str]) -> str:
    """Swap each fence for its placeholder line (a paragraph of its own)."""
    lines = markdown.split("\n")
    for fence, ph in sorted(zip(fences, placeholders), key=lambda p: p[0].start, reverse=True):
        lines[fence.start : fence.end + 1] = ["", ph, ""]
    return "\n".join(lines)
