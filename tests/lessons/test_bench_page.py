"""The benchmark page's lesson (bench_results) on the committed results files."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from lesson_checks import check_both_languages, check_describe, check_output, run_json_ok

from lessons import bench_page, registry

ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = ROOT / "engine" / "bench" / "results"
FILES = sorted(RESULTS_DIR.glob("*.json"))


def _docs() -> dict[str, dict]:
    """The committed files, read straight from disk (not through the lesson's loader)."""
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in FILES}


def _shapes() -> list[str]:
    return sorted({r["shape"] for d in _docs().values() for r in d["runs"]})


def test_committed_results_exist_and_match_the_schema():
    from engine.bench.schema import ResultsInvalid, validate

    assert FILES, "no results committed in engine/bench/results/"
    for stem, doc in _docs().items():
        try:
            validate(doc)
        except ResultsInvalid as e:
            pytest.fail(f"{stem}: {e}")


def test_results_are_package_data_the_lesson_can_read():
    assert sorted(bench_page._RESULTS) == [p.stem for p in FILES]
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"bench/results/*.json"' in text  # so the Pyodide wheel carries them too


def test_describe_offers_every_file_and_shape():
    check_describe("bench_results")
    controls = {c["name"]: c for c in registry.describe("bench_results", "en")["controls"]}
    assert [o["value"] for o in controls["results"]["options"]] == ["all", *[p.stem for p in FILES]]
    assert sorted(o["value"] for o in controls["shape"]["options"]) == _shapes()


@pytest.mark.parametrize("shape", _shapes())
def test_every_shape_renders_in_both_languages(shape):
    outs = check_both_languages("bench_results", {"shape": shape})
    keys = [f["key"] for f in outs["en"]["figures"]]
    assert {"latency", "kv_memory", "roofline", "floor"} <= set(keys)


def test_figures_plot_the_files_numbers():
    docs = _docs()
    stem, doc = next(iter(docs.items()))
    run = doc["runs"][0]
    out = registry.run("bench_results", {"results": stem, "shape": run["shape"]}, "en")
    figs = {f["key"]: f["figure"] for f in out["figures"]}
    cached = next(tr for tr in figs["latency"]["data"] if tr["name"].endswith("with KV cache")
                  and run["dtype"] in tr["name"])
    assert cached["x"] == [p["context"] for p in run["points"]]
    assert cached["y"] == pytest.approx([p["decode_cached"]["median_s"] * 1e3 for p in run["points"]], rel=1e-5)
    floor = next(tr for tr in figs["floor"]["data"] if "floor" in tr["name"] and run["dtype"] in tr["name"])
    peak = doc["provenance"]["peak_bandwidth"]["value"]
    assert floor["y"] == pytest.approx([p["decode_bytes"] / peak * 1e3 for p in run["points"]], rel=1e-5)
    kv = next(tr for tr in figs["kv_memory"]["data"] if tr["name"].endswith("KV cache") and run["dtype"] in tr["name"])
    assert kv["y"] == pytest.approx([p["kv_cache_bytes"] / 2**20 for p in run["points"]], rel=1e-5)


def test_each_file_shows_its_provenance():
    for stem, doc in _docs().items():
        shape = doc["runs"][0]["shape"]
        for lang in ("en", "zh-TW"):
            out = registry.run("bench_results", {"results": stem, "shape": shape}, lang)
            text = json.dumps(out["tables"], ensure_ascii=False)
            p = doc["provenance"]
            for needle in (p["device"]["name"], p["date"], p["command"], (p["git"]["commit"] or "?")[:12],
                           p["versions"]["numpy"], p["peak_bandwidth"]["note"]):
                assert needle in text, (stem, lang, needle)


def test_gpu_absence_is_said_and_disappears_when_a_gpu_file_exists(monkeypatch):
    has_gpu = any(d["provenance"]["device"]["kind"] == "gpu" for d in _docs().values())
    notes = registry.run("bench_results", None, "en")["notes"]
    assert ("No GPU results have been measured yet." in notes) == (not has_gpu)
    zh = registry.run("bench_results", None, "zh-TW")["notes"]
    assert ("目前還沒有任何 GPU 的量測結果。" in zh) == (not has_gpu)

    cpu = next(d for d in _docs().values() if d["provenance"]["device"]["kind"] == "cpu")
    fake_gpu = copy.deepcopy(cpu)
    fake_gpu["provenance"]["device"] = {"kind": "gpu", "name": "Test GPU"}
    monkeypatch.setattr(bench_page, "_RESULTS", {**bench_page._RESULTS, "gpu-cupy-test": fake_gpu})
    assert "No GPU results have been measured yet." not in bench_page.absence_notes("en")


def test_no_files_means_no_figures_and_a_sentence(monkeypatch):
    monkeypatch.setattr(bench_page, "_RESULTS", {})
    out = check_output(bench_page.run({"results": "all", "shape": "course"}, "en"))
    assert out["figures"] == []
    assert "No benchmark results have been committed yet." in out["notes"]


def test_unknown_file_or_shape_is_a_clear_bilingual_error():
    for lang, word in (("en", "Results file"), ("zh-TW", "結果檔")):
        reply = run_json_ok("bench_results", {"results": "../../etc/passwd"}, lang)
        assert reply["ok"] is False and word in reply["error"]["message"]
    reply = run_json_ok("bench_results", {"shape": "<script>"}, "en")
    assert reply["ok"] is False and "Model shape" in reply["error"]["message"]
