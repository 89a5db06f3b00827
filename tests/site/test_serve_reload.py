"""Live reload of demos, the way an author works: `mkdocs serve` a small project that uses the
real hooks, edit a lesson, then the engine, and see each edit in the served page (and in the
course wheel the live demos load) without restarting the server."""
from __future__ import annotations

import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from site_pages import HOOKS, ROOT

pytestmark = pytest.mark.slow

LESSON = '''"""A lesson for the reload test: its title lives here, its word in the engine."""
from engine.marker import WORD
from lessons.common import base

NAME = "fixture_reload"
PLATE = "index"
TITLE = {"en": "Reload fixture one", "zh-TW": "重新載入測試一"}
CONTROLS = (base.slider("n", {"en": "How many", "zh-TW": "幾個"}, 1, 1, 3, 1),)


def run(values, lang):
    return {"notes": [f"engine says {WORD}"]}
'''
CONFIG = f"""site_name: Reload fixture
theme:
  name: material
hooks:
  - {HOOKS / 'reload.py'}
  - {HOOKS / 'demos.py'}
watch:
  - engine
  - lessons
extra:
  pyodide:
    version: "0.0.1"
"""
RUNTIME = re.compile(r'<script type="application/json" id="kv-demo-runtime">(.*?)</script>', re.S)


def _project(root: Path) -> None:
    """pyproject + README (the wheel's sources), an engine with one word, the real lesson
    contract and registry, one lesson, one page showing it."""
    (root / "engine").mkdir(parents=True)
    (root / "lessons").mkdir()
    (root / "docs").mkdir()
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "kv-classroom"\nversion = "0.1.0"\n'
        '[tool.setuptools.packages.find]\ninclude = ["engine*", "lessons*"]\n', encoding="utf-8")
    (root / "README.md").write_text("fixture\n", encoding="utf-8")
    (root / "engine" / "__init__.py").write_text("", encoding="utf-8")
    (root / "engine" / "marker.py").write_text('WORD = "alpha"\n', encoding="utf-8")
    for package in ("lessons", "lessons/common", "lessons/home"):
        (root / package).mkdir(exist_ok=True)
        (root / package / "__init__.py").write_text("", encoding="utf-8")
    for module in ("base.py", "registry.py"):  # the registry finds the lesson by its NAME
        shutil.copy(ROOT / "lessons" / "common" / module, root / "lessons" / "common" / module)
    (root / "lessons" / "home" / "fixture_reload.py").write_text(LESSON, encoding="utf-8")
    (root / "docs" / "index.md").write_text("# Home\n\n```kv-demo\nlesson: fixture_reload\n```\n",
                                            encoding="utf-8")
    (root / "mkdocs.yml").write_text(CONFIG, encoding="utf-8")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> bytes | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as r:
            return r.read()
    except OSError:
        return None


def _wait_for(base: str, text: str, proc, timeout: float = 120) -> str:
    """The served home page once it contains ``text``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"mkdocs serve stopped:\n{proc.stdout.read()[-3000:]}")
        page = (_get(base) or b"").decode("utf-8", "replace")
        if text in page:
            return page
        time.sleep(0.3)
    pytest.fail(f"{text!r} never appeared in the served page")


def _wheel_source(base: str, page: str, name: str) -> str:
    """``name`` as it is inside the course wheel the served page points the live demos at."""
    wheel = json.loads(RUNTIME.search(page).group(1))["wheel"]
    with zipfile.ZipFile(io.BytesIO(_get(base + wheel))) as z:
        return z.read(name).decode("utf-8")


def _edit(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")


@pytest.fixture
def served(tmp_path):
    """(base URL, project root, process) of `mkdocs serve --livereload` on the fixture."""
    pytest.importorskip("mkdocs")
    _project(tmp_path)
    port = _free_port()
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "mkdocs", "serve", "--livereload", "-a", f"127.0.0.1:{port}"],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        yield f"http://127.0.0.1:{port}/", tmp_path, proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


def test_edits_to_a_lesson_and_the_engine_show_on_the_next_reload(served):
    base, root, proc = served
    page = _wait_for(base, "Reload fixture one", proc)
    assert "engine says alpha" in page
    first_wheel = json.loads(RUNTIME.search(page).group(1))["wheel"]

    _edit(root / "lessons" / "home" / "fixture_reload.py", "Reload fixture one", "Reload fixture two")
    page = _wait_for(base, "Reload fixture two", proc)
    assert 'TITLE = {"en": "Reload fixture two"' in _wheel_source(base, page, "lessons/home/fixture_reload.py")

    _edit(root / "engine" / "marker.py", "alpha", "beta")
    page = _wait_for(base, "engine says beta", proc)
    assert json.loads(RUNTIME.search(page).group(1))["wheel"] != first_wheel  # a new URL: no stale cache
    assert _wheel_source(base, page, "engine/marker.py") == 'WORD = "beta"\n'  # the live path too
