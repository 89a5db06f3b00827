"""labels: the shared bilingual labels take their words from the terminology table."""
import pytest

from lessons.common import labels
from lessons.common.terminology import term, variants


@pytest.mark.parametrize("label, concept", [(labels.TOKEN, "token"), (labels.KV_CACHE, "kv-cache"),
                                            (labels.PREFILL, "prefill"), (labels.DECODE, "decode"),
                                            (labels.RIDGE, "ridge-point"), (labels.EMBEDDING, "embedding")])
def test_term_labels_are_the_tables_words(label, concept):
    assert label == {"en": term(concept).en, "zh-TW": term(concept).zh}


def test_no_label_is_a_variant():
    texts = [v for v in vars(labels).values() if isinstance(v, dict) and set(v) == {"en", "zh-TW"}]
    texts += [labels.layer(3), labels.head(2), labels.layer_bytes(1), labels.ridge_of({"en": "H200", "zh-TW": "H200"}),
              labels.decode_of({"en": "Llama", "zh-TW": "Llama"})]
    assert len(texts) > 20
    assert [(x, variants(x["en"], "en") + variants(x["zh-TW"], "zh-TW")) for x in texts
            if variants(x["en"], "en") or variants(x["zh-TW"], "zh-TW")] == []


@pytest.mark.parametrize("label, logged", [
    ({"en": "context (tokens)", "zh-TW": "上下文（詞元數）"}, {"en": "context (tokens, log)", "zh-TW": "上下文（詞元數，對數）"}),
    ({"en": "picojoules", "zh-TW": "皮焦耳"}, {"en": "picojoules (log)", "zh-TW": "皮焦耳（對數）"}),
])
def test_log_axis_titles_keep_one_pair_of_brackets(label, logged):
    assert labels.log(label) == logged


@pytest.mark.parametrize("parts, joined", [
    (("Llama 3 8B", "在", "筆電 CPU（代表性數值）", "上"), "Llama 3 8B 在筆電 CPU（代表性數值）上"),
    (("Llama 3 8B", "在", "NVIDIA H200 SXM", "上：", "bf16"), "Llama 3 8B 在 NVIDIA H200 SXM 上：bf16"),
    (("課程模型（本網站）", "的上下文視窗"), "課程模型（本網站）的上下文視窗"),
    (("數字格式為", "4 位元權重"), "數字格式為 4 位元權重"),
])
def test_zh_join_spaces_only_where_latin_meets_chinese(parts, joined):
    assert labels.zh_join(*parts) == joined
