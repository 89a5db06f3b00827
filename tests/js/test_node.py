"""The browser runtime's JavaScript tests (tests/js/*.test.mjs), run with Node's built-in test
runner, so that the README's test command covers them too. Skips, saying why, without Node.js
20 or newer.

    node --test tests/js/        # the same tests, without pytest
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
FILES = sorted(HERE.glob("*.test.mjs"))


@pytest.fixture(scope="module")
def node() -> str:
    path = shutil.which("node")
    if path is None:
        pytest.skip("Node.js is not installed: the runtime's JavaScript tests need `node --test` (Node 20+)")
    version = subprocess.run([path, "--version"], capture_output=True, text=True).stdout.strip()
    if int(version.lstrip("v").split(".")[0]) < 20:
        pytest.skip(f"Node.js {version} is too old for these tests (Node 20+ runs them)")
    return path


@pytest.mark.parametrize("path", FILES, ids=[f.name for f in FILES])
def test_javascript_file_passes(node, path):
    result = subprocess.run([node, "--test", str(path)], capture_output=True, text=True, timeout=120, cwd=HERE)
    out = result.stdout + result.stderr
    passed = re.search(r"^# pass (\d+)", out, re.MULTILINE)
    assert result.returncode == 0, out[-4000:]
    assert passed and int(passed.group(1)) > 0, f"no test ran in {path.name}:\n{out[-2000:]}"
