"""Results files: where they live, how to read them, and how a run's file is written safely.

Results are package data (``engine/bench/results/*.json``) so that the site build *and*
the wheel that runs in Pyodide can read them through importlib.resources; the browser
lesson plots the reader's numbers beside the committed ones.

A benchmark must never lose a run (GPU time is scarce): ``check_out_path`` refuses a bad
``--out`` before anything is measured, and ``write_results`` writes atomically and, if the
disk still says no at the end, leaves a complete copy in the temporary directory.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from importlib import resources
from pathlib import Path

from engine.bench.backend import BenchError
from engine.bench.provenance import slug

RESULTS_PACKAGE = "engine.bench"
RESULTS_DIR = "results"


def result_names() -> list[str]:
    """Stems of the committed results files, sorted (e.g. ['cpu-numpy-intel-xeon-processor'])."""
    folder = resources.files(RESULTS_PACKAGE).joinpath(RESULTS_DIR)
    if not folder.is_dir():
        return []
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


def load_result(name: str) -> dict:
    """One committed results document by stem (ValueError for an unknown name)."""
    if name not in result_names():
        raise ValueError(f"no committed results named {name!r}")
    path = resources.files(RESULTS_PACKAGE).joinpath(RESULTS_DIR, f"{name}.json")
    return json.loads(path.read_text(encoding="utf-8"))


def load_all() -> dict[str, dict]:
    return {name: load_result(name) for name in result_names()}


def default_out_path(backend: str, device: dict) -> Path:
    """engine/bench/results/<cpu|gpu>-<backend>-<device slug>.json in the source tree."""
    folder = Path(__file__).resolve().parent / RESULTS_DIR
    return folder / f"{device['kind']}-{backend}-{slug(device['name'])}.json"


# --------------------------------------------------------------------------- before measuring


def check_out_path(path: Path, option: str = "--out") -> Path:
    """``path`` if a results file can be written there; else BenchError (one line, exit 2).

    Checked: the suffix (.json), not a directory, the folder exists, and a file can be
    created in it (a real probe file, created and removed: permission bits say nothing for
    root or on a read-only mount).
    """
    path = Path(path)
    if path.is_dir():
        raise BenchError(f"{option} {path} is a directory; give a file name, e.g. {path / 'results.json'}")
    if path.suffix != ".json":
        raise BenchError(f"{option} {path}: results are JSON, give a file name ending in .json")
    folder = path.parent
    if not folder.exists():
        raise BenchError(f"{option} {path}: the folder {folder} does not exist")
    if not folder.is_dir():
        raise BenchError(f"{option} {path}: {folder} is not a folder")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".kv-bench-probe-", suffix=".tmp"):
            pass
    except OSError as e:
        raise BenchError(f"{option} {path}: cannot write in {folder} ({e.strerror or e})") from None
    return path


# --------------------------------------------------------------------------- after measuring


def dumps(doc: dict) -> str:
    return json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def write_results(doc: dict, path: Path) -> Path:
    """Write ``doc`` to ``path`` atomically (a temporary file beside it, then a rename).

    A reader never sees half a file, and a failed write leaves the old file untouched.
    Raises OSError when the file cannot be written.
    """
    path = Path(path)
    text = dumps(doc)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise
    return path


def fallback_path() -> Path:
    """A fresh file name in the temporary directory for results that could not go to --out."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path(tempfile.gettempdir()) / f"kv-bench-{stamp}-{os.getpid()}.json"


def write_fallback(doc: dict) -> Path | None:
    """Save ``doc`` in the temporary directory; None if even that fails."""
    path = fallback_path()
    try:
        return write_results(doc, path)
    except OSError:
        return None
