"""The benchmark harness: a tiny in-process run that must match schema.json, the statistics,
the thread pinning, and the one-line errors (the missing-CuPy one above all).

Runs take seconds: one toy shape, two contexts, a given peak bandwidth (no copy test).
The schema check itself is tested in test_bench_schema.py, the results file's place and
writing in test_bench_store.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.bench_results import schema
from tools.bench.backend import BenchError, get_backend
from tools.bench.cli import main
from tools.bench.runner import Options, run_benchmark
from tools.bench.timers import summarize, time_host

ROOT = Path(__file__).resolve().parents[3]
TINY = dict(shapes=("tiny",), contexts=(8, 16), warmup=0, repeats=3, compare=False, peak_bw_gbs=10.0,
            min_point_seconds=0.0)


def _run_cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tools.bench", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def tiny_doc():
    return run_benchmark(Options(**TINY), log=lambda m: None)


# --------------------------------------------------------------------------- results document


def test_tiny_run_matches_the_schema(tiny_doc):
    schema.validate(tiny_doc)
    assert [p["context"] for p in tiny_doc["runs"][0]["points"]] == [8, 16]


def test_kv_bytes_and_floor_follow_the_model_and_the_peak(tiny_doc):
    from engine import KVCache
    from engine.config import Config

    run = tiny_doc["runs"][0]
    cfg = Config.from_dict({k: v for k, v in run["config"].items() if k != "head_dim"})
    per_token = KVCache(cfg, max_len=1).bytes_per_token  # the cache's own accounting
    peak = tiny_doc["provenance"]["peak_bandwidth"]["value"]
    for p in run["points"]:
        assert p["kv_cache_bytes"] == p["context"] * per_token
        assert p["decode_bytes"] > run["weights_bytes"] - cfg.vocab_size * cfg.d_model * cfg.dtype_bytes
        assert p["lower_bound_s"] == pytest.approx(p["decode_bytes"] / peak)
        assert p["achieved_bandwidth"] == pytest.approx(p["decode_bytes"] / p["decode_cached"]["median_s"])
        stats = p["decode_cached"]
        assert stats["min_s"] <= stats["p10_s"] <= stats["median_s"] <= stats["p90_s"] <= stats["max_s"]


def test_provenance_says_where_the_numbers_come_from(tiny_doc):
    prov = tiny_doc["provenance"]
    assert prov["peak_bandwidth"] == {"value": 10.0e9, "source": "user",
                                      "note": "given on the command line with --peak-bw-gbs"}
    assert prov["peak_flops"]["source"] == "measured"
    assert prov["device"]["kind"] == "cpu" and prov["cuda"] is None
    assert prov["versions"]["numpy"] == np.__version__
    assert prov["timing"]["clock"] == "perf_counter"
    assert len(prov["host"]["loadavg_end"]) == 3


def test_expensive_measurements_are_skipped_with_a_reason():
    opts = Options(**{**TINY, "contexts": (16,)}, max_point_seconds=1e-9)
    point = run_benchmark(opts, log=lambda m: None)["runs"][0]["points"][0]
    assert point["prefill"] is None and point["decode_uncached"] is None
    assert "--max-point-seconds" in point["skipped"]["prefill"]
    assert point["decode_cached"]["median_s"] > 0  # the cached step is always measured


# --------------------------------------------------------------------------- statistics


def test_summary_statistics_agree_with_numpy():
    samples = list(np.random.default_rng(0).exponential(size=37))
    s = summarize(samples)
    assert s.median == pytest.approx(np.percentile(samples, 50))
    assert s.p10 == pytest.approx(np.percentile(samples, 10))
    assert s.p90 == pytest.approx(np.percentile(samples, 90))
    assert (s.min, s.max, s.n) == (min(samples), max(samples), 37)


def test_host_timer_runs_setup_untimed_and_respects_the_time_cap():
    calls = []
    stats = time_host(lambda: calls.append("fn"), setup=lambda: calls.append("setup"), warmup=1, repeats=4)
    assert calls == ["setup", "fn"] * 5 and stats.n == 4
    import time

    capped = time_host(lambda: time.sleep(0.02), warmup=0, repeats=100, max_seconds=0.05)
    assert capped.n == 3  # stops after the cap, but never below three samples
    longer = time_host(lambda: time.sleep(0.002), warmup=0, repeats=3, min_seconds=0.03)
    # Cheap calls are sampled until min_seconds are measured, and no longer. Bounded by what was
    # measured, not by the nominal sleep (a busy machine stretches every sleep): the n samples
    # reach 0.03 s, so n * max >= 0.03; beyond the 3 required ones, sample n was taken only
    # because the first n - 1 had not reached it, so (n - 1) * min < 0.03.
    assert longer.n * longer.max >= 0.03
    assert longer.n == 3 or (longer.n - 1) * longer.min < 0.03


# --------------------------------------------------------------------------- command line


def test_cli_writes_a_valid_file(tmp_path, capsys):
    out = tmp_path / "r.json"
    rc = main(["--shapes", "tiny", "--contexts", "8,16", "--threads", "0", "--no-compare", "--peak-bw-gbs", "10",
               "--repeats", "2", "--warmup", "0", "--out", str(out)])
    assert rc == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    schema.validate(doc)
    assert doc["provenance"]["command"].startswith("python -m tools.bench --shapes tiny")
    printed = capsys.readouterr().out
    assert "tiny float32: cached step grows" in printed


def test_cli_pins_blas_to_one_thread_through_the_environment():
    r = _run_cli("--shapes", "tiny", "--contexts", "8", "--no-compare", "--peak-bw-gbs", "10", "--repeats", "2",
                 "--no-write")
    assert r.returncode == 0, r.stderr
    assert "'pinned': True" in r.stdout and "'count': 1" in r.stdout


def test_cupy_backend_without_a_gpu_is_one_clear_line_and_exit_2():
    try:
        get_backend("cupy")
        pytest.skip("CuPy and a GPU are present here; the error path cannot be shown")
    except BenchError:
        pass
    r = _run_cli("--backend", "cupy", "--no-write")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert lines[0].startswith("tools.bench: error: ") and "cupy" in lines[0].lower()
    assert r.stdout == ""


@pytest.mark.parametrize("args, words", [
    (["--shapes", "nope"], "unknown shape"),
    (["--dtypes", "int8"], "unknown dtype"),
    (["--contexts", "a,b"], "comma-separated"),
    (["--peak-bw-gbs", "-3"], "positive"),
])
def test_bad_options_are_one_line_errors(args, words):
    r = _run_cli(*args, "--no-write", "--threads", "0")
    assert r.returncode == 2, r.stdout
    assert len(r.stderr.strip().splitlines()) == 1 and words in r.stderr


# --------------------------------------------------------------------------- transformers


@pytest.mark.reference
def test_transformers_comparison_computes_the_same_step():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tools.bench import compare, sweep_shapes

    backend = get_backend("numpy")
    model = sweep_shapes.build("tiny", backend="numpy", quick=True).make("float32", backend.xp, 16)
    run = {"shape": "tiny", "dtype": "float32", "points": [{"context": 8}, {"context": 16}]}
    found, note = compare.compare_with_transformers(model, run, backend, Options(**TINY), None, log=lambda m: None)
    assert note is None  # a logit mismatch would come back as a note, not a ratio
    assert [c["context"] for c in found] == [8, 16]
    assert all(c["ratio"] == pytest.approx(c["transformers"]["median_s"] / c["engine"]["median_s"]) for c in found)


def test_deadline_keeps_what_was_measured_and_says_what_was_not():
    doc = run_benchmark(Options(**{**TINY, "contexts": (8, 16, 32)}, deadline_s=0.0), log=lambda m: None)
    schema.validate(doc)
    assert [p["context"] for p in doc["runs"][0]["points"]] == [8]
    assert any("Deadline" in n and "stops at context 8" in n for n in doc["notes"])


def test_cuda_event_timer_reads_event_pairs_in_seconds(monkeypatch):
    """time_cuda against a stand-in for cupy.cuda whose events read a clock that only the
    timed function moves (10 ms a call): the timer must report exactly that, in seconds."""
    import types

    from tools.bench.timers import time_cuda

    clock = [0.0]

    class Event:
        def record(self, stream=None):
            self.t = clock[0]

        def synchronize(self):
            pass

    class Stream:
        def synchronize(self):
            pass

    cuda = types.SimpleNamespace(Event=Event, get_current_stream=Stream,
                                 get_elapsed_time=lambda a, b: (b.t - a.t) * 1e3)  # milliseconds, like CUDA
    monkeypatch.setitem(sys.modules, "cupy", types.SimpleNamespace(cuda=cuda))

    def step():
        clock[0] += 0.01

    stats = time_cuda(step, warmup=1, repeats=3)
    assert stats.n == 3 and stats.median == pytest.approx(0.01) and stats.max == pytest.approx(0.01)
