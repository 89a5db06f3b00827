"""The "Run in your browser" lesson: committed numbers by default, the reader's own on request."""
from __future__ import annotations

import json
import math

import pytest
from lesson_checks import check_both_languages, check_describe, check_output, run_json_ok

from lessons.common import registry
from lessons.benchmarks import bench_browser

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
    assert ref is not None, "no committed CPU results of the course model (engine/bench_results/results/cpu-*.json)"
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


def test_a_call_never_looks_shorter_than_the_sleep_inside_it():
    """Bounded by what was measured, not by the nominal sleep (a busy machine stretches it)."""
    import time

    def fn():
        time.sleep(0.004)

    assert bench_browser.time_per_call(fn, lambda: None, samples=2) >= 0.004


class _CallClock:
    """A clock that only the timed call moves (3 ms a call): the numbers come out exact."""

    name = "fake"

    def __init__(self):
        self.now = 0.0

    def sync(self):
        pass

    def start(self):
        self.t0 = self.now

    def stop(self):
        return self.now - self.t0


def test_the_batch_outlasts_the_clock_and_the_median_is_per_call():
    from engine.timing import calibrate_batch

    clock = _CallClock()

    def fn():
        clock.now += 0.003

    batch = calibrate_batch(fn, None, clock, min_s=bench_browser.SAMPLE_MIN_S, max_batch=bench_browser.MAX_BATCH)
    assert batch * 0.003 >= bench_browser.SAMPLE_MIN_S > (batch // 2) * 0.003
    assert bench_browser.time_per_call(fn, lambda: None, samples=3, clock=clock) == pytest.approx(0.003)


def test_bad_values_are_bilingual_errors():
    for lang, word in (("en", "Longest context"), ("zh-TW", "最長上下文")):
        reply = run_json_ok("bench_browser", {"max_context": "100000"}, lang)
        assert reply["ok"] is False and word in reply["error"]["message"]
    reply = run_json_ok("bench_browser", {"measure": "yes"}, "en")
    assert reply["ok"] is False
    reply = json.loads(registry.run_json("bench_browser", "{not json", "en"))
    assert reply["ok"] is False
