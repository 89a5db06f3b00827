"""roofline: decode sits left of the ridge, prefill and batching move right; honest presets."""
import pytest

from engine.analysis import costs
from engine.analysis.model_shapes import config_from_shape
from lessons.common import registry
from lessons.common.base import LessonInputError
from lessons.common.devices import DEVICES

from lesson_checks import check_both_languages, check_describe, column, numbers

INTENSITY, ATTAINABLE = "arithmetic intensity (FLOP/byte)", "attainable TFLOP/s"


def test_defaults_both_languages():
    check_describe("roofline")
    check_both_languages("roofline")


@pytest.mark.parametrize("device", list(DEVICES))
@pytest.mark.parametrize("model", ["Llama 3 8B", "Llama 3 70B", "Mistral 7B"])
def test_decode_is_memory_bound_and_prefill_is_not(device, model):
    d = DEVICES[device]
    out = registry.run("roofline", {"device": device, "model": model, "batch": 8, "context": 2048}, "en")
    tbl = out["figures"][0]["table"]
    (decode1, decode8, prefill), bound = numbers(tbl, INTENSITY), column(tbl, "bound by")
    # decode at batch 1 does 2 FLOPs per weight it reads: about 16 / weight_bits FLOP/byte,
    # whatever the model (the cache adds a little traffic at 2,048 tokens)
    per_weight = 16 / d.weight_bits
    assert 0.5 * per_weight < decode1 < 1.1 * per_weight
    assert decode1 < d.ridge and bound[0] == "memory"
    assert decode1 < decode8 < prefill
    # attainable never exceeds the roof
    for i, a in zip(numbers(tbl, INTENSITY), numbers(tbl, ATTAINABLE)):
        assert a <= d.peak_flops / 1e12 * (1 + 5e-3)
        assert a <= i * d.bandwidth / 1e12 * (1 + 5e-3)


def test_the_laptop_runs_4_bit_weights_not_fp32():
    """Issue 11: the laptop preset read Llama 3 8B in fp32 (32 GB per step); laptops run
    4- or 8-bit weights. Q4_0: 32 weights in 16 bytes plus an fp16 scale, 4.5 bits each."""
    laptop = DEVICES["laptop"]
    assert laptop.weight_bits == 4.5
    cfg = config_from_shape("Llama 3 8B")
    out = registry.run("roofline", {"device": "laptop", "model": "Llama 3 8B", "context": 16}, "en")
    moved = column(out["figures"][0]["table"], "bytes moved")[0]  # decode at batch 1, e.g. "4 GiB"
    n_weights = costs.param_count(cfg) - (cfg.vocab_size - 1) * cfg.d_model  # one embedding row is read
    assert moved.endswith(" GiB") and float(moved.split()[0]) == pytest.approx(n_weights * 4.5 / 8 / 2**30, rel=0.02)
    assert "4-bit weights" in out["figures"][0]["title"] and "16-bit KV cache" in out["figures"][0]["title"]


def _decode_bytes(values: dict) -> tuple[float, float]:
    """Bytes moved by the batch-1 and the batched decode step, as the table shows them."""
    moved = column(registry.run("roofline", values, "en")["figures"][0]["table"], "bytes moved")
    return tuple(float(m.split()[0]) * {"MiB": 2**20, "GiB": 2**30}[m.split()[1]] for m in moved[:2])


@pytest.mark.parametrize("context", [8192, 32768])
def test_mistral_decode_moves_its_window_not_its_context(context):
    """Weights in bf16 plus a step's cache traffic: W = 4,096 positions read, one more read and one written."""
    cfg = config_from_shape("Mistral 7B")
    n_weights = costs.param_count(cfg) - (cfg.vocab_size - 1) * cfg.d_model
    per_pos = 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * 2
    one, batched = _decode_bytes({"model": "Mistral 7B", "context": context, "batch": 64})
    assert one == pytest.approx(2 * n_weights + per_pos * (4096 + 1), rel=0.005)
    assert batched == pytest.approx(2 * n_weights + 64 * per_pos * (4096 + 1), rel=0.005)


@pytest.mark.parametrize("bits", ["8", "4", "3.5", "2.5"])
def test_cache_bits_raise_the_tokens_per_second_ceiling(bits):
    values = {"model": "Llama 3 8B", "context": 8191, "batch": 64}  # its context window: 8,192
    full, fewer = _decode_bytes(values), _decode_bytes({**values, "cache_bits": bits})
    cfg = config_from_shape("Llama 3 8B")
    cache16 = 64 * 2 * cfg.n_layers * cfg.n_kv_heads * cfg.head_dim * (8191 + 2) * 2  # batched step, 16 bits
    assert full[1] - fewer[1] == pytest.approx(cache16 * (1 - float(bits) / 16), rel=0.01)
    out = registry.run("roofline", {**values, "cache_bits": bits}, "en")
    assert f"{bits}-bit KV cache" in out["figures"][0]["title"]
    note = [n for n in out["notes"] if n.startswith(f"With {bits} bits per cached number instead of 16")]
    assert len(note) == 1 and "at batch 1" in note[0] and "at batch 64" in note[0]
    assert not any("instead of 16" in n for n in registry.run("roofline", values, "en")["notes"])


def test_device_presets_cite_their_source():
    assert DEVICES["h200_sxm"].bandwidth == 4.8e12 and DEVICES["h200_sxm"].peak_flops == 989e12
    assert DEVICES["h100_sxm"].bandwidth == 3.35e12 and DEVICES["h100_sxm"].peak_flops == 989e12
    for d in DEVICES.values():
        assert d.source["en"] and d.source["zh-TW"] and d.source["en"] != d.source["zh-TW"]
    assert "representative" in DEVICES["laptop"].source["en"].lower()
    out = registry.run("roofline", {"device": "h100_sxm"}, "en")
    assert any(DEVICES["h100_sxm"].source["en"] in n for n in out["notes"])


def test_context_is_clipped_to_the_window():
    out = registry.run("roofline", {"model": "Llama 2 7B", "context": 32768}, "en")
    assert "4,096" in out["notes"][0]


def test_gpt2_is_not_offered_to_the_llama_cost_formulas():
    with pytest.raises(LessonInputError):
        registry.run("roofline", {"model": "GPT-2 small"}, "en")
