"""The training forward pass and its backward pass, written out by hand in NumPy.

The forward pass is the same Llama-style model as engine/model.py (same weight names and
``x @ W`` layout, RMSNorm, RoPE in the rotate_half convention, grouped-query causal
attention, SwiGLU, untied head), but over a batch of equal-length sequences and keeping
every activation the backward pass needs. tests/engine/training/test_train.py checks that the two
forward passes give the same logits and that every gradient here matches finite differences.

Shapes, one alphabet:
    B  sequences in the batch     T   positions per sequence     D   d_model
    H  query heads                KV  key/value heads            G   H // KV
    hd head_dim                   F   ffn_dim                    V   vocab_size

The dtype of the parameters is the dtype of the computation: float32 for training, float64
for the finite-difference check.
"""
from __future__ import annotations

import numpy as np

from engine.config import Config
from engine.model import weight_shapes

# --------------------------------------------------------------------------- init


def init_params(c: Config, seed: int, dtype=np.float32) -> dict[str, np.ndarray]:
    """Fresh weights for training.

    Matrices: normal with std 1/sqrt(fan_in), so every projection keeps activations O(1);
    the two matrices that write into the residual stream (wo, w_down) are further divided by
    sqrt(2 * n_layers) so the stream does not grow with depth. Norm gains: 1.
    Embeddings: small (std 0.02, as in GPT-2). RMSNorm follows them, so their scale does not
    matter to the forward pass, but it decides what the semantic map of plate 3 shows: with
    a small start, what training wrote into a row outweighs the random numbers it began as.
    """
    rng = np.random.default_rng(seed)
    params = {}
    for name, shape in weight_shapes(c).items():
        if len(shape) == 1:
            w = np.ones(shape)
        elif name == "embed":
            w = 0.02 * rng.standard_normal(shape)
        else:
            w = rng.standard_normal(shape) / np.sqrt(shape[0])
            if name.endswith(("wo", "w_down")):
                w /= np.sqrt(2 * c.n_layers)
        params[name] = w.astype(dtype)
    return params


# --------------------------------------------------------------------------- pieces
# Each forward helper returns (output, saved); its backward takes (d_output, saved).


def rmsnorm_fwd(x, w, eps):
    """x [..., D] -> x / sqrt(mean(x^2) + eps) * w."""
    r = 1.0 / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps)  # [..., 1]
    xn = x * r
    return xn * w, (xn, r, w)


def rmsnorm_bwd(dy, saved):
    """-> (dx, dw). With xn = x * r: dx = r * (dxn - xn * mean(dxn * xn))."""
    xn, r, w = saved
    dw = (dy * xn).reshape(-1, xn.shape[-1]).sum(axis=0)
    dxn = dy * w
    dx = r * (dxn - xn * (dxn * xn).mean(axis=-1, keepdims=True))
    return dx, dw


def rope_tables(c: Config, T: int, dtype):
    """cos, sin [T, hd], computed like engine.model.rope_tables (float64, then cast)."""
    hd = c.head_dim
    inv_freq = 1.0 / c.rope_theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd)  # [hd/2]
    angles = np.outer(np.arange(T, dtype=np.float64), inv_freq)  # [T, hd/2]
    angles = np.concatenate([angles, angles], axis=-1)  # [T, hd]
    return np.cos(angles).astype(dtype), np.sin(angles).astype(dtype)


def _rotate_half(x):
    """(x1, x2) -> (-x2, x1) on the last axis; its transpose is (x1, x2) -> (x2, -x1)."""
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def rope_fwd(x, cos, sin):
    """x [B, T, N, hd] rotated by position; cos, sin [T, hd]."""
    return x * cos[:, None, :] + _rotate_half(x) * sin[:, None, :]


def rope_bwd(dy, cos, sin):
    """A rotation's gradient is the inverse rotation: dx = dy*cos + R^T(dy*sin), R^T = -R."""
    return dy * cos[:, None, :] - _rotate_half(dy * sin[:, None, :])


def attention_fwd(h, wq, wk, wv, wo, c: Config, cos, sin):
    """Causal grouped-query attention: h [B, T, D] -> [B, T, D]."""
    B, T, D = h.shape
    H, KV, hd = c.n_heads, c.n_kv_heads, c.head_dim
    G = H // KV
    q = rope_fwd((h @ wq).reshape(B, T, H, hd), cos, sin).transpose(0, 2, 1, 3)  # [B, H, T, hd]
    k = rope_fwd((h @ wk).reshape(B, T, KV, hd), cos, sin).transpose(0, 2, 1, 3)  # [B, KV, T, hd]
    v = (h @ wv).reshape(B, T, KV, hd).transpose(0, 2, 1, 3)  # [B, KV, T, hd]
    kk = np.repeat(k, G, axis=1)  # [B, H, T, hd]: query head j reads KV head j // G
    vv = np.repeat(v, G, axis=1)  # [B, H, T, hd]
    scale = 1.0 / np.sqrt(hd)
    s = (q @ kk.transpose(0, 1, 3, 2)) * scale  # [B, H, T, T]
    s = np.where(np.triu(np.ones((T, T), dtype=bool), 1), -np.inf, s)  # causal mask
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    p /= p.sum(axis=-1, keepdims=True)  # [B, H, T, T]
    o = (p @ vv).transpose(0, 2, 1, 3).reshape(B, T, H * hd)  # [B, T, H*hd]
    return o @ wo, (h, q, kk, vv, p, o, scale)


def attention_bwd(dy, saved, wq, wk, wv, wo, c: Config, cos, sin):
    """-> dh [B, T, D] and the gradients of wq, wk, wv, wo."""
    h, q, kk, vv, p, o, scale = saved
    B, T, D = h.shape
    H, KV, hd = c.n_heads, c.n_kv_heads, c.head_dim
    G = H // KV
    dwo = o.reshape(-1, H * hd).T @ dy.reshape(-1, D)
    do = (dy @ wo.T).reshape(B, T, H, hd).transpose(0, 2, 1, 3)  # [B, H, T, hd]
    dp = do @ vv.transpose(0, 1, 3, 2)  # [B, H, T, T]
    dvv = p.transpose(0, 1, 3, 2) @ do  # [B, H, T, hd]
    ds = p * (dp - (dp * p).sum(axis=-1, keepdims=True)) * scale  # softmax backward; masked p = 0
    dq = ds @ kk  # [B, H, T, hd]
    dkk = ds.transpose(0, 1, 3, 2) @ q  # [B, H, T, hd]
    dk = dkk.reshape(B, KV, G, T, hd).sum(axis=2)  # each KV head collects its G query heads
    dv = dvv.reshape(B, KV, G, T, hd).sum(axis=2)
    dq = rope_bwd(dq.transpose(0, 2, 1, 3), cos, sin).reshape(B * T, H * hd)
    dk = rope_bwd(dk.transpose(0, 2, 1, 3), cos, sin).reshape(B * T, KV * hd)
    dv = dv.transpose(0, 2, 1, 3).reshape(B * T, KV * hd)
    h2 = h.reshape(-1, D)
    dwq, dwk, dwv = h2.T @ dq, h2.T @ dk, h2.T @ dv
    dh = (dq @ wq.T + dk @ wk.T + dv @ wv.T).reshape(B, T, D)
    return dh, dwq, dwk, dwv, dwo


def mlp_fwd(h, w_gate, w_up, w_down):
    """SwiGLU: (silu(h @ w_gate) * (h @ w_up)) @ w_down, h [B, T, D] -> [B, T, D]."""
    g = h @ w_gate  # [B, T, F]
    u = h @ w_up  # [B, T, F]
    sig = 0.5 + 0.5 * np.tanh(0.5 * g)  # sigmoid(g) without overflow
    m = g * sig * u  # [B, T, F]
    return m @ w_down, (h, g, u, sig, m)


def mlp_bwd(dy, saved, w_gate, w_up, w_down):
    """-> dh and the gradients of w_gate, w_up, w_down."""
    h, g, u, sig, m = saved
    D, F = h.shape[-1], g.shape[-1]
    dw_down = m.reshape(-1, F).T @ dy.reshape(-1, D)
    dm = dy @ w_down.T  # [B, T, F]
    silu = g * sig
    du = dm * silu
    dg = dm * u * (sig * (1.0 + g * (1.0 - sig)))  # d silu/dg = sig + g sig (1 - sig)
    h2 = h.reshape(-1, D)
    dw_gate = h2.T @ dg.reshape(-1, F)
    dw_up = h2.T @ du.reshape(-1, F)
    dh = dg @ w_gate.T + du @ w_up.T
    return dh, dw_gate, dw_up, dw_down


# --------------------------------------------------------------------------- the model


def forward(params, ids, c: Config):
    """Logits [B, T, V] for ids [B, T] (every row from position 0), plus what backward needs."""
    B, T = ids.shape
    dtype = params["embed"].dtype
    cos, sin = rope_tables(c, T, dtype)
    x = params["embed"][ids]  # [B, T, D]
    saved_layers = []
    for i in range(c.n_layers):
        p = f"layers.{i}."
        h, s_n1 = rmsnorm_fwd(x, params[p + "attn_norm"], c.norm_eps)
        a, s_at = attention_fwd(h, params[p + "wq"], params[p + "wk"], params[p + "wv"], params[p + "wo"], c, cos, sin)
        x = x + a
        h, s_n2 = rmsnorm_fwd(x, params[p + "mlp_norm"], c.norm_eps)
        m, s_mlp = mlp_fwd(h, params[p + "w_gate"], params[p + "w_up"], params[p + "w_down"])
        x = x + m
        saved_layers.append((s_n1, s_at, s_n2, s_mlp))
    hn, s_norm = rmsnorm_fwd(x, params["norm"], c.norm_eps)
    logits = hn @ params["lm_head"]  # [B, T, V]
    return logits, (ids, cos, sin, saved_layers, s_norm, hn)


def cross_entropy(logits, targets):
    """Mean next-token loss over all positions, and d loss / d logits. logits [B, T, V]."""
    V = logits.shape[-1]
    z = logits.reshape(-1, V)
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    probs = e / e.sum(axis=-1, keepdims=True)  # [B*T, V]
    t = targets.reshape(-1)
    n = t.shape[0]
    loss = -np.log(probs[np.arange(n), t]).mean()
    probs[np.arange(n), t] -= 1.0
    return float(loss), (probs / n).reshape(logits.shape)


def backward(dlogits, params, saved, c: Config) -> dict[str, np.ndarray]:
    """Gradients of every parameter, from d loss / d logits [B, T, V]."""
    ids, cos, sin, saved_layers, s_norm, hn = saved
    V = dlogits.shape[-1]
    D = c.d_model
    grads = {"lm_head": hn.reshape(-1, D).T @ dlogits.reshape(-1, V)}
    dx, grads["norm"] = rmsnorm_bwd(dlogits @ params["lm_head"].T, s_norm)
    for i in reversed(range(c.n_layers)):
        p = f"layers.{i}."
        s_n1, s_at, s_n2, s_mlp = saved_layers[i]
        dh, grads[p + "w_gate"], grads[p + "w_up"], grads[p + "w_down"] = mlp_bwd(
            dx, s_mlp, params[p + "w_gate"], params[p + "w_up"], params[p + "w_down"])
        dxn, grads[p + "mlp_norm"] = rmsnorm_bwd(dh, s_n2)
        dx = dx + dxn
        dh, grads[p + "wq"], grads[p + "wk"], grads[p + "wv"], grads[p + "wo"] = attention_bwd(
            dx, s_at, params[p + "wq"], params[p + "wk"], params[p + "wv"], params[p + "wo"], c, cos, sin)
        dxn, grads[p + "attn_norm"] = rmsnorm_bwd(dh, s_n1)
        dx = dx + dxn
    dembed = np.zeros_like(params["embed"])
    np.add.at(dembed, ids.reshape(-1), dx.reshape(-1, D))  # rows of repeated tokens add up
    grads["embed"] = dembed
    return grads


def loss_and_grads(params, ids, targets, c: Config):
    """One training evaluation: (mean loss, gradients) for ids, targets [B, T]."""
    logits, saved = forward(params, ids, c)
    loss, dlogits = cross_entropy(logits, targets)
    return loss, backward(dlogits, params, saved, c)
