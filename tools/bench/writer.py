"""Writing a results file: where a run's file goes, and how it is written safely.

A benchmark must never lose a run (GPU time is scarce): ``check_out_path`` refuses a bad
``--out`` before anything is measured, and ``write_results`` writes atomically and, if the
disk still says no at the end, leaves a complete copy in the temporary directory. The
committed files are read by engine/bench_results/store.py.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from engine.bench_results.store import RESULTS_DIR
from tools.bench.backend import BenchError
from tools.bench.provenance import slug


def default_out_path(backend: str, device: dict) -> Path:
    """engine/bench_results/results/<cpu|gpu>-<backend>-<device slug>.json in the source tree."""
    folder = Path(__file__).resolve().parents[2] / "engine" / "bench_results" / RESULTS_DIR
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
