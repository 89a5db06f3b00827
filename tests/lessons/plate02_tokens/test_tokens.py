"""tokens: honest pieces, counts that match the text, hostile input as plain data, and the
production tokenizers' counts beside the course tokenizer's."""
import pytest

from engine.tokenizer import Tokenizer
from lessons.common import registry
from lessons.plate02_tokens import tokens
from lessons.common.base import LessonInputError
from lessons.plate02_tokens.tokens import PAIRS

from lesson_checks import (HOSTILE_TEXTS, check_both_languages, check_describe, check_output, column, numbers, records,
                           run_json_ok)

TOK = Tokenizer.load()


def test_defaults_both_languages():
    check_describe("tokens")
    check_both_languages("tokens")


@pytest.mark.parametrize("text", [s for s in HOSTILE_TEXTS if s and len(s) <= 500] + ["鬱", "a\n\tb", "ｆｕｌｌ width"])
def test_any_text_round_trips(text):
    out = check_output(registry.run("tokens", {"text": text}, "en"))
    ids = [c["id"] for c in out["tokens"]]
    assert TOK.decode(ids) == text  # the chips are the whole text, nothing dropped
    mine = records(out["figures"][0]["table"])[2]
    assert mine["sentence"] == text  # the reader's text comes back as data, unchanged
    assert [mine[k] for k in ("tokens", "characters", "UTF-8 bytes")] == [f"{n:,}" for n in
                                                                          (len(ids), len(text), len(text.encode("utf-8")))]


def test_split_characters_are_shown_as_bytes_and_noted():
    rare = "鬱"  # 3 UTF-8 bytes the course tokenizer never merged
    out = registry.run("tokens", {"text": rare}, "en")
    pieces = [c["text"] for c in out["tokens"]]
    assert all(p.startswith("<") and p.endswith(">") for p in pieces)
    assert "".join(p.strip("<>").replace(" ", "") for p in pieces) == rare.encode("utf-8").hex().upper()
    assert any("part" in n and "<E5 A4>" in n for n in out["notes"])


@pytest.mark.parametrize("pair", list(PAIRS))
def test_pair_counts(pair):
    en, zh = PAIRS[pair]
    out = registry.run("tokens", {"pair": pair}, "zh-TW")
    tbl = out["figures"][0]["table"]
    assert column(tbl, "句子")[:2] == [en, zh]
    assert numbers(tbl, "詞元數")[:2] == [len(TOK.encode(en)), len(TOK.encode(zh))]
    assert numbers(tbl, "字元數")[:2] == [len(en), len(zh)]
    assert numbers(tbl, "UTF-8 位元組數")[:2] == [len(en.encode()), len(zh.encode())]


@pytest.mark.parametrize("pair", list(PAIRS))
def test_production_tokenizers_sit_beside_the_course_tokenizer(pair):
    """The figure's rows: the course tokenizer counted live, the others from the stored file."""
    en, zh = PAIRS[pair]
    out = registry.run("tokens", {"pair": pair}, "en")
    tbl = out["figures"][1]["table"]
    rows = {r["tokenizer"]: (r["English tokens"], r["Chinese tokens"]) for r in records(tbl)}
    assert rows.pop("course tokenizer") == (str(len(TOK.encode(en))), str(len(TOK.encode(zh))))
    stored = {f"{r['name']} ({r['models'][0]})": r["pairs"][pair] for r in tokens.real_counts()["tokenizers"]}
    assert rows == {name: (str(c["en"]), str(c["zh-TW"])) for name, c in stored.items()}
    assert set(rows) == {"cl100k_base (gpt-4)", "o200k_base (gpt-4o)"}


def test_vocabularies_are_counted_alike():
    """Every row counts its special tokens: the course tokenizer's <|eos|> is in its vocab_size,
    the stored counts list the production tokenizers' special tokens apart."""
    tbl = registry.run("tokens", None, "en")["figures"][1]["table"]
    rows = {r["tokenizer"]: r["vocabulary (tokens, special ones included)"] for r in records(tbl)}
    assert rows.pop("course tokenizer") == f"{TOK.vocab_size:,}"
    stored = {f"{r['name']} ({r['models'][0]})": r["vocab_size"] + r["special_tokens"] for r in tokens.real_counts()["tokenizers"]}
    assert rows == {name: f"{n:,}" for name, n in stored.items()} and rows["cl100k_base (gpt-4)"] == "100,261"


def test_provenance_and_the_reason_are_told_in_both_languages():
    version = tokens.real_counts()["package"]["version"]
    for lang, why in (("en", "never join two Chinese characters"), ("zh-TW", "從不把兩個中文字併在一起")):
        notes = registry.run("tokens", None, lang)["notes"]
        assert any(f"bpe-openai {version}" in n for n in notes)
        assert any(why in n for n in notes)


def test_a_pair_edited_without_rerunning_the_generator_shows_no_stale_count(monkeypatch):
    monkeypatch.setitem(PAIRS, "cat", ("The dog sat on the rug.", "狗坐在地毯上。"))
    out = registry.run("tokens", {"pair": "cat"}, "en")
    assert column(out["figures"][1]["table"], "tokenizer") == ["course tokenizer"]
    all_pairs = records(out["tables"][1])
    assert [r["cl100k_base (gpt-4)"] for r in all_pairs if r["sentence pair"] == "The cat sat on the mat"] == [""]


@pytest.mark.parametrize("values", [{"text": ""}, {"text": "x" * 501}, {"text": 5}, {"pair": "nope"}])
def test_empty_and_too_long_are_errors(values):
    with pytest.raises(LessonInputError):
        registry.run("tokens", values, "en")
    reply = run_json_ok("tokens", values, "zh-TW")
    assert reply["ok"] is False and reply["error"]["message"]
