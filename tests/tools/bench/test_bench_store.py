"""Benchmarks never lose a run: a bad --out stops the CLI before anything is measured, and a
write that fails at the end leaves the results in the temporary folder and on stdout."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from engine.bench_results import schema, store
from tools.bench import cli
from tools.bench import writer
from tools.bench.runner import run_benchmark

ROOT = Path(__file__).resolve().parents[3]
TINY_ARGS = ["--shapes", "tiny", "--contexts", "8", "--threads", "0", "--no-compare", "--peak-bw-gbs", "10",
             "--repeats", "2", "--warmup", "0"]


def _unwritable_folder(tmp_path: Path) -> Path:
    """A folder no file can be created in, even for root (who ignores permission bits)."""
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    for candidate in (folder, Path("/sys")):
        try:
            with tempfile.NamedTemporaryFile(dir=candidate):
                pass
        except OSError:
            return candidate
    pytest.skip("no folder here refuses new files (root on a machine without a read-only /sys)")


def _bad_out(kind: str, tmp_path: Path) -> tuple[Path, str]:
    if kind == "directory":
        return tmp_path, "is a directory"
    if kind == "missing folder":
        return tmp_path / "nowhere" / "r.json", "does not exist"
    if kind == "parent is a file":
        (tmp_path / "plain").write_text("x")
        return tmp_path / "plain" / "r.json", "not a folder"
    if kind == "wrong suffix":
        return tmp_path / "r.csv", "ending in .json"
    return _unwritable_folder(tmp_path) / "r.json", "cannot write"


BAD = ["directory", "missing folder", "parent is a file", "wrong suffix", "unwritable"]


@pytest.fixture
def no_measuring(monkeypatch):
    """Fail the test if the CLI starts a sweep or even asks for a backend."""
    def refuse(*a, **k):
        raise AssertionError("a measurement started although --out is bad")

    monkeypatch.setattr(cli, "run_benchmark", refuse)
    monkeypatch.setattr("tools.bench.backend.get_backend", refuse)


@pytest.mark.parametrize("kind", BAD)
def test_a_bad_out_stops_before_any_measurement(kind, tmp_path, no_measuring, capsys):
    out, words = _bad_out(kind, tmp_path)
    assert cli.main([*TINY_ARGS, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tools.bench: error: --out ") and words in err[0], err


def test_a_bad_out_from_the_command_line_is_one_line_and_exit_2(tmp_path):
    r = subprocess.run([sys.executable, "-m", "tools.bench", *TINY_ARGS, "--out", str(tmp_path)], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == (f"tools.bench: error: --out {tmp_path} is a directory; give a file name, "
                                f"e.g. {tmp_path / 'results.json'}")


def test_check_only_checks(tmp_path, no_measuring, capsys):
    out = tmp_path / "r.json"
    assert cli.main([*TINY_ARGS, "--check", "--out", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    assert not out.exists() and list(tmp_path.iterdir()) == []  # the probe file is gone too


def test_write_is_atomic_and_leaves_no_temporary_file(tmp_path):
    out = tmp_path / "r.json"
    out.write_text("old")
    writer.write_results({"a": 1}, out)
    assert json.loads(out.read_text()) == {"a": 1} and [p.name for p in tmp_path.iterdir()] == ["r.json"]


@pytest.fixture(scope="module")
def tiny_doc():
    return run_benchmark(cli.options_from_args(cli.build_parser().parse_args(TINY_ARGS), TINY_ARGS),
                         log=lambda m: None)


def test_a_failed_write_at_the_end_keeps_the_results(tmp_path, monkeypatch, capsys, tiny_doc):
    monkeypatch.setattr(cli, "run_benchmark", lambda *a, **k: tiny_doc)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    real = writer.write_results

    def disk_full(doc, path):
        if Path(path).parent == tmp_path:
            raise OSError(28, "No space left on device")
        return real(doc, path)

    monkeypatch.setattr(writer, "write_results", disk_full)
    rc = cli.main([*TINY_ARGS, "--out", str(tmp_path / "r.json")])
    captured = capsys.readouterr()
    (fallback,) = (tmp_path / "tmp").glob("kv-bench-*.json")
    assert rc == 1 and not (tmp_path / "r.json").exists()
    saved = json.loads(fallback.read_text(encoding="utf-8"))
    assert saved == json.loads(json.dumps(tiny_doc))
    schema.validate(saved)
    message = captured.err.strip().splitlines()[-1]
    assert "No space left on device" in message and str(fallback) in message
    printed = captured.out[captured.out.index("{\n"):]  # the JSON follows the table on stdout
    assert json.loads(printed) == saved


def test_when_the_temporary_folder_fails_too_the_results_are_still_printed(tmp_path, monkeypatch, capsys, tiny_doc):
    monkeypatch.setattr(cli, "run_benchmark", lambda *a, **k: tiny_doc)

    def broken(doc, path):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(writer, "write_results", broken)
    assert cli.main([*TINY_ARGS, "--out", str(tmp_path / "r.json")]) == 1
    captured = capsys.readouterr()
    assert "printed above (the temporary folder failed too)" in captured.err
    assert json.loads(captured.out[captured.out.index("{\n"):])["runs"] == tiny_doc["runs"]


def test_an_interrupted_sweep_keeps_its_finished_runs(tmp_path, monkeypatch, capsys):
    """Ctrl-C or timeout's SIGTERM in the second run: the first is written, exit 130."""
    from tools.bench import runner

    real, calls = runner._measure_run, []

    def second_is_interrupted(sweep, shape, dt, log):
        calls.append(dt)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(sweep, shape, dt, log)

    monkeypatch.setattr(runner, "_measure_run", second_is_interrupted)
    out = tmp_path / "r.json"
    rc = cli.main([*TINY_ARGS, "--dtypes", "float32,float16", "--out", str(out)])
    assert rc == 130 and calls == ["float32", "float16"]
    doc = json.loads(out.read_text(encoding="utf-8"))
    schema.validate(doc)
    assert [r["dtype"] for r in doc["runs"]] == ["float32"]
    assert any(n.startswith("Interrupted after 1 complete run") for n in doc["notes"])


def test_sigterm_stops_a_sweep_like_ctrl_c():
    with pytest.raises(KeyboardInterrupt):
        cli._terminated(15, None)
