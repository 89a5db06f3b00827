"""engine/timing.py: the one timing loop, on a clock that only the timed calls move."""
import pytest

from engine.timing import MAX_SAMPLES, HostClock, calibrate_batch, measure, measure_in_turn


class CallClock:
    """Moves only when a call says so: every number below is exact."""

    name = "fake"

    def __init__(self):
        self.now, self.syncs = 0.0, 0

    def sync(self):
        self.syncs += 1

    def start(self):
        self.t0 = self.now

    def stop(self):
        return self.now - self.t0


def _costing(clock, seconds, log=None, name=None):
    def fn():
        clock.now += seconds
        if log is not None:
            log.append(name)
    return fn


def test_samples_are_taken_in_turn_and_setups_are_not_timed():
    clock, log = CallClock(), []
    fns = {"a": _costing(clock, 0.002, log, "a"), "b": _costing(clock, 0.005, log, "b")}
    setup = {"a": _costing(clock, 1.0), "b": _costing(clock, 1.0)}  # would dominate if timed
    stats = measure_in_turn(fns, clock, setup=setup, warmup=2, repeats=4)
    assert log == ["a", "b"] * 6  # 2 warm-ups, then 4 samples, alternating
    assert stats["a"].median == pytest.approx(0.002) and stats["b"].median == pytest.approx(0.005)
    assert stats["a"].n == stats["b"].n == 4 and clock.syncs == 1  # queued work awaited after warm-up


@pytest.mark.parametrize("min_seconds,expected", [(0.01, 10), (1.0, MAX_SAMPLES), (None, 3)])
def test_cheap_calls_sample_until_min_seconds(min_seconds, expected):
    clock = CallClock()
    assert measure(_costing(clock, 0.001), clock, repeats=3, min_seconds=min_seconds).n == expected


def test_slow_calls_stop_after_max_seconds_but_three_samples_at_least():
    clock = CallClock()
    assert measure(_costing(clock, 2.0), clock, repeats=10, max_seconds=5.0).n == 3
    assert measure(_costing(clock, 1.0), clock, repeats=10, max_seconds=4.5).n == 5


def test_a_batch_times_its_calls_and_setups_and_reports_per_call():
    clock = CallClock()
    stats = measure(_costing(clock, 0.003), clock, setup=_costing(clock, 0.001), warmup=0, repeats=2, batch=8)
    assert stats.median == pytest.approx(0.004)
    assert calibrate_batch(_costing(clock, 0.003), None, clock, min_s=0.02) == 8  # 8 * 3 ms >= 20 ms > 4 * 3 ms
    assert calibrate_batch(_costing(clock, 0.0), None, clock, min_s=0.02, max_batch=16) == 16


def test_the_host_clock_reads_real_time():
    import time

    stats = measure(lambda: time.sleep(0.002), HostClock(), repeats=2)
    assert stats.min >= 0.002
