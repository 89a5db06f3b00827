"""zh-TW wording of the lessons matches the pages: 詞元 for token, "tokenizer" kept in English.

The pages (docs/*.zh-TW.md, glossary) say 詞元 and tokenizer; a lesson that said 分詞器 or a
bare "token" beside them read as a different thing."""
import re

import pytest

from lessons import registry

from lesson_checks import strings_of

LESSONS = [name for name in registry.LESSONS if not name.startswith("bench")]
# A bare "token" (the English word 詞元 translates); "詞元（token）" on first mention is fine.
BARE_TOKEN = re.compile(r"(?<!（)\btokens?\b(?!izer)", re.IGNORECASE)


def reader_strings(described: dict) -> list[str]:
    """What describe() puts in front of the reader (not the lesson's or controls' names)."""
    out = [described["title"]]
    for c in described["controls"]:
        out += [c["label"], c.get("help", "")] + [o["label"] for o in c.get("options", [])]
    return out


@pytest.mark.parametrize("name", LESSONS)
def test_zh_tw_strings_use_the_pages_terms(name, course):
    described = registry.describe(name, "zh-TW")
    out = registry.run(name, None, "zh-TW")
    pieces = {c["text"] for c in out.get("tokens", [])}  # the reader's own text, shown as is
    texts = [s for s in reader_strings(described) + strings_of(out) if s not in pieces]
    assert not [s for s in texts if "分詞器" in s]
    assert not [s for s in texts if BARE_TOKEN.search(s)]
