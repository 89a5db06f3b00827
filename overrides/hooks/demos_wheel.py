"""The course wheel: engine + lessons + the course model's weights, for the live demos.

Pyodide installs it with ``pyodide.loadPackage(url)``. It is built with the project's own
build backend from a private copy of the sources (so eight people building at once never
share a ``build/`` folder), and cached by a hash of those sources, so ``mkdocs serve`` reloads do not rebuild
it when nothing changed. The hash also names the folder it is served from, which busts
browser caches when the engine changes: under ``mkdocs serve`` an edit to a lesson or the
engine gives a new wheel at a new URL on the next rebuild.
"""
from __future__ import annotations

import hashlib
import importlib.util
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

# What goes into the wheel (pyproject.toml decides the details; these decide the hash).
WHEEL_SOURCES = ("pyproject.toml", "README.md", "engine", "lessons")
_SKIP_PARTS = {"__pycache__", ".pytest_cache"}


class WheelError(RuntimeError):
    """The wheel could not be built (the build stops with this message)."""


def project_root() -> Path:
    """The checkout whose lessons this build runs: the folder that holds the ``lessons``
    package Python imports (the current folder, or the project installed with pip -e)."""
    spec = importlib.util.find_spec("lessons")
    if spec is None or spec.origin is None:
        raise WheelError("the 'lessons' package is not importable: run mkdocs from the "
                         "repository root (python -m mkdocs), or pip install -e . first")
    return Path(spec.origin).resolve().parents[1]


def _source_files(root: Path) -> list[Path]:
    files = []
    for name in WHEEL_SOURCES:
        p = root / name
        if p.is_file():
            files.append(p)
        elif p.is_dir():
            files.extend(
                f for f in sorted(p.rglob("*"))
                if f.is_file() and not (_SKIP_PARTS & set(f.relative_to(root).parts)) and f.suffix != ".pyc"
            )
    return files


def source_hash(root: Path) -> str:
    """sha256 over the paths and bytes of everything that goes into the wheel."""
    h = hashlib.sha256()
    for f in _source_files(root):
        h.update(f.relative_to(root).as_posix().encode())
        h.update(b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def build_wheel(root: Path, cache_dir: Path) -> Path:
    """Path of the project's pure-Python wheel, built now or taken from the cache."""
    digest = source_hash(root)[:16]
    out = cache_dir / digest
    cached = sorted(out.glob("*-py3-none-any.whl")) if out.is_dir() else []
    if cached:
        return cached[0]
    with tempfile.TemporaryDirectory(prefix="kv-wheel-") as tmp:
        src = Path(tmp) / "src"
        src.mkdir()
        for f in _source_files(root):
            dest = src / f.relative_to(root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dest)
        dist = Path(tmp) / "dist"
        # --no-isolation: use the installed setuptools, so the build needs no network.
        proc = subprocess.run(
            [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(dist), str(src)],
            capture_output=True, text=True, cwd=src,
        )
        wheels = sorted(dist.glob("*-py3-none-any.whl"))
        if proc.returncode != 0 or not wheels:
            tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
            raise WheelError(f"building the course wheel failed (python -m build):\n{tail}")
        out.mkdir(parents=True, exist_ok=True)
        final = out / wheels[0].name
        shutil.copy2(wheels[0], final)
    _prune(cache_dir, keep=KEEP_WHEELS)
    return final


KEEP_WHEELS = 4  # a serve session edits the engine many times; old wheels are never reused


def _prune(cache_dir: Path, keep: int) -> None:
    """Delete all but the ``keep`` newest cached wheels."""
    dirs = sorted((d for d in cache_dir.iterdir() if d.is_dir()), key=lambda d: d.stat().st_mtime, reverse=True)
    for old in dirs[keep:]:
        shutil.rmtree(old, ignore_errors=True)


def site_path(wheel: Path) -> str:
    """Where ``wheel`` is served, relative to the site root (its hash folder busts caches)."""
    return f"assets/wheels/{wheel.parent.name}/{wheel.name}"


def install_wheel(wheel: Path, site_dir: Path) -> str:
    """Copy the wheel into the site; returns :func:`site_path`."""
    rel = site_path(wheel)
    dest = site_dir / rel
    if not dest.exists() or dest.stat().st_size != wheel.stat().st_size:
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(wheel, dest)
    return rel
