"""flash_decoding: the reference kernel's chunks of the course model's attention, and their
log-sum-exp merge equal to the one-pass softmax."""
import numpy as np
import pytest

from engine.gpu.kernels_ref import n_chunks
from lessons.common import registry
from lessons.common.base import LessonInputError
from lessons.plate09_decoding_faster.flash_decoding import split_attention

from lesson_checks import check_both_languages, check_describe, check_output, number, numbers, records


def test_defaults_both_languages(course):
    check_describe("flash_decoding")
    check_both_languages("flash_decoding", {"prompt": "The cat sat on the mat."})


@pytest.mark.parametrize("split", [1, 2, 5, 8, 64])
@pytest.mark.parametrize("layer", [0, 3])
def test_merged_chunks_equal_the_models_attention(course, split, layer):
    model, tok = course
    ids = tok.encode("The cat sat on the mat. 小貓坐在墊子上。")
    scores, acc, mx, sm, merged, one_pass = split_attention(model, ids, layer, split)
    S = len(ids)
    assert mx.shape == (model.config.n_heads, n_chunks(S, split))
    # float32 within 1e-5 of the output's scale: the query here is projected from one row, the
    # model's from the whole prompt in one matmul, so the two differ in the last bits
    scale = np.abs(one_pass).max()
    np.testing.assert_allclose(merged, one_pass, rtol=1e-5, atol=1e-5 * scale)
    # each chunk's max and sum, recomputed here from the model's own scores
    for c, a in enumerate(range(0, S, split)):
        chunk = scores[:, a : a + split]
        np.testing.assert_allclose(mx[:, c], chunk.max(axis=1), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(sm[:, c], np.exp(chunk - chunk.max(axis=1, keepdims=True)).sum(axis=1), rtol=1e-5)


def test_shares_add_up_and_follow_the_softmax(course):
    model, tok = course
    prompt = "The cat sat on the mat. The dog ran to the park."
    out = check_output(registry.run("flash_decoding", {"prompt": prompt, "chunk": 5, "head": 2, "layer": 2}, "en"))
    rows = records(out["figures"][1]["table"])
    shares = [number(r["share of the attention"]) for r in rows]
    assert sum(shares) == pytest.approx(1, abs=0.01)
    ids = tok.encode(prompt)
    _logits, tr = model.forward(ids, trace=True)
    w = tr.attn[1][1, -1]  # layer 2, head 2: the last token's softmax weights
    want = [w[a : a + 5].sum() for a in range(0, len(ids), 5)]
    assert shares == pytest.approx(want, abs=0.001)  # the display rounds to 3 digits
    assert max(numbers(out["figures"][1]["table"], "rescale factor exp(m − M)")) == 1  # the chunk holding the overall max
    assert f"{len(ids)} positions: {len(rows)} chunks of up to 5" in out["notes"][0]


@pytest.mark.parametrize("values", [{"prompt": ""}, {"chunk": 1}, {"chunk": 65}, {"layer": 0}, {"head": 5}])
@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_errors_in_both_languages(course, values, lang):
    with pytest.raises(LessonInputError) as e:
        registry.run("flash_decoding", values, lang)
    assert e.value.message(lang)


def test_one_chunk_claims_nothing_for_one_sequence(course):
    """「2 個 KV head × 1 段 = 2 個執行緒區塊同時工作，就算只有一個序列也一樣」 promised what one chunk does
    not buy: with one chunk the note says it is as many thread blocks as without chunks."""
    for lang, even in (("zh-TW", "就算只有一個序列也一樣"), ("en", "even for one sequence")):
        one, many = (registry.run("flash_decoding", {"chunk": c}, lang)["notes"][0] for c in (64, 8))
        assert even in many and even not in one
        assert ("和不切段時一樣多" if lang == "zh-TW" else "as many as without chunks") in one
    assert "1 chunks" not in registry.run("flash_decoding", {"chunk": 64}, "en")["notes"][0]


def test_the_sum_column_writes_the_score_as_the_prose_does(course):
    """The prose writes s_c for a chunk's sum; the column's exp(s − m) used s for a score."""
    for lang, col in (("zh-TW", "exp(分數 − m) 的總和"), ("en", "sum of exp(score − m)")):
        columns = registry.run("flash_decoding", None, lang)["figures"][1]["table"]["columns"]
        assert col in columns and not any("exp(s " in c for c in columns)
