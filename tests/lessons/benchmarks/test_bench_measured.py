"""The benchmark page's lesson (bench_measured) on the committed results files."""
from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from lesson_checks import check_both_languages, check_describe, check_output, number, numbers, records, run_json_ok

from lessons.common import registry
from lessons.benchmarks import bench_measured

ROOT = Path(__file__).resolve().parents[3]
RESULTS_DIR = ROOT / "engine" / "bench_results" / "results"
FILES = sorted(RESULTS_DIR.glob("*.json"))


def _docs() -> dict[str, dict]:
    """The committed files, read straight from disk (not through the lesson's loader)."""
    return {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in FILES}


def _shapes() -> list[str]:
    return sorted({r["shape"] for d in _docs().values() for r in d["runs"]})


def test_committed_results_exist_and_match_the_schema():
    from engine.bench_results.schema import ResultsInvalid, validate

    assert FILES, "no results committed in engine/bench_results/results/"
    for stem, doc in _docs().items():
        try:
            validate(doc)
        except ResultsInvalid as e:
            pytest.fail(f"{stem}: {e}")


def test_results_are_package_data_the_lesson_can_read():
    assert sorted(bench_measured._RESULTS) == [p.stem for p in FILES]
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"bench_results/results/*.json"' in text  # so the Pyodide wheel carries them too


def test_describe_offers_every_file_and_shape():
    check_describe("bench_measured")
    controls = {c["name"]: c for c in registry.describe("bench_measured", "en")["controls"]}
    assert [o["value"] for o in controls["results"]["options"]] == ["all", *[p.stem for p in FILES]]
    assert sorted(o["value"] for o in controls["shape"]["options"]) == _shapes()


@pytest.mark.parametrize("shape", _shapes())
def test_every_shape_renders_in_both_languages(shape):
    outs = check_both_languages("bench_measured", {"shape": shape})
    keys = [f["key"] for f in outs["en"]["figures"]]
    assert {"latency", "kv_memory", "roofline", "floor"} <= set(keys)


def test_figures_plot_the_files_numbers():
    docs = _docs()
    stem, doc = next(iter(docs.items()))
    run = doc["runs"][0]
    out = registry.run("bench_measured", {"results": stem, "shape": run["shape"]}, "en")
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
            out = registry.run("bench_measured", {"results": stem, "shape": shape}, lang)
            text = json.dumps(out["tables"], ensure_ascii=False)
            p = doc["provenance"]
            for needle in (p["device"]["name"], p["date"], p["command"], (p["git"]["commit"] or "?")[:12],
                           p["versions"]["numpy"], bench_measured.peak_note(p["peak_bandwidth"]["note"], lang)):
                assert needle in text, (stem, lang, needle)


def test_gpu_absence_is_said_and_disappears_when_a_gpu_file_exists(monkeypatch):
    has_gpu = any(d["provenance"]["device"]["kind"] == "gpu" for d in _docs().values())
    notes = registry.run("bench_measured", None, "en")["notes"]
    assert ("No GPU results have been measured yet." in notes) == (not has_gpu)
    zh = registry.run("bench_measured", None, "zh-TW")["notes"]
    assert ("目前還沒有任何 GPU 的量測結果。" in zh) == (not has_gpu)

    cpu = next(d for d in _docs().values() if d["provenance"]["device"]["kind"] == "cpu")
    fake_gpu = copy.deepcopy(cpu)
    fake_gpu["provenance"]["device"] = {"kind": "gpu", "name": "Test GPU"}
    monkeypatch.setattr(bench_measured, "_RESULTS", {**bench_measured._RESULTS, "gpu-cupy-test": fake_gpu})
    assert "No GPU results have been measured yet." not in bench_measured.absence_notes("en")


def test_no_files_means_no_figures_and_a_sentence(monkeypatch):
    monkeypatch.setattr(bench_measured, "_RESULTS", {})
    out = check_output(bench_measured.run({"results": "all", "shape": "course"}, "en"))
    assert out["figures"] == []
    assert "No benchmark results have been committed yet." in out["notes"]


def test_unknown_file_or_shape_is_a_clear_bilingual_error():
    for lang, word in (("en", "Results file"), ("zh-TW", "結果檔")):
        reply = run_json_ok("bench_measured", {"results": "../../etc/passwd"}, lang)
        assert reply["ok"] is False and word in reply["error"]["message"]
    reply = run_json_ok("bench_measured", {"shape": "<script>"}, "en")
    assert reply["ok"] is False and "Model shape" in reply["error"]["message"]


# --------------------------------------------------------------------------- the GPU results


def _gpu_docs():
    return {stem: d for stem, d in _docs().items() if d["provenance"]["device"]["kind"] == "gpu"}


def _cpu_only(monkeypatch):
    cpu = {stem: d for stem, d in bench_measured._RESULTS.items() if d["provenance"]["device"]["kind"] == "cpu"}
    monkeypatch.setattr(bench_measured, "_RESULTS", cpu)
    return cpu


def test_the_default_view_shows_the_gpu_results_when_there_are_some():
    assert _gpu_docs(), "no GPU results committed (engine/bench_results/results/gpu-*.json)"
    out = registry.run("bench_measured", None, "en")
    names = [tr["name"] for f in out["figures"] for tr in f["figure"]["data"]]
    assert any("CuPy" in n for n in names)
    assert {"peak_share", "transformers", "launches"} <= {f["key"] for f in out["figures"]}


def test_the_share_of_peak_is_the_files_bandwidth_fraction():
    stem, doc = next(iter(_gpu_docs().items()), (None, None))
    assert doc is not None, "no GPU results committed (engine/bench_results/results/gpu-*.json)"
    run = next(r for r in doc["runs"] if r["shape"] == "llama3-8b")
    out = registry.run("bench_measured", {"results": stem, "shape": "llama3-8b"}, "en")
    fig = next(f for f in out["figures"] if f["key"] == "peak_share")["figure"]
    trace = next(tr for tr in fig["data"] if tr["name"].endswith(run["dtype"]))
    assert trace["y"] == pytest.approx([100 * p["bandwidth_fraction"] for p in run["points"]], rel=1e-5)


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_launches_and_the_launch_bound_sentence_come_from_the_profile(lang):
    from engine.bench_results import baseline
    from engine.gpu.recording import launches_per_step

    found = [(d, baseline.for_doc(d)) for d in _gpu_docs().values()]
    found = [(d, b) for d, b in found if b]
    assert found, "no GPU results with side measurements (engine/bench_results/baselines/*/provenance.json)"
    doc, b = found[0]
    p = b.profile
    out = registry.run("bench_measured", {"shape": p.shape}, lang)
    fig = next(f for f in out["figures"] if f["key"] == "launches")
    assert fig["figure"]["data"][0]["x"] == [p.ops_per_step, launches_per_step(p.n_layers)]  # the bars
    per_step = {"en": "per step", "zh-TW": "每步"}[lang]
    assert numbers(fig["table"], per_step) == [p.ops_per_step, launches_per_step(p.n_layers)]  # the table
    note = next(n for n in out["notes"] if f"{p.ops_per_step:g}" in n and "gemv" in n)
    for number in (f"{p.ops_per_layer:.0f}", f"{b.launch_us:.0f}", f"{p.busy_ms:.2f}", f"{p.wall_ms:.2f}"):
        assert number in note, (number, note)


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_the_fused_step_note_says_what_is_true_of_its_kernels(lang):
    """Issue 19: the note said the CUDA kernels were not written. They are (engine/gpu/kernels/*.cu),
    the tests run them on a CPU and they compile for sm_90; no committed result times the fused
    step on a GPU, so the note still says it is untimed there."""
    kernels = sorted((ROOT / "engine" / "gpu" / "kernels").glob("*.cu"))
    assert kernels, "no CUDA kernels: the note below would be wrong"
    steps = {r.get("step", {}).get("path") if isinstance(r.get("step"), dict) else r.get("step")
             for d in _gpu_docs().values() for r in d["runs"]}
    assert "fused" not in steps, "a GPU result times the fused step now: say so in fused_note"
    note = bench_measured.fused_note(4, lang)
    says = {"en": ("engine/gpu/kernels/*.cu", "run them on a CPU", "sm_90", "no GPU has timed them yet"),
            "zh-TW": ("engine/gpu/kernels/*.cu", "在 CPU 上執行", "sm_90", "還沒有在任何 GPU 上量過時間")}[lang]
    assert all(part in note for part in says), note
    assert "not written" not in note and "還沒寫" not in note


def test_the_transformers_rows_hold_both_medians():
    from engine.bench_results import baseline

    for stem, doc in _gpu_docs().items():
        b = baseline.for_doc(doc)
        if b is None:
            continue
        out = registry.run("bench_measured", {"results": stem, "shape": b.hf_setup["shape"]}, "en")
        tab = next(f for f in out["figures"] if f["key"] == "transformers")["table"]
        want = b.comparisons(doc)
        assert numbers(tab, "context") == [c["context"] for c in want]
        assert numbers(tab, "transformers (ms)") == pytest.approx([c["transformers"]["median_s"] * 1e3 for c in want],
                                                                   rel=5e-3)  # cells carry 3 significant digits
        faster = [r["which is faster"] for r in records(tab)]
        assert all(f == "transformers faster" for f, c in zip(faster, want) if c["ratio"] < 1)


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_with_only_the_cpu_file_the_page_shows_no_gpu_figures(monkeypatch, lang):
    _cpu_only(monkeypatch)
    for shape in _shapes():
        out = check_output(bench_measured.run({"results": "all", "shape": shape}, lang))
        keys = {f["key"] for f in out["figures"]}
        assert "launches" not in keys
        assert not any("H200" in json.dumps(x, ensure_ascii=False) for x in (out["figures"], out["tables"]))
        assert any(n in out["notes"] for n in ("No GPU results have been measured yet.", "目前還沒有任何 GPU 的量測結果。"))


def test_every_string_uses_the_terminology_tables_terms():
    from lesson_checks import strings_of

    from lessons.common.terminology import variants

    found = set()
    for lang in ("en", "zh-TW"):
        texts = strings_of(registry.describe("bench_measured", lang))
        for results in [o[0] for o in bench_measured.CONTROLS[0].options]:
            for shape in [o[0] for o in bench_measured.CONTROLS[1].options]:
                texts += strings_of(registry.run("bench_measured", {"results": results, "shape": shape}, lang))
        found |= {(lang, concept, word) for text in texts for concept, word in variants(text, lang)}
    assert not found


# --------------------------------------------------------------------------- gpu_check files (the CUDA graph step)


def _gpu_check_doc() -> dict:
    """A gpu_check document as the command writes it (the fields the page reads), with round
    numbers chosen here: 8 us eager and 2 us graph per 1,000,000 bytes, transformers at 8192."""
    sweep = [{"context": c, "steps": 50, "bytes": b, "eager_us": 8e-6 * b, "graph_us": 2e-6 * b, "tb_s": 0.5,
              "pct_peak": 0.0} for c, b in ((128, 2_000_000_000), (8192, 2_100_000_000), (32768, 2_500_000_000))]
    return {"kind": "gpu_check", "dry_run": False, "started": "2026-12-24T10:00:00Z",
            "git": {"commit": "abcdef0123456789", "dirty": False}, "device": {"kind": "gpu", "name": "NVIDIA H200"},
            "peak_bandwidth": {"value": 4.8e12, "source": "spec", "note": "datasheet"}, "sweep": sweep,
            "transformers": [{"context": 8192, "transformers": {"median_s": 0.0029}, "engine": {"median_s": 0.016}}],
            "tests": {"ran": True, "passed": True, "summary": "38 passed in 20.0s"},
            "goals": {"llama_8192_pct_peak": {"value": 43.75, "target": 60.0, "at_least": True, "met": False},
                      "course_ms_per_step": {"value": None, "target": 0.5, "at_most": True, "met": None}}}


def test_without_a_gpu_check_file_the_page_says_the_fused_step_is_untimed():
    assert not bench_measured._gpu_checks()  # none committed yet: no GPU was lent to time it
    out = registry.run("bench_measured", {"shape": "llama3-8b"}, "en")
    assert "graph_step" not in [f["key"] for f in out["figures"]]
    assert any("no GPU has timed them yet" in n for n in out["notes"])


def test_a_gpu_check_file_is_drawn_beside_the_per_op_engine(monkeypatch):
    doc = _gpu_check_doc()
    monkeypatch.setattr(bench_measured, "_gpu_checks", lambda: {"h200-abcdef0": doc})
    h200 = next(d for d in _docs().values() if d["provenance"]["backend"] == "cupy")
    before = {p["context"]: p["decode_cached"]["median_s"] * 1e3 for r in h200["runs"]
              if r["shape"] == "llama3-8b" and r["dtype"] == "float16" for p in r["points"]}
    for lang in ("en", "zh-TW"):
        out = check_output(registry.run("bench_measured", {"shape": "llama3-8b"}, lang))
        fig = next(f for f in out["figures"] if f["key"] == "graph_step")
        rows = [[number(c) if c != "—" and i else c for i, c in enumerate(r)] for r in fig["table"]["rows"]]
        assert [r[1] for r in rows] == [128, 8192, 32768]
        # graph 2 us and eager 8 us per MB: 4 ms and 16 ms at 2,000,000,000 bytes
        assert rows[0][2:4] == [4.0, 16.0] and rows[1][2:4] == [4.2, 16.8]
        assert rows[0][4] == pytest.approx(before[128], rel=1e-3)  # before: the committed H200 file
        assert rows[1][5] == 2.9 and rows[0][5] == "—"  # transformers only where it was timed
        assert rows[0][6] == pytest.approx(2e9 / 4.8e12 * 1e3, rel=1e-3)  # the floor
        assert rows[0][7] == pytest.approx(100 * 2e9 / 4e-3 / 4.8e12, rel=5e-3)  # % of peak (3 digits), from the graph
        goals = next(tb for tb in out["tables"] if "gpu_checks/h200-abcdef0.json" in tb["title"])
        assert "abcdef0" in goals["title"] and len(goals["rows"]) == 3  # two goals and the GPU tests
    notes = registry.run("bench_measured", {"shape": "llama3-8b"}, "en")["notes"]
    assert any("timed on a GPU" in n for n in notes) and not any("no GPU has timed" in n for n in notes)


def test_only_a_gpu_check_measured_on_a_gpu_is_published(tmp_path):
    from engine.bench_results import store

    doc = _gpu_check_doc()
    assert store.check_gpu_check(doc) is doc
    for change, why in (({"dry_run": True}, "not measured on a GPU"), ({"device": {"kind": "cpu", "name": "Xeon"}},
                         "not measured on a GPU"), ({"kind": "bench"}, "not a gpu_check document")):
        with pytest.raises(ValueError, match=why):
            store.check_gpu_check({**doc, **change})
    broken = dict(doc)
    del broken["sweep"]
    with pytest.raises(ValueError, match="has no 'sweep'"):
        store.check_gpu_check(broken)
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"bench_results/gpu_checks/*.json"' in text  # committed ones travel in the wheel


# --------------------------------------------------------------------------- the second reader's review (benchmarks)

# One sample of each template the harness writes a peak's note from (tools/bench/backend.py, provenance.py).
HARNESS_NOTES = [
    "numpy STREAM-like test on 2 x 512 MiB float32 arrays, best of 5: copy 22.8 GB/s (read + write counted), "
    "dot 15.3 GB/s; the higher (copy) is used",
    "cupy STREAM-like test on 2 x 512 MiB float32 arrays, best of 5: copy 3900.1 GB/s (read + write counted), "
    "dot 4100.7 GB/s; the higher (dot (read-only)) is used",
    "numpy 1024x1024 float32 matmul, best of 5",
    "NVIDIA H200 Tensor Core GPU datasheet (SXM): 4.8 TB/s HBM3e",
    "NVIDIA H100 Tensor Core GPU datasheet (SXM5): 3.35 TB/s HBM3",
    "given on the command line with --peak-bw-gbs",
]


def untranslated(cell: str) -> list[str]:
    """English prose left in a zh-TW cell (more than a name, a number or a unit), or a second colon."""
    words = [w for w in __import__("re").findall(r"[A-Za-z][a-z]+(?: [a-z]+){2,}", cell)]
    return words + (["two colons"] if cell.count("：") > 1 else [])


@pytest.mark.parametrize("note", HARNESS_NOTES)
def test_every_harness_note_has_a_zh_tw_wording_with_its_numbers(note):
    import re
    zh = bench_measured.peak_note(note, "zh-TW")
    assert zh != note and not untranslated(zh) and "：" not in zh, zh
    assert sorted(re.findall(r"\d+(?:\.\d+)?", note)) == sorted(re.findall(r"\d+(?:\.\d+)?", zh.replace("×", "x"))), zh
    assert bench_measured.peak_note(note, "en") == note


def test_an_unknown_note_is_shown_as_the_file_holds_it():
    assert bench_measured.peak_note("measured with a stopwatch", "zh-TW") == "measured with a stopwatch"


def test_the_provenance_cells_are_chinese_with_one_colon():
    """「實測：numpy STREAM-like test on 2 x 512 MiB float32 arrays, best of 5: copy 22.8 GB/s …」 was English
    with two colons inside a zh-TW table: the peaks' notes come from the harness's templates, mapped here."""
    out = registry.run("bench_measured", None, "zh-TW")
    cells = [r[1] for tb in out["tables"] if tb["title"].startswith("來源資訊") for r in tb["rows"]
             if r[0] in ("峰值頻寬", "峰值運算能力（Roofline 的平頂）")]
    assert len(cells) == 2 * len(_gpu_docs()) + 2 * (len(bench_measured._RESULTS) - len(_gpu_docs()))
    assert all(not untranslated(c) for c in cells), cells
    assert untranslated("22.8 GB/s — 實測：numpy STREAM-like test on 2 x 512 MiB float32 arrays, best of 5: copy")


def test_a_command_from_the_old_harness_says_so():
    """The H200 file's command reads python -m engine.bench … --out engine/bench/results/ … with --deadline-s
    twice, where the page says python -m tools.bench writes engine/bench_results/results/."""
    note = bench_measured.command_notes("python -m engine.bench --deadline-s 360 --out engine/bench/results/x.json "
                                    "--deadline-s 150", "zh-TW")
    assert "python -m engine.bench" in note and "python -m tools.bench" in note and "engine/bench_results/results/" in note
    assert "--deadline-s 出現了 2 次，以最後一個 150 為準" in note
    assert bench_measured.command_notes("python -m tools.bench --quick", "zh-TW") == ""
    for lang in ("en", "zh-TW"):
        rows = [r for tb in registry.run("bench_measured", None, lang)["tables"] for r in tb["rows"]]
        commands = [r[1] for r in rows if r[0] in ("command", "指令")]
        about = [r[1] for r in rows if r[0] in ("about the command", "關於這個指令")]
        assert len(about) == sum(c.startswith("python -m engine.bench") or c.count("--deadline-s") > 1 for c in commands)


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_the_profiled_step_is_named_as_the_profilers(lang):
    """The note's 6.66 ms step is the profiler's run; the table's 7.35 ms for the same setting is the timed one."""
    out = registry.run("bench_measured", {"shape": "llama3-8b"}, lang)
    note = next(n for n in out["notes"] if "gemv" in n)
    assert ("剖析那次執行的一步是" if lang == "zh-TW" else "in the profiled run a step took") in note
