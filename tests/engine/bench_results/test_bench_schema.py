"""Results files are checked against schema.json with or without jsonschema installed.

The built-in check interprets schema.json itself; these tests hold it to the same verdicts
as jsonschema on valid documents and on documents broken in each way the schema forbids.
"""
from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import pytest

from engine.bench_results import schema
from tools.bench.runner import Options, run_benchmark

ROOT = Path(__file__).resolve().parents[3]
COMMITTED = sorted((ROOT / "engine" / "bench_results" / "results").glob("*.json"))
TINY = dict(shapes=("tiny",), contexts=(8, 16), warmup=0, repeats=2, compare=False, peak_bw_gbs=10.0,
            min_point_seconds=0.0)


@pytest.fixture(scope="module")
def tiny_doc():
    return json.loads(json.dumps(run_benchmark(Options(**TINY), log=lambda m: None)))


def _point(d):
    return d["runs"][0]["points"][0]


# each: (what breaks, how, a word the built-in message must contain)
BREAKS = [
    ("missing provenance field", lambda d: d["provenance"].pop("git"), "missing required field(s) git"),
    ("negative time", lambda d: _point(d)["decode_cached"].__setitem__("median_s", -1.0), "not greater than 0"),
    ("zero samples", lambda d: _point(d)["decode_cached"].__setitem__("n", 0), "less than the minimum 1"),
    ("string for a number", lambda d: _point(d).__setitem__("context", "8"), "not of type integer"),
    ("bool for an integer", lambda d: _point(d).__setitem__("context", True), "not of type integer"),
    ("unknown backend", lambda d: d["provenance"].__setitem__("backend", "torch"), "is not one of"),
    ("wrong schema name", lambda d: d.__setitem__("schema", "other"), "is not 'kv-classroom/bench-results'"),
    ("unexpected top field", lambda d: d.__setitem__("extra", 1), "unexpected field 'extra'"),
    ("no runs", lambda d: d.__setitem__("runs", []), "fewer than 1"),
    ("stats neither null nor stats", lambda d: _point(d).__setitem__("prefill", {"median_s": 1}), "allowed forms"),
    ("load average of two numbers", lambda d: d["provenance"]["host"].__setitem__("loadavg_end", [1.0, 2.0]),
     "allowed forms"),
    ("empty device name", lambda d: d["provenance"]["device"].__setitem__("name", ""), "shorter than 1"),
    ("skipped reason not a string", lambda d: _point(d)["skipped"].__setitem__("prefill", 3), "not of type string"),
]


def _validators():
    out = [pytest.param(False, id="built-in")]
    try:
        import jsonschema  # noqa: F401
        out.append(pytest.param(True, id="jsonschema"))
    except ImportError:
        out.append(pytest.param(True, id="jsonschema", marks=pytest.mark.skip(reason="jsonschema not installed")))
    return out


@pytest.mark.parametrize("use_jsonschema", _validators())
def test_valid_documents_pass(use_jsonschema, tiny_doc):
    assert schema.validate(tiny_doc, use_jsonschema=use_jsonschema) == ("jsonschema" if use_jsonschema else "built-in")
    assert COMMITTED, "no committed results files"
    for path in COMMITTED:
        schema.validate(json.loads(path.read_text(encoding="utf-8")), use_jsonschema=use_jsonschema)


@pytest.mark.parametrize("use_jsonschema", _validators())
@pytest.mark.parametrize("what, breaks, words", BREAKS, ids=[b[0] for b in BREAKS])
def test_each_broken_rule_is_caught(what, breaks, words, use_jsonschema, tiny_doc):
    doc = copy.deepcopy(tiny_doc)
    breaks(doc)
    with pytest.raises(schema.ResultsInvalid) as e:
        schema.validate(doc, use_jsonschema=use_jsonschema)
    if not use_jsonschema:
        assert words in str(e.value)


def test_without_jsonschema_the_built_in_check_runs(monkeypatch, tiny_doc):
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # import jsonschema now raises ImportError
    assert schema.validate(tiny_doc) == "built-in"
    broken = copy.deepcopy(tiny_doc)
    del broken["runs"][0]["points"][0]["decode_bytes"]
    with pytest.raises(schema.ResultsInvalid, match="runs/0/points/0: missing required field"):
        schema.validate(broken)


def test_the_cli_validates_without_jsonschema(monkeypatch, capsys, tmp_path):
    from tools.bench.cli import main

    monkeypatch.setitem(sys.modules, "jsonschema", None)
    rc = main(["--shapes", "tiny", "--contexts", "8", "--threads", "0", "--no-compare", "--peak-bw-gbs", "10",
               "--repeats", "2", "--warmup", "0", "--out", str(tmp_path / "r.json")])
    assert rc == 0
    assert "results match schema.json (built-in check)" in capsys.readouterr().err
