"""The "Run in your browser" lesson: committed numbers by default, the reader's own on request."""
from __future__ import annotations

import json
import math

import pytest
from lesson_checks import check_both_languages, check_describe, check_output, run_json_ok

from lessons import bench_browser, registry

TINY = {"max_context": "32", "repeats": 1}


def test_default_render_times_nothing_and_offers_the_button(course, monkeypatch):
    monkeypatch.setattr(bench_browser, "measure", lambda *a, **k: pytest.fail("timed without being asked"))
    check_describe("bench_browser")
    outs = check_both_languages("bench_browser")
    for lang, out in outs.items():
        (action,) = out["actions"]
        assert action["values"]["measure"] is True
        names = [tr["name"] for tr in out["figures"][0]["figure"]["data"]]
        assert not any(n.startswith(("you", "你的裝置")) for n in names)


def test_committed_course_numbers_are_drawn(course):
    ref = bench_browser.committed_course_points()
    if ref is None:
        pytest.skip("no committed CPU results of the course model")
    label, points = ref
    out = registry.run("bench_browser", None, "en")
    trace = next(tr for tr in out["figures"][0]["figure"]["data"] if tr["name"] == f"{label} — with cache")
    assert trace["y"] == pytest.approx([p["decode_cached"]["median_s"] * 1e3 for p in points], rel=1e-5)


def test_measuring_on_tiny_settings_plots_the_readers_numbers(course):
    outs = check_both_languages("bench_browser", {**TINY, "measure": True})
    data = outs["en"]["figures"][0]["figure"]["data"]
    mine = {tr["name"]: tr for tr in data if tr["name"].startswith("you")}
    cached, uncached = mine["you — with cache"], mine["you — no cache"]
    assert cached["x"] == uncached["x"] == [16, 32]
    assert all(y > 0 for y in cached["y"] + uncached["y"])
    # recomputing 33 tokens must cost more than computing one with the cache
    assert uncached["y"][-1] > cached["y"][-1]
    assert "actions" not in outs["en"]


def test_the_sweep_stops_when_its_time_budget_is_spent(course):
    points, stopped = bench_browser.measure(256, 1, budget_s=0.0)
    assert stopped and [p["context"] for p in points] == [16]


def test_each_sample_outlasts_a_coarse_clock():
    """Bounded by what was measured, not by the nominal sleep (a busy machine stretches it):
    the batch chosen lasted at least SAMPLE_MIN_S when it was chosen (the first sample),
    unless it hit its cap; a call never looks shorter than the sleep inside it."""
    import time

    def fn():
        time.sleep(0.004)

    batch, spent = bench_browser.sample_batches(fn, lambda: None, samples=3)
    assert len(spent) == 3 and all(s >= 0.004 * batch for s in spent)
    assert spent[0] >= bench_browser.SAMPLE_MIN_S or batch == bench_browser.MAX_BATCH
    assert bench_browser.time_per_call(fn, lambda: None, samples=2) >= 0.004


def test_the_batch_doubles_until_it_outlasts_the_clock(monkeypatch):
    """On a clock that only the timed call moves (3 ms a call) the numbers are exact."""
    import types

    clock = [0.0]

    def fn():
        clock[0] += 0.003

    monkeypatch.setattr(bench_browser, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    batch, spent = bench_browser.sample_batches(fn, lambda: None, samples=2)
    assert batch * 0.003 >= bench_browser.SAMPLE_MIN_S > (batch // 2) * 0.003
    assert spent == pytest.approx([batch * 0.003] * 2)
    assert bench_browser.time_per_call(fn, lambda: None, samples=3) == pytest.approx(0.003)


def test_bad_values_are_bilingual_errors():
    for lang, word in (("en", "Longest context"), ("zh-TW", "最長上下文")):
        reply = run_json_ok("bench_browser", {"max_context": "100000"}, lang)
        assert reply["ok"] is False and word in reply["error"]["message"]
    reply = run_json_ok("bench_browser", {"measure": "yes"}, "en")
    assert reply["ok"] is False
    reply = json.loads(registry.run_json("bench_browser", "{not json", "en"))
    assert reply["ok"] is False
