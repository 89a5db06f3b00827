"""Committed results files: where they live and how to read them (the benchmark's read side).

Results are package data (``engine/bench_results/results/*.json``) so that the site build *and*
the wheel that runs in Pyodide can read them through importlib.resources; the browser
lesson plots the reader's numbers beside the committed ones. Writing them is the
harness's business (tools/bench/writer.py), outside the wheel.
"""
from __future__ import annotations

import json
from importlib import resources


RESULTS_PACKAGE = "engine.bench_results"
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
