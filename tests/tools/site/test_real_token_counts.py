"""tools/site/real_token_counts.py: the committed counts are what the installed tokenizers give.

The tokens demo shows cl100k_base and o200k_base counts it cannot compute in the browser;
they are package data. These tests recompute them (with the ``bpe-openai`` package of the
test extra) and fail when the file is stale, whatever made it so: an edited sentence pair,
a new package version, a hand edit.
"""
from __future__ import annotations

import json

import pytest

from lessons.plate02_tokens import tokens

bpe = pytest.importorskip("bpe_openai", reason="bpe-openai is not installed: pip install -e '.[test]'")

from tools.site import real_token_counts  # noqa: E402  (needs bpe_openai only when build() runs)


@pytest.fixture(scope="module")
def committed() -> dict:
    return json.loads(real_token_counts.OUT.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def recomputed() -> dict:
    return real_token_counts.build()


def test_the_committed_file_is_what_the_generator_writes_now(committed, recomputed):
    assert committed == recomputed, "stale: run .venv/bin/python -m tools.site.real_token_counts"
    assert real_token_counts.OUT.read_text(encoding="utf-8") == real_token_counts.dumps(recomputed)


@pytest.mark.parametrize("name, expected", [("cl100k_base", 100_256), ("o200k_base", 199_998)])
def test_vocabulary_sizes_are_the_published_ones(recomputed, name, expected):
    # cl100k_base: 100,256 regular tokens (ids 0..100255) besides its special tokens, the
    # size OpenAI's tiktoken gives as its mergeable ranks; o200k_base: 199,998.
    (row,) = [r for r in recomputed["tokenizers"] if r["name"] == name]
    assert row["vocab_size"] == expected


@pytest.mark.parametrize("pair", list(tokens.PAIRS))
def test_counts_are_the_tokenizers_own(committed, pair):
    en, zh = tokens.PAIRS[pair]
    for row in committed["tokenizers"]:
        enc = bpe.get_encoding(row["name"])
        assert row["pairs"][pair] == {"en": len(enc.encode(en)), "zh-TW": len(enc.encode(zh))}
        assert enc.decode(enc.encode(zh)) == zh


def test_provenance_names_the_package_and_its_version(committed):
    from importlib.metadata import version

    assert committed["package"] == {"name": "bpe-openai", "version": version("bpe-openai")}
    assert {r["name"]: r["models"][0] for r in committed["tokenizers"]} == {"cl100k_base": "gpt-4", "o200k_base": "gpt-4o"}
