"""kv_quant: the float and the quantized cache on one prompt -- bytes, divergence, attention
error and the rotation figure agree with the engine run independently here."""
import json

import numpy as np
import pytest

from engine import Generator, QuantKVCache, SamplingParams
from lessons.common import registry
from lessons.common.base import LessonInputError
from lessons.plate07_shrinking_the_cache.kv_quant import BITS, DEFAULT_PROMPT, RESIDUAL, SCHEMES, STEPS

from lesson_checks import HOSTILE_TEXTS, check_both_languages, check_describe, check_output, column, numbers

FLOAT, QUANT = "float cache", "quantized cache"  # the two caches' column names (English)


def test_defaults_both_languages(course):
    check_describe("kv_quant")
    outs = check_both_languages("kv_quant")
    assert len(outs["en"]["tables"][0]["rows"]) == STEPS


@pytest.mark.parametrize("scheme", list(SCHEMES))
@pytest.mark.parametrize("bits", ["8", "2"])
def test_every_scheme_runs_in_both_languages(scheme, bits, course):
    check_both_languages("kv_quant", {"scheme": scheme, "bits": bits})


@pytest.mark.parametrize("bits", [2, 3, 4, 8])
def test_per_token_bytes_are_codes_plus_two_float16_per_head_and_token(bits, course):
    model, tok = course
    c = model.config
    out = registry.run("kv_quant", {"scheme": "per_token", "bits": str(bits)}, "en")
    n = len(tok.encode(DEFAULT_PROMPT)) + STEPS - 1  # the last token is never fed back
    tbl = out["figures"][0]["table"]
    per_head_token = c.head_dim * bits // 8 + 2 * 2  # packed codes + float16 scale and zero point
    assert column(tbl, "part") == ["float32 numbers", "codes", "scales + zero points", "full-precision newest tokens"]
    assert numbers(tbl, "bytes") == [2 * c.n_layers * c.n_kv_heads * c.head_dim * 4 * n,  # float32 cache
                                     2 * c.n_layers * c.n_kv_heads * n * c.head_dim * bits // 8,
                                     2 * c.n_layers * c.n_kv_heads * n * 4, 0]
    assert f"{8 * 2 * c.n_layers * c.n_kv_heads * n * per_head_token / (2 * c.n_layers * c.n_kv_heads * c.head_dim * n):.2f} bits" in out["notes"][0]


def test_next_token_columns_are_the_two_caches_distributions(course):
    model, tok = course
    ids = tok.encode(DEFAULT_PROMPT)
    out = registry.run("kv_quant", {"scheme": "kivi", "bits": "2"}, "en")
    tbl = out["figures"][2]["table"]
    for name, cache in ((FLOAT, model.new_cache()), (QUANT, QuantKVCache(model.config, "kivi", 2, residual=RESIDUAL))):
        logits = model.forward(ids, cache=cache)[-1].astype(np.float64)
        p = np.exp(logits - logits.max())
        p /= p.sum()
        top = np.argsort(-p)[:5]
        shown = numbers(tbl, name)  # 3 significant digits
        for i in top:
            assert any(v == pytest.approx(p[i], rel=6e-3, abs=1e-12) for v in shown), (name, p[i], shown)


@pytest.mark.parametrize("prompt,scheme,bits", [(DEFAULT_PROMPT, "per_token", "3"), (DEFAULT_PROMPT, "per_token", "2"),
                                                ("小貓坐在", "per_token", "2"), (DEFAULT_PROMPT, "per_token", "8")])
def test_continuations_and_the_first_divergence(prompt, scheme, bits, course):
    model, tok = course
    out = registry.run("kv_quant", {"prompt": prompt, "scheme": scheme, "bits": bits}, "en")
    tbl = out["tables"][0]
    ids = tok.encode(prompt)
    want = {}
    for name, cache in (("float", model.new_cache()), ("quant", QuantKVCache(model.config, scheme, int(bits), residual=RESIDUAL))):
        gen = Generator(model, tok, SamplingParams(temperature=0), n_top=0, cache=cache)
        want[name] = [s.token_id for s in gen.generate(ids, STEPS, stop_at_eos=False)]
    from lessons.common.figures import show_piece
    assert column(tbl, FLOAT) == [show_piece(p) for p in tok.pieces(want["float"])]
    assert column(tbl, QUANT) == [show_piece(p) for p in tok.pieces(want["quant"])]
    assert numbers(tbl, "step") == list(range(1, STEPS + 1))
    split = next((i for i, (a, b) in enumerate(zip(want["float"], want["quant"])) if a != b), None)
    marks = column(tbl, "compared")
    if split is None:
        assert set(marks) == {"same"} and any("same 16 tokens" in n for n in out["notes"])
    else:
        assert marks[:split] == ["same"] * split and marks[split] == "◀ first divergence"
        assert set(marks[split + 1:]) <= {"after the divergence"}
        assert any(f"part at step {split + 1}" in n for n in out["notes"])


def test_attention_error_falls_with_more_bits(course):
    kl = {}
    for bits in ("2", "4", "8", "16"):
        tbl = registry.run("kv_quant", {"bits": bits}, "en")["figures"][1]["table"]
        worst, mean_kl = numbers(tbl, "largest |Δ weight|"), numbers(tbl, "mean KL(float || quantized)")
        assert len(worst) == len(mean_kl) == course[0].config.n_layers
        assert min(worst + mean_kl) >= 0
        kl[bits] = sum(mean_kl)
    assert kl["2"] > kl["4"] > kl["8"] > kl["16"]


def test_rotation_figure_keeps_the_keys_energy(course):
    fig = registry.run("kv_quant", None, "en")["figures"][3]
    model, _ = course
    assert numbers(fig["table"], "channel") == list(range(model.config.head_dim))
    # the figure's data (6 significant digits) rather than the table's 3-digit display
    bars = {tr["name"]: np.array(tr["y"]) for tr in fig["figure"]["data"]}
    before, after = bars["as stored"], bars["after the rotation"]
    assert np.allclose(before, numbers(fig["table"], "as stored"), rtol=5e-3)
    assert np.sum(before**2) == pytest.approx(np.sum(after**2), rel=1e-3)  # a rotation keeps lengths
    assert not np.allclose(before, after, rtol=0.05)


@pytest.mark.parametrize("values", [{"bits": "0"}, {"bits": "17"}, {"bits": 0}, {"bits": 17}, {"bits": "5"},
                                    {"scheme": "<img src=x onerror=alert(1)>"}, {"prompt": ""}, {"prompt": "   "},
                                    {"prompt": "a" * 5000}])
@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_bad_input_is_a_clear_message_in_the_readers_language(values, lang):
    reply = json.loads(registry.run_json("kv_quant", json.dumps(values), lang))
    assert not reply["ok"] and "detail" not in reply["error"]
    msg = reply["error"]["message"]
    assert msg and "<img" not in msg
    if lang == "zh-TW":
        assert any("\u4e00" <= ch <= "\u9fff" for ch in msg)
    with pytest.raises(LessonInputError):
        registry.run("kv_quant", values, lang)


@pytest.mark.parametrize("prompt", [t for t in HOSTILE_TEXTS if t.strip() and len(t) < 300])
def test_odd_prompts_give_plain_data(prompt, course):
    out = check_output(registry.run("kv_quant", {"prompt": prompt, "bits": "4"}, "zh-TW"))
    assert len(out["tables"][0]["rows"]) == STEPS


@pytest.mark.parametrize("bits", [2, 3, 4, 8])
def test_effective_bits_table(bits, course):
    model, _ = course
    tbl = registry.run("kv_quant", {"bits": str(bits)}, "en")["tables"][1]
    assert numbers(tbl, "positions held") == [16, 64, model.config.max_seq_len]
    per_token, kivi, rotated = (numbers(tbl, SCHEMES[name]["en"]) for name in ("per_token", "kivi", "rotated"))
    one_scale = bits + 2 * 16 / model.config.head_dim  # float16 scale + zero point per head and token
    assert per_token == rotated == [pytest.approx(one_scale, rel=1e-3)] * 3
    assert kivi[0] > kivi[1] > kivi[2] > bits  # the full-precision tokens weigh less in longer texts


def test_bits_options_are_the_engines():
    from engine.caches.quant import BITS as ENGINE_BITS

    assert sorted(int(b) for b in BITS) == sorted(ENGINE_BITS)


def _scope_note(out) -> str:
    return next(n for n in out["notes"] if "注意力變化最大" in n or "moved most" in n)


def test_the_layer_note_names_only_steps_that_exist(course):
    """When the two continuations never part there is no 「分開之前的每一步」: the note says the whole run."""
    same, parted = (registry.run("kv_quant", {"bits": b}, "zh-TW") for b in ("8", "2"))
    assert any("完全相同" in n for n in same["notes"]) and any("步分開" in n for n in parted["notes"])
    assert "分開之前" not in _scope_note(same) and "從頭到尾都相同" in _scope_note(same)
    assert "分開之前的每一步" in _scope_note(parted) and "變化最大" in _scope_note(parted)
    assert "變得最多" not in _scope_note(same) + _scope_note(parted)
    en = registry.run("kv_quant", {"bits": "8"}, "en")
    assert "before" not in _scope_note(en) and "throughout" in _scope_note(en)
