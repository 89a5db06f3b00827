"""tools/bench/gpu_check.py, the one-command GPU session: a bad --out is refused before
anything is measured, a missing GPU is one line and exit 2, the goals are judged from the
numbers, and (KV_GPU_DRY_RUN=1: the recording backend's stand-in GPU and the reference
kernels on tiny shapes) the whole command runs and writes its JSON on a CPU; a failure
planted in any stage, or a kill mid-run, leaves a valid file with the other stages."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine import Transformer
from tools.bench import gpu_check


@pytest.fixture
def no_measuring(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("measured before the output path was checked")

    monkeypatch.setattr(gpu_check, "measure", refuse)


@pytest.mark.parametrize("name, words", [(".", "is a directory"), ("results.txt", "ending in .json"),
                                         ("missing/results.json", "does not exist")])
def test_a_bad_out_is_refused_before_measuring(tmp_path, capsys, no_measuring, name, words):
    assert gpu_check.main(["--out", str(tmp_path / name)]) == 2
    assert words in capsys.readouterr().err


def test_without_cupy_the_error_is_one_line(tmp_path, capsys, monkeypatch):
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed here")
    except ImportError:
        pass
    monkeypatch.delenv("KV_GPU_DRY_RUN", raising=False)
    assert gpu_check.main(["--out", str(tmp_path / "r.json")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs CuPy" in err[0]
    assert not (tmp_path / "r.json").exists()


def _dry(tmp_path, monkeypatch, *extra):
    monkeypatch.setenv("KV_GPU_DRY_RUN", "1")
    out = tmp_path / "r.json"
    code = gpu_check.main(["--out", str(out), "--steps", "2", "--repeats", "1", *extra])
    return code, json.loads(out.read_text())


def test_a_dry_run_writes_every_section(tmp_path, monkeypatch, capsys):
    code, doc = _dry(tmp_path, monkeypatch)
    assert code == 0 and not doc["errors"]
    assert capsys.readouterr().out.splitlines()[1].startswith("gpu_check: estimated ")  # before any stage
    assert doc["kind"] == "gpu_check" and doc["dry_run"] is True and doc["git"]["commit"]
    assert list(doc["stages"]) == list(gpu_check.STAGES) and all(s["ok"] for s in doc["stages"].values())
    assert [g["name"] for g in doc["gemv"]] == ["wqkv", "wo", "w_gate_up", "w_down", "lm_head"]
    assert all(g["copies"] >= 4 and g["launches"] >= 20 and g["stats_us"]["n"] >= 1 for g in doc["gemv"])
    assert doc["copy_bandwidth"]["value"] > 0 and all("pct_copy" in g for g in doc["gemv"])
    assert set(doc["steps"]) == {"course", "gpt2-small"}
    sweep = doc["sweep"]
    assert [p["context"] for p in sweep] == [8, 16, 32] and all(p["eager_us"] > 0 and p["graph_us"] > 0 for p in sweep)
    assert all(set(p["graph_stats"]) == {"median", "p10", "p90", "min", "max", "n"} for p in sweep)
    assert all(p["graph_nodes"] == 1 + 5 * 2 + 1 for p in sweep)  # the stand-in has 2 layers
    assert sweep[0]["bytes"] < sweep[1]["bytes"] < sweep[2]["bytes"]  # more K/V read per step
    assert doc["layers"]["layers"] == [1, 2] and "projected_32_layers_us" in doc["layers"]
    assert doc["cache"]["uncached_us"] > 0 and doc["cache"]["fused_graph_cached_us"] > 0
    assert doc["tests"]["ran"] is False and doc["transformers"] == []
    assert all(g["met"] is None for g in doc["goals"].values())  # a CPU stand-in proves no GPU goal
    # the benchmark page reads this very format; a dry run itself is never published
    from engine.bench_results import store
    from lessons.benchmarks import bench_measured as page

    with pytest.raises(ValueError, match="not measured on a GPU"):
        store.check_gpu_check(doc)
    as_gpu = store.check_gpu_check({**doc, "dry_run": False, "device": {"kind": "gpu", "name": "Stand-in GPU"}})
    monkeypatch.setattr(page, "_gpu_checks", lambda: {"stand-in": as_gpu})
    fig = page._graph_step("en")
    assert [r[1] for r in fig["table"]["rows"]] == ["8", "16", "32"]
    assert page.goals_table("stand-in", as_gpu, "en")["rows"][0][-1] == "not measured"


@pytest.mark.parametrize("stage", gpu_check.STAGES)
def test_a_failure_planted_in_any_stage_leaves_the_others_in_the_file(tmp_path, monkeypatch, stage):
    def planted(*a, **k):
        raise RuntimeError(f"planted failure in {stage}")

    monkeypatch.setitem(gpu_check.STAGE_FUNCTIONS, stage, planted)
    code, doc = _dry(tmp_path, monkeypatch)
    assert code == 1
    assert list(doc["errors"]) == [stage] and "planted failure" in doc["errors"][stage]["error"]
    assert any("planted" in line for line in doc["errors"][stage]["traceback"])
    assert [n for n, s in doc["stages"].items() if not s["ok"]] == [stage]
    assert list(doc["stages"]) == list(gpu_check.STAGES)  # every stage after it still ran
    sections = {"copy": "copy_bandwidth", "gemv": "gemv", "steps": "steps", "sweep": "sweep", "layers": "layers",
                "cache": "cache"}
    for other, key in sections.items():
        assert bool(doc.get(key)) == (other != stage), (other, key)


def test_a_run_killed_mid_stage_leaves_the_stages_before_it(tmp_path):
    """A stand-in for a GPU stage that hangs: the command is killed (SIGKILL) while in it."""
    out = tmp_path / "r.json"
    env = {**os.environ, "KV_GPU_DRY_RUN": "1", "KV_GPU_DRY_RUN_STALL": "cache"}
    proc = subprocess.Popen([sys.executable, "-m", "tools.bench.gpu_check", "--out", str(out), "--steps", "2",
                             "--repeats", "1"], cwd=Path(__file__).resolve().parents[3], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if out.exists() and "layers" in json.loads(out.read_text())["stages"]:
                break
            assert proc.poll() is None, "the command ended instead of stalling"
            time.sleep(0.2)
        else:
            pytest.fail("the layers stage was never written")
        time.sleep(0.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    doc = json.loads(out.read_text())  # a whole document: each write was atomic
    assert list(doc["stages"]) == ["tests", "copy", "gemv", "steps", "sweep", "layers"]
    assert doc["sweep"] and doc["layers"] and "cache" not in doc


def test_a_test_timeout_is_recorded_not_fatal(monkeypatch):
    def slow(cmd, **kw):
        raise subprocess.TimeoutExpired(cmd, kw["timeout"], output=b"....\nslow first compile\n")

    monkeypatch.setattr(gpu_check.subprocess, "run", slow)
    session = type("S", (), {"dry_run": False})()
    args = gpu_check.build_parser().parse_args(["--out", "x.json"])
    got = gpu_check.stage_tests(session, args, print)
    assert got["ran"] and got["passed"] is False and got["timed_out"] is True
    assert got["tail"][-1] == "slow first compile"


def test_the_estimate_fits_the_budget_and_grows_with_the_work():
    args = gpu_check.build_parser().parse_args(["--out", "x.json"])
    est = gpu_check.estimate_seconds(args)
    assert est["total_s"] <= gpu_check.BUDGET == 300 and set(est["stages_s"]) == set(gpu_check.STAGES)
    more = gpu_check.estimate_seconds(gpu_check.build_parser().parse_args(["--out", "x.json", "--steps", "2000", "--repeats", "20"]))
    assert more["total_s"] > gpu_check.BUDGET


def test_the_timing_is_on_the_decoders_stream():
    """Rewind (truncate + length write), eager steps, capture, replays and the clock's events:
    all on the decoder's stream (the recording backend logs the stream of each)."""
    from engine.gpu.fused_step import FusedDecoder

    session = gpu_check.Session(dry_run=True)
    rec = session.recording
    rec.keep_log = True
    model = session.model("tiny", "float32", 40)
    cache = model.new_cache(max_len=12)
    gpu_check.fill_random(cache, 8)
    decoder = FusedDecoder(model, cache, session.kernels)
    with rec.phase("timed"):
        point = gpu_check.time_decoder(session, decoder, 8, 3, 2)
    assert point["graph_us"] > 0 and point["graph_nodes"] == 12
    assert set(rec.events_on("timed")) == {decoder.stream.name}
    names = {e.name for e in rec.events("timed", "stream")}
    assert {"record an event", "begin capture"} <= names and any(n.startswith("graph launch") for n in names)
    assert any(e.name == "setitem" for e in rec.events("timed", "op"))  # the rewind's writes were seen


def test_a_cache_full_of_random_values():
    session = gpu_check.Session(dry_run=True)
    cache = session.model("tiny", "float32", 40).new_cache(max_len=20)
    gpu_check.fill_random(cache, 10)
    k = cache.k[0].get()
    assert cache.length == 10 and k[:, :10].std() > 0.5 and not k[:, 10:].any()


def test_the_course_models_window_bounds_the_context():
    """--steps 200 at the course model's 256 positions: timed at 56, not past the window (F7)."""
    from engine import load_course_model
    from tools.bench.backend import BenchError

    model = load_course_model()[0]
    assert gpu_check.max_context(model, 50, 128) == 128
    assert gpu_check.max_context(model, 200, 128) == 56
    with pytest.raises(BenchError, match="does not fit"):
        gpu_check.max_context(model, 256, 128)


def _point(ctx, us):
    return {"context": ctx, "graph_us": us, "eager_us": 3 * us, "pct_peak": 0.0}


@pytest.mark.parametrize("pct, t32k, hf_us, met", [
    (70.0, 1200.0, 3000.0, {"llama_8192_pct_peak": True, "llama_growth_128_to_32768": True,
                            "llama_8192_vs_transformers": True}),
    (50.0, 1400.0, 2000.0, {"llama_8192_pct_peak": False, "llama_growth_128_to_32768": False,
                            "llama_8192_vs_transformers": False}),
])
def test_goals_are_judged_from_the_numbers(pct, t32k, hf_us, met):
    sweep = [_point(128, 1000.0), _point(8192, 1000.0), _point(32768, t32k)]
    sweep[1]["pct_peak"] = pct
    doc = {"sweep": sweep, "transformers": [{"context": 8192, "transformers": {"median_s": hf_us * 1e-6}}],
           "steps": {"course": _point(128, 400.0)}, "cache": {"speedup": 6.0}}
    goals = gpu_check.goals(doc)
    assert {k: goals[k]["met"] for k in met} == met
    assert goals["course_ms_per_step"]["met"] and goals["gpt2_cache_speedup_1023"]["met"]
    assert goals["llama_growth_128_to_32768"]["value"] == pytest.approx(t32k / 1000.0)


def test_goals_without_numbers_are_not_measured():
    assert all(g["met"] is None for g in gpu_check.goals({}).values())


def test_step_bytes_are_the_weights_but_the_table_plus_the_kv_in_use():
    from engine import Config

    c = Config(vocab_size=50, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=24, max_seq_len=64)
    model = Transformer.random(c)
    per_layer = 16 * (4 + 2 + 2) * 4 + 16 * 16 + 16 * 2 * 24 + 24 * 16 + 2 * 16  # qkv, wo, gate|up, down, norms
    weights = 2 * per_layer + 16 + 16 * 50  # final norm, lm_head (the embedding table is not read)
    kv = 10 * 2 * 2 * 2 * 4  # 10 positions x K,V x layers x KV heads x head_dim
    assert gpu_check.step_bytes(model, 10) == (weights + kv) * 4
