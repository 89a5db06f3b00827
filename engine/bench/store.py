"""Committed results files: where they live and how to read them.

Results are package data (``engine/bench/results/*.json``) so that the site build *and*
the wheel that runs in Pyodide can read them through importlib.resources; the browser
lesson plots the reader's numbers beside the committed ones.
"""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

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
