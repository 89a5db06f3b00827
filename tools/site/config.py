"""Settings of mkdocs.yml that tools outside MkDocs need, read as text (the file has
MkDocs-only YAML tags, and the workflow reads it before anything is installed).

    python3 -m tools.site.config pyodide.version     # prints 314.0.7 (the GitHub workflow)
    python3 -m tools.site.config site_url

Standard library only.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from urllib.parse import urlparse

ROOT = Path(__file__).resolve().parents[2]


def _text(root: Path) -> str:
    return (root / "mkdocs.yml").read_text(encoding="utf-8")


def site_url(root: Path = ROOT) -> str:
    """``site_url``, e.g. ``https://kv-classroom.github.io/kv-classroom/``."""
    match = re.search(r"^site_url:\s*(\S+)", _text(root), re.MULTILINE)
    if not match:
        raise ValueError(f"{root / 'mkdocs.yml'} has no site_url")
    return match.group(1)


def site_prefix(root: Path = ROOT) -> str:
    """The path part of ``site_url``, e.g. ``/kv-classroom/``."""
    path = urlparse(site_url(root)).path or "/"
    return path if path.endswith("/") else path + "/"


def pyodide_version(root: Path = ROOT) -> str:
    """``extra.pyodide.version``: the one place the Pyodide release is named."""
    match = re.search(r'^extra:\n(?:[ \t].*\n|\n)*?  pyodide:\n(?:    .*\n|[ \t]*#.*\n)*?    version:\s*"?([\w.]+)"?',
                      _text(root), re.MULTILINE)
    if not match:
        raise ValueError(f"{root / 'mkdocs.yml'} has no extra.pyodide.version")
    return match.group(1)


SETTINGS = {"site_url": site_url, "site_prefix": site_prefix, "pyodide.version": pyodide_version}


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in SETTINGS:
        print(f"usage: python3 -m tools.site.config {{{'|'.join(SETTINGS)}}}", file=sys.stderr)
        return 2
    print(SETTINGS[argv[0]]())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
