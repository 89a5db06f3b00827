"""The NumPy training code: hand-written gradients, the same model as the engine, Adam."""
import numpy as np
import pytest

from engine.config import Config
from engine.model import Transformer, weight_shapes
from engine.training.adam import AdamW, clip_by_global_norm, lr_at
from engine.training.grad import cross_entropy, forward, init_params, loss_and_grads, rope_bwd, rope_fwd, rope_tables
from engine.training.train import TrainSettings, batches, main, model_bytes, prepare_data, train

TINY = Config(vocab_size=13, d_model=8, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=12, max_seq_len=16)


def _tiny_params(seed=0):
    """float64 weights with norm gains away from 1, so their gradients are exercised too."""
    params = init_params(TINY, seed, dtype=np.float64)
    rng = np.random.default_rng(seed + 100)
    for name, w in params.items():
        if w.ndim == 1:
            w += 0.2 * rng.standard_normal(w.shape)
    return params


def _loss(params, ids, targets):
    return cross_entropy(forward(params, ids, TINY)[0], targets)[0]


@pytest.mark.parametrize("name", list(weight_shapes(TINY)))
def test_gradient_matches_finite_differences(name):
    """Every parameter tensor, every entry: central differences in float64."""
    params = _tiny_params()
    rng = np.random.default_rng(1)
    ids = rng.integers(0, TINY.vocab_size, (2, 6))
    targets = rng.integers(0, TINY.vocab_size, (2, 6))
    _, grads = loss_and_grads(params, ids, targets, TINY)
    w = params[name]
    numeric = np.zeros_like(w)
    eps = 1e-6
    for idx in np.ndindex(w.shape):
        old = w[idx]
        w[idx] = old + eps
        up = _loss(params, ids, targets)
        w[idx] = old - eps
        down = _loss(params, ids, targets)
        w[idx] = old
        numeric[idx] = (up - down) / (2 * eps)
    assert grads[name].shape == w.shape
    rel = np.abs(numeric - grads[name]).max() / np.abs(numeric).max()
    assert rel < 1e-6, f"{name}: relative error {rel:.2e}"


def test_repeated_tokens_accumulate_embedding_gradients():
    params = _tiny_params()
    ids = np.array([[3, 3, 3, 5]])
    _, grads = loss_and_grads(params, ids, np.array([[1, 2, 3, 4]]), TINY)
    used = np.flatnonzero(np.abs(grads["embed"]).sum(axis=1))
    assert used.tolist() == [3, 5]


def test_rope_backward_is_the_inverse_rotation():
    cos, sin = rope_tables(TINY, 5, np.float64)
    x = np.random.default_rng(0).standard_normal((1, 5, 2, TINY.head_dim))
    assert np.allclose(rope_bwd(rope_fwd(x, cos, sin), cos, sin), x)


def test_training_forward_equals_engine_forward():
    """Same weights, same logits: the trained weights mean the same thing in the engine."""
    c = Config(vocab_size=50, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, ffn_dim=48, max_seq_len=24)
    params = init_params(c, seed=3)
    rng = np.random.default_rng(4)
    for w in params.values():
        if w.ndim == 1:
            w += np.float32(0.3) * rng.standard_normal(w.shape).astype(np.float32)
    ids = rng.integers(0, c.vocab_size, (3, 24))
    ours, _ = forward(params, ids, c)  # [3, 24, V]
    model = Transformer(c, params)
    for b in range(3):
        theirs = model.forward(ids[b].tolist())
        assert np.abs(theirs - ours[b]).max() <= 1e-5
    cached = model.new_cache()  # the cached path, token by token, agrees as well
    steps = np.concatenate([model.forward([int(t)], cache=cached) for t in ids[0]])
    assert np.abs(steps - ours[0]).max() <= 1e-5


def test_causal_mask_future_tokens_do_not_change_earlier_logits():
    params = _tiny_params()
    a = np.array([[1, 2, 3, 4, 5, 6]])
    b = a.copy()
    b[0, 4:] = [7, 8]
    la, lb = forward(params, a, TINY)[0], forward(params, b, TINY)[0]
    assert np.allclose(la[0, :4], lb[0, :4]) and not np.allclose(la[0, 4:], lb[0, 4:])


# --------------------------------------------------------------------------- optimiser


def test_adam_first_step_moves_each_weight_by_lr_in_the_gradient_sign():
    """With bias correction the first update is lr * g / |g| (the textbook property)."""
    params = {"w": np.array([[1.0, -2.0], [0.5, 3.0]])}
    grads = {"w": np.array([[0.1, -4.0], [2e-3, 7.0]])}
    opt = AdamW(params, eps=1e-12)
    opt.step(params, grads, lr=0.01)
    assert np.allclose(params["w"], [[0.99, -1.99], [0.49, 2.99]])


def test_adam_minimises_a_quadratic_and_decays_only_matrices():
    target = np.array([[3.0, -1.0]])
    params = {"w": np.zeros((1, 2)), "g": np.zeros(2)}
    opt = AdamW(params, weight_decay=0.0)
    for step in range(500):
        grads = {"w": 2 * (params["w"] - target), "g": 2 * (params["g"] - target[0])}
        opt.step(params, grads, lr=lr_at(step, 500, 0.1, 10, 0.01))
    assert np.allclose(params["w"], target, atol=1e-2) and np.allclose(params["g"], target[0], atol=1e-2)
    decayed = {"w": np.ones((2, 2)), "g": np.ones(2)}
    AdamW(decayed, weight_decay=0.5).step(decayed, {"w": np.zeros((2, 2)), "g": np.zeros(2)}, lr=0.1)
    assert np.allclose(decayed["w"], 0.95) and np.allclose(decayed["g"], 1.0)


def test_schedule_warms_up_then_decays_to_the_floor():
    lrs = [lr_at(s, 100, 1.0, 10, 0.1) for s in range(100)]
    assert lrs[0] == pytest.approx(0.1) and lrs[9] == pytest.approx(1.0)
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:]))
    assert lrs[-1] == pytest.approx(0.1, abs=1e-3)


def test_clip_by_global_norm():
    grads = {"a": np.array([3.0]), "b": np.array([4.0])}
    assert clip_by_global_norm(grads, 1.0) == pytest.approx(5.0)
    assert np.allclose([grads["a"][0], grads["b"][0]], [0.6, 0.8])


# --------------------------------------------------------------------------- the loop

SMALL = TrainSettings(n_docs=200, vocab_size=300, d_model=16, n_layers=1, n_heads=2, n_kv_heads=1,
                      ffn_dim=32, max_seq_len=32, steps=60, batch_size=4, seq_len=32, lr=2e-2, warmup=5)


def test_batches_start_at_documents_and_shift_targets_by_one():
    docs, tok, stream, starts = prepare_data(SMALL)
    ids, targets = next(batches(stream, starts, 4, 16, seed=0))
    assert ids.shape == targets.shape == (4, 16)
    assert np.array_equal(ids[:, 1:], targets[:, :-1])
    first_tokens = set(stream[starts].tolist())
    assert set(ids[:, 0].tolist()) <= first_tokens


def test_training_lowers_the_loss_and_is_deterministic():
    c1, p1, _, _, h1 = train(SMALL)
    c2, p2, _, _, h2 = train(SMALL)
    assert h1 == h2 and all(np.array_equal(p1[k], p2[k]) for k in p1)
    assert np.mean(h1[-5:]) < 0.75 * h1[0]  # 6.1 -> 3.8 when measured
    # a different seed is a different run
    _, p3, _, _, _ = train(TrainSettings(**{**SMALL.__dict__, "seed": 1}))
    assert not np.array_equal(p1["embed"], p3["embed"])


def test_cli_writes_loadable_files(tmp_path, capsys, monkeypatch):
    import engine.training.train as train_mod
    from engine.course import read_model_file
    from engine.tokenizer import Tokenizer

    monkeypatch.setattr(train_mod, "TrainSettings", lambda: SMALL)
    assert main(["--out", str(tmp_path), "--steps", "3", "--seed", "2", "--every", "1"]) == 0
    out = capsys.readouterr().out
    assert "step     3/3" in out and "s total" in out and "ms/step" in out
    config, weights, meta = read_model_file((tmp_path / "course_model.npz").read_bytes())
    tok = Tokenizer.load(tmp_path / "tokenizer.json")
    assert config.vocab_size == tok.vocab_size and meta["settings"]["seed"] == 2
    Transformer(config, weights).forward(tok.encode("The cat"))
    assert (tmp_path / "corpus.json").exists()


def test_model_file_is_float16_with_config():
    c = SMALL.model_config(300)
    params = init_params(c, 0)
    data = model_bytes(c, params, {"x": 1})
    with np.load(__import__("io").BytesIO(data), allow_pickle=False) as z:
        assert z["embed"].dtype == np.float16 and "config" in z.files
