"""The served plotly.js (overrides/hooks/demos_plotly.py): the cartesian partial bundle draws
every trace any lesson emits, and its version agrees with its locale and with the Python
``plotly`` package that validates the figures."""
from __future__ import annotations

import pytest

import demos_plotly
import demos_render
from lessons.common import registry
from lessons.common.base import LessonInputError


def test_bundle_locale_and_validator_are_one_plotly_js_version():
    """The zh-TW locale names buttons of its own version, and the Python validators know
    the attributes of theirs: all three must be the version the site serves."""
    from plotly.offline import get_plotlyjs_version

    served = demos_plotly.version()
    locale = (demos_plotly.VENDOR / demos_plotly.LOCALES["zh-TW"]).read_text(encoding="utf-8")
    assert f"plotly.js v{served} " in locale.splitlines()[0]
    assert 'name:"zh-TW"' in locale and "Plotly.register(locale)" in locale
    assert get_plotlyjs_version() == served
    assert (demos_plotly.VENDOR / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")


def test_the_partial_bundle_is_served_not_the_full_one():
    traces = demos_plotly.trace_types()
    assert {"scatter", "bar", "heatmap"} <= traces
    assert not traces & {"scatter3d", "sankey", "scattergeo", "mesh3d"}  # the full bundle's
    assert (demos_plotly.VENDOR / demos_plotly.BUNDLE).stat().st_size < 2_000_000


@pytest.mark.parametrize(("figure", "types"), [
    ({"data": [{"y": [1]}]}, {"scatter"}),  # plotly.js's default trace type
    ({"data": [{"type": "bar"}, {"type": "heatmap"}]}, {"bar", "heatmap"}),
    ({"data": []}, set()),
])
def test_figure_trace_types(figure, types):
    assert demos_plotly.figure_trace_types(figure) == types


def test_a_trace_the_bundle_lacks_fails_the_build():
    sankey = {"data": [{"type": "sankey", "node": {"label": ["a", "b"]},
                        "link": {"source": [0], "target": [1], "value": [1]}}], "layout": {}}
    with pytest.raises(demos_render.DemoBlockError, match=r"lesson 'x'.*sankey.*not in the served plotly\.js"):
        demos_render.validate_figure(sankey, "lesson 'x'")


def _control_values(control: dict) -> list:
    """The default and the other values a reader can pick (each option, both slider ends)."""
    if control["kind"] == "select":
        return [o["value"] for o in control["options"]]
    if control["kind"] == "slider":
        return [control["min"], control["max"]]
    if control["kind"] == "checkbox":
        return [True, False]
    return [control["default"], "The cat 貓 🐱", "x"]


def _value_sets(name: str) -> list[dict]:
    """The defaults, then one control changed at a time over its values."""
    controls = registry.describe(name, "en")["controls"]
    sets = [{}]
    for c in controls:
        sets += [{c["name"]: v} for v in _control_values(c) if v != c["default"]]
    return sets


@pytest.mark.parametrize("name", sorted(registry.LESSONS))
def test_every_trace_a_lesson_emits_is_one_the_served_bundle_draws(name):
    served = demos_plotly.trace_types()
    seen: set[str] = set()
    for values in _value_sets(name):
        try:
            out = registry.run(name, values, "en")
        except LessonInputError:
            continue  # a refused value draws nothing
        for f in out["figures"]:
            used = demos_plotly.figure_trace_types(f["figure"])
            assert used <= served, (name, values, f["key"], sorted(used - served))
            seen |= used
    assert seen, f"{name}: no run drew a figure"
