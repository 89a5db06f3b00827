"""The H200 baseline's side measurements (engine/bench_results/baselines): committed byte for byte,
parsed from their logs, attached only to the results file they were measured with."""
from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path

import pytest

from engine.bench_results import baseline, store

ROOT = Path(__file__).resolve().parents[3]
FOLDERS = sorted(p.parent for p in (ROOT / "engine" / "bench_results" / "baselines").glob("*/provenance.json"))


def test_the_baselines_are_found():
    """An empty FOLDERS would turn the tests below into skips ("got empty parameter set")."""
    assert FOLDERS, "no engine/bench_results/baselines/*/provenance.json"


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_each_log_is_the_one_its_provenance_names(folder):
    prov = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))
    for name, f in prov["files"].items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == f["sha256"], name
    assert prov["results_file"] in store.result_names()


@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_the_results_file_is_the_one_measured_with_the_logs(folder):
    """provenance.json records the sha256 of the measured files (../shared/measurements/...,
    hashed when they were copied in), so this runs in every checkout, CI included."""
    prov = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))
    results = ROOT / "engine/bench_results/results" / f"{prov['results_file']}.json"
    assert hashlib.sha256(results.read_bytes()).hexdigest() == prov["results_sha256"]


HF_LOG = """HF transformers 9.9/1.2 llama3-8b x4 fp16 ctx 128: 2.917 ms, 959 GB/s = 20.0% of 4.8 TB/s
HF transformers 9.9/1.2 llama3-8b x4 fp16 ctx 512: 3.5 ms, 959 GB/s = 20.0% of 4.8 TB/s
[{"context": 128, "median_ms": 2.9173440, "bytes": 1}]
"""
PROFILE_LOG = """  _warn_once(
float16: wall 6.660 ms/step; GPU busy 2.487 ms/step; 238 GPU ops/step
    4.0/step   1044.2 us/step  void gemmSN_NN_kernel<float, 128, cublasGemvTensorStridedBatched<flo
   30.0/step    405.2 us/step  cupy_copy__float16_float32
"""
SETUP = {"shape": "llama3-8b", "n_layers": 4, "dtype": "float16", "context": 8192}


def test_the_transformers_log_gives_full_precision_where_its_json_line_has_it():
    points, setup = baseline.parse_hf(HF_LOG)
    assert [(p.context, p.median_ms) for p in points] == [(128, 2.917344), (512, 3.5)]
    assert setup == {"torch": "9.9", "transformers": "1.2", "shape": "llama3-8b", "n_layers": 4, "dtype": "float16"}


def test_the_kernel_profile_is_read_line_by_line():
    p = baseline.parse_profile(PROFILE_LOG, SETUP)
    assert (p.wall_ms, p.busy_ms, p.ops_per_step, p.ops_per_layer) == (6.66, 2.487, 238.0, 59.5)
    assert [(k.per_step, k.us_per_step) for k in p.kernels] == [(4.0, 1044.2), (30.0, 405.2)]
    assert p.kernels[1].name == "cupy_copy__float16_float32"


def test_one_launch_is_the_two_kernel_expression_halved():
    assert baseline.parse_launch_us("tiny elementwise (2 kernels): cpu 20.5 us gpu 22.4 us") == 10.25


@pytest.mark.parametrize("parse, text, words", [
    (baseline.parse_hf, "nothing here", "HF transformers"),
    (lambda x: baseline.parse_profile(x, SETUP), "    4.0/step   1.0 us/step  k", "GPU ops/step"),
    (lambda x: baseline.parse_profile(x, {**SETUP, "dtype": "float32"}), PROFILE_LOG, "its provenance says"),
    (baseline.parse_launch_us, "course fp32 decode step", "tiny elementwise"),
])
def test_a_log_that_does_not_say_what_is_expected_is_an_error(parse, text, words):
    with pytest.raises(ValueError, match=words):
        parse(text)


@pytest.fixture(scope="module")
def h200():
    return baseline.load("h200-d52496d"), store.load_result("gpu-cupy-h200")


def test_the_baseline_belongs_to_its_results_file_only(h200):
    b, gpu = h200
    assert b.matches(gpu)
    for other in (store.load_result(n) for n in store.result_names() if n != "gpu-cupy-h200"):
        assert not b.matches(other)
    newer = copy.deepcopy(gpu)
    newer["provenance"]["git"]["commit"] = "0" * 40
    assert not b.matches(newer) and baseline.for_doc(newer) is None


def test_the_profile_setup_agrees_with_the_results_file(h200):
    """provenance.json states the profiled shape; the results file's run of it must agree."""
    b, gpu = h200
    p = b.profile
    run = next(r for r in gpu["runs"] if r["shape"] == p.shape and r["dtype"] == p.dtype)
    assert run["config"]["n_layers"] == p.n_layers == b.hf_setup["n_layers"]
    assert p.context in [q["context"] for q in run["points"]]


def test_comparisons_pair_the_two_at_the_contexts_both_measured(h200):
    b, gpu = h200
    run = next(r for r in gpu["runs"] if r["shape"] == b.hf_setup["shape"] and r["dtype"] == b.hf_setup["dtype"])
    engine = {p["context"]: p["decode_cached"]["median_s"] for p in run["points"]}
    found = b.comparisons(gpu)
    assert [c["context"] for c in found] == [h.context for h in b.hf if h.context in engine]
    for c, h in zip(found, [h for h in b.hf if h.context in engine]):
        assert c["engine"]["median_s"] == engine[h.context]
        assert c["transformers"]["median_s"] == pytest.approx(h.median_ms / 1e3)
        assert c["ratio"] == pytest.approx(c["transformers"]["median_s"] / c["engine"]["median_s"])
