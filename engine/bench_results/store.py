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


def _json_stems(folder_name: str) -> list[str]:
    """Stems of the .json files of one package-data folder, sorted ([] without the folder)."""
    folder = resources.files(RESULTS_PACKAGE).joinpath(folder_name)
    if not folder.is_dir():
        return []
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".json"))


def result_names() -> list[str]:
    """Stems of the committed results files, sorted (e.g. ['cpu-numpy-intel-xeon-processor'])."""
    return _json_stems(RESULTS_DIR)


def load_result(name: str) -> dict:
    """One committed results document by stem (ValueError for an unknown name)."""
    if name not in result_names():
        raise ValueError(f"no committed results named {name!r}")
    path = resources.files(RESULTS_PACKAGE).joinpath(RESULTS_DIR, f"{name}.json")
    return json.loads(path.read_text(encoding="utf-8"))


def load_all() -> dict[str, dict]:
    return {name: load_result(name) for name in result_names()}


# --------------------------------------------------------------------------- gpu_check results
#
# python -m tools.bench.gpu_check writes one document per GPU session (kind "gpu_check": the
# fused step eager and replayed as a CUDA graph, gemv rates, the Llama sweep, transformers, the
# goals judged). Committed ones live in gpu_checks/ beside results/; the benchmark page draws
# them beside the per-op engine's "before" file. A dry run (NumPy on a CPU standing in for the
# GPU, KV_GPU_DRY_RUN=1) measures nothing real and is refused here.

GPU_CHECKS_DIR = "gpu_checks"


def gpu_check_names() -> list[str]:
    """Stems of the committed gpu_check documents, sorted."""
    return _json_stems(GPU_CHECKS_DIR)


def check_gpu_check(doc: dict, name: str = "gpu_check document") -> dict:
    """``doc`` if it is a gpu_check document measured on a GPU, else ValueError saying why."""
    if not isinstance(doc, dict) or doc.get("kind") != "gpu_check":
        raise ValueError(f"{name} is not a gpu_check document (python -m tools.bench.gpu_check writes those)")
    if doc.get("dry_run") is not False or (doc.get("device") or {}).get("kind") != "gpu":
        raise ValueError(f"{name} was not measured on a GPU (a dry run's CPU numbers are never published)")
    for key in ("sweep", "goals", "git", "peak_bandwidth", "started"):
        if key not in doc:
            raise ValueError(f"{name} has no {key!r}")
    return doc


def load_gpu_checks() -> dict[str, dict]:
    """Every committed gpu_check document by stem, each checked (see check_gpu_check)."""
    out = {}
    for name in gpu_check_names():
        path = resources.files(RESULTS_PACKAGE).joinpath(GPU_CHECKS_DIR, f"{name}.json")
        out[name] = check_gpu_check(json.loads(path.read_text(encoding="utf-8")), f"{GPU_CHECKS_DIR}/{name}.json")
    return out
