"""tools/site/config.py: the settings of mkdocs.yml that the workflow and the tools read."""
from __future__ import annotations

import subprocess
import sys

from tools.site.config import ROOT, pyodide_version, site_prefix


def test_prefix_comes_from_site_url():
    assert site_prefix() == "/kv-classroom/"


def test_site_config_reads_the_pinned_pyodide_release(tmp_path):
    (tmp_path / "mkdocs.yml").write_text(
        'site_url: https://x.io/s/\nplugins:\n  - search\nextra:\n  generator: false\n'
        '  # the runtime\n  pyodide:\n    # pinned\n    version: "1.2.3"\n  social: []\n', encoding="utf-8")
    assert pyodide_version(tmp_path) == "1.2.3"
    assert site_prefix(tmp_path) == "/s/"


def test_the_workflow_command_prints_the_version():
    """`python3 -m tools.site.config pyodide.version`, as the workflow runs it."""
    result = subprocess.run([sys.executable, "-m", "tools.site.config", "pyodide.version"],
                            cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0 and result.stdout.strip() == pyodide_version()
