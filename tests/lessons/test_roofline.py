"""roofline: decode sits far left of the ridge, prefill and batching move right."""
import pytest

from lessons import registry
from lessons.devices import DEVICES

from lesson_checks import check_both_languages, check_describe


def test_defaults_both_languages():
    check_describe("roofline")
    check_both_languages("roofline")


def _points(out):
    rows = out["figures"][0]["table"]["rows"]
    return {r[0]: r for r in rows}


@pytest.mark.parametrize("device", list(DEVICES))
@pytest.mark.parametrize("model", ["Llama 3 8B", "Llama 3 70B", "Mistral 7B"])
def test_decode_is_memory_bound_and_prefill_is_not(device, model):
    d = DEVICES[device]
    out = registry.run("roofline", {"device": device, "model": model, "batch": 8, "context": 2048}, "en")
    rows = out["figures"][0]["table"]["rows"]
    decode1, decode8, prefill = rows
    # intensity column: decode at batch 1 in 16-bit numbers is about 1 FLOP/byte (2 FLOPs per
    # 2-byte weight), whatever the model; the ridge is hundreds of FLOP/byte on these devices.
    per_weight = 2 / d.bytes_per_value
    assert 0.5 * per_weight < decode1[3] < 2 * per_weight
    assert decode1[3] < d.ridge / 10 and decode1[-1] == "memory"
    assert decode1[3] < decode8[3] < prefill[3]
    # attainable never exceeds the roof
    for r in rows:
        assert r[4] <= d.peak_flops / 1e12 * (1 + 1e-9)
        assert r[4] <= r[3] * d.bandwidth / 1e12 * (1 + 1e-3)


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
    from lessons.base import LessonInputError

    import pytest

    with pytest.raises(LessonInputError):
        registry.run("roofline", {"model": "GPT-2 small"}, "en")
