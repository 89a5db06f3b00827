"""The site tests' shared knowledge: the docs tree, the pages and their twins, built paths."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
HOOKS = ROOT / "overrides" / "hooks"

# The course's pages, in nav order (ARCHITECTURE.md); each exists as X.md and X.zh-TW.md.
PAGES = (
    "index",
    "plates/10000-feet",
    "plates/01-next-token",
    "plates/02-tokens",
    "plates/03-embeddings",
    "plates/04-attention",
    "plates/05-kv-cache",
    "plates/06-data-movement",
    "plates/07-shrinking-the-cache",
    "plates/08-serving-the-cache",
    "plates/09-decoding-faster",
    "glossary",
    "benchmarks",
    "references",
    "authors",
)


def source(page: str, lang: str) -> Path:
    """Markdown source of ``page`` in ``lang``."""
    return DOCS / (f"{page}.md" if lang == "en" else f"{page}.{lang}.md")


def built(site: Path, page: str, lang: str) -> Path:
    """Built HTML file of ``page`` in ``lang`` (directory URLs; zh-TW under zh-TW/)."""
    base = site if lang == "en" else site / lang
    return base / "index.html" if page == "index" else base / page / "index.html"


def url_path(page: str, lang: str) -> str:
    """Site-relative URL of ``page`` in ``lang``, e.g. ``zh-TW/plates/02-tokens/``."""
    prefix = "" if lang == "en" else f"{lang}/"
    return prefix if page == "index" else f"{prefix}{page}/"


# A fenced block: opening ``` or ~~~ (3 or more), info string, body, the same fence closing.
# Outer fences win, so a ```mermaid shown inside a ````markdown example is not a diagram.
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)\n(?P<body>.*?)^(?P=indent)?(?P=fence)[ \t]*$",
    re.MULTILINE | re.DOTALL,
)


def fences(markdown: str, kind: str) -> list[str]:
    """Bodies of the top-level fenced blocks whose info string starts with ``kind``."""
    return [m.group("body") for m in FENCE.finditer(markdown)
            if m.group("info").strip().split(" ")[0] == kind]
