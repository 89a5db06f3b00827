"""Prose of a zh-TW page: what a reader reads, without code, diagrams, URLs, markup, facts."""
from __future__ import annotations

import re

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[^\n]*\n.*?^(?P=indent)?(?P=fence)[ \t]*$",
                   re.MULTILINE | re.DOTALL)
DROP = [
    re.compile(r"^---\n.*?\n---\n", re.DOTALL),          # front matter
    re.compile(r"<!--.*?-->", re.DOTALL),                # HTML comments
    re.compile(r"`[^`\n]+`"),                            # inline code
    re.compile(r"\[\[fact:[^\]]*\]\]"),                  # fact placeholders
    re.compile(r"\]\([^)\s]*(?:\s+\"[^\"]*\")?\)"),        # link targets ](url "title")
    re.compile(r"^\[[^\]]+\]:\s*\S+.*$", re.MULTILINE),  # reference link definitions
    re.compile(r"https?://\S+"),                         # bare URLs
    re.compile(r"<[^>]+>"),                              # HTML tags with their attributes
    re.compile(r"\{[:#.][^}]*\}"),                       # attr_list {#id .class}
]


def prose(markdown: str) -> str:
    """``markdown`` without fenced blocks (code, Mermaid, kv-demo) and non-prose markup."""
    text = FENCE.sub("", markdown)
    for pattern in DROP:
        text = pattern.sub(" ", text)
    return text
