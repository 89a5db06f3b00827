"""The forward pass: config and weight checks, causality, RoPE, GQA, traces, float16."""
import numpy as np
import pytest

from engine import Config, Transformer
from engine.model import apply_rope, rope_tables, weight_shapes

BASE = dict(vocab_size=50, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=64, max_seq_len=16)


# --------------------------------------------------------------------------- config


@pytest.mark.parametrize("over, exc, msg", [
    ({"d_model": 30}, ValueError, "divisible by n_heads"),
    ({"n_heads": 4, "n_kv_heads": 3}, ValueError, "multiple of n_kv_heads"),
    ({"d_model": 12, "n_heads": 4}, ValueError, "must be even"),  # head_dim 3
    ({"n_layers": 0}, ValueError, "n_layers must be >= 1"),
    ({"vocab_size": -3}, ValueError, "vocab_size"),
    ({"n_heads": 4.0}, TypeError, "n_heads must be an int"),
    ({"max_seq_len": True}, TypeError, "max_seq_len must be an int"),
    ({"rope_theta": 0}, ValueError, "rope_theta"),
    ({"norm_eps": float("nan")}, ValueError, "norm_eps"),
    ({"rope_theta": "1e4"}, TypeError, "rope_theta"),
    ({"dtype": "bfloat16"}, ValueError, "dtype"),
    ({"sliding_window": 0}, ValueError, "sliding_window must be >= 1"),
    ({"sliding_window": 4.0}, TypeError, "sliding_window must be an int"),
])
def test_config_rejects_bad_values_with_a_clear_message(over, exc, msg):
    with pytest.raises(exc, match=msg):
        Config(**{**BASE, **over})


def test_config_basics():
    c = Config(**BASE, dtype=np.float16)
    assert c.dtype == "float16" and c.head_dim == 8 and c.dtype_bytes == 2
    assert c.kv_values_per_token == 2 * 2 * 2 * 8  # K and V, 2 layers, 2 KV heads, head_dim 8
    assert Config.from_dict(c.to_dict()) == c
    with pytest.raises(ValueError, match="unknown Config field"):
        Config.from_dict({**c.to_dict(), "hidden_size": 3})
    with pytest.raises(AttributeError):
        c.d_model = 64  # frozen


# --------------------------------------------------------------------------- weights


def test_weight_names_and_shapes_are_checked():
    cfg = Config(**BASE)
    good = {n: np.zeros(s, np.float32) for n, s in weight_shapes(cfg).items()}
    Transformer(cfg, good)
    bad = dict(good)
    del bad["layers.1.wk"]
    with pytest.raises(ValueError, match="missing: layers.1.wk"):
        Transformer(cfg, bad)
    with pytest.raises(ValueError, match="unexpected: layers.2.wq"):
        Transformer(cfg, {**good, "layers.2.wq": good["layers.0.wq"]})
    with pytest.raises(ValueError, match=r"layers.0.wq has shape \(16, 32\), expected \(32, 32\)"):
        Transformer(cfg, {**good, "layers.0.wq": np.zeros((16, 32))})
    with pytest.raises(ValueError, match=r"lm_head has shape \(50, 32\), expected \(32, 50\)"):
        Transformer(cfg, {**good, "lm_head": good["embed"]})  # torch layout by mistake
    with pytest.raises(TypeError, match="must be an array"):
        Transformer(cfg, {**good, "norm": [1.0] * 32})
    with pytest.raises(TypeError, match="hold numbers"):
        Transformer(cfg, {**good, "norm": np.array(["a"] * 32)})
    with pytest.raises(ValueError, match="NaN or infinite"):
        Transformer(cfg, {**good, "norm": np.full(32, np.nan)})
    with pytest.raises(ValueError, match="NaN or infinite"):  # fine in float32, overflows float16
        Transformer(Config(**BASE, dtype="float16"), {**good, "norm": np.full(32, 1e6)})
    with pytest.raises(TypeError, match="dict of arrays"):
        Transformer(cfg, [1, 2])


def test_weights_are_cast_viewable_and_counted():
    cfg = Config(**BASE)
    src = {n: np.random.default_rng(0).standard_normal(s) for n, s in weight_shapes(cfg).items()}  # float64
    m = Transformer(cfg, src)
    assert set(m.weights) == set(src)
    for n, w in m.weights.items():
        assert w.dtype == np.float32
        np.testing.assert_allclose(w, src[n].astype(np.float32))
    # by hand: embed + lm_head 2*50*32, per layer 2*32 norms + q 32*32 + k,v 2*32*16 + o 32*32 + mlp 3*32*64, final norm 32
    per_layer = 64 + 1024 + 1024 + 1024 + 6144
    assert m.num_params == 3200 + 2 * per_layer + 32
    assert m.weight_bytes == 4 * m.num_params


def test_random_weights_are_seeded():
    cfg = Config(**BASE)
    a, b, c = Transformer.random(cfg, 3), Transformer.random(cfg, 3), Transformer.random(cfg, 4)
    np.testing.assert_array_equal(a.weights["layers.1.w_up"], b.weights["layers.1.w_up"])
    assert not np.array_equal(a.weights["layers.1.w_up"], c.weights["layers.1.w_up"])


# --------------------------------------------------------------------------- forward


@pytest.fixture
def m():
    return Transformer.random(Config(**BASE), seed=0)


def test_forward_is_causal(m):
    ids = [1, 2, 3, 4, 5, 6]
    a = m.forward(ids)
    b = m.forward(ids[:3] + [40, 41, 42])
    np.testing.assert_allclose(a[:3], b[:3], atol=1e-6)  # the past never sees the future
    assert np.abs(a[3:] - b[3:]).max() > 1e-3  # and the future does see the present


def test_position_matters(m):
    """RoPE makes order visible: the same bag of tokens in another order predicts differently."""
    assert np.abs(m.forward([1, 2, 3])[-1] - m.forward([2, 1, 3])[-1]).max() > 1e-3


def test_rope_depends_only_on_relative_position():
    cfg = Config(**BASE)
    cos, sin = rope_tables(cfg, np)
    rng = np.random.default_rng(0)
    q, k = rng.standard_normal((2, 1, 1, cfg.head_dim)).astype(np.float32)

    def score(i, j):
        qi = apply_rope(q, cos[i : i + 1], sin[i : i + 1], np)
        kj = apply_rope(k, cos[j : j + 1], sin[j : j + 1], np)
        return float((qi * kj).sum())

    assert score(5, 2) == pytest.approx(score(13, 10), abs=1e-5)
    assert score(5, 2) != pytest.approx(score(5, 3), abs=1e-3)
    rotated = apply_rope(q, cos[7:8], sin[7:8], np)
    assert np.linalg.norm(rotated) == pytest.approx(np.linalg.norm(q), rel=1e-6)  # a pure rotation
    np.testing.assert_allclose(apply_rope(q, cos[:1], sin[:1], np), q)  # position 0: no turn


def test_grouped_query_attention_equals_multi_head_with_shared_kv():
    """GQA with KV heads = MHA whose K/V heads are copies: query head h reads KV head h // G."""
    gqa_cfg = Config(**{**BASE, "n_heads": 4, "n_kv_heads": 2})
    mha_cfg = Config(**{**BASE, "n_heads": 4, "n_kv_heads": 4})
    gqa = Transformer.random(gqa_cfg, seed=5)
    hd, G = gqa_cfg.head_dim, 2
    w = {n: np.array(a) for n, a in gqa.weights.items()}
    for i in range(gqa_cfg.n_layers):
        for name in ("wk", "wv"):
            heads = w[f"layers.{i}.{name}"].reshape(32, 2, hd)  # [D, KV, hd]
            w[f"layers.{i}.{name}"] = np.repeat(heads, G, axis=1).reshape(32, 4 * hd)  # [D, H, hd]
    mha = Transformer(mha_cfg, w)
    ids = [7, 3, 9, 1, 0, 22, 4]
    np.testing.assert_allclose(gqa.forward(ids), mha.forward(ids), atol=1e-5)


def test_trace_shapes_and_meaning(m):
    cfg = m.config
    ids = [4, 8, 15, 16, 23]
    cache = m.new_cache()
    m.forward(ids[:2], cache=cache)
    logits, tr = m.forward(ids[2:], cache=cache, trace=True)  # T=3 new, S=5
    assert tr.start == 2
    assert len(tr.attn) == len(tr.scores) == cfg.n_layers and len(tr.hidden) == cfg.n_layers + 1
    for a, s in zip(tr.attn, tr.scores):
        assert a.shape == s.shape == (cfg.n_heads, 3, 5)
        np.testing.assert_allclose(a.sum(-1), 1.0, atol=1e-6)
        # new position 2+i sees keys 0..2+i only
        for i in range(3):
            assert np.all(a[:, i, 3 + i :] == 0) and np.all(np.isneginf(s[:, i, 3 + i :]))
            assert np.all(np.isfinite(s[:, i, : 3 + i]))
        expected = np.exp(s - s.max(-1, keepdims=True))
        np.testing.assert_allclose(a, expected / expected.sum(-1, keepdims=True), atol=1e-6)
    np.testing.assert_array_equal(tr.hidden[0], m.weights["embed"][ids[2:]])
    np.testing.assert_allclose(m.logits_from_hidden(tr.hidden[-1]), logits, atol=1e-6)  # logit lens, last layer
    assert m.logits_from_hidden(tr.hidden[1]).shape == (3, cfg.vocab_size)


def test_last_only_is_the_last_row(m):
    ids = [1, 2, 3, 4]
    np.testing.assert_allclose(m.forward(ids, last_only=True), m.forward(ids)[-1:], atol=1e-6)


def test_float16_model_tracks_float32():
    c32 = Config(**BASE)
    c16 = Config(**{**BASE, "dtype": "float16"})
    m32 = Transformer.random(c32, seed=2)
    m16 = Transformer(c16, {n: np.array(w) for n, w in m32.weights.items()})
    ids = [5, 1, 30, 12, 7, 7, 2]
    l32, l16 = m32.forward(ids), m16.forward(ids)
    assert l16.dtype == np.float32 and m16.weights["lm_head"].dtype == np.float16
    assert m16.weight_bytes * 2 == m32.weight_bytes
    assert np.abs(l32 - l16).max() < 0.05 * np.abs(l32).max()
    assert (l32.argmax(-1) == l16.argmax(-1)).mean() >= 0.8
    cache = m16.new_cache()
    m16.forward(ids[:3], cache=cache)
    step = np.concatenate([m16.forward([t], cache=cache) for t in ids[3:]])
    np.testing.assert_allclose(step, l16[3:], atol=0.05 * np.abs(l16).max())


@pytest.mark.parametrize("ids, exc, msg", [
    ([], ValueError, "empty"),
    ("hello", TypeError, "encode it first"),
    ([1, 2.0], TypeError, "must be ints"),
    ([1, True], TypeError, "must be ints"),
    ([1, "2"], TypeError, "must be ints"),
    ([[1, 2]], TypeError, "must be ints"),
    (np.array([[1, 2]]), ValueError, "1-D"),
    (np.array([1.0, 2.0]), TypeError, "integers"),
    ([1, 50], ValueError, "outside the vocabulary 0 .. 49"),
    ([-1], ValueError, "outside the vocabulary"),
    (None, TypeError, "list of ints"),
    (list(range(17)), ValueError, "context window is 16"),
])
def test_bad_token_ids_are_refused(m, ids, exc, msg):
    with pytest.raises(exc, match=msg):
        m.forward(ids)


def test_numpy_int_ids_are_fine(m):
    np.testing.assert_allclose(m.forward(np.array([1, 2, 3], dtype=np.int32)), m.forward([1, 2, 3]))
    np.testing.assert_allclose(m.forward((np.int64(1), 2)), m.forward([1, 2]))


# --------------------------------------------------------------------------- backend and imports


def test_backend_choice_is_checked():
    from engine.arrays import get_xp, to_numpy, xp_name

    assert get_xp("numpy") is np and xp_name(np) == "numpy"
    with pytest.raises(ValueError, match="unknown backend 'torch'"):
        get_xp("torch")
    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="needs CuPy"):
            get_xp("cupy")
    a = np.arange(3)
    assert to_numpy(a) is a


def test_engine_imports_without_the_course_parts_and_without_torch():
    """Pyodide ships neither torch nor our optional modules at import time."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "sys.modules['engine.tokenizer'] = None; sys.modules['engine.course'] = None\n"
        "sys.modules['torch'] = None; sys.modules['transformers'] = None; sys.modules['cupy'] = None\n"
        "import engine, engine.hf, engine.analysis.costs, engine.analysis.model_shapes\n"
        "from engine import Config, Transformer, KVCache, SamplingParams, Generator, Step\n"
        "try:\n    engine.Tokenizer\nexcept ImportError:\n    print('lazy ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=str(__import__("pathlib").Path(__file__).resolve().parents[2]))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "lazy ok"


def test_hf_config_mapping_refuses_what_the_engine_cannot_run():
    from engine.hf import config_from_hf, config_to_hf_kwargs, weights_from_hf, weights_to_hf

    cfg = Config(**BASE, rope_theta=500000.0)
    d = config_to_hf_kwargs(cfg)
    assert config_from_hf(d) == cfg
    assert config_from_hf({**d, "rope_theta": None, "rope_parameters": {"rope_theta": 500000.0, "rope_type": "default"}}) == cfg
    with pytest.raises(ValueError, match="RoPE scaling"):
        config_from_hf({**d, "rope_scaling": {"rope_type": "llama3", "factor": 8.0}})
    with pytest.raises(ValueError, match="attention_bias"):
        config_from_hf({**d, "attention_bias": True})
    with pytest.raises(ValueError, match="activation 'gelu'"):
        config_from_hf({**d, "hidden_act": "gelu"})
    m = Transformer.random(cfg, seed=0)
    sd = weights_to_hf(m.weights, cfg)
    assert sd["model.layers.0.self_attn.k_proj.weight"].shape == (16, 32)  # torch Linear layout [out, in]
    tied = {k: v for k, v in sd.items() if k != "lm_head.weight"}
    assert np.array_equal(weights_from_hf(tied, cfg)["lm_head"], m.weights["embed"].T)
    with pytest.raises(ValueError, match="lacks 1 weight"):
        weights_from_hf({k: v for k, v in sd.items() if k != "model.norm.weight"}, cfg)


# --------------------------------------------------------------------------- sliding window


def test_sliding_window_mask_hides_the_future_and_the_old():
    from engine.model import attention_mask

    c = Config(**{**BASE, "sliding_window": 3})
    hidden = attention_mask(c, pos=2, T=3, key_pos=None, xp=np)  # queries at 2, 3, 4; keys 0 .. 4
    sees = [[int(not h) for h in row] for row in hidden]
    assert sees == [[1, 1, 1, 0, 0], [0, 1, 1, 1, 0], [0, 0, 1, 1, 1]]
    assert attention_mask(Config(**BASE), pos=7, T=1, key_pos=None, xp=np) is None  # decode, no window
    slots = attention_mask(c, pos=9, T=1, key_pos=np.array([9, 7, 8, 6]), xp=np)  # slots out of order
    assert [int(not h) for h in slots[0]] == [1, 1, 1, 0]


@pytest.mark.parametrize("W", [1, 3, 5])
def test_one_layer_with_a_window_sees_only_the_last_w_tokens(W):
    """RoPE scores depend on relative positions only, so in a one-layer model the last
    position with window W must give the logits of the same model fed only the last W
    tokens -- an independent check of the window mask (cache or no cache)."""
    c = Config(**{**BASE, "n_layers": 1})
    windowed = Transformer(Config(**{**BASE, "n_layers": 1, "sliding_window": W}),
                           Transformer.random(c, seed=3).weights)
    plain = Transformer.random(c, seed=3)
    ids = list(np.random.default_rng(W).integers(0, 50, size=11))
    want = plain.forward(ids[-W:])[-1]
    np.testing.assert_allclose(windowed.forward(ids)[-1], want, atol=1e-5)
    cache = windowed.new_cache()
    windowed.forward(ids[:6], cache=cache)
    for t in ids[6:]:
        got = windowed.forward([t], cache=cache)[-1]
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert not np.allclose(plain.forward(ids)[-1], want, atol=1e-3)  # the window matters here
