"""step_costs: a batch's decode step in two formats, weights and cache, with Mistral 7B's window.

Expected bytes are the formulas written out here from the published shapes: K and V of every
layer and KV head, head_dim numbers each, for the positions a step reads (at most W, plus the
one it writes)."""
import pytest

from engine.analysis import costs
from engine.analysis.model_shapes import MODEL_SHAPES, config_from_shape
from lessons.common import step_costs


def _kv_numbers_per_position(name: str) -> int:
    s = MODEL_SHAPES[name]
    return 2 * s.n_layers * s.n_kv_heads * s.head_dim


@pytest.mark.parametrize("context", [4095, 8192, 32767])
@pytest.mark.parametrize("batch", [1, 8])
def test_mistral_steps_read_at_most_its_window(context, batch):
    W = MODEL_SHAPES["Mistral 7B"].sliding_window
    _, _, kv = step_costs.decode_step(config_from_shape("Mistral 7B"), context, batch, 16, 16)
    assert kv == batch * _kv_numbers_per_position("Mistral 7B") * (W + 1) * 2  # W read, 1 written, 2 bytes each


@pytest.mark.parametrize("context", [16, 4096, 32767])
def test_llama_steps_read_the_whole_context(context):
    _, _, kv = step_costs.decode_step(config_from_shape("Llama 3 8B"), context, 1, 16, 16)
    assert kv == _kv_numbers_per_position("Llama 3 8B") * (context + 2) * 2  # context + the new one read, 1 written


@pytest.mark.parametrize("name", ["Mistral 7B", "Llama 3 8B"])
def test_the_weights_read_do_not_depend_on_the_context_or_the_cache_bits(name):
    """Before the window-aware counts, Mistral's weights shrank past 4,096 tokens: the step's
    total stopped growing at W but the cache part taken away from it did not."""
    cfg = config_from_shape(name)
    weights = {step_costs.decode_step(cfg, ctx, 4, 4.5, bits)[1] for ctx in (16, 4095, 4097, 32767)
               for bits in (16, 8, 4, 3.5, 2.5)}
    n = costs.param_count(cfg) - (cfg.vocab_size - 1) * cfg.d_model  # one embedding row is looked up
    assert weights == {-(-n * 9 // 16)}  # 4.5 bits per weight, whole bytes rounded up


@pytest.mark.parametrize("bits", [8, 4, 3.5, 2.5])
@pytest.mark.parametrize("name, context", [("Mistral 7B", 32767), ("Llama 3 8B", 8191), ("Llama 2 7B", 100)])
def test_cache_bits_scale_only_the_cache(bits, name, context):
    cfg = config_from_shape(name)
    f16, w16, kv16 = step_costs.decode_step(cfg, context, 3, 16, 16)
    f, w, kv = step_costs.decode_step(cfg, context, 3, 16, bits)
    assert (f, w) == (f16, w16)
    assert kv == kv16 * bits / 16  # exact: these caches hold a multiple of 16 numbers


@pytest.mark.parametrize("bits", [16, 4, 2.5])
def test_prefill_writes_the_cache_in_its_own_bits(bits):
    cfg = config_from_shape("Llama 3 8B")
    flops, moved = step_costs.prefill(cfg, 1024, 16, bits)
    _, moved16 = step_costs.prefill(cfg, 1024, 16, 16)
    cache_traffic = 2 * _kv_numbers_per_position("Llama 3 8B") * 1024  # written once and read once
    assert moved16 - moved == cache_traffic * (16 - bits) / 8
    assert flops == costs.prefill_flops(cfg, 1024)
