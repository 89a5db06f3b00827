"""tokens: honest pieces, counts that match the text, hostile input as plain data."""
import pytest

from engine.tokenizer import Tokenizer
from lessons import registry
from lessons.base import LessonInputError
from lessons.tokens import PAIRS

from lesson_checks import HOSTILE_TEXTS, check_both_languages, check_describe, check_output, run_json_ok

TOK = Tokenizer.load()


def test_defaults_both_languages():
    check_describe("tokens")
    check_both_languages("tokens")


@pytest.mark.parametrize("text", [s for s in HOSTILE_TEXTS if s and len(s) <= 500] + ["鬱", "a\n\tb", "ｆｕｌｌ width"])
def test_any_text_round_trips(text):
    out = check_output(registry.run("tokens", {"text": text}, "en"))
    ids = [c["id"] for c in out["tokens"]]
    assert TOK.decode(ids) == text  # the chips are the whole text, nothing dropped
    mine = out["figures"][0]["table"]["rows"][2]
    assert mine[1] == text  # the reader's text comes back as data, unchanged
    assert mine[2:5] == [len(ids), len(text), len(text.encode("utf-8"))]


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
    rows = out["figures"][0]["table"]["rows"]
    assert rows[0][1:5] == [en, len(TOK.encode(en)), len(en), len(en.encode())]
    assert rows[1][1:5] == [zh, len(TOK.encode(zh)), len(zh), len(zh.encode())]


def test_empty_and_too_long_are_errors():
    for values in ({"text": ""}, {"text": "x" * 501}, {"text": 5}, {"pair": "nope"}):
        with pytest.raises(LessonInputError):
            registry.run("tokens", values, "en")
        reply = run_json_ok("tokens", values, "zh-TW")
        assert reply["ok"] is False and reply["error"]["message"]
