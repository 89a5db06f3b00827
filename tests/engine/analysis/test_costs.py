"""Analytic costs: a 1-layer model counted by hand, the engine's real cache, published sizes."""
import numpy as np
import pytest

from engine import Config, KVCache, Transformer
from engine.analysis.costs import (
    cached_positions,
    decode_step_bytes,
    decode_step_flops,
    decode_step_kv_bytes,
    kv_cache_bytes,
    kv_cache_size,
    param_count,
    prefill_bytes,
    prefill_flops,
)
from engine.analysis.model_shapes import MODEL_SHAPES, config_from_shape

# V=10, D=4, H=2, KV=1, hd=2, F=6, one layer
TINY = Config(vocab_size=10, d_model=4, n_layers=1, n_heads=2, n_kv_heads=1, ffn_dim=6, max_seq_len=16)


def test_one_layer_flops_by_hand():
    # per token: q 2*4*4=32, k 2*4*2=16, v 16, o 2*4*4=32, mlp 3*(2*4*6)=144 -> 240
    # attention per query and key: QK 2*hd*H = 8, AV 8 -> 16;  output head 2*4*10 = 80
    assert decode_step_flops(TINY, 3, use_cache=True) == 240 + 16 * 4 + 80
    # no cache: 4 tokens again: 4*240 + attention 4x4 * 16 + one output row 80
    assert decode_step_flops(TINY, 3, use_cache=False) == 960 + 256 + 80
    assert prefill_flops(TINY, 4) == 960 + 256 + 80
    assert prefill_flops(TINY, 4, all_logits=True) == 960 + 256 + 4 * 80
    assert prefill_flops(TINY, 0) == 0


def test_one_layer_bytes_by_hand():
    # weights besides the embedding: norms 8 + qkv 4*8 + o 16 + mlp 72 + final norm 4 + head 40 = 172
    # cache, context 3: (172 + 1 embedding row of 4) * 4 B + K/V read for 4 positions (2*2*4 numbers)
    #   + K/V written for 1 (2*2 numbers), float32
    assert decode_step_bytes(TINY, 3, use_cache=True) == (172 + 4) * 4 + 16 * 4 + 4 * 4
    # no cache: 4 embedding rows, K/V of 4 positions written and read
    assert decode_step_bytes(TINY, 3, use_cache=False) == (172 + 16) * 4 + 2 * 16 * 4
    assert decode_step_bytes(TINY, 3, use_cache=True, dtype_bytes=2) * 2 == decode_step_bytes(TINY, 3, True)
    assert prefill_bytes(TINY, 4) == decode_step_bytes(TINY, 3, use_cache=False)


def test_param_count_matches_the_engine_and_published_models():
    assert param_count(TINY) == Transformer.random(TINY).num_params == 10 * 4 * 2 + 128 + 4
    # published parameter counts (Hugging Face model cards / safetensors index)
    assert param_count(config_from_shape("Llama 3 8B")) == 8_030_261_248
    assert param_count(config_from_shape("Llama 3 70B")) == 70_553_706_496
    assert param_count(config_from_shape("Llama 2 7B")) == 6_738_415_616
    assert param_count(config_from_shape("Mistral 7B")) == 7_241_732_096


def test_kv_cache_bytes_matches_the_engines_real_cache():
    for cfg in (TINY, Config(vocab_size=20, d_model=48, n_layers=3, n_heads=6, n_kv_heads=2, ffn_dim=8,
                             max_seq_len=9, dtype="float16")):
        cache = KVCache(cfg)
        model = Transformer.random(cfg, seed=0)
        for n in (1, 4, cfg.max_seq_len - 4):
            cache.reset()
            model.forward([i % cfg.vocab_size for i in range(n)], cache=cache)
            assert cache.bytes_used == kv_cache_bytes(cfg.n_layers, cfg.n_kv_heads, cfg.head_dim, n,
                                                      dtype_bytes=cfg.dtype_bytes)
            assert sum(a[:, :n].nbytes for a in cache.k + cache.v) == cache.bytes_used


def test_kv_cache_bytes_for_real_models():
    l3 = MODEL_SHAPES["Llama 3 8B"]
    assert kv_cache_bytes(l3.n_layers, l3.n_kv_heads, l3.head_dim, 1) == 128 * 1024  # 128 KiB per token
    l2 = MODEL_SHAPES["Llama 2 7B"]
    assert kv_cache_bytes(l2.n_layers, l2.n_kv_heads, l2.head_dim, 4096) == 2 * 1024**3  # 2 GiB at 4k context
    assert kv_cache_bytes(1, 1, 1, 1, batch=8, dtype_bytes=4) == 64
    with pytest.raises(ValueError, match="seq_len must be >= 0"):
        kv_cache_bytes(1, 1, 1, -1)
    with pytest.raises(TypeError, match="n_layers must be an int"):
        kv_cache_bytes(1.5, 1, 1, 1)


def test_decode_flops_are_about_two_per_weight():
    cfg = config_from_shape("Llama 3 8B")
    weights_used = param_count(cfg) - cfg.vocab_size * cfg.d_model  # the embedding is a lookup
    assert decode_step_flops(cfg, 0, True) == pytest.approx(2 * weights_used, rel=0.01)


def test_cache_saves_work_that_grows_with_context():
    cfg = TINY
    with_cache = [decode_step_flops(cfg, n, True) for n in range(10)]
    without = [decode_step_flops(cfg, n, False) for n in range(10)]
    assert with_cache[0] == without[0]  # nothing to reuse at the first step
    assert all(b > a for a, b in zip(with_cache[1:], without[1:]))
    steps = [b - a for a, b in zip(with_cache, with_cache[1:])]
    assert len(set(steps)) == 1  # with the cache each step costs only one more key's attention


def test_bad_arguments():
    with pytest.raises(ValueError, match="context_len must be >= 0"):
        decode_step_flops(TINY, -1, True)
    with pytest.raises(TypeError, match="Config"):
        prefill_flops({"d_model": 4}, 3)
    with pytest.raises(ValueError, match="dtype_bytes"):
        decode_step_bytes(TINY, 1, True, dtype_bytes=0)


def test_shapes_build_engine_configs():
    for name, shape in MODEL_SHAPES.items():
        assert shape.source
        cfg = config_from_shape(name, n_layers=2)
        assert cfg.n_layers == 2 and cfg.head_dim == shape.head_dim and cfg.dtype == "float16"
    gpt2 = config_from_shape("GPT-2 small")
    assert (gpt2.vocab_size, gpt2.n_layers, gpt2.d_model, gpt2.max_seq_len) == (50257, 12, 768, 1024)
    with pytest.raises(ValueError, match="unknown model shape"):
        config_from_shape("Llama 9")


# --------------------------------------------------------------------------- counted, not derived


class Counted(np.ndarray):
    """Test-only ndarray that adds 2*m*n*k (times the batch) to a tally at every matmul."""

    flops = 0

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if ufunc is np.matmul and method == "__call__":
            a, b = (np.shape(x) for x in inputs)
            batch = int(np.prod(np.broadcast_shapes(a[:-2], b[:-2]), dtype=np.int64))
            Counted.flops += 2 * batch * a[-2] * a[-1] * b[-1]
        plain = [x.view(np.ndarray) if isinstance(x, Counted) else x for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(o.view(np.ndarray) if isinstance(o, Counted) else o for o in kwargs["out"])
        result = getattr(ufunc, method)(*plain, **kwargs)
        return result.view(Counted) if isinstance(result, np.ndarray) else result


class CountingXP:
    """An array namespace that is NumPy except that arrays it makes count their matmuls."""

    __name__ = "numpy-counting"

    def __getattr__(self, name):
        return getattr(np, name)

    def asarray(self, a, dtype=None):
        return np.asarray(a, dtype=dtype).view(Counted)

    def zeros(self, shape, dtype=None):
        return np.zeros(shape, dtype=dtype).view(Counted)


@pytest.mark.parametrize("cfg", [
    TINY,
    Config(vocab_size=37, d_model=24, n_layers=3, n_heads=6, n_kv_heads=2, ffn_dim=40, max_seq_len=20),
    Config(vocab_size=19, d_model=16, n_layers=2, n_heads=4, n_kv_heads=4, ffn_dim=8, max_seq_len=20),
])
def test_flops_equal_the_matmuls_the_engine_really_does(cfg):
    model = Transformer.random(cfg, seed=0, xp=CountingXP())
    ids = [i % cfg.vocab_size for i in range(12)]

    Counted.flops = 0
    model.forward(ids, last_only=True)
    assert Counted.flops == prefill_flops(cfg, 12)
    Counted.flops = 0
    model.forward(ids)
    assert Counted.flops == prefill_flops(cfg, 12, all_logits=True)

    cache = model.new_cache()
    model.forward(ids[:5], cache=cache, last_only=True)
    for ctx in range(5, 12):
        Counted.flops = 0
        model.forward([ids[ctx]], cache=cache, last_only=True)
        assert Counted.flops == decode_step_flops(cfg, ctx, use_cache=True)
        Counted.flops = 0
        model.forward(ids[: ctx + 1], last_only=True)
        assert Counted.flops == decode_step_flops(cfg, ctx, use_cache=False)


def test_bytes_are_the_engines_weights_plus_its_cache_traffic():
    cfg = Config(vocab_size=37, d_model=24, n_layers=3, n_heads=6, n_kv_heads=2, ffn_dim=40, max_seq_len=20)
    model = Transformer.random(cfg, seed=0)
    row = cfg.d_model * 4  # one embedding row, float32
    weights_read = model.weight_bytes - model.weights["embed"].nbytes + row
    cache = model.new_cache()
    model.forward([1, 2, 3, 4], cache=cache)
    model.forward([5], cache=cache)  # step at context 4: reads 5 positions, writes 1
    assert decode_step_bytes(cfg, 4, True) == weights_read + cache.bytes_used + cache.bytes_per_token
    # without a cache: 5 embedding rows, and K/V of 5 positions written then read
    assert decode_step_bytes(cfg, 4, False) == weights_read + 4 * row + 2 * cache.bytes_used


# --------------------------------------------------------------------------- windows and cache formats


def test_mistral_cache_stops_at_its_window():
    mistral, llama = config_from_shape("Mistral 7B"), config_from_shape("Llama 3 8B")
    assert mistral.sliding_window == 4096 and llama.sliding_window is None
    per_token = 2 * 32 * 8 * 128 * 2  # K and V, 32 layers, 8 KV heads, head_dim 128, fp16
    for tokens in (1, 2048, 4096, 8192, 32768):
        assert kv_cache_size(mistral, tokens) == min(tokens, 4096) * per_token
        assert kv_cache_size(llama, tokens) == tokens * per_token  # same cache shape, no window
    assert kv_cache_size(mistral, 8192) == 512 * 2**20  # not the 1 GiB an uncapped formula gives
    assert kv_cache_size(mistral, 8192, batch=3) == 3 * 512 * 2**20


@pytest.mark.parametrize("kv_bits", [16, 8, 4, 3.5, 2.5])
def test_cache_bits_are_separate_from_the_weights(kv_bits):
    cfg = config_from_shape("Llama 3 8B")
    assert kv_cache_size(cfg, 8192, kv_bits=kv_bits) == 8192 * 2 * 32 * 8 * 128 * kv_bits / 8
    fp16 = decode_step_bytes(cfg, 8191, True, dtype_bytes=2)
    mixed = decode_step_bytes(cfg, 8191, True, dtype_bytes=2, kv_bits=kv_bits)
    kv16 = decode_step_kv_bytes(cfg, 8191)
    assert fp16 - kv16 == mixed - decode_step_kv_bytes(cfg, 8191, kv_bits=kv_bits)  # same weight bytes
    assert decode_step_kv_bytes(cfg, 8191, kv_bits=kv_bits) == pytest.approx(kv16 * kv_bits / 16)


def test_windowed_step_reads_at_most_w_positions():
    cfg = config_from_shape("Mistral 7B")
    kv = [decode_step_kv_bytes(cfg, ctx) for ctx in (4094, 4095, 4096, 10_000, 30_000)]
    assert kv[0] < kv[1] == kv[2] == kv[3] == kv[4]  # 4096 read + 1 written, from context 4095 on
    steps = [decode_step_bytes(cfg, ctx, True) for ctx in (4095, 30_000)]
    assert steps[0] == steps[1] and isinstance(steps[0], int)
    assert decode_step_bytes(cfg, 30_000, False) > decode_step_bytes(cfg, 4095, False)  # recompute: all of it


@pytest.mark.parametrize("bad", [0, -2, True, "4", 65])
def test_bad_cache_bits(bad):
    with pytest.raises(ValueError, match="kv_bits must be a number of bits"):
        kv_cache_size(TINY, 4, kv_bits=bad)


@pytest.mark.parametrize("W", [1, 3, 6])
def test_windowed_costs_equal_the_rolling_cache_the_engine_runs(W):
    from engine.caches.rolling import RollingKVCache

    cfg = Config(vocab_size=37, d_model=24, n_layers=3, n_heads=6, n_kv_heads=2, ffn_dim=40, max_seq_len=20,
                 sliding_window=W)
    model = Transformer.random(cfg, seed=W, xp=CountingXP())
    cache = RollingKVCache(cfg, xp=CountingXP())
    model.forward([1, 2], cache=cache)
    for ctx in range(2, 12):
        Counted.flops = 0
        model.forward([ctx], cache=cache, last_only=True)
        assert Counted.flops == decode_step_flops(cfg, ctx, use_cache=True)
        assert cache.bytes_used == kv_cache_size(cfg, ctx + 1) == cached_positions(cfg, ctx + 1) * cache.bytes_per_token


def test_quantized_cache_bytes_are_its_bits_per_value():
    from engine.caches.quant import QuantKVCache

    cfg = Config(vocab_size=37, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=40, max_seq_len=20)
    model = Transformer.random(cfg, seed=0)
    for scheme, bits in (("per_token", 4), ("kivi", 2), ("rotated", 3)):
        cache = QuantKVCache(cfg, scheme, bits, residual=4)
        model.forward(list(range(1, 11)), cache=cache)
        assert kv_cache_size(cfg, 10, kv_bits=cache.bits_per_value) == pytest.approx(cache.bytes_used)


# --------------------------------------------------------------------------- MLA (DeepSeek-V2)


def test_latent_cache_by_hand():
    from engine.analysis.costs import latent_cache_bytes

    # (d_c + d_h^R) * l * T * B numbers: (6 + 2) * 3 layers * 5 tokens * 2 sequences = 240, at 16 bits
    assert latent_cache_bytes(3, 6, 2, 5, batch=2) == 240 * 2
    assert latent_cache_bytes(3, 6, 2, 5, batch=2, bits=4) == 240 / 2
    assert latent_cache_bytes(3, 6, 2, 0) == 0


def test_deepseek_v2_as_its_paper_states():
    from engine.analysis.costs import latent_cache_bytes
    from engine.analysis.model_shapes import DEEPSEEK_67B, LATENT_SHAPES

    s = LATENT_SHAPES["DeepSeek-V2"]
    mla = latent_cache_bytes(s.n_layers, s.kv_lora_rank, s.qk_rope_head_dim, 1)
    # Table 1: "equal to GQA with only 2.25 groups" (d_c = 4 d_h, d_h^R = d_h / 2)
    assert mla == kv_cache_bytes(s.n_layers, 1, s.head_dim, 1) * 2.25
    # abstract: "reduces the KV cache by 93.3%" against DeepSeek 67B; section 3.2.3 stores
    # "each element in its KV cache into 6 bits on average" (67B: 16-bit GQA cache)
    d = DEEPSEEK_67B
    dense = kv_cache_bytes(d.n_layers, d.n_kv_heads, d.head_dim, 1, dtype_bytes=2)
    six = latent_cache_bytes(s.n_layers, s.kv_lora_rank, s.qk_rope_head_dim, 1, bits=6)
    assert round(100 * (1 - six / dense), 1) == 93.3
    assert round(100 * (1 - mla / dense), 1) < 93.3  # MLA alone, both at 16 bits, is not the whole claim


@pytest.mark.parametrize("bits", [0, -1, 65, True, "16", float("nan")])
def test_latent_cache_refuses_bad_bits(bits):
    from engine.analysis.costs import latent_cache_bytes

    with pytest.raises(ValueError, match="bits must be"):
        latent_cache_bytes(2, 4, 2, 3, bits=bits)
