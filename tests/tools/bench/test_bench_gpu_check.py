"""tools/bench/gpu_check.py, the one-command GPU session: a bad --out is refused before
anything is measured, a missing GPU is one line and exit 2, the goals are judged from the
numbers, and (KV_GPU_DRY_RUN=1: NumPy and the reference kernels on tiny shapes) the whole
command runs and writes its JSON on a CPU."""
from __future__ import annotations

import json

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


def test_a_dry_run_writes_every_section(tmp_path, monkeypatch):
    monkeypatch.setenv("KV_GPU_DRY_RUN", "1")
    out = tmp_path / "r.json"
    assert gpu_check.main(["--out", str(out), "--steps", "2", "--repeats", "1"]) == 0
    doc = json.loads(out.read_text())
    assert doc["kind"] == "gpu_check" and doc["dry_run"] is True and doc["git"]["commit"]
    assert [g["name"] for g in doc["gemv"]] == ["wqkv", "wo", "w_gate_up", "w_down", "lm_head"]
    assert set(doc["steps"]) == {"course", "gpt2-small"}
    sweep = doc["sweep"]
    assert [p["context"] for p in sweep] == [8, 16, 32] and all(p["eager_us"] > 0 for p in sweep)
    assert sweep[0]["bytes"] < sweep[1]["bytes"] < sweep[2]["bytes"]  # more K/V read per step
    assert doc["cache"]["uncached_us"] > 0 and doc["tests"]["ran"] is False
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
