"""The demos in a real browser, without Python: what every reader sees before (or instead
of) Pyodide. The Pyodide index is made unreachable in every test here, so these tests also
prove that nothing about the first view depends on it.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from demos_strings import strings
from tools.site.demo_pages import WAIT_PLOTTED, WAIT_RUN, block_pyodide, prefix_of, serve_pyodide


def _each_plotted_page(browser, site_server, pages, width, height):
    """Yield (page, demo page) for every demo page at that viewport, pre-rendered figures
    drawn, Pyodide blocked (these checks are about the page before Python loads)."""
    context = browser.new_context(viewport={"width": width, "height": height}, is_mobile=width < 500)
    try:
        pg = context.new_page()
        block_pyodide(context, pages[0].runtime["pyodide"]["indexURL"])
        for p in pages:
            pg.goto(site_server + p.path)
            pg.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=30_000)
            yield pg, p
    finally:
        context.close()


def _first(pages, lang):
    for p in pages:
        if p.lang == lang:
            return p
    pytest.skip(f"no {lang} page with a demo")


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_every_prerendered_figure_renders_without_python(page, site_server, pages, lang):
    """Each demo page plots all its figures from the embedded JSON, with no console error,
    the status line in the page's language, and no request to the Pyodide index."""
    mine = [p for p in pages if p.lang == lang]
    assert mine, f"no {lang} demo pages"
    tried = block_pyodide(page.context, mine[0].runtime["pyodide"]["indexURL"])
    for p in mine:
        page.goto(site_server + p.path)
        page.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=30_000)
        assert page.locator(".kv-demo").count() == len(p.lessons), p.path
        statuses = page.locator(".kv-demo__status").all_text_contents()
        assert statuses == [strings(lang)["status_prerendered"]] * len(p.lessons), p.path
        assert page.evaluate("document.documentElement.lang") in (lang, lang.lower()), p.path
    assert page.console_errors == []
    assert tried == [], "Pyodide was requested before any interaction"


def test_language_switch_keeps_the_page(page, site_server, pages):
    en = _first(pages, "en")
    twin = next((p for p in pages if p.lang == "zh-TW" and p.path == "zh-TW/" + en.path), None)
    if twin is None:
        pytest.skip(f"{en.path} has no zh-TW twin with demos yet")
    page.goto(site_server + en.path)
    link = page.locator('a[hreflang="zh-TW"]').first
    page.goto(link.evaluate("a => a.href"))
    assert page.url == site_server + twin.path
    page.wait_for_function(WAIT_PLOTTED, arg=twin.figures, timeout=30_000)
    assert page.locator(".kv-demo").first.get_attribute("data-lang") == "zh-TW"
    assert page.locator(".kv-demo__run").first.text_content() == strings("zh-TW")["run_live"]


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_unreachable_runtime_shows_a_message_and_keeps_the_figures(page, site_server, pages, lang):
    p = _first(pages, lang)
    tried = block_pyodide(page.context, p.runtime["pyodide"]["indexURL"])
    page.goto(site_server + p.path)
    page.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=30_000)
    page.locator(".kv-demo__run").first.click()
    page.wait_for_function(WAIT_RUN, arg=[0, 0], timeout=60_000)
    status = page.locator(".kv-demo__status").first
    assert "kv-demo__status--error" in status.get_attribute("class")
    text = status.text_content()
    assert text.startswith(prefix_of(strings(lang)["error_load"])), text
    assert tried and tried[0].endswith("pyodide.mjs")
    # The pre-rendered figures are still there and still Plotly figures.
    assert page.locator(".kv-demo .kv-plot.js-plotly-plot svg.main-svg").count() >= p.figures


# A control that a keypress can change: a select needs a second option (the benchmarks
# page's "results" select has only "all" in a clone without committed results).
CHANGEABLE = """(d) => [...d.querySelectorAll("[data-kind]")].some(
    c => c.dataset.kind !== "select" || c.options.length > 1)"""


def test_controls_work_by_keyboard(page, site_server, pages):
    """Tab reaches every control in order; arrows move a slider (its value shown) and
    typing changes a text box; either change asks for a live run."""
    en = [p for p in pages if p.lang == "en"]
    assert en, "no en demo pages"
    block_pyodide(page.context, en[0].runtime["pyodide"]["indexURL"])
    for p in en:  # the first page whose first demo has a control a key can change
        page.goto(site_server + p.path)
        page.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=30_000)
        if page.locator(".kv-demo").first.evaluate(CHANGEABLE):
            break
    else:
        pytest.skip("no en demo has a control that a key can change")
    demo = page.locator(".kv-demo").first
    controls = demo.locator("[data-kind]")
    ids = controls.evaluate_all("els => els.map(e => e.id)")
    assert ids, "the first demo has no controls"
    # Focus the element just before the first control, then Tab through all of them.
    demo.locator(".kv-demo__title").evaluate("el => { el.tabIndex = -1; el.focus(); }")
    seen = []
    for _ in range(len(ids) * 3):
        page.keyboard.press("Tab")
        focused = page.evaluate("document.activeElement.id")
        if focused in ids and focused not in seen:
            seen.append(focused)
        if len(seen) == len(ids):
            break
    assert seen == ids

    sliders = demo.locator('input[type="range"]')
    texts = demo.locator('input[type="text"]')
    selects = demo.locator("select").filter(has=page.locator("option:nth-child(2)"))
    if sliders.count():
        s = sliders.first
        s.focus()
        before = s.input_value()
        page.keyboard.press("End" if before != s.get_attribute("max") else "Home")
        after = s.input_value()
        assert after != before
        assert s.locator("xpath=..").locator("output").text_content() == after
    elif texts.count():
        t = texts.first
        t.focus()
        page.keyboard.press("End")
        page.keyboard.type(" <b>")
        assert t.input_value().endswith(" <b>")
    else:
        select = selects.first
        select.focus()
        before = select.input_value()
        last = select.evaluate("s => s.selectedIndex === s.options.length - 1")
        page.keyboard.press("ArrowUp" if last else "ArrowDown")
        assert select.input_value() != before
    # The change (debounced) starts a live run: with Pyodide unreachable it ends in the message.
    page.wait_for_function(WAIT_RUN, arg=[0, 0], timeout=60_000)
    assert demo.locator(".kv-demo__status--error").count() == 1


# Boxes of what can collide in a plot: the legend, the axis titles, the plot area.
BOXES = """(div) => {
    const box = (el) => { if (!el) return null; const r = el.getBoundingClientRect();
        return r.width && r.height ? [r.left, r.top, r.right, r.bottom] : null; };
    const all = (sel) => [...div.querySelectorAll(sel)].map(box).filter(Boolean);
    return {
        div: box(div),
        legend: box(div.querySelector(".legend")),
        xtitles: all(".g-xtitle text, .g-x2title text"),
        plots: all(".cartesianlayer .bg, .nsewdrag"),
        plotTitle: [...div.querySelectorAll(".g-gtitle text")].map(t => t.textContent).join(""),
    };
}"""


def _overlap(a, b) -> bool:
    return a[0] < b[2] - 1 and b[0] < a[2] - 1 and a[1] < b[3] - 1 and b[1] < a[3] - 1


@pytest.mark.parametrize("width", [1280, 375])
def test_figures_have_one_title_and_legends_clear_of_the_axes(browser, site_server, pages, width):
    """The figcaption is a figure's only title (no Plotly title repeats it), and a legend
    sits above the plot area: it covers neither an x-axis title nor the plot, on a desktop
    and on a 375 px phone, in both languages."""
    for pg, p in _each_plotted_page(browser, site_server, pages, width, 900):
        for i, plot in enumerate(pg.locator(".kv-demo .kv-plot").all()):
            b = plot.evaluate(BOXES)
            where = (p.path, i, width)
            assert b["plotTitle"] == "", where
            if b["legend"]:
                assert not any(_overlap(b["legend"], x) for x in b["xtitles"]), where
                assert not any(_overlap(b["legend"], a) for a in b["plots"]), where
                assert b["legend"][2] <= b["div"][2] + 1, where  # not cut off at the right


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_mode_bar_keeps_the_useful_buttons_in_the_page_language(page, site_server, pages, lang):
    """Zoom, pan, reset and download stay; the Plotly logo, cloud/Chart Studio links and the
    selection tools go; on zh-TW pages the tooltips are plotly.js's zh-TW ones."""
    p = _first(pages, lang)
    block_pyodide(page.context, p.runtime["pyodide"]["indexURL"])
    page.goto(site_server + p.path)
    page.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=30_000)
    plot = page.locator(".kv-demo .kv-plot").first
    plot.hover()
    assert plot.locator(".modebar-btn--logo, a.modebar-btn[href*='plotly']").count() == 0
    cfg = plot.evaluate("d => d._context")
    assert cfg["displaylogo"] is False
    assert cfg.get("showSendToCloud", False) is False and cfg.get("showEditInChartStudio", False) is False
    names = plot.locator(".modebar-btn").evaluate_all("bs => bs.map(b => b.getAttribute('data-title'))")
    assert not [n for n in names if "Chart Studio" in n or "cloud" in n.lower() or "Plotly" in n]
    assert plot.evaluate("d => d._context.locale") == lang
    zoom = plot.locator(".modebar-btn[data-attr='dragmode'][data-val='zoom']").get_attribute("data-title")
    pan = plot.locator(".modebar-btn[data-attr='dragmode'][data-val='pan']").get_attribute("data-title")
    assert zoom and pan and len(names) >= 4
    assert plot.locator(".modebar-btn[data-attr='dragmode'][data-val='select']").count() == 0
    assert plot.locator(".modebar-btn[data-attr='dragmode'][data-val='lasso']").count() == 0
    if lang == "en":
        assert "Download plot as a PNG" in names and zoom == "Zoom"
    else:
        assert "Download plot as a PNG" not in names and zoom != "Zoom"
        assert all(any("\u4e00" <= ch <= "\u9fff" for ch in n) for n in names), names
    assert page.console_errors == []


WRAPS = """() => [...document.querySelectorAll(".kv-demo .kv-table-wrap")].map(
    w => [w.getAttribute("tabindex"), w.getAttribute("role"), w.getAttribute("aria-label") || ""])"""


def _assert_wraps_are_regions(wraps, lang, where):
    assert wraps, where
    for tabindex, role, label in wraps:
        assert (tabindex, role) == ("0", "region") and label.strip(), (where, tabindex, role, label)
        if lang == "zh-TW":
            assert any("\u4e00" <= ch <= "\u9fff" for ch in label), (where, label)


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_table_wrappers_are_focusable_named_regions(page, site_server, pages, lang):
    """Every scrolling table wrapper of a demo takes focus and is named in the page's
    language (WCAG 2.1.1, axe scrollable-region-focusable), before any live run."""
    mine = [p for p in pages if p.lang == lang]
    block_pyodide(page.context, mine[0].runtime["pyodide"]["indexURL"])
    for p in mine:
        page.goto(site_server + p.path)
        page.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=30_000)
        _assert_wraps_are_regions(page.evaluate(WRAPS), lang, p.path)


@pytest.mark.live
@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_table_wrappers_stay_regions_after_a_live_redraw(page, site_server, pages, lang):
    """A live run replaces the tables: the new wrappers keep tabindex, role and name.
    Needs KV_PYODIDE_DIST (a local Pyodide distribution, see tools/site/pyodide_local.md)."""
    dist = os.environ.get("KV_PYODIDE_DIST")
    if not dist:
        pytest.skip("KV_PYODIDE_DIST not set: the live redraw needs a local Pyodide distribution")
    # A page whose demo has lesson tables as well as figure tables: the tokens plate.
    p = next((q for q in pages if q.lang == lang and "tokens" in q.lessons), None) or _first(pages, lang)
    serve_pyodide(page.context, p.runtime["pyodide"]["indexURL"], Path(dist))
    page.goto(site_server + p.path)
    page.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=30_000)
    page.locator(".kv-demo__run").first.click()
    page.wait_for_function(WAIT_RUN, arg=[0, 0], timeout=240_000)
    demo = page.locator(".kv-demo").first
    assert demo.get_attribute("data-kv-live-runs") == "1", demo.locator(".kv-demo__status").text_content()
    _assert_wraps_are_regions(page.evaluate(WRAPS), lang, p.path)


def test_phone_width_has_no_horizontal_overflow(browser, site_server, pages):
    for pg, p in _each_plotted_page(browser, site_server, pages, 375, 800):
        widths = pg.evaluate("""() => [...document.querySelectorAll('.kv-demo')].map(
            d => [d.scrollWidth, d.clientWidth, d.getBoundingClientRect().right])""")
        for scroll, client, right in widths:
            assert scroll <= client + 1 and right <= 375 + 1, (p.path, scroll, client, right)
        assert pg.evaluate("document.documentElement.scrollWidth") <= 375, p.path


FONT = "() => document.querySelector('.kv-demo .kv-plot')._fullLayout.font.color"
PAGE_FG = "() => getComputedStyle(document.body).getPropertyValue('--md-default-fg-color').trim()"


def test_figures_follow_the_palette(page, site_server, pages):
    """A palette toggle redraws the figures with the palette's own text colour."""
    p = _first(pages, "en")
    block_pyodide(page.context, p.runtime["pyodide"]["indexURL"])
    page.goto(site_server + p.path)
    page.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=30_000)
    colours = {}
    for scheme in ("slate", "default"):
        page.evaluate("(s) => document.body.setAttribute('data-md-color-scheme', s)", scheme)
        page.wait_for_function(f"() => ({FONT})() === ({PAGE_FG})()", timeout=5_000)
        colours[scheme] = page.evaluate(FONT)
    assert colours["slate"] != colours["default"], colours


def test_plotly_is_served_by_the_site_and_only_on_demo_pages(page, site_server, pages, built_site):
    p = _first(pages, "en")
    block_pyodide(page.context, p.runtime["pyodide"]["indexURL"])
    requested = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(site_server + p.path)
    page.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=30_000)
    plotly = [u for u in requested if "/vendor/plotly/" in u]
    assert plotly == [site_server + p.runtime["plotly"]]
    assert "/assets/vendor/plotly/plotly-cartesian.min.js" in plotly[0]
    # A page without demos loads neither the demo runtime nor plotly.js nor Pyodide.
    plain = next(h for h in sorted(built_site.glob("*/index.html")) if "kv-demo__data" not in h.read_text(encoding="utf-8"))
    requested.clear()
    page.goto(site_server + plain.parent.name + "/")
    page.wait_for_load_state("networkidle")
    assert requested and not [u for u in requested
                              if "plotly" in u or "pyodide" in u or "/javascripts/kv-" in u]


def test_the_served_plotly_registers_the_traces_the_build_allows(page, site_server, pages):
    """The build reads the trace types of the vendored bundle from its text (demos_plotly);
    plotly.js itself, running in the page, must name the same ones."""
    import demos_plotly

    p = _first(pages, "en")
    block_pyodide(page.context, p.runtime["pyodide"]["indexURL"])
    page.goto(site_server + p.path)
    page.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=30_000)
    registered = page.evaluate("Object.keys(Plotly.PlotSchema.get().traces)")
    assert set(registered) == demos_plotly.trace_types()
    assert page.evaluate("Plotly.version") == demos_plotly.version()


def test_a_browser_without_module_workers_is_told_so(page, site_server, pages):
    """Old browsers read the `type` option of new Worker() not at all: emulate one."""
    p = _first(pages, "zh-TW")
    page.add_init_script("""(() => {
        const Real = window.Worker;
        window.Worker = function (url, options) { return new Real(url); };  // ignores {type}
    })()""")
    tried = block_pyodide(page.context, p.runtime["pyodide"]["indexURL"])
    page.goto(site_server + p.path)
    page.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=30_000)
    page.locator(".kv-demo__run").first.click()
    page.wait_for_function(WAIT_RUN, arg=[0, 0], timeout=30_000)
    assert page.locator(".kv-demo__status").first.text_content() == strings("zh-TW")["error_old_browser"]
    assert tried == []
