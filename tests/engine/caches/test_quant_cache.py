"""The quantized KV cache: exact at 16 bits, errors within each scheme's analytic bound,
bytes counted exactly, the rotation harmless to q.k and useful against outlier channels,
and on the course model: 8 bits keeps the greedy text, fewer bits cost more attention."""
import numpy as np
import pytest

from engine import Config, Generator, KVCache, SamplingParams, Transformer
from engine.caches.quant import (
    BITS,
    SCHEMES,
    QuantKVCache,
    channel_magnitudes,
    outlier_ratio,
    pack,
    random_rotation,
    unpack,
)

LOW_BITS = [b for b in BITS if b < 16]


def config(**over) -> Config:
    base = dict(vocab_size=50, d_model=64, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=48, max_seq_len=40)
    return Config(**{**base, **over})


def keys_with_outliers(rng, KV: int, n: int, hd: int, channels=(3,), factor: float = 12.0):
    """Random keys [KV, n, hd] whose ``channels`` are ``factor`` times larger in every token,
    the pattern KIVI and KVQuant report in real models' keys."""
    x = rng.standard_normal((KV, n, hd)).astype(np.float32) * rng.uniform(0.2, 3.0, size=(1, n, 1)).astype(np.float32)
    x[..., list(channels)] *= factor
    return x


def fill(cache: QuantKVCache, k, v, blocks):
    """Store k, v [KV, n, hd] in consecutive blocks in every layer; K, V of layer 0 read back."""
    i = 0
    for b in blocks:
        outs = [cache.store(layer, k[:, i : i + b], v[:, i : i + b]) for layer in range(cache.config.n_layers)]
        cache.advance(b)
        i += b
    return outs[0][0], outs[0][1]


def half_step(x, bits: int, axis: int):
    """The analytic error bound of min-max quantization of x grouped along ``axis``: half a
    step, (max - min) / (2^b - 1) / 2, widened by float16 rounding of the zero point (down,
    at most 2 spacings) and of the scale (up, at most 2^-10 relative)."""
    lo, hi = x.min(axis=axis, keepdims=True), x.max(axis=axis, keepdims=True)
    zero_slack = 2 * np.spacing(np.abs(lo).astype(np.float16)).astype(np.float32)
    return (hi - lo + zero_slack) / (2**bits - 1) * (1 + 2**-10) / 2 + 1e-7


def tol(x):
    return 1e-6 * (np.abs(x) + 1)  # float32 arithmetic of the decode


# --------------------------------------------------------------------------- exact at 16 bits


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("H,KV", [(4, 4), (4, 2), (4, 1)])
def test_16_bits_is_the_float_cache(scheme, H, KV):
    """In a float16 model, 16 bits stores exactly what KVCache stores: identical logits."""
    cfg = config(n_heads=H, n_kv_heads=KV, dtype="float16")
    model = Transformer.random(cfg, seed=H + KV)
    ids = list(np.random.default_rng(KV).integers(0, cfg.vocab_size, size=20))
    got, want = QuantKVCache(cfg, scheme, 16), KVCache(cfg)
    a = [model.forward(ids[:7], cache=got)] + [model.forward([t], cache=got) for t in ids[7:]]
    b = [model.forward(ids[:7], cache=want)] + [model.forward([t], cache=want) for t in ids[7:]]
    np.testing.assert_array_equal(np.concatenate(a), np.concatenate(b))
    assert got.bits_per_value == 16 and got.bytes_used == want.bytes_used


# --------------------------------------------------------------------------- the analytic bounds


@pytest.mark.parametrize("bits", LOW_BITS)
@pytest.mark.parametrize("group", [8, 32])
def test_per_token_error_within_half_a_step(bits, group):
    rng = np.random.default_rng(bits * group)
    cfg = config()
    k, v = keys_with_outliers(rng, 2, 23, 16), keys_with_outliers(rng, 2, 23, 16, channels=())
    cache = QuantKVCache(cfg, "per_token", bits, group=min(group, 16))
    K, V = fill(cache, k, v, [5] + [1] * 18)
    g = min(group, 16)
    for x, got in ((k, K), (v, V)):
        groups = x.reshape(2, 23, 16 // g, g)
        bound = np.broadcast_to(half_step(groups, bits, axis=3), groups.shape).reshape(x.shape)
        assert (np.abs(got - x) <= bound + tol(x)).all()
        assert np.abs(got - x).max() > 0.05 * bound.max()  # it did quantize


@pytest.mark.parametrize("bits", LOW_BITS)
@pytest.mark.parametrize("residual", [1, 4, 6])
def test_kivi_keys_per_channel_values_per_token_newest_exact(bits, residual):
    rng = np.random.default_rng(bits + 10 * residual)
    n, cfg = 23, config()
    k, v = keys_with_outliers(rng, 2, n, 16), keys_with_outliers(rng, 2, n, 16, channels=())
    K, V = fill(QuantKVCache(cfg, "kivi", bits, residual=residual), k, v, [3] + [1] * 20)
    qk = n // residual * residual  # keys: whole blocks of R tokens are codes, the rest exact
    blocks = k[:, :qk].reshape(2, qk // residual, residual, 16)
    bound = np.broadcast_to(half_step(blocks, bits, axis=2), blocks.shape).reshape(2, qk, 16)
    assert (np.abs(K[:, :qk] - k[:, :qk]) <= bound + tol(k[:, :qk])).all()
    np.testing.assert_array_equal(K[:, qk:], k[:, qk:])
    qv = n - residual  # values: all but the newest R are codes, one scale per token
    bound = half_step(v[:, :qv], bits, axis=2)
    assert (np.abs(V[:, :qv] - v[:, :qv]) <= bound + tol(v[:, :qv])).all()
    np.testing.assert_array_equal(V[:, qv:], v[:, qv:])


@pytest.mark.parametrize("bits", LOW_BITS)
def test_rotated_error_within_the_bound_of_the_rotated_vectors(bits):
    """The bound holds per number in the rotated basis; rotating back keeps lengths, so each
    vector's error is at most the length of its vector of half steps."""
    rng = np.random.default_rng(bits)
    cfg = config()
    k, v = keys_with_outliers(rng, 2, 19, 16), keys_with_outliers(rng, 2, 19, 16, channels=())
    cache = QuantKVCache(cfg, "rotated", bits, seed=bits)
    K, V = fill(cache, k, v, [4] + [1] * 15)
    P = cache.rotation  # [hd, hd] float64
    for x, got in ((k, K), (v, V)):
        y = x.astype(np.float64) @ P
        bound = np.broadcast_to(half_step(y, bits, axis=2), y.shape)
        err = np.linalg.norm(got.astype(np.float64) - x, axis=-1)  # [KV, n]
        assert (err <= np.linalg.norm(bound, axis=-1) + 1e-5 * np.linalg.norm(x, axis=-1)).all()


@pytest.mark.parametrize("bits", [2, 3, 4, 8])
@pytest.mark.parametrize("n", [8, 32, 128, 12, 5, 1])
def test_pack_round_trip_and_tight_size(bits, n):
    codes = np.random.default_rng(n).integers(0, 2**bits, size=(3, 7, n)).astype(np.uint8)
    packed = pack(codes, bits)
    if n % 8 == 0:  # head_dim of every real model: exactly b bits per code
        assert packed.shape == (3, 7, n * bits // 8)
    else:  # a bit plane's last byte may be partly padding
        assert -(-n * bits // 8) <= packed.shape[-1] <= -(-n * bits // 8) + 1
    np.testing.assert_array_equal(unpack(packed, bits, n), codes)
    assert unpack(pack(codes[:, :0], bits), bits, n).shape == (3, 0, n)  # nothing quantized yet


# --------------------------------------------------------------------------- bytes


@pytest.mark.parametrize("scheme", ["per_token", "rotated"])
@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("group", [4, 16])
def test_per_token_bits_per_value_is_bits_plus_two_float16_per_group(scheme, bits, group):
    cfg = config()
    cache = QuantKVCache(cfg, scheme, bits, group=group, max_len=10)
    k = np.random.default_rng(0).standard_normal((2, 10, 16)).astype(np.float32)
    for n in (1, 6, 10):
        fill(cache, k[:, :n], k[:, :n], [n])
        want = 16 if bits == 16 else bits + 2 * 16 / group  # scale + zero point, float16 each
        assert cache.bits_per_value == pytest.approx(want, abs=1e-12)
        cache.reset()
    fill(cache, k, k, [10])  # full: every reserved byte holds something
    assert cache.bytes_used == cache.bytes_allocated
    arrays = [a for r in cache.all_rows for a in (r.codes, r.scale, r.zero, r.tail)]
    assert cache.bytes_allocated == sum(a.nbytes for a in arrays)


@pytest.mark.parametrize("bits", LOW_BITS)
@pytest.mark.parametrize("n", [1, 3, 4, 9, 16, 17])
def test_kivi_bytes_counted_piece_by_piece(bits, n):
    R, L, KV, hd, g = 4, 2, 2, 16, 8
    cfg = config()
    cache = QuantKVCache(cfg, "kivi", bits, residual=R, group=g)
    k = np.random.default_rng(n).standard_normal((KV, n, hd)).astype(np.float32)
    fill(cache, k, k, [1] * n)
    row = hd * bits // 8  # packed codes of one token in one KV head
    qk, qv = n // R * R, max(0, n - R)
    keys = qk * row + (qk // R) * hd * 2 * 2 + (n - qk) * hd * 4  # codes, scale+zero per channel per block, float32 tail
    values = qv * row + qv * (hd // g) * 2 * 2 + (n - qv) * hd * 4  # codes, scale+zero per group per token, tail
    assert cache.bytes_used == L * KV * (keys + values)
    assert cache.bytes_parts == {"codes": L * KV * (qk + qv) * row,
                                 "scales": L * KV * ((qk // R) * hd + qv * (hd // g)) * 2 * 2,
                                 "tail": L * KV * (2 * n - qk - qv) * hd * 4}
    assert cache.bits_per_value == pytest.approx(8 * L * KV * (keys + values) / (2 * L * KV * hd * n))


def test_kivi_tail_weighs_less_as_the_text_grows():
    cache = QuantKVCache(config(max_seq_len=400), "kivi", 2, residual=8)
    bits = [cache.bits_per_value_at(n) for n in (7, 64, 400)]
    assert bits[0] == 32 and bits[0] > bits[1] > bits[2] > 2  # all float32 before the first block of 8; never below 2


# --------------------------------------------------------------------------- the rotation


@pytest.mark.parametrize("hd", [2, 16, 128])
def test_rotation_is_orthogonal_and_keeps_q_dot_k(hd):
    rng = np.random.default_rng(hd)
    P = random_rotation(hd, seed=hd)
    np.testing.assert_allclose(P @ P.T, np.eye(hd), atol=1e-12)
    q, k = rng.standard_normal((5, hd)) * 3, keys_with_outliers(rng, 1, 9, hd, channels=(0,))[0].astype(np.float64)
    np.testing.assert_allclose((q @ P) @ (k @ P).T, q @ k.T, rtol=0, atol=1e-6)


def test_rotation_spreads_an_outlier_channel_and_cuts_the_score_error():
    rng = np.random.default_rng(0)
    hd, n = 64, 32
    k = keys_with_outliers(rng, 1, n, hd, channels=(5,), factor=20.0)
    P = random_rotation(hd, seed=1)
    assert outlier_ratio(k) > 10 and outlier_ratio(k @ P) < outlier_ratio(k) / 3
    assert channel_magnitudes(k).argmax() == 5
    np.testing.assert_allclose(np.linalg.norm(channel_magnitudes(k @ P)), np.linalg.norm(channel_magnitudes(k)))
    cfg = config(d_model=128, n_heads=2, n_kv_heads=1)  # head_dim 64
    q = rng.standard_normal((8, hd)).astype(np.float32)
    errors = {}
    for scheme in ("per_token", "rotated"):
        K, _ = fill(QuantKVCache(cfg, scheme, 4, seed=1), k, k, [n])
        errors[scheme] = np.abs(q @ K[0].T - q @ k[0].T).mean()
    assert errors["rotated"] < 0.8 * errors["per_token"]  # measured: about two thirds


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("kwargs,error,match", [
    ({"scheme": "zip"}, ValueError, "unknown quantization scheme"),
    ({"bits": 0}, ValueError, "bits must be one of"),
    ({"bits": 17}, ValueError, "bits must be one of"),
    ({"bits": 5}, ValueError, "bits must be one of"),
    ({"bits": 4.0}, TypeError, "bits must be an int"),
    ({"group": 5}, ValueError, "must divide head_dim"),
    ({"scheme": "kivi", "residual": 0}, ValueError, "residual must be >= 1"),
    ({"max_len": 41}, ValueError, "max_len must be <= 40"),
    ({"seed": -1, "scheme": "rotated"}, ValueError, "rotation seed must be >= 0"),
])
def test_bad_settings_are_refused_clearly(kwargs, error, match):
    with pytest.raises(error, match=match):
        QuantKVCache(config(), **kwargs)


def test_values_float16_scales_cannot_hold_are_refused():
    cache = QuantKVCache(config(), "per_token", 4)
    x = np.ones((2, 1, 16), dtype=np.float32)
    for bad in (np.inf, np.nan, 1e6):
        x[0, 0, 0] = bad
        with pytest.raises(ValueError, match="too large for float16"):
            cache.store(0, x, x)


def test_rewind_only_to_what_the_codes_still_hold():
    model = Transformer.random(config(), seed=0)
    cache = QuantKVCache(model.config, "kivi", 4, residual=4)
    model.forward(list(range(1, 7)), cache=cache)  # keys: 4 as codes, 2 exact; values: 2 codes, 4 exact
    with pytest.raises(ValueError, match="cannot rewind"):
        cache.truncate(3)
    cache.truncate(6)
    plain = QuantKVCache(model.config, "per_token", 4)
    model.forward(list(range(1, 7)), cache=plain)
    plain.truncate(2)
    assert plain.length == 2 and plain.bytes_used < cache.bytes_used


# --------------------------------------------------------------------------- the course model


def _default_prompts():
    """The prompts the model demos open on, in both languages (what the page promises about)."""
    from lessons.common import registry

    found = set()
    for name in ("attention", "kv_cache", "kv_quant", "layers", "next_token"):
        for lang in ("en", "zh-TW"):
            found |= {c["default"] for c in registry.describe(name, lang)["controls"] if c["name"] == "prompt"}
    return sorted(found)


def _greedy(model, tok, cache, ids, steps=16):
    gen = Generator(model, tok, SamplingParams(temperature=0), n_top=0, cache=cache)
    return [s.token_id for s in gen.generate(ids, steps, stop_at_eos=False)]


@pytest.fixture(scope="module")
def course():
    from engine import load_course_model

    return load_course_model()


@pytest.mark.parametrize("scheme", SCHEMES)
def test_8_bits_keeps_the_greedy_text_of_the_default_prompts(course, scheme):
    model, tok = course
    for prompt in _default_prompts():
        ids = tok.encode(prompt)
        want = _greedy(model, tok, model.new_cache(), ids)
        assert _greedy(model, tok, QuantKVCache(model.config, scheme, 8, residual=8), ids) == want, prompt


def _attention_kl(model, tok, ids, cache) -> float:
    """Mean KL(float || quantized) of the attention weights, teacher-forced on ``ids``."""
    def weights(c):
        gen = Generator(model, tok, SamplingParams(temperature=0), n_top=0, cache=c)
        steps = [gen.start(ids[:3], trace=True)] + [gen.step(trace=True, token=t) for t in ids[3:]]
        return np.concatenate([a.ravel() for s in steps for a in s.trace.attn])

    p, q = weights(model.new_cache()), weights(cache)
    keep = p > 0  # masked entries are exactly 0 in both
    return float((p[keep] * (np.log(p[keep]) - np.log(np.maximum(q[keep], 1e-30)))).sum())


@pytest.mark.parametrize("scheme", SCHEMES)
def test_attention_error_grows_as_bits_fall(course, scheme):
    model, tok = course
    for prompt in _default_prompts():
        ids = tok.encode(prompt)
        ids += _greedy(model, tok, model.new_cache(), ids)
        kl = {b: _attention_kl(model, tok, ids, QuantKVCache(model.config, scheme, b, residual=8)) for b in (2, 3, 4, 8, 16)}
        assert kl[2] > kl[3] > kl[4] > kl[8] > kl[16] >= 0, (prompt, kl)

