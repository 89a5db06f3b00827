"""The live path: Pyodide (from a local distribution) runs every demo in the browser.

Needs KV_PYODIDE_DIST: a folder holding a Pyodide distribution with NumPy
(pyodide.mjs, pyodide.asm.*, python_stdlib.zip, pyodide-lock.json and the NumPy wheel the
lock file names; tools/site/pyodide_local.md says how to assemble one). The test answers the
site's configured Pyodide index URL from that folder, so the built site is unchanged.

Every demo gets one control changed; the figure must be recomputed in the browser, and
what Pyodide computed must equal what CPython computes for the same values.
"""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import pytest

from demos_strings import strings
from tools.site.demo_pages import WAIT_PLOTTED, WAIT_RUN, attempts, prefix_of, serve_pyodide

pytestmark = [pytest.mark.live, pytest.mark.slow]

# Figures of measured wall-clock time (lesson -> figure keys, None: all of them): the
# browser's timings cannot equal CPython's, so only their structure is compared.
MEASURED = {"bench_browser": None, "kv_cache": {"seconds"}}
EVIL = "<img src=x onerror=alert(1)>"

READ_VALUES = """(i) => {
    const d = document.querySelectorAll(".kv-demo")[i], out = {};
    for (const c of d.querySelectorAll("[data-kind]")) {
        const k = c.dataset.kind;
        out[c.name] = k === "slider" ? Number(c.value) : k === "checkbox" ? c.checked : c.value;
    }
    return out;
}"""
# {figure key: times its plot was drawn} for demo i.
RENDERS = """(i) => Object.fromEntries([...document.querySelectorAll(".kv-demo")[i]
    .querySelectorAll("figure.kv-demo__figure")].map(f => [f.dataset.key,
        Number((f.querySelector(".kv-plot") || {dataset: {}}).dataset.kvRenders || 0)]))"""


@pytest.fixture(scope="module")
def dist() -> Path:
    path = os.environ.get("KV_PYODIDE_DIST")
    if not path:
        pytest.skip("KV_PYODIDE_DIST not set: point it at a local Pyodide distribution with NumPy "
                    "(see tools/site/pyodide_local.md) to run the demos in the browser")
    dist = Path(path)
    missing = [n for n in ("pyodide.mjs", "pyodide-lock.json", "python_stdlib.zip") if not (dist / n).is_file()]
    if missing:
        pytest.fail(f"KV_PYODIDE_DIST={path} lacks {', '.join(missing)}")
    return dist


def _close(a, b, where="") -> None:
    """a == b, numbers within one unit of their 4th significant digit: float32 sums differ in
    the last bits between Pyodide's NumPy and a native one, and lessons round to 4 digits, so
    a value on a rounding boundary may land one step apart."""
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) or not isinstance(b, (int, float)):
        if isinstance(a, dict) and isinstance(b, dict):
            assert a.keys() == b.keys(), where
            for k in a:
                _close(a[k], b[k], f"{where}.{k}")
        elif isinstance(a, list) and isinstance(b, list):
            assert len(a) == len(b), where
            for i, (x, y) in enumerate(zip(a, b)):
                _close(x, y, f"{where}[{i}]")
        else:
            assert a == b, where
        return
    assert math.isclose(a, b, rel_tol=1e-3, abs_tol=1e-6), f"{where}: {a} != {b}"


def _change_a_control(page, i: int) -> str:
    """Change one control of demo ``i`` as a reader would; returns what was changed."""
    demo = page.locator(".kv-demo").nth(i)
    slider = demo.locator('input[type="range"]')
    if slider.count():
        s = slider.first
        s.focus()
        page.keyboard.press("Home" if s.input_value() == s.get_attribute("max") else "End")
        return f"slider {s.get_attribute('name')}={s.input_value()}"
    select = demo.locator("select")
    if select.count():
        sel = select.first
        options = sel.locator("option").evaluate_all("os => os.map(o => o.value)")
        other = next(v for v in options if v != sel.input_value())
        sel.select_option(other)
        return f"select {sel.get_attribute('name')}={other}"
    box = demo.locator('input[type="checkbox"]')
    if box.count():
        box.first.click()
        return f"checkbox {box.first.get_attribute('name')}"
    text = demo.locator('input[type="text"]').first
    text.focus()
    page.keyboard.press("End")
    page.keyboard.type(" the")
    return f"text {text.get_attribute('name')}"


# Records every text the status lines show (progress messages are brief).
WATCH_STATUS = """() => {
    window.kvStatusLog = [];
    const obs = new MutationObserver(() => document.querySelectorAll(".kv-demo__status")
        .forEach((s) => { if (window.kvStatusLog.at(-1) !== s.textContent) window.kvStatusLog.push(s.textContent); }));
    document.querySelectorAll(".kv-demo__status").forEach((s) => obs.observe(s, {childList: true, characterData: true, subtree: true}));
}"""


def _assert_progress_shown(page, lang: str) -> None:
    """The cold start told the reader, in order and in their language: runtime, NumPy, engine."""
    log = page.evaluate("window.kvStatusLog")
    s = strings(lang)
    stages = [prefix_of(s[k]) for k in ("progress_runtime", "progress_numpy", "progress_engine")]
    seen = [next((n for n, text in enumerate(log) if text.startswith(stage)), None) for stage in stages]
    assert None not in seen and seen == sorted(seen), log


def _live_run(page, i: int, before: int) -> None:
    page.wait_for_function(WAIT_RUN, arg=[i, before], timeout=180_000)


def test_every_demo_recomputes_live_and_agrees_with_cpython(browser, site_server, pages, dist):
    from lessons.common import registry

    english = [p for p in pages if p.lang == "en"]
    context = browser.new_context()
    served = serve_pyodide(context, english[0].runtime["pyodide"]["indexURL"], dist)
    errors: list[str] = []
    try:
        page = context.new_page()
        page.on("pageerror", lambda e: errors.append(str(e)))
        for p in english:
            page.goto(site_server + p.path)
            page.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=30_000)
            for i, lesson in enumerate(p.lessons):
                before = page.evaluate(RENDERS, i)
                n = attempts(page, i)
                changed = _change_a_control(page, i)
                _live_run(page, i, n)
                where = f"{p.path} demo {i} ({lesson}, {changed})"
                status = page.locator(".kv-demo__status").nth(i)
                assert "kv-demo__status--error" not in (status.get_attribute("class") or ""), (
                    where, status.text_content(), status.get_attribute("data-detail"))
                assert status.text_content().startswith(prefix_of(strings("en")["live_done"])), where
                after = page.evaluate(RENDERS, i)
                # every figure the new output has is drawn anew (a control may drop or add figures,
                # e.g. the benchmark page's GPU figures when one CPU results file is picked)
                assert after and all(n > before.get(key, 0) for key, n in after.items()), (where, before, after)
                # What Pyodide computed equals what CPython computes for the same values.
                values = page.evaluate(READ_VALUES, i)
                live = page.locator(".kv-demo").nth(i).evaluate("d => d.kvLastOutput")
                here = json.loads(json.dumps(registry.run(lesson, values, "en")))
                assert [f["key"] for f in live["figures"]] == [f["key"] for f in here["figures"]], where
                assert list(after) == [f["key"] for f in here["figures"]], (where, "figures on the page")
                for lf, hf in zip(live["figures"], here["figures"]):
                    if lesson in MEASURED and (MEASURED[lesson] is None or lf["key"] in MEASURED[lesson]):
                        assert len(lf["figure"]["data"]) == len(hf["figure"]["data"]), where
                        continue
                    _close(lf["figure"]["data"], hf["figure"]["data"], f"{where} {lf['key']}")
                # An action button (e.g. "Append and continue") sets its controls and reruns.
                action = page.locator(".kv-demo").nth(i).locator(".kv-demo__action")
                if action.count():
                    wanted = json.loads(action.first.get_attribute("data-values"))
                    n = attempts(page, i)
                    action.first.click()
                    _live_run(page, i, n)
                    assert "kv-demo__status--error" not in (status.get_attribute("class") or ""), (
                        where, "action", status.text_content())
                    now = page.evaluate(READ_VALUES, i)
                    assert all(now[k] == v for k, v in wanted.items()), (where, wanted, now)
        assert "pyodide.mjs" in served and any(n.startswith("numpy-") for n in served)
        assert errors == []
    finally:
        context.close()


def test_reader_text_is_text_and_errors_recover(browser, site_server, pages, dist):
    """In zh-TW: HTML typed into a text box comes back as characters; an out-of-range value
    gets the lesson's message in the reader's language; the next good value works again."""
    zh = [p for p in pages if p.lang == "zh-TW"]
    if not zh:
        pytest.skip("no zh-TW page with a demo")
    context = browser.new_context()
    serve_pyodide(context, zh[0].runtime["pyodide"]["indexURL"], dist)
    dialogs: list[str] = []
    try:
        page = context.new_page()
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        typed = False
        for p in zh:
            page.goto(site_server + p.path)
            page.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=30_000)
            page.evaluate(WATCH_STATUS)
            for i in range(len(p.lessons)):
                demo = page.locator(".kv-demo").nth(i)
                text = demo.locator('input[type="text"]')
                if not typed and text.count():
                    n = attempts(page, i)
                    text.first.fill(EVIL)
                    _live_run(page, i, n)
                    assert demo.locator("img").count() == 0
                    typed = True
                    _assert_progress_shown(page, "zh-TW")
                slider = demo.locator('input[type="range"]')
                if slider.count():
                    s = slider.first
                    good = s.input_value()
                    n = attempts(page, i)
                    # A value no reader can pick with the widget, as a tampered page could send.
                    s.evaluate("(el) => { el.max = String(Number(el.max) * 10 + 10); el.value = el.max;"
                               " el.dispatchEvent(new Event('input', {bubbles: true})); }")
                    _live_run(page, i, n)
                    status = page.locator(".kv-demo__status").nth(i)
                    assert status.text_content().startswith(prefix_of(strings("zh-TW")["error_demo"])), status.text_content()
                    s.evaluate("(el, v) => { el.value = v; el.dispatchEvent(new Event('input', {bubbles: true})); }", good)
                    _live_run(page, i, n + 1)
                    assert status.text_content().startswith(prefix_of(strings("zh-TW")["live_done"])), status.text_content()
                    assert "kv-demo__status--error" not in status.get_attribute("class")
                    assert dialogs == []
                    if not typed:
                        _assert_progress_shown(page, "zh-TW")
                    return
        pytest.skip("no zh-TW demo has a slider")
    finally:
        context.close()


def test_a_runaway_computation_is_stopped_with_a_message(browser, site_server, pages, dist):
    """With a 1 ms run timeout (the page's config rewritten in flight) every run is cut off:
    the worker is terminated and the reader is told, in the page's language."""
    p = next(p for p in pages if p.lang == "en")
    context = browser.new_context()
    serve_pyodide(context, p.runtime["pyodide"]["indexURL"], dist)

    def tighten(route):
        html = route.fetch().text()
        route.fulfill(body=html.replace('"runTimeoutMs":', '"runTimeoutMs":1,"was":'),
                      headers={"content-type": "text/html; charset=utf-8"})

    context.route(site_server + p.path, tighten)
    try:
        page = context.new_page()
        page.goto(site_server + p.path)
        page.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=30_000)
        page.locator(".kv-demo__run").first.click()
        _live_run(page, 0, 0)
        status = page.locator(".kv-demo__status").first
        assert status.text_content().startswith(prefix_of(strings("en")["error_timeout"])), status.text_content()
        assert page.locator(".kv-demo .kv-plot.js-plotly-plot svg.main-svg").count() >= p.figures
    finally:
        context.close()


# The text of a demo's tables: {figure key or "tables[i]": rows of cell texts}.
TABLE_TEXT = """(i) => {
    const d = document.querySelectorAll(".kv-demo")[i], out = {};
    const rows = (t) => [...t.querySelectorAll("tr")].map((r) => [...r.children].map((c) => c.textContent));
    d.querySelectorAll("figure.kv-demo__figure").forEach((f) => {
        const t = f.querySelector("table");
        if (t) out[f.dataset.key] = rows(t);
    });
    d.querySelectorAll(".kv-demo__tables table").forEach((t, n) => { out[`tables[${n}]`] = rows(t); });
    return out;
}"""


def _unmeasured(lesson: str, tables: dict) -> dict:
    """The tables whose values do not change from run to run (not wall-clock timings)."""
    keys = MEASURED.get(lesson, set())
    return {} if keys is None else {k: v for k, v in tables.items() if k not in keys}


NUMBER = re.compile(r"^(-?)(\d[\d,]*)(?:\.(\d+))?$")


def _same_cell(a: str, b: str) -> bool:
    """The same text, or two numbers written in the same form (sign, digit grouping, decimals)
    one unit apart in their last digit: CPython's BLAS and Pyodide's NumPy sum a float32
    matmul in different orders, so a value near a rounding boundary may land on either side
    (keep_positions' KL 0.00972 at build time, 0.00973 in Pyodide). A different form, say
    1.23457e+06 against 1234570, is a formatting difference and counts."""
    if a == b:
        return True
    ma, mb = NUMBER.match(a), NUMBER.match(b)
    if not (ma and mb) or len(ma[2]) != len(mb[2]) or len(ma[3] or "") != len(mb[3] or ""):
        return False
    unit = 10.0 ** -len(ma[3] or "")
    return abs(float(a.replace(",", "")) - float(b.replace(",", ""))) <= unit * 1.0001


def _same_table(before, after) -> bool:
    return after is not None and len(before) == len(after) and all(
        len(r) == len(s) and all(_same_cell(x, y) for x, y in zip(r, s)) for r, s in zip(before, after))


def _first_difference(before, after):
    for r, s in zip(before, after or []):
        if r != s:
            return r, s
    return None


def test_cells_one_last_digit_apart_are_the_same_and_another_form_is_not():
    assert _same_cell("0.00972", "0.00973") and _same_cell("1,234", "1,235") and _same_cell("12", "12")
    assert not _same_cell("0.00972", "0.00974")  # two units apart: a real change
    assert not _same_cell("1.23457e+06", "1234570") and not _same_cell("0.0097", "0.00972")
    assert not _same_cell("1,234", "1234") and not _same_cell("mat", "hat")
    assert not _same_table([["a", "1"]], [["a", "1"], ["b", "2"]]) and not _same_table([["1"]], None)


def test_table_text_is_the_same_before_and_after_a_live_run(browser, site_server, pages, dist):
    """Python formats every table cell; the template and the runtime only place its text. So
    a live run with the default values leaves the text of every table as the build wrote it
    (a number may move by one unit in its last digit, see _same_cell) (before: 1234567.5 read 1.23457e+06 pre-rendered and 1234570 after a run).
    Tables of measured times differ from run to run and are left out."""
    english = [p for p in pages if p.lang == "en"]
    context = browser.new_context()
    serve_pyodide(context, english[0].runtime["pyodide"]["indexURL"], dist)
    changed, compared = [], 0
    try:
        page = context.new_page()
        for p in english:
            page.goto(site_server + p.path)
            page.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=30_000)
            for i, lesson in enumerate(p.lessons):
                before = _unmeasured(lesson, page.evaluate(TABLE_TEXT, i))
                n = attempts(page, i)
                page.locator(".kv-demo").nth(i).locator(".kv-demo__run").click()
                _live_run(page, i, n)
                status = page.locator(".kv-demo__status").nth(i)
                assert "kv-demo__status--error" not in status.get_attribute("class"), (p.path, lesson)
                after = _unmeasured(lesson, page.evaluate(TABLE_TEXT, i))
                compared += len(before)
                changed += [(lesson, key, _first_difference(before[key], after.get(key))) for key in before
                            if not _same_table(before[key], after.get(key))]
    finally:
        context.close()
    assert compared, "no table was compared"
    assert not changed, f"table text differs after a live run: {changed}"


def test_an_internal_error_is_told_as_one_with_the_detail_in_the_console(browser, site_server, pages, dist):
    """A bug in Python (here: a demo asking for a lesson the registry does not have, as a
    stale page could) gets the "internal" message in the page's language, not "check your
    connection"; the exception that lessons.common.registry.run_json reports reaches the console."""
    p = next(q for q in pages if q.lang == "zh-TW")
    context = browser.new_context()
    serve_pyodide(context, p.runtime["pyodide"]["indexURL"], dist)

    def rename(route):
        html = route.fetch().text()
        body = html.replace(f'"lesson":"{p.lessons[0]}"', '"lesson":"no_such_lesson"', 1)
        route.fulfill(body=body, headers={"content-type": "text/html; charset=utf-8"})

    context.route(site_server + p.path, rename)
    console: list[str] = []
    try:
        page = context.new_page()
        page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
        page.goto(site_server + p.path)
        page.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=30_000)
        page.locator(".kv-demo__run").first.click()
        _live_run(page, 0, 0)
        status = page.locator(".kv-demo__status").first
        assert status.text_content() == strings("zh-TW")["error_internal"]
        assert status.get_attribute("data-kind") == "internal"
        assert [c for c in console if "no_such_lesson" in c and "ValueError" in c], console
    finally:
        context.close()
