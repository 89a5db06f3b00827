"""The demos in a real browser, without Python: what every reader sees before (or instead
of) Pyodide. The Pyodide index is made unreachable in every test here, so these tests also
prove that nothing about the first view depends on it.
"""
from __future__ import annotations

import pytest

from demo_pages import WAIT_PLOTTED, WAIT_RUN, block_pyodide, demo_pages, prefix_of, strings


@pytest.fixture(scope="module")
def pages(built_site):
    found = demo_pages(built_site)
    if not found:
        pytest.skip("the built site has no demos yet (no page embeds a ```kv-demo block)")
    return found


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


def test_controls_work_by_keyboard(page, site_server, pages):
    """Tab reaches every control in order; arrows move a slider (its value shown) and
    typing changes a text box; either change asks for a live run."""
    p = _first(pages, "en")
    block_pyodide(page.context, p.runtime["pyodide"]["indexURL"])
    page.goto(site_server + p.path)
    page.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=30_000)
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
        select = demo.locator("select").first
        select.focus()
        before = select.input_value()
        page.keyboard.press("ArrowDown")
        assert select.input_value() != before
    # The change (debounced) starts a live run: with Pyodide unreachable it ends in the message.
    page.wait_for_function(WAIT_RUN, arg=[0, 0], timeout=60_000)
    assert demo.locator(".kv-demo__status--error").count() == 1


def test_phone_width_has_no_horizontal_overflow(browser, site_server, pages):
    context = browser.new_context(viewport={"width": 375, "height": 800}, is_mobile=True)
    try:
        pg = context.new_page()
        block_pyodide(context, pages[0].runtime["pyodide"]["indexURL"])
        for p in pages:
            pg.goto(site_server + p.path)
            pg.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=30_000)
            widths = pg.evaluate("""() => [...document.querySelectorAll('.kv-demo')].map(
                d => [d.scrollWidth, d.clientWidth, d.getBoundingClientRect().right])""")
            for scroll, client, right in widths:
                assert scroll <= client + 1 and right <= 375 + 1, (p.path, scroll, client, right)
            assert pg.evaluate("document.documentElement.scrollWidth") <= 375, p.path
    finally:
        context.close()


def test_figures_follow_the_palette(page, site_server, pages):
    p = _first(pages, "en")
    block_pyodide(page.context, p.runtime["pyodide"]["indexURL"])
    page.goto(site_server + p.path)
    page.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=30_000)
    font = "() => document.querySelector('.kv-demo .kv-plot')._fullLayout.font.color"
    page.evaluate("document.body.setAttribute('data-md-color-scheme', 'default')")
    page.wait_for_timeout(200)
    light = page.evaluate(font)
    page.evaluate("document.body.setAttribute('data-md-color-scheme', 'slate')")
    page.wait_for_function(f"(c) => ({font})() !== c", arg=light, timeout=5_000)
    dark = page.evaluate(font)
    expected = page.evaluate("getComputedStyle(document.body).getPropertyValue('--md-default-fg-color').trim()")
    assert dark != light and expected


def test_plotly_is_served_by_the_site_and_only_on_demo_pages(page, site_server, pages, built_site):
    p = _first(pages, "en")
    block_pyodide(page.context, p.runtime["pyodide"]["indexURL"])
    requested = []
    page.on("request", lambda r: requested.append(r.url))
    page.goto(site_server + p.path)
    page.wait_for_function(WAIT_PLOTTED, arg=p.figures, timeout=30_000)
    plotly = [u for u in requested if "plotly" in u]
    assert plotly == [site_server + p.runtime["plotly"]]
    # A page without demos loads neither plotly.js nor anything of Pyodide.
    plain = next(h for h in sorted(built_site.glob("*/index.html")) if "kv-demo__data" not in h.read_text(encoding="utf-8"))
    requested.clear()
    page.goto(site_server + plain.parent.name + "/")
    page.wait_for_load_state("load")
    assert not [u for u in requested if "plotly" in u or "pyodide" in u]


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
