"""The demo hook (overrides/hooks/demos.py) and the modules it uses.

Most tests use a fixture lesson registered for the test only (the real lessons are tested in
tests/lessons/): it follows the lesson contract and carries hostile strings (HTML, quotes,
"</script>") in every place a reader-visible string can come from, so escaping is checked
everywhere. The real lessons are checked on the real build at the end of this file.
"""
from __future__ import annotations

import json
import re
import sys
import types
from html.parser import HTMLParser
from pathlib import Path

import pytest

import demos_config
import demos_plotly
import demos_render
from demos_strings import UI_STRINGS
from lessons.common import base, registry
from site_pages import HOOKS

import plotly.graph_objects as go  # noqa: E402 - in the test extra: a missing Plotly fails, never skips

EVIL = '<img src=x onerror=alert(1)>'


# --------------------------------------------------------------------------- a fixture lesson


def _fixture_lesson() -> types.ModuleType:
    mod = types.ModuleType("lessons.fixture_demo")
    mod.NAME = "fixture_demo"
    mod.TITLE = {"en": 'Count <b>letters</b> & "quotes"', "zh-TW": "數字母 <b>粗體</b>"}
    mod.CONTROLS = (
        base.text("prompt", {"en": "Prompt", "zh-TW": "提示"}, EVIL, max_length=40),
        base.slider("n", {"en": "How many", "zh-TW": "幾個"}, 3, 1, 5, 1,
                    help={"en": "Bars <em>shown</em>", "zh-TW": "顯示的長條數"}),
        base.select("mode", {"en": "Mode", "zh-TW": "模式"}, "a",
                    [("a", {"en": "A </script>", "zh-TW": "甲"}), ("b", {"en": "B", "zh-TW": "乙"})]),
        base.checkbox("upper", {"en": "Upper case", "zh-TW": "大寫"}, False),
    )

    def run(values: dict, lang: str) -> dict:
        text = values["prompt"]
        if not text.strip():
            raise base.LessonInputError("Type something.", "請輸入文字。")
        letters = list(text[: values["n"]])
        counts = [text.count(ch) for ch in letters]
        title = {"en": "Letter counts </script><script>alert(1)</script>", "zh-TW": "字母次數"}[lang]
        return {
            "figures": [{
                "key": "counts",
                "title": title,
                "figure": {"data": [{"type": "bar", "x": letters, "y": counts}],
                           "layout": {"title": {"text": title}}},
                "table": {"columns": ["letter", "count"], "rows": [[c, str(n)] for c, n in zip(letters, counts)]},
            }],
            "tokens": [{"text": ch, "id": i, "title": f"<i>{ch}</i>"} for i, ch in enumerate(letters)],
            "tables": [{"title": "Totals <u>", "columns": ["n"], "rows": [[f"{len(text):,}"], ["1.23e+06 <b>"]]}],
            "notes": [f"Note: {text}"],
            "actions": [{"label": "More <b>", "values": {"n": 5}}],
        }

    mod.run = run
    return mod


@pytest.fixture
def fixture_lesson(monkeypatch):
    monkeypatch.setitem(registry.LESSONS, "fixture_demo", "lessons.fixture_demo")
    monkeypatch.setitem(sys.modules, "lessons.fixture_demo", _fixture_lesson())
    return "fixture_demo"


class _Collector(HTMLParser):
    """Tags with their attributes, and text per tag, of an HTML fragment."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)


def _parse(html: str) -> _Collector:
    c = _Collector()
    c.feed(html)
    return c


# --------------------------------------------------------------------------- finding blocks


def test_finds_top_level_blocks_only():
    md = "\n".join([
        "# Page",
        "```kv-demo",
        "lesson: next_token",
        "```",
        "````markdown",
        "```kv-demo",
        "lesson: tokens",
        "```",
        "````",
        "~~~kv-demo",
        "lesson: attention",
        "~~~",
        "```python",
        "x = 1",
        "```",
    ])
    fences = demos_render.find_demo_fences(md)
    assert [f.body for f in fences] == ["lesson: next_token", "lesson: attention"]
    assert (fences[0].start, fences[0].end) == (1, 3)


def test_unclosed_block_is_an_error():
    with pytest.raises(demos_render.DemoBlockError, match="never closed"):
        demos_render.find_demo_fences("text\n```kv-demo\nlesson: tokens\n")


@pytest.mark.parametrize(
    "body, message",
    [
        ("", "must say which lesson"),
        ("lesson: [unclosed", "not valid YAML"),
        ("- a list", "must say which lesson"),
        ("lesson: next_token\ncolour: red", "unknown key"),
        ("lesson: 3", "needs 'lesson: NAME'"),
        ("lesson: no_such_lesson", "unknown lesson 'no_such_lesson'; known: "),
    ],
)
def test_bad_blocks_are_rejected(body, message):
    with pytest.raises(demos_render.DemoBlockError, match=message):
        demos_render.parse_block(body, registry.LESSONS)


def test_good_block_parses():
    assert demos_render.parse_block("lesson: next_token\n", registry.LESSONS) == {"lesson": "next_token"}


def test_replace_fences_keeps_the_rest_of_the_page():
    md = "before\n```kv-demo\nlesson: a\n```\nmiddle\n```kv-demo\nlesson: b\n```\nafter"
    fences = demos_render.find_demo_fences(md)
    out = demos_render.replace_fences(md, fences, ["PH1", "PH2"])
    assert out.split("\n") == ["before", "", "PH1", "", "middle", "", "PH2", "", "after"]


# --------------------------------------------------------------------------- one demo


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_demo_html_is_escaped_labelled_and_round_trips(fixture_lesson, lang):
    demo = demos_render.build_demo(fixture_lesson, lang, 2, registry.describe, registry.run)
    html = demos_render.render_demo(demo)
    parsed = _parse(html)
    tags = [t for t, _ in parsed.tags]

    # No element came out of a lesson's string: only the template's own tags exist.
    assert "img" not in tags and "b" not in tags and "i" not in tags and "u" not in tags and "em" not in tags
    assert tags.count("script") == 1
    assert "<img src=x" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    # The embedded JSON cannot close its <script> element and decodes to the lesson's output.
    (script_text,) = parsed.scripts
    assert "</" not in script_text and "<" not in script_text
    data = json.loads(script_text)
    assert data["lesson"] == fixture_lesson and data["lang"] == lang
    assert data["output"] == registry.run(fixture_lesson, None, lang)
    assert data["defaults"]["prompt"] == EVIL

    # Every control has a label pointing at it, and ids are unique on the page.
    ids = [a["id"] for _, a in parsed.tags if "id" in a]
    assert len(ids) == len(set(ids))
    inputs = [a for t, a in parsed.tags if t in ("input", "select")]
    labels = {a["for"] for t, a in parsed.tags if t == "label"}
    assert {a["id"] for a in inputs} <= labels
    assert {a["name"] for a in inputs} == {"prompt", "n", "mode", "upper"}
    kinds = {a["name"]: (a.get("type"), a.get("data-kind")) for a in inputs}
    assert kinds["n"] == ("range", "slider") and kinds["upper"] == ("checkbox", "checkbox")
    assert kinds["prompt"] == ("text", "text") and kinds["mode"][1] == "select"
    slider = next(a for a in inputs if a["name"] == "n")
    assert (slider["min"], slider["max"], slider["step"], slider["value"]) == ("1", "5", "1", "3")

    # The data table behind the figure holds the figure's rows; status line and button exist.
    figure = data["output"]["figures"][0]
    assert tags.count("td") == 2 * len(figure["table"]["rows"]) + 2  # + the "Totals" table
    assert any(t == "p" and a.get("role") == "status" and a.get("aria-live") == "polite" for t, a in parsed.tags)
    s = UI_STRINGS[lang]
    for text in (s["run_live"], s["data_table"], s["status_prerendered"]):
        assert text in html.replace("&#34;", '"').replace("&#39;", "'")
    assert '<section class="kv-demo" id="kv-demo-2"' in html
    # The search index skips the demo (option lists and data tables are noise there).
    section = next(a for t, a in parsed.tags if t == "section")
    assert "data-search-exclude" in section and tags.count("section") == 1
    assert "\n\n" not in html  # one HTML block: Markdown never splits it
    # Table wrappers scroll sideways on a phone: each is a focusable region named in ``lang``.
    wraps = [a for t, a in parsed.tags if t == "div" and "kv-table-wrap" in a.get("class", "")]
    assert len(wraps) == 2  # the figure's data table and the lesson's "Totals" table
    for a in wraps:
        assert a.get("tabindex") == "0" and a.get("role") == "region" and a.get("aria-label"), a
    assert wraps[0]["aria-label"] == s["data_table_of"].replace("{title}", figure["title"])


def test_invalid_figure_fails_the_build(fixture_lesson, monkeypatch):
    mod = sys.modules["lessons.fixture_demo"]
    good = mod.run

    def bad(values, lang):
        out = good(values, lang)
        out["figures"][0]["figure"]["data"][0]["colour"] = "red"  # not a Plotly property
        return out

    monkeypatch.setattr(mod, "run", bad)
    with pytest.raises(demos_render.DemoBlockError, match="invalid Plotly figure"):
        demos_render.build_demo(fixture_lesson, "en", 1, registry.describe, registry.run)


def test_script_json_survives_hostile_text():
    obj = {"a": "</script><!-- & \u2028", "b": [1, 2.5]}
    text = str(demos_render.script_json(obj))
    assert not set("<>&") & set(text)
    assert json.loads(text) == obj


class _Cells(HTMLParser):
    """The text of every <td>, in order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.cells: list[str] = []
        self._in = False

    def handle_starttag(self, tag, attrs):
        if tag == "td":
            self._in = True
            self.cells.append("")

    def handle_endtag(self, tag):
        self._in = self._in and tag != "td"

    def handle_data(self, data):
        if self._in:
            self.cells[-1] += data


def test_table_cells_are_placed_as_the_lesson_wrote_them(fixture_lesson):
    """No formatting in the template: each cell reads exactly as the lesson's text (the
    browser runtime places the same text after a live run)."""
    demo = demos_render.build_demo(fixture_lesson, "en", 1, registry.describe, registry.run)
    parser = _Cells()
    parser.feed(demos_render.render_demo(demo))
    out = registry.run(fixture_lesson, None, "en")
    tables = [f["table"] for f in out["figures"]] + out["tables"]
    assert parser.cells == [cell for t in tables for row in t["rows"] for cell in row]
    assert "1.23e+06 <b>" in parser.cells  # not re-rounded, not parsed as HTML


def test_no_formatter_is_left_in_the_template_or_the_runtime():
    """Python is the only formatter of table cells (format_cell / formatCell are gone)."""
    js = (HOOKS.parent / "assets" / "javascripts")
    sources = [*(js.glob("*.mjs")), *(HOOKS.glob("*.py")), *(HOOKS / "templates").glob("*.html")]
    assert sources
    for path in sources:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"format_?[Cc]ell|toPrecision|kv_cell", text), path.name


def test_runtime_config_derives_the_index_url_from_the_version():
    cfg = demos_config.runtime_config({"pyodide": {"version": "9.8.7"}}, "zh-TW", "assets/wheels/h/w.whl")
    assert cfg["pyodide"]["version"] == "9.8.7"
    assert cfg["pyodide"]["indexURL"] == "https://cdn.jsdelivr.net/pyodide/v9.8.7/full/"
    assert cfg["strings"] == UI_STRINGS["zh-TW"] and cfg["lang"] == "zh-TW"
    assert cfg["wheel"] == "assets/wheels/h/w.whl"
    own = demos_config.runtime_config(
        {"pyodide": {"version": "0.28.0", "index_url": "pyodide", "run_timeout_s": 5}}, "en", None)
    assert own["pyodide"]["indexURL"] == "pyodide/"  # resolved against the site root in JS
    assert own["pyodide"]["runTimeoutMs"] == 5000 and own["pyodide"]["loadTimeoutMs"] == 240_000


def test_the_site_names_its_pyodide_release_once():
    """mkdocs.yml holds the version and no index URL (derived from the version)."""
    text = (HOOKS.parents[1] / "mkdocs.yml").read_text(encoding="utf-8")
    block = text.split("\n  pyodide:\n", 1)[1].split("\n  #", 1)[0]
    assert re.fullmatch(r'\s*version: "[\d.]+"\s*', block), block
    assert "index_url:" not in block


@pytest.mark.parametrize(("extra", "message"), [
    ({}, "needs extra.pyodide"),
    ({"pyodide": "0.28.0"}, "needs extra.pyodide"),
    ({"pyodide": {"index_url": "x/"}}, "must name the Pyodide release"),
    ({"pyodide": {"version": "1", "run_timeout_s": 0}}, "run_timeout_s"),
    ({"pyodide": {"version": "1", "load_timeout_s": True}}, "load_timeout_s"),
    ({"pyodide": {"version": "1", "indexurl": "x/"}}, "unknown key"),
])
def test_bad_pyodide_settings_are_refused(extra, message):
    with pytest.raises(demos_config.ConfigError, match=message):
        demos_config.runtime_config(extra, "en", None)


def test_token_chips_take_their_colours_from_one_list(fixture_lesson):
    """The chips' colours (and how many there are) live in demos_config alone: the template
    uses them, the runtime gets them in its config, the stylesheet has none of its own."""
    demo = demos_render.build_demo(fixture_lesson, "en", 1, registry.describe, registry.run)
    html = demos_render.render_demo(demo)
    chips = re.findall(r'class="kv-chip" style="--kv-chip-color: ([^"]+)"', html)
    n = len(demos_config.CHIP_COLOURS)
    assert chips == [demos_config.CHIP_COLOURS[i % n] for i in range(len(chips))] and chips
    cfg = demos_config.runtime_config({"pyodide": {"version": "1"}}, "en", None)
    assert cfg["chipColours"] == list(demos_config.CHIP_COLOURS)
    css = (HOOKS.parent / "assets" / "stylesheets" / "kv-demos.css").read_text(encoding="utf-8")
    assert "--kv-palette" not in css


def test_both_languages_have_the_same_strings():
    assert UI_STRINGS["en"].keys() == UI_STRINGS["zh-TW"].keys()
    import re

    for key in UI_STRINGS["en"]:
        fields = lambda s: sorted(re.findall(r"\{(\w+)\}", s))  # noqa: E731
        assert fields(UI_STRINGS["en"][key]) == fields(UI_STRINGS["zh-TW"][key]), key


def test_chinese_strings_are_traditional_with_taiwan_terms():
    opencc = pytest.importorskip("opencc", reason="opencc is not installed")
    cc = opencc.OpenCC("s2twp")  # Simplified -> Traditional with Taiwan phrases: a no-op on good text
    changed = {k: cc.convert(v) for k, v in UI_STRINGS["zh-TW"].items() if cc.convert(v) != v}
    assert changed == {}


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_ui_strings_use_the_course_terms(lang):
    """The demo chrome names things as the terminology table does (e.g. 即時示範, not 互動示範)."""
    from lessons.common.terminology import variants

    found = {k: variants(v, lang) for k, v in UI_STRINGS[lang].items() if variants(v, lang)}
    assert found == {}


# --------------------------------------------------------------------------- a real build


def _fixture_site(tmp_path: Path, en_block: str, zh_block: str) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text(f"# Home\n\nText.\n\n{en_block}\n")
    (docs / "index.zh-TW.md").write_text(f"# 首頁\n\n文字。\n\n{zh_block}\n")
    (docs / "plain.md").write_text("# Plain\n\nNo demos here.\n")
    cfg = tmp_path / "mkdocs.yml"
    cfg.write_text(
        "site_name: Demo fixture\n"
        f"docs_dir: {docs}\nsite_dir: {tmp_path / 'site'}\n"
        "theme:\n  name: material\n  language: en\n"
        f"hooks:\n  - {HOOKS / 'demos.py'}\n"
        "extra:\n  pyodide:\n    version: '0.28.0'\n    index_url: http://127.0.0.1:9/pyodide/\n"
        "plugins:\n  - i18n:\n      docs_structure: suffix\n      languages:\n"
        "        - locale: zh-TW\n          name: 中文\n          build: true\n"
        "        - locale: en\n          name: English\n          default: true\n          build: true\n"
    )
    return cfg


def _build(cfg: Path):
    from mkdocs.commands.build import build
    from mkdocs.config import load_config

    config = load_config(config_file=str(cfg))
    build(config)


BLOCK = "```kv-demo\nlesson: fixture_demo\n```"


def test_fixture_site_builds_in_both_languages(tmp_path, fixture_lesson):
    cfg = _fixture_site(tmp_path, BLOCK, BLOCK)
    _build(cfg)
    site = tmp_path / "site"
    en = (site / "index.html").read_text()
    zh = (site / "zh-TW" / "index.html").read_text()
    for html, lang in ((en, "en"), (zh, "zh-TW")):
        parsed = _parse(html)
        demo_data = [json.loads(s) for s in parsed.scripts if s.lstrip().startswith('{"lesson"')]
        assert [d["lang"] for d in demo_data] == [lang]
        runtime = json.loads(next(s for s in parsed.scripts if '"indexURL"' in s))
        assert runtime["lang"] == lang and runtime["pyodide"]["indexURL"] == "http://127.0.0.1:9/pyodide/"
        assert (site / runtime["wheel"]).is_file()
        assert runtime["plotly"] == demos_plotly.bundle_path()  # a theme file (overrides/)
        for f in demo_data[0]["output"]["figures"]:
            go.Figure(f["figure"])
        assert UI_STRINGS[lang]["run_live"] in html
    assert "kv-demo-runtime" not in (site / "plain" / "index.html").read_text()


def _build_error(cfg: Path, caplog) -> str:
    from mkdocs.exceptions import Abort

    with caplog.at_level("ERROR", logger="mkdocs"), pytest.raises(Abort):
        _build(cfg)
    return "\n".join(r.getMessage() for r in caplog.records)


def test_unknown_lesson_fails_the_build_naming_the_page(tmp_path, fixture_lesson, caplog):
    cfg = _fixture_site(tmp_path, BLOCK, "```kv-demo\nlesson: fixture_dmeo\n```")
    assert "kv-demo in index.zh-TW.md: unknown lesson 'fixture_dmeo'" in _build_error(cfg, caplog)


def test_lesson_input_error_at_build_names_the_page(tmp_path, fixture_lesson, monkeypatch, caplog):
    mod = sys.modules["lessons.fixture_demo"]
    monkeypatch.setattr(mod, "CONTROLS", (base.text("prompt", {"en": "P", "zh-TW": "P"}, "  "),))
    cfg = _fixture_site(tmp_path, BLOCK, BLOCK)
    assert "kv-demo in index.md: Type something." in _build_error(cfg, caplog)


# --------------------------------------------------------------------------- the real site


def _site_demos(built_site: Path):
    for page in sorted(built_site.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        if "kv-demo__data" not in text:
            continue
        for s in _parse(text).scripts:
            if s.lstrip().startswith('{"lesson"'):
                yield page.relative_to(built_site), json.loads(s)


def test_every_prerendered_figure_of_the_site_is_valid_plotly(built_site):
    demos = list(_site_demos(built_site))
    assert demos, "the built site has no demos (no page embeds a ```kv-demo block)"
    langs = set()
    for page, data in demos:
        langs.add(data["lang"])
        assert data["lang"] == ("zh-TW" if page.parts[0] == "zh-TW" else "en"), page
        for f in data["output"]["figures"]:
            go.Figure(f["figure"])  # raises on any invalid property
    assert langs == {"en", "zh-TW"}
