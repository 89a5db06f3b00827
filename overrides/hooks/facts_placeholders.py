"""Replace ``[[fact:KEY]]`` placeholders in page Markdown with numbers the engine computed.

Pages never type a number about a model by hand: they write ``[[fact:course.n_layers]]`` and
the build puts in ``lessons.facts.table.facts(lang)["course.n_layers"]``. This module holds the
logic (plain Python, no MkDocs import) so it can be unit-tested; ``facts.py`` beside it is
the thin MkDocs hook.
"""
from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Mapping

# A well-formed placeholder: [[fact:section.name]], keys made of letters, digits, _ . -
PLACEHOLDER = re.compile(r"\[\[fact:([A-Za-z0-9_][A-Za-z0-9_.\-]*)\]\]")
# Anything that starts like a placeholder; used to catch typos such as [[fact: x]] or [[fact:x]
OPENING = re.compile(r"\[\[\s*fact\s*:")


class FactError(ValueError):
    """A page asks for a fact the build cannot give; the message names the page and the key."""


def fact_keys(markdown: str) -> list[str]:
    """Keys used by ``markdown``, in order of first use."""
    return list(dict.fromkeys(PLACEHOLDER.findall(markdown)))


def _check_well_formed(markdown: str, page: str) -> None:
    good = {m.start() for m in PLACEHOLDER.finditer(markdown)}
    for m in OPENING.finditer(markdown):
        if m.start() not in good:
            line = markdown.count("\n", 0, m.start()) + 1
            snippet = markdown[m.start(): m.start() + 40].split("\n")[0]
            raise FactError(
                f"{page}:{line}: malformed fact placeholder {snippet!r}; "
                "write [[fact:KEY]] with no spaces, e.g. [[fact:course.n_layers]]"
            )


def substitute(markdown: str, facts: Mapping[str, str] | Callable[[], Mapping[str, str]],
               page: str) -> str:
    """Return ``markdown`` with every placeholder replaced by its value.

    ``facts`` may be a callable so that a page without placeholders never loads the facts
    (loading them builds the course model). Raises :class:`FactError` naming ``page`` and
    the key for an unknown key or a malformed placeholder.
    """
    _check_well_formed(markdown, page)
    keys = fact_keys(markdown)
    if not keys:
        return markdown
    table = facts() if callable(facts) else facts
    unknown = [k for k in keys if k not in table]
    if unknown:
        raise FactError(
            f"{page}: unknown fact key(s) {', '.join(unknown)}; "
            f"known keys: {', '.join(sorted(table)) or '(none)'}"
        )
    return PLACEHOLDER.sub(lambda m: str(table[m.group(1)]), markdown)


def load_facts(lang: str, page: str, keys: list[str]) -> dict[str, str]:
    """``lessons.facts.table.facts(lang)``, or a :class:`FactError` that says what is missing."""
    try:
        module = importlib.import_module("lessons.facts.table")
    except ImportError as exc:
        raise FactError(
            f"{page} uses [[fact:{keys[0]}]] but lessons.facts.table cannot be imported ({exc}); "
            "lessons/facts/table.py must define facts(lang) -> dict[str, str]"
        ) from exc
    if not hasattr(module, "facts"):
        raise FactError(f"{page} uses facts but lessons/facts/table.py has no facts(lang) function")
    try:
        table = module.facts(lang)
    except Exception as exc:  # the engine or its data is broken: say so, without a traceback
        raise FactError(f"{page} uses [[fact:{keys[0]}]] but lessons.facts.table.facts({lang!r}) "
                        f"failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(table, Mapping):
        raise FactError(f"lessons.facts.table.facts({lang!r}) returned {type(table).__name__}, "
                        "expected a dict of strings")
    return dict(table)
