"""The engine against Hugging Face transformers' LlamaForCausalLM on the same weights.

Prefill logits, every decode step's logits and the KV cache contents must match (float32,
eager attention, PyTorch CPU). HF caches keys after RoPE, and so does the engine.
"""
import inspect

import numpy as np
import pytest

from engine import Config, Transformer
from engine.hf import config_from_hf, config_to_hf_kwargs, weights_from_hf, weights_to_hf

pytestmark = pytest.mark.reference

torch = pytest.importorskip("torch", reason="the reference check needs PyTorch: pip install 'kv-classroom[reference]'")
transformers = pytest.importorskip(
    "transformers", reason="the reference check needs transformers: pip install 'kv-classroom[reference]'"
)

TOL = 1e-4
# transformers 5.2x renamed past_key_values to cache (argument and output)
CACHE_ARG = "cache" if "cache" in inspect.signature(transformers.LlamaForCausalLM.forward).parameters else "past_key_values"


def hf_past(out):
    return out["cache"] if "cache" in out else out.past_key_values


def hf_twin(model: Transformer):
    """A LlamaForCausalLM holding exactly the engine model's weights."""
    cfg = transformers.LlamaConfig(**config_to_hf_kwargs(model.config), attn_implementation="eager")
    hf = transformers.LlamaForCausalLM(cfg).eval().to(torch.float32)
    assert hf.config._attn_implementation == "eager"
    sd = {k: torch.from_numpy(v.astype(np.float32)) for k, v in weights_to_hf(model.weights, model.config).items()}
    missing, unexpected = hf.load_state_dict(sd, strict=False)
    assert not unexpected and all("rotary" in m for m in missing), (missing, unexpected)
    return hf


def hf_layer_kv(past, layer: int):
    """(keys, values) [KV, S, hd] of one layer, whatever the transformers version calls them."""
    if hasattr(past, "layers"):  # transformers >= 4.56: DynamicCache.layers[l].keys
        k, v = past.layers[layer].keys, past.layers[layer].values
    elif hasattr(past, "key_cache"):
        k, v = past.key_cache[layer], past.value_cache[layer]
    else:
        k, v = past[layer]
    return k[0].numpy(), v[0].numpy()


def compare_generation(model: Transformer, prompt: list[int], n_steps: int):
    """Greedy decode in both; assert logits and caches agree at every step."""
    hf = hf_twin(model)
    cache = model.new_cache()
    ours = model.forward(prompt, cache=cache)  # [T, V]
    with torch.no_grad():
        out = hf(torch.tensor([prompt]), use_cache=True)
    theirs = out.logits[0].numpy()
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=TOL, err_msg="prefill logits")
    past = hf_past(out)
    worst = float(np.abs(ours - theirs).max())
    for step in range(n_steps):
        tok = int(np.argmax(theirs[-1]))
        assert tok == int(np.argmax(ours[-1])), f"greedy token differs at step {step}"
        ours = model.forward([tok], cache=cache)
        with torch.no_grad():
            out = hf(torch.tensor([[tok]]), use_cache=True, **{CACHE_ARG: past})
        theirs, past = out.logits[0].numpy(), hf_past(out)
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=TOL, err_msg=f"decode step {step} logits")
        worst = max(worst, float(np.abs(ours - theirs).max()))
    for layer in range(model.config.n_layers):
        hk, hv = hf_layer_kv(past, layer)
        assert hk.shape == cache.keys(layer).shape
        np.testing.assert_allclose(cache.keys(layer), hk, rtol=0, atol=TOL, err_msg=f"layer {layer} keys")
        np.testing.assert_allclose(cache.values(layer), hv, rtol=0, atol=TOL, err_msg=f"layer {layer} values")
    return worst


@pytest.mark.parametrize("shape", [
    dict(vocab_size=97, d_model=64, n_layers=3, n_heads=8, n_kv_heads=2, ffn_dim=112, rope_theta=10000.0),
    dict(vocab_size=61, d_model=48, n_layers=2, n_heads=4, n_kv_heads=1, ffn_dim=80, rope_theta=500000.0),
    dict(vocab_size=40, d_model=32, n_layers=1, n_heads=2, n_kv_heads=2, ffn_dim=24, rope_theta=100.0),
])
def test_random_gqa_model_matches_transformers(shape):
    cfg = Config(**shape, max_seq_len=40, norm_eps=1e-5)
    model = Transformer.random(cfg, seed=int(sum(shape.values())) % 1000)
    prompt = np.random.default_rng(0).integers(0, cfg.vocab_size, size=9).tolist()
    compare_generation(model, prompt, n_steps=12)


def test_weight_mapping_round_trips_through_a_hf_model():
    cfg = Config(vocab_size=33, d_model=16, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=24, max_seq_len=8)
    model = Transformer.random(cfg, seed=9)
    hf = hf_twin(model)
    back = weights_from_hf({k: v.numpy() for k, v in hf.state_dict().items()}, config_from_hf(hf.config))
    assert config_from_hf(hf.config) == cfg
    for name, w in model.weights.items():
        np.testing.assert_array_equal(back[name], w)


def test_course_model_matches_transformers():
    from engine.course import load_course_model

    model, tok = load_course_model()  # ships in engine/data: missing weights fail, never skip
    prompt = tok.encode("The cat sat on the")
    n_steps = min(16, model.config.max_seq_len - len(prompt))
    compare_generation(model, prompt, n_steps=n_steps)
