"""Every string a lesson puts before the reader, with the reader's and the model's data taken out.

Used by test_terminology.py: the terminology table (lessons/common/terminology.py) applies to what
the lesson *writes* (titles, labels, help, axis and legend titles, hover text, table headers
and word cells, notes, chip titles, actions, error messages), not to the text it *shows*: the
reader's own input, the course model's tokens and generations, the sentence pairs and group
words of the corpus. Those are data, and a variant inside them is no fault of the lesson
(the course model says " token" after 「語言模型讀完前文，猜下一個」, as its corpus does).

Data is recognised, never guessed: a string (or a quoted span “…” / 「…」 inside one) counts as
data when it is a vocabulary piece of the course tokenizer or a corpus text (sentence pairs,
the semantic map's words), or when it is part of what the reader typed, or that text continued
by the model (the prompt and its generated tokens), or when it is a whole text the course
tokenizer decoded while the lesson ran, possibly cut with a trailing "…" (the paging demo's
answers continue the lesson's own prompts, not the reader's).
"""
from __future__ import annotations

import functools
import json
import re
from typing import Iterator
from unittest import mock

from engine.tokenizer import Tokenizer
from engine.training.corpus import SEMANTIC_GROUPS
from lessons.common import registry
from lessons.common.base import LessonInputError
from lessons.benchmarks import bench_browser
from lessons.common.figures import show_piece
from lessons.plate02_tokens.tokens import PAIRS

from lesson_checks import HOSTILE_TEXTS

# Plotly layout keys whose values are dicts with a "title" the reader sees.
_AXIS = re.compile(r"^[xy]axis\d*$|^coloraxis$|^legend$")
_HOVER_FIELDS = re.compile(r"%\{[^}]*\}|<br>|</?extra>|</?b>")
_QUOTED = re.compile(r"“([^”]*)”|「([^」]*)」")
_POSITION_PREFIX = re.compile(r"^\d+: ")  # attention's "3: piece" headers and row names
_REPEAT_SUFFIX = re.compile(r" #\d+$")     # unique_labels' "piece #12"


class Data:
    """What counts as data for one lesson run: whole strings (vocabulary pieces, corpus texts)
    and the reader's inputs (a part of one is data, and so is one continued)."""

    def __init__(self, pieces: set[str], texts: set[str], inputs: set[str] = frozenset(),
                 decoded: set[str] = frozenset()):
        shown = {show_piece(p) for p in pieces}
        self.whole = {s for s in pieces | shown | {p.strip() for p in pieces} | texts | inputs | decoded if s.strip()}
        self.inputs = {s for s in inputs if s.strip()}

    def is_data(self, s: str) -> bool:
        s = _REPEAT_SUFFIX.sub("", _POSITION_PREFIX.sub("", s))
        return (s in self.whole or s.strip() in self.whole or s.removesuffix("…") in self.whole
                or any(s in t or (len(t) >= 3 and s.startswith(t)) for t in self.inputs))

    def scrub(self, s: str) -> str:
        """``s`` with its quoted data spans blanked."""
        return _QUOTED.sub(lambda m: " " if self.is_data(m.group(1) or m.group(2) or "") else m.group(0), s)


def _texts(value) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _texts(v)


def _figure_strings(fig: dict) -> Iterator[tuple[str, str]]:
    lay = fig["layout"]
    for key, value in lay.items():
        if _AXIS.match(key) and isinstance(value, dict):
            title = value.get("title")
            yield f"layout.{key}.title", title.get("text", "") if isinstance(title, dict) else (title or "")
            yield from ((f"layout.{key}.ticktext", s) for s in _texts(value.get("ticktext")))
    for a in lay.get("annotations", []):
        yield "layout.annotations", a.get("text", "")
    for i, trace in enumerate(fig["data"]):
        where = f"data[{i}]"
        yield f"{where}.name", trace.get("name", "")
        yield f"{where}.hovertemplate", _HOVER_FIELDS.sub(" ", trace.get("hovertemplate", ""))
        bar = trace.get("colorbar", {}).get("title", {})
        yield f"{where}.colorbar.title", bar.get("text", "") if isinstance(bar, dict) else bar
        for field in ("text", "x", "y"):
            yield from ((f"{where}.{field}", s) for s in _texts(trace.get(field)))


def _table_strings(where: str, table: dict) -> Iterator[tuple[str, str]]:
    if "title" in table:
        yield f"{where}.title", table["title"]
    yield from ((f"{where}.columns", c) for c in table["columns"])
    yield from ((f"{where}.cell", c) for row in table["rows"] for c in row)


def output_strings(out: dict) -> Iterator[tuple[str, str]]:
    """(where, text) for every reader-facing string of a lesson Output."""
    for k, f in enumerate(out.get("figures", [])):
        yield f"figures[{k}].title", f["title"]
        yield from ((f"figures[{k}].figure.{w}", s) for w, s in _figure_strings(f["figure"]))
        yield from _table_strings(f"figures[{k}].table", f["table"])
    for k, t in enumerate(out.get("tables", [])):
        yield from _table_strings(f"tables[{k}]", t)
    yield from (("notes", n) for n in out.get("notes", []))
    yield from (("tokens.title", c["title"]) for c in out.get("tokens", []))
    yield from (("actions.label", a["label"]) for a in out.get("actions", []))


def describe_strings(described: dict) -> Iterator[tuple[str, str]]:
    """(where, text) for the title and the controls of ``registry.describe()``."""
    yield "title", described["title"]
    for c in described["controls"]:
        yield f"controls.{c['name']}.label", c["label"]
        yield f"controls.{c['name']}.help", c.get("help", "")
        yield from ((f"controls.{c['name']}.option", o["label"]) for o in c.get("options", []))


def written(strings, data: Data) -> list[tuple[str, str]]:
    """The strings the lesson wrote: data strings dropped, quoted data spans blanked."""
    return [(where, data.scrub(s)) for where, s in strings if s and not data.is_data(s)]


# --------------------------------------------------------------------------- one lesson, every value


@functools.lru_cache(maxsize=1)
def vocabulary_pieces() -> frozenset[str]:
    """Every display piece of the course vocabulary: the model's own tokens are data."""
    tok = Tokenizer.load()
    return frozenset(tok.pieces(list(range(tok.vocab_size))))


def corpus_texts() -> set[str]:
    """Text the lessons show as data: the sentence pairs and the semantic map's words."""
    words = {w for g in SEMANTIC_GROUPS.values() for ws in g.values() for w in ws}
    return {s for pair in PAIRS.values() for s in pair} | words


def value_sets(mod) -> list[dict]:
    """The defaults, then each control moved alone: every option, both slider ends, both
    checkbox states, each hostile text (and each language's example) a text box can hold."""
    out = [{}]
    for c in mod.CONTROLS:
        if c.kind == "select":
            out += [{c.name: v} for v, _ in c.options]
        elif c.kind == "slider":
            out += [{c.name: c.min}, {c.name: c.max}]
        elif c.kind == "checkbox":
            out += [{c.name: True}, {c.name: False}]
        elif c.kind == "text":
            examples = list(c.default.values()) if isinstance(c.default, dict) else [c.default]
            out += [{c.name: s} for s in HOSTILE_TEXTS + examples if s.strip() and len(s) <= c.max_length]
    return out


# A bad value per control kind: validate() and the lessons must answer it in words.
BAD = {"text": [5, "a" * 5000], "slider": ["many", -1e308, 1e308, "NaN"], "select": ["<b>nope</b>", 3],
       "checkbox": ["yes"]}


def _fast_measure(max_context, samples, budget_s=0):
    """bench_browser's sweep without the seconds it spends timing: its strings are what is read."""
    return [{"context": c, "cached_s": 1e-3, "uncached_s": 2e-3 * c / 16} for c in (16, 32)], True


def _recording_decode(decoded: set[str]):
    """Tokenizer.decode, patched to keep every text it returns in ``decoded``."""
    real = Tokenizer.decode

    def decode(self, ids):
        text = real(self, ids)
        decoded.add(text)
        return text

    return mock.patch.object(Tokenizer, "decode", decode)


def collect(name: str, lang: str) -> list[tuple[str, str]]:
    """(where, text) for everything lesson ``name`` writes in ``lang``: describe(), the output
    of every value set (or its error message), and the messages of bad input via run_json."""
    mod = registry.load(name)
    out = [(w, s) for w, s in written(describe_strings(registry.describe(name, lang)), Data(set(), set()))]
    with mock.patch.object(bench_browser, "measure", _fast_measure):
        for values in value_sets(mod):
            decoded: set[str] = set()
            inputs = {v for v in values.values() if isinstance(v, str)}
            try:
                with _recording_decode(decoded):
                    result = registry.run(name, values, lang)
            except LessonInputError as e:
                data = Data(set(vocabulary_pieces()), corpus_texts(), inputs, decoded)
                out.append((f"{values} error", data.scrub(e.message(lang))))
                continue
            data = Data(set(vocabulary_pieces()), corpus_texts(), inputs, decoded)
            out += [(f"{values} {w}", s) for w, s in written(output_strings(result), data)]
    payloads = [json.dumps({c.name: v}) for c in mod.CONTROLS for v in BAD[c.kind]]
    for payload in payloads + [json.dumps({"nonsense": 1}), "{not json", "[1, 2]"]:
        reply = json.loads(registry.run_json(name, payload, lang))
        if not reply["ok"]:
            out.append((f"{payload[:40]} error", reply["error"]["message"]))
    return out


@functools.lru_cache(maxsize=None)
def collected(name: str, lang: str) -> tuple[tuple[str, str], ...]:
    """:func:`collect`, once per test session (several checks read the same strings)."""
    return tuple(collect(name, lang))
