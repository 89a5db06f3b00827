"""The byte-level BPE tokenizer: exact round trips, honest display pieces, clear errors."""
import json
import random

import pytest

from engine.tokenizer import EOS, EOS_ID, FIRST_MERGE_ID, Tokenizer, display_bytes, pre_split

TEXTS = [
    "",
    "The cat sat on the mat.",
    "今天天氣真好，我想喝珍珠奶茶！",
    "emoji 😀👍🏽🇹🇼 and ZWJ 👩‍👩‍👧",
    "control \x00\x01\x1f\x7f chars\r\n\ttab",
    "  leading and trailing spaces  ",
    "mixed 中文English123,456.78 _under_score_",
    "rare 龘靐齉 and bopomofo ㄅㄆㄇ",
    "<script>alert(1)</script> <|eos|>",
    "Ünïcödé ½ ² Ⅻ ﬁ",
]


@pytest.fixture(scope="module")
def shipped():
    return Tokenizer.load()


@pytest.fixture(scope="module")
def small():
    text = "the cat sat on the mat. the cat ate. 貓坐在墊子上。貓吃飯。" * 20
    return Tokenizer.train(text, 300)


# --------------------------------------------------------------------------- pre-split


@pytest.mark.parametrize("text", TEXTS)
def test_pre_split_covers_every_character(text):
    assert "".join(pre_split(text)) == text


def test_pre_split_keeps_the_space_with_the_word_and_separates_kinds():
    assert pre_split("The cat sat, 42 times!") == ["The", " cat", " sat", ",", " 42", " times", "!"]
    assert pre_split("我想喝奶茶。") == ["我想喝奶茶", "。"]
    assert pre_split("abc中文") == ["abc", "中文"]


def test_random_unicode_pre_split_is_lossless():
    rng = random.Random(0)
    for _ in range(200):
        text = "".join(chr(rng.choice([rng.randrange(0, 0x3000), rng.randrange(0x4E00, 0xA000),
                                       rng.randrange(0x1F300, 0x1FAFF)]))
                       for _ in range(rng.randrange(1, 30)))
        text = text.encode("utf-8", errors="ignore").decode("utf-8")  # drop lone surrogates
        assert "".join(pre_split(text)) == text


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("text", TEXTS)
def test_round_trip_shipped(shipped, text):
    ids = shipped.encode(text)
    assert all(0 <= i < shipped.vocab_size and i != EOS_ID for i in ids)
    assert shipped.decode(ids) == text
    assert b"".join(shipped.token_bytes(i) for i in ids) == text.encode("utf-8")


def test_round_trip_random_unicode(shipped):
    rng = random.Random(1)
    for _ in range(300):
        text = "".join(chr(rng.randrange(0, 0x110000)) for _ in range(rng.randrange(0, 20)))
        text = text.encode("utf-8", errors="ignore").decode("utf-8")
        assert shipped.decode(shipped.encode(text)) == text


def test_literal_eos_text_is_plain_characters(shipped):
    ids = shipped.encode(EOS)
    assert EOS_ID not in ids
    assert shipped.decode(ids) == EOS


# --------------------------------------------------------------------------- vocabulary


def test_shipped_vocabulary_size_and_common_words(shipped):
    assert 1000 <= shipped.vocab_size <= 2000
    for word in [" cat", " mat", " king", " queen", " tea", " the"]:
        assert len(shipped.encode(word)) == 1, word
    for char in "好熱冷茶王果我想喝":
        assert len(shipped.encode(char)) == 1, char  # 3 UTF-8 bytes, one token


def test_merges_never_cross_pieces_or_chinese_characters(shipped):
    for i in range(FIRST_MERGE_ID, shipped.vocab_size):
        data = shipped.token_bytes(i)
        text = data.decode("utf-8", errors="ignore")
        assert len(pre_split(text)) <= 1, (i, data)
        cjk = [c for c in text if "\u4e00" <= c <= "\u9fff"]
        assert len(cjk) <= 1, (i, text)  # one Chinese character per token at most


def test_word_chain_prompt_ends_on_a_token_boundary(shipped):
    # the prompt's tokens are a prefix of the full sentence's tokens
    full = shipped.encode("今天天氣真好")
    prompt = shipped.encode("今天天氣真")
    assert full[: len(prompt)] == prompt and len(full) == len(prompt) + 1


def test_bytes_are_always_in_the_vocabulary(shipped):
    for b in range(256):
        assert shipped.token_bytes(b) == bytes([b])
    assert shipped.token_bytes(EOS_ID) == b""
    assert shipped.pieces([EOS_ID]) == [EOS]


# --------------------------------------------------------------------------- display


def test_split_character_displays_as_bytes_not_replacement():
    tok = Tokenizer([])  # bytes only: every Chinese character is three tokens
    ids = tok.encode("天")
    assert tok.pieces(ids) == ["<E5>", "<A4>", "<A9>"]
    assert "\ufffd" not in "".join(tok.pieces(ids))


def test_display_bytes_mixes_text_and_hex():
    assert display_bytes("好".encode()) == "好"
    assert display_bytes(b"\xe5\xa4") == "<E5 A4>"
    assert display_bytes(b" \xe5\xa4") == " <E5 A4>"
    assert display_bytes(b"\xa9ab") == "<A9>ab"


def test_pieces_are_text_for_whole_tokens(shipped):
    ids = shipped.encode("The cat 喝奶茶")
    assert "".join(shipped.pieces(ids)) == "The cat 喝奶茶"


def test_byte_spans_tile_the_utf8_text(shipped):
    text = "I drink milk tea 我想喝奶茶 😀"
    ids = shipped.encode(text)
    spans = shipped.byte_spans(ids)
    data = text.encode("utf-8")
    assert spans[0][0] == 0 and spans[-1][1] == len(data)
    for (s0, e0), (s1, _), i in zip(spans, spans[1:] + [(len(data), 0)], ids):
        assert e0 == s1 and data[s0:e0] == shipped.token_bytes(i)


# --------------------------------------------------------------------------- training


def test_training_is_deterministic_and_merges_frequent_pairs(small):
    text = "the cat sat on the mat. the cat ate. 貓坐在墊子上。貓吃飯。" * 20
    again = Tokenizer.train(text, 300)
    assert again.merges == small.merges
    assert len(small.encode(" cat")) == 1
    assert len(small.encode("貓")) == 1
    assert small.decode(small.encode(text)) == text


def test_training_stops_when_no_pair_repeats():
    tok = Tokenizer.train("ab", 1000)
    assert tok.vocab_size == FIRST_MERGE_ID  # a pair seen once is not learned


def test_json_round_trip(small, tmp_path):
    path = tmp_path / "tok.json"
    small.save(path)
    loaded = Tokenizer.load(path)
    assert loaded.merges == small.merges and loaded.vocab_size == small.vocab_size
    data = json.loads(path.read_text("utf-8"))
    assert data["special"] == {EOS: EOS_ID}


# --------------------------------------------------------------------------- errors


def test_encode_rejects_non_strings(shipped):
    for bad in [None, b"bytes", 12, ["a"]]:
        with pytest.raises(TypeError, match="str"):
            shipped.encode(bad)


def test_out_of_range_ids_raise_value_error(shipped):
    for bad in [[-1], [shipped.vocab_size], [10**9]]:
        with pytest.raises(ValueError, match="out of range"):
            shipped.decode(bad)
        with pytest.raises(ValueError, match="out of range"):
            shipped.pieces(bad)
    with pytest.raises(TypeError):
        shipped.decode(["a"])
    with pytest.raises(TypeError):
        shipped.decode("abc")


def test_bad_merge_files_are_rejected():
    with pytest.raises(ValueError):
        Tokenizer([(300, 1)])
    with pytest.raises(ValueError):
        Tokenizer.from_json('{"type": "other"}')
    with pytest.raises(TypeError):
        Tokenizer.train(b"bytes", 300)
    with pytest.raises(ValueError):
        Tokenizer.train("text", 10)


# --------------------------------------------------------------------------- long input


def test_long_units_use_the_heap_merge_with_identical_results(shipped, monkeypatch):
    """A reader's 10 kB "word" must not take quadratic time, and must tokenize the same."""
    import engine.tokenizer as tokenizer_mod

    words = sorted({shipped.token_bytes(i).decode().strip() for i in range(FIRST_MERGE_ID, shipped.vocab_size)
                    if shipped.token_bytes(i).strip().isalpha() and shipped.token_bytes(i).isascii()})
    rng = random.Random(2)
    for _ in range(200):
        unit = list("".join(rng.choice(words) for _ in range(rng.randrange(1, 40))).encode())
        heap = shipped._bpe_heap(unit)
        monkeypatch.setattr(tokenizer_mod, "_LONG_UNIT", 10**9)
        simple = shipped._bpe(unit)
        monkeypatch.undo()
        assert heap == simple
    long_word = "".join(words) * 10  # one piece of tens of kB
    ids = shipped.encode(long_word)
    assert shipped.decode(ids) == long_word and len(ids) < len(long_word)
