"""tools/bench/gpu_run.sh, the prepared GPU session: its output path comes from --out or
KV_BENCH_OUT (never a generic OUT), is printed and checked before anything runs, and a
missing GPU is reported as such.

The plumbing is tested with a stand-in Python that records every command the script runs
(no GPU needed); the real failure without CuPy is tested with this Python.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "tools" / "bench" / "gpu_run.sh"
DEFAULT = "engine/bench_results/results/gpu-cupy-h200.json"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None or shutil.which("timeout") is None,
                                reason="needs bash and coreutils' timeout")


def _run(*args: str, env: dict | None = None, python: str = sys.executable) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if not k.startswith("KV_BENCH")}
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**base, "KV_BENCH_PYTHON": python, **(env or {})})


@pytest.fixture
def fake_python(tmp_path):
    """A 'python' that succeeds and writes each command line it gets to calls.txt."""
    log = tmp_path / "calls.txt"
    fake = tmp_path / "python"
    fake.write_text(f'#!/usr/bin/env bash\nprintf "%s\\n" "$*" >> "{log}"\n')
    fake.chmod(0o755)
    return fake, log


def _calls(log: Path) -> list[str]:
    return log.read_text().splitlines()


def _bench_calls(log: Path) -> list[str]:
    return [c for c in _calls(log) if c.startswith("-m tools.bench")]


def test_a_folder_in_OUT_is_ignored_and_a_missing_gpu_is_the_error(tmp_path):
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed here: the missing-GPU path cannot be shown")
    except ImportError:
        pass
    r = _run(env={"OUT": str(tmp_path)})
    assert r.returncode == 2
    assert r.stdout.splitlines()[0] == f"gpu_run.sh: results will be written to {DEFAULT}"
    assert "CuPy with a CUDA GPU is needed" in r.stderr and str(tmp_path) not in r.stderr + r.stdout


@pytest.mark.parametrize("how", ["default", "KV_BENCH_OUT", "--out", "--out="])
def test_the_output_path_is_printed_first_and_passed_to_every_step(how, tmp_path, fake_python):
    fake, log = fake_python
    target = str(tmp_path / "r.json")
    env = {"OUT": str(tmp_path)}  # a generic variable pointing at a folder: must never matter
    args: list[str] = ["--quick"]
    if how == "KV_BENCH_OUT":
        env["KV_BENCH_OUT"] = target
    elif how == "--out":
        args += ["--out", target]
    elif how == "--out=":
        args += [f"--out={target}"]
    expected = DEFAULT if how == "default" else target
    r = _run(*args, env=env, python=str(fake))
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == f"gpu_run.sh: results will be written to {expected}"
    bench = _bench_calls(log)
    assert len(bench) == 2 and all(f"--out {expected}" in c for c in bench)
    assert "--check" in bench[0]  # the place is checked before the GPU tests and the sweep
    assert bench[-1].endswith("--quick") and "--check" not in bench[-1]


def test_out_without_a_value_is_an_error_before_anything_runs(fake_python):
    fake, log = fake_python
    r = _run("--out", python=str(fake))
    assert r.returncode == 2 and "--out needs a file name" in r.stderr
    assert not log.exists()


def test_the_gpu_tests_run_first_and_the_sweep_takes_the_fused_step_when_they_pass(fake_python):
    fake, log = fake_python
    r = _run(python=str(fake))
    assert r.returncode == 0, r.stderr
    calls = _calls(log)
    tests = next(i for i, c in enumerate(calls) if c.startswith("-m pytest"))
    sweep = next(i for i, c in enumerate(calls) if c.startswith("-m tools.bench") and "--check" not in c)
    assert "-m gpu" in calls[tests] and "tests/engine/gpu" in calls[tests] and tests < sweep
    assert "--step auto" in calls[sweep] and "--backend cupy" in calls[sweep]


def test_failed_gpu_tests_time_the_engine_path_and_fail_the_script(tmp_path):
    """A stand-in Python whose pytest fails: the sweep still runs, on the engine's path, exit 1."""
    log = tmp_path / "calls.txt"
    fake = tmp_path / "python"
    fake.write_text(f'#!/usr/bin/env bash\nprintf "%s\\n" "$*" >> "{log}"\n'
                    '[[ "$1 $2" == "-m pytest" ]] && exit 1\nexit 0\n')
    fake.chmod(0o755)
    r = _run(python=str(fake))
    assert r.returncode == 1 and "GPU correctness tests failed" in r.stderr
    assert "--step engine" in _bench_calls(log)[-1]


def test_the_interpreters_own_error_is_shown(tmp_path):
    """No CuPy here: the message says so in CuPy's own words (an ImportError), not only a guess."""
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed here")
    except ImportError:
        pass
    r = _run("--out", str(tmp_path / "r.json"))
    assert r.returncode == 2 and "No module named 'cupy'" in r.stderr


def test_the_default_interpreter_is_python3():
    assert 'PY="${KV_BENCH_PYTHON:-python3}"' in SCRIPT.read_text()


SESSION = ROOT / "tools" / "bench" / "gpu_session.sh"


def test_the_device_session_writes_everything_under_OUT(tmp_path, fake_python):
    fake, log = fake_python
    base = {k: v for k, v in os.environ.items() if not k.startswith("KV_BENCH")}
    r = subprocess.run(["bash", str(SESSION)], cwd=ROOT, capture_output=True, text=True, timeout=60,
                       env={**base, "KV_BENCH_PYTHON": str(fake), "OUT": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    check = [c for c in _calls(log) if c.startswith("-m tools.bench.gpu_check")]
    assert check == [f"-m tools.bench.gpu_check --out {tmp_path}/gpu_check.json"]
    assert (tmp_path / "gpu_check.log").exists() and (tmp_path / "environment.txt").exists()


def test_the_device_session_needs_OUT(fake_python):
    fake, log = fake_python
    base = {k: v for k, v in os.environ.items() if k not in ("OUT",) and not k.startswith("KV_BENCH")}
    r = subprocess.run(["bash", str(SESSION)], cwd=ROOT, capture_output=True, text=True, timeout=60,
                       env={**base, "KV_BENCH_PYTHON": str(fake)})
    assert r.returncode != 0 and "OUT" in r.stderr and not log.exists()
