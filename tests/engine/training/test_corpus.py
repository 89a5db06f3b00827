"""The course corpus: deterministic, bilingual, Taiwan-usage Chinese, built around the plates."""
import re

import pytest

from engine.training.corpus import (
    DEFAULT_SEED,
    GROUP_LABELS,
    ICONS,
    SEMANTIC_GROUPS,
    build_documents,
    corpus_ids,
    corpus_metadata,
    corpus_text,
)
from engine.tokenizer import EOS_ID, Tokenizer

HAN = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def docs():
    return build_documents()


def test_same_seed_same_corpus_other_seed_other_corpus(docs):
    assert build_documents() == docs
    assert build_documents(seed=DEFAULT_SEED + 1) != docs
    assert corpus_metadata(docs, DEFAULT_SEED)["sha256"] == corpus_metadata(build_documents(), DEFAULT_SEED)["sha256"]


def test_half_english_half_chinese(docs):
    zh = [d for d in docs if len(HAN.findall(d)) > len(d) / 4]
    assert 0.45 <= len(zh) / len(docs) <= 0.55


def test_the_lesson_prompts_are_in_the_corpus(docs):
    text = corpus_text(docs)
    for phrase in ["The cat sat on the mat", "今天天氣真好", "今天天氣真熱", "今天天氣真冷",
                   "I drink milk tea", "The king and the queen", "我想喝奶茶", "國王和女王"]:
        assert text.count(phrase) >= 20, phrase


def test_every_group_word_appears_in_both_languages_sentences(docs):
    en_docs = [d for d in docs if not HAN.search(d[:3])]
    zh_docs = [d for d in docs if HAN.search(d[:3])]
    for group, langs in SEMANTIC_GROUPS.items():
        for words in langs.values():
            for word in words:
                assert sum(word in d for d in en_docs) >= 10, (group, word)
                assert sum(word in d for d in zh_docs) >= 10, (group, word)


def test_picture_cards_mix_languages(docs):
    """Every group word sits before its group's picture in English and in Chinese sentences."""
    en_docs = "\n".join(d for d in docs if not HAN.search(d[:3]))
    zh_docs = "\n".join(d for d in docs if HAN.search(d[:3]))
    for group, langs in SEMANTIC_GROUPS.items():
        for word in langs["en"] + langs["zh-TW"]:
            card = f"{word} {ICONS[group]}"
            assert card in en_docs and card in zh_docs, card
        for other, icon in ICONS.items():
            if other != group:
                assert f"{langs['en'][0]} {icon}" not in en_docs + zh_docs


def test_group_words_are_distinct_and_labelled():
    assert set(SEMANTIC_GROUPS) == set(GROUP_LABELS) == {"drinks", "royalty", "fruit"}
    seen = []
    for langs in SEMANTIC_GROUPS.values():
        assert set(langs) == {"en", "zh-TW"}
        seen += langs["en"] + langs["zh-TW"]
    assert len(seen) == len(set(seen))


def test_chinese_is_traditional_with_taiwan_terms(docs):
    opencc = pytest.importorskip("opencc", reason="opencc checks Traditional characters")
    to_tw = opencc.OpenCC("s2tw")  # characters only; 台 and 臺 are both Taiwan usage
    chinese = sorted({s for d in docs if HAN.search(d) for s in re.split(r"(?<=[。！？])", d) if s})
    changed = [s for s in chinese if to_tw.convert(s).replace("臺", "台") != s]
    assert not changed, changed[:5]
    text = "".join(chinese)
    for mainland in ["數據", "內存", "字節", "程序", "緩存", "性能", "視頻", "軟件", "自行車", "信息"]:
        assert mainland not in text


def test_corpus_ids_put_eos_between_documents(docs):
    tok = Tokenizer.load()
    ids = corpus_ids(tok, docs[:3])
    assert ids.count(EOS_ID) == 3 and ids[-1] == EOS_ID
    first = ids[: ids.index(EOS_ID)]
    assert tok.decode(first) == docs[0]


def test_bad_sizes_are_rejected():
    with pytest.raises(ValueError):
        build_documents(n_docs=0)
