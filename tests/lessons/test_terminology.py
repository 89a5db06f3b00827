"""Every string a demo puts before the reader uses the terminology table's terms, in both languages.

The table is lessons/common/terminology.py (one term per concept, with the variants to avoid); the
strings are all a lesson writes (reader_text.py: title, control labels, help and options,
figure, axis, colorbar and legend titles, hover text, annotations, table headers and word
cells, notes, token chips' titles, actions and the error messages of bad input), collected
over the defaults and every other value a control offers: each select option, both ends of
each slider, both states of a checkbox, hostile text in a text box. The reader's and the
model's own text is data and is left out (see reader_text.py); the tests at the bottom plant
variants in every kind of field, and in a real lesson, and show they are caught.
"""
from __future__ import annotations

import json

import pytest

from lessons.common import labels, registry
from lessons.common.base import LANGS
from lessons.common.terminology import variants
from lessons.plate02_tokens.tokens import PAIRS

from reader_text import Data, collect, collected, describe_strings, output_strings, written



def _found(where: str, text: str, lang: str) -> list[str]:
    return [f"{where}: {concept} {match!r} in {text!r}" for concept, match in variants(text, lang)]


def findings(name: str, lang: str, strings=None) -> list[str]:
    """Every variant in what ``name`` writes in ``lang`` (all value sets and bad inputs)."""
    return [f for where, s in (strings if strings is not None else collected(name, lang)) for f in _found(where, s, lang)]


def _cases():
    for name in registry.LESSONS:
        for lang in LANGS:
            yield pytest.param(name, lang, id=f"{name}-{lang}")


@pytest.mark.parametrize("name, lang", list(_cases()))
def test_every_string_a_lesson_writes_uses_the_terms(course, name, lang):
    found = findings(name, lang)
    assert not found, f"{len(found)} variant(s):\n" + "\n".join(dict.fromkeys(found))


@pytest.mark.parametrize("lang", LANGS)
def test_the_internal_error_message_uses_the_terms(lang):
    reply = json.loads(registry.run_json("no_such_lesson", "{}", lang))
    assert reply["ok"] is False and not variants(reply["error"]["message"], lang)


@pytest.mark.parametrize("pair", list(PAIRS))
def test_the_sentence_pairs_use_the_terms_in_their_own_language(pair):
    """The pairs are data in the other language's UI, and the lesson's own text in theirs."""
    en, zh = PAIRS[pair]
    assert not variants(en, "en") and not variants(zh, "zh-TW")


# --------------------------------------------------------------------------- the checks catch what they should

CLEAN = {
    "figures": [{"key": "k", "title": "詞元數", "table": {"columns": ["詞元"], "rows": [["詞元"]]},
                 "figure": {"data": [{"type": "bar", "name": "權重", "x": ["第 1 層"], "y": [1], "text": ["1"],
                                      "hovertemplate": "%{x}<br>權重<extra></extra>", "colorbar": {"title": {"text": "權重"}}}],
                            "layout": {"xaxis": {"title": {"text": "上下文"}, "ticktext": ["預填"]},
                                       "annotations": [{"text": "來源"}]}}}],
    "tables": [{"title": "表", "columns": ["模型"], "rows": [["Llama 3 8B"]]}],
    "notes": ["KV 快取存著 key 和 value。"],
    "tokens": [{"text": "貓", "id": 1, "title": "id 1"}],
    "actions": [{"label": "重新開始", "values": {}}],
}

PLANTS = {  # where -> how to put 「KV cache」 (a zh-TW variant of KV 快取) there
    "figure title": lambda o: o["figures"][0].__setitem__("title", "KV cache 的大小"),
    "axis title": lambda o: o["figures"][0]["figure"]["layout"]["xaxis"]["title"].__setitem__("text", "KV cache（位元組）"),
    "tick label": lambda o: o["figures"][0]["figure"]["layout"]["xaxis"].__setitem__("ticktext", ["KV cache"]),
    "annotation": lambda o: o["figures"][0]["figure"]["layout"]["annotations"][0].__setitem__("text", "KV cache 來源"),
    "legend name": lambda o: o["figures"][0]["figure"]["data"][0].__setitem__("name", "使用 KV cache"),
    "hover text": lambda o: o["figures"][0]["figure"]["data"][0].__setitem__("hovertemplate", "%{y} KV cache<extra></extra>"),
    "colorbar title": lambda o: o["figures"][0]["figure"]["data"][0]["colorbar"]["title"].__setitem__("text", "KV cache"),
    "bar text": lambda o: o["figures"][0]["figure"]["data"][0].__setitem__("text", ["KV cache"]),
    "category": lambda o: o["figures"][0]["figure"]["data"][0].__setitem__("x", ["KV cache"]),
    "figure table header": lambda o: o["figures"][0]["table"].__setitem__("columns", ["KV cache"]),
    "figure table cell": lambda o: o["figures"][0]["table"].__setitem__("rows", [["KV cache"]]),
    "table title": lambda o: o["tables"][0].__setitem__("title", "各模型的 KV cache"),
    "note": lambda o: o["notes"].append("快取就是 KV cache。"),
    "chip title": lambda o: o["tokens"][0].__setitem__("title", "KV cache 裡的 id 1"),
    "action label": lambda o: o["actions"][0].__setitem__("label", "清空 KV cache"),
}


def _sample_findings(out: dict, inputs: set[str] = frozenset(), decoded: set[str] = frozenset()) -> list[str]:
    data = Data({"貓", " token"}, set(), set(inputs), set(decoded))
    return [f for where, s in written(output_strings(out), data) for f in _found(where, s, "zh-TW")]


def test_a_clean_sample_has_no_findings():
    assert _sample_findings(json.loads(json.dumps(CLEAN))) == []


@pytest.mark.parametrize("field", list(PLANTS))
def test_the_checks_catch_a_variant_planted_in_any_field(field):
    out = json.loads(json.dumps(CLEAN))
    PLANTS[field](out)
    found = _sample_findings(out)
    assert found and all("kv-cache 'KV cache'" in f for f in found), found


@pytest.mark.parametrize("where, planted", [
    ("title", {"title": "嵌入：意義的地圖", "controls": []}),
    ("label", {"title": "t", "controls": [{"name": "p", "label": "提示文字", "help": ""}]}),
    ("help", {"title": "t", "controls": [{"name": "p", "label": "l", "help": "每個 token 一格"}]}),
    ("option", {"title": "t", "controls": [{"name": "h", "label": "l", "help": "", "options": [{"label": "第 1 個頭"}]}]}),
])
def test_the_checks_catch_a_variant_planted_in_the_controls(where, planted):
    found = [f for w, s in written(describe_strings(planted), Data(set(), set())) for f in _found(w, s, "zh-TW")]
    assert len(found) == 1, found


def test_data_is_not_a_variant_but_a_variant_beside_data_is():
    out = json.loads(json.dumps(CLEAN))
    out["notes"] = ["抽中「 token」（id 7）。", "你的詞：「my token list」。", "產生的文字：「The cat sat on the token」。"]
    out["figures"][0]["table"]["rows"] = [[" token"], ["my token list"]]
    inputs = {"my token list", "The cat sat"}
    assert _sample_findings(out, inputs) == []
    out["notes"].append("抽中「 token」：這個 token 是模型選的。")
    found = _sample_findings(out, inputs)
    assert len(found) == 1 and "'token'" in found[0]


def test_a_decoded_generation_is_data_whole_or_cut_but_not_a_label_beside_it():
    """The paging demo shows the start of each answer the course model wrote after the lesson's
    own prompt: text the tokenizer decoded during the run, shown whole or cut with "…"."""
    out = json.loads(json.dumps(CLEAN))
    out["tables"][0]["rows"] = [["each token bec"], ["each token bec…"]]
    assert len(_sample_findings(out)) == 2
    assert _sample_findings(out, decoded={"each token bec"}) == []
    out["tables"][0]["rows"] += [["每個 token bec"], ["each token bec：KV cache"]]
    found = _sample_findings(out, decoded={"each token bec"})
    assert len(found) == 3 and sum("'KV cache'" in f for f in found) == 1, found


def test_a_variant_planted_in_a_real_lesson_is_caught(course, monkeypatch):
    """The shared label KV_CACHE, spelt as the issue found it on a page, reaches three lessons."""
    monkeypatch.setattr(labels, "KV_CACHE", {"en": "K/V cache", "zh-TW": "KV cache"})
    for lang, match in (("en", "'K/V cache'"), ("zh-TW", "'KV cache'")):
        found = findings("cache_size", lang, collect("cache_size", lang))
        assert found and any(match in f for f in found), found
