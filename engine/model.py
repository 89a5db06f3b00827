"""A decoder-only Transformer of the Llama family, in NumPy (or CuPy), top to bottom.

    rmsnorm -> rope -> attention (grouped-query, KV cache) -> mlp (SwiGLU) -> block -> Transformer

Shapes, in one alphabet used in every comment below:
    T   new tokens in this call          S   positions attended (cache length + T)
    D   d_model                          V   vocab_size
    H   query heads                      KV  key/value heads (H % KV == 0)
    G   H // KV, query heads per KV head hd  head_dim = D // H
    F   ffn_dim                          L   n_layers

Weights: a dict of arrays whose names mirror Hugging Face's LlamaForCausalLM, stored in
``x @ W`` layout (the transpose of ``torch.nn.Linear.weight``):

    embed                 [V, D]        model.embed_tokens.weight
    layers.{i}.attn_norm  [D]           model.layers.{i}.input_layernorm.weight
    layers.{i}.wq         [D, H*hd]     model.layers.{i}.self_attn.q_proj.weight.T
    layers.{i}.wk         [D, KV*hd]    model.layers.{i}.self_attn.k_proj.weight.T
    layers.{i}.wv         [D, KV*hd]    model.layers.{i}.self_attn.v_proj.weight.T
    layers.{i}.wo         [H*hd, D]     model.layers.{i}.self_attn.o_proj.weight.T
    layers.{i}.mlp_norm   [D]           model.layers.{i}.post_attention_layernorm.weight
    layers.{i}.w_gate     [D, F]        model.layers.{i}.mlp.gate_proj.weight.T
    layers.{i}.w_up       [D, F]        model.layers.{i}.mlp.up_proj.weight.T
    layers.{i}.w_down     [F, D]        model.layers.{i}.mlp.down_proj.weight.T
    norm                  [D]           model.norm.weight
    lm_head               [D, V]        lm_head.weight.T  (untied from embed)

Internally wq|wk|wv and w_gate|w_up are stored side by side so each is one matmul;
``model.weights`` holds views into them under the names above.
Numerics follow HF: RMSNorm and softmax in float32, matmuls in the model's dtype.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from engine.arrays import xp_name
from engine.caches.base import BaseCache, Cache
from engine.caches.contiguous import KVCache
from engine.checks import check_fits, check_ids, check_int
from engine.config import Config

# --------------------------------------------------------------------------- weights


def weight_shapes(c: Config) -> dict[str, tuple[int, ...]]:
    """Every weight name the model needs and its shape, in model order."""
    D, F, V, hd = c.d_model, c.ffn_dim, c.vocab_size, c.head_dim
    shapes = {"embed": (V, D)}
    for i in range(c.n_layers):
        p = f"layers.{i}."
        shapes.update({
            p + "attn_norm": (D,),
            p + "wq": (D, c.n_heads * hd),
            p + "wk": (D, c.n_kv_heads * hd),
            p + "wv": (D, c.n_kv_heads * hd),
            p + "wo": (c.n_heads * hd, D),
            p + "mlp_norm": (D,),
            p + "w_gate": (D, F),
            p + "w_up": (D, F),
            p + "w_down": (F, D),
        })
    shapes.update({"norm": (D,), "lm_head": (D, V)})
    return shapes


# --------------------------------------------------------------------------- rmsnorm


def rmsnorm(x, w, eps: float):
    """x [T, D] / rms(x) * w [D] -> [T, D]; the mean square is taken in float32."""
    x32 = x.astype("float32", copy=False)
    ms = (x32 * x32).sum(axis=-1, keepdims=True) * (1.0 / x.shape[-1])  # [T, 1] mean square
    return w * (x32 / (ms + eps) ** 0.5).astype(x.dtype, copy=False)


# --------------------------------------------------------------------------- rope


def rope_tables(c: Config, xp):
    """cos, sin [max_seq_len, hd] for rotary position embedding (HF Llama convention).

    Frequency i (0 <= i < hd/2) turns at theta^(-2i/hd) radians per position; the table
    repeats the hd/2 angles twice because rotate_half pairs dimension j with j + hd/2.
    """
    hd = c.head_dim
    inv_freq = 1.0 / c.rope_theta ** (np.arange(0, hd, 2, dtype=np.float64) / hd)  # [hd/2]
    angles = np.outer(np.arange(c.max_seq_len, dtype=np.float64), inv_freq)  # [M, hd/2]
    angles = np.concatenate([angles, angles], axis=-1)  # [M, hd]
    return xp.asarray(np.cos(angles), dtype=c.dtype), xp.asarray(np.sin(angles), dtype=c.dtype)


def rotate_half(x, xp):
    """[..., hd]: (x1, x2) -> (-x2, x1), the two halves of the last axis."""
    h = x.shape[-1] // 2
    return xp.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def apply_rope(x, cos, sin, xp):
    """x [T, N, hd] rotated by the angles of its positions; cos, sin [T, hd]."""
    return x * cos[:, None, :] + rotate_half(x, xp) * sin[:, None, :]


# --------------------------------------------------------------------------- attention


def attention_softmax(s, xp):
    """Row-wise softmax of float32 scores [..., S] (masked entries are -inf)."""
    e = xp.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class Layer(NamedTuple):
    """One block's weights as the forward pass uses them (Q|K|V and gate|up side by side)."""

    attn_norm: object  # [D]
    wqkv: object  # [D, (H+2KV)*hd]
    wo: object  # [H*hd, D]
    mlp_norm: object  # [D]
    w_gate_up: object  # [D, 2F]
    w_down: object  # [F, D]


def attention_mask(c: Config, pos: int, T: int, key_pos, xp):
    """Which keys each new query may not see: bool [T, S], or None when it sees them all.

    Query i sits at position pos+i. A key at position p is hidden when it lies in the future
    (p > pos+i) or, with a sliding window W, when it has fallen out of the window
    (pos+i - p >= W) -- unless it is one of the first ``c.attention_sinks`` positions, which
    every query keeps seeing (StreamingLLM's attention sinks). ``key_pos`` [S] gives each key
    slot's position; None means slots 0 .. S-1 hold positions 0 .. S-1 (a plain cache, or none).
    """
    S = T + pos if key_pos is None else key_pos.shape[0]
    W = c.sliding_window
    if T == 1 and key_pos is None and (W is None or S <= W):
        return None  # one new token at the end of a full history: it may read every key
    kp = xp.arange(S) if key_pos is None else xp.asarray(key_pos)  # [S]
    qp = pos + xp.arange(T)  # [T]
    hidden = kp[None, :] > qp[:, None]  # [T, S] the future
    if W is not None:
        hidden |= (qp[:, None] - kp[None, :] >= W) & (kp[None, :] >= c.attention_sinks)  # [T, S] out of the window
    return hidden


def attention(x, layer: Layer, c: Config, cos, sin, pos: int, cache: Cache | None, index: int, xp):
    """Causal grouped-query self-attention of x [T, D] at positions pos .. pos+T-1.

    With a cache, the new K/V go into it (layer ``index``) and the queries attend to what
    the cache hands back; without one, pos is 0 and the queries attend to each other only.
    Returns (out [T, D], probs [H, T, S] float32, scores [H, T, S] float32, key_pos [S] or
    None: the position of each key, None when key i is position i).
    """
    T = x.shape[0]
    H, KV, hd = c.n_heads, c.n_kv_heads, c.head_dim
    G = H // KV
    qkv = (x @ layer.wqkv).reshape(T, H + 2 * KV, hd)  # [T, H+2KV, hd]
    qk = apply_rope(qkv[:, : H + KV], cos, sin, xp)  # [T, H+KV, hd]
    q = qk[:, :H].transpose(1, 0, 2)  # [H, T, hd]
    k = qk[:, H:].transpose(1, 0, 2)  # [KV, T, hd]
    v = qkv[:, H + KV :].transpose(1, 0, 2)  # [KV, T, hd]
    key_pos = None
    if cache is not None:
        k, v, key_pos = cache.store(index, k, v)  # [KV, S, hd] what the new queries may read
    S = k.shape[1]
    # query head h reads KV head h // G: group the queries instead of repeating K and V
    q = q.reshape(KV, G * T, hd)  # [KV, G*T, hd]
    scores = (q @ k.transpose(0, 2, 1)).reshape(H, T, S)  # [H, T, S]
    scores = scores.astype("float32", copy=False) * (1.0 / hd**0.5)
    hidden = attention_mask(c, pos, T, key_pos, xp)  # [T, S] or None
    if hidden is not None:
        scores = xp.where(hidden, -xp.inf, scores)  # [H, T, S]
    probs = attention_softmax(scores, xp)  # [H, T, S] float32
    observe = getattr(cache, "observe_attention", None)  # optional: a cache that evicts by attention (H2O)
    if observe is not None:
        observe(index, probs)
    out = probs.astype(x.dtype, copy=False).reshape(KV, G * T, S) @ v  # [KV, G*T, hd]
    out = out.reshape(H, T, hd).transpose(1, 0, 2).reshape(T, H * hd)  # [T, H*hd]
    return out @ layer.wo, probs, scores, key_pos  # [T, D]


# --------------------------------------------------------------------------- mlp


def mlp(x, w_gate_up, w_down, F: int, xp):
    """SwiGLU: (silu(x @ w_gate) * (x @ w_up)) @ w_down, x [T, D] -> [T, D]."""
    gu = x @ w_gate_up  # [T, 2F]
    g, u = gu[:, :F], gu[:, F:]  # [T, F] each
    silu = g * (0.5 + 0.5 * xp.tanh(0.5 * g))  # g * sigmoid(g), no overflow in exp
    return (silu * u) @ w_down  # [T, D]


# --------------------------------------------------------------------------- model


@dataclass
class Trace:
    """What one forward pass looked at, per layer (xp arrays, float32 for attn/scores).

    attn[l]    [H, T, S]  softmax attention weights of the new positions
    scores[l]  [H, T, S]  raw scaled Q.K scores (masked entries are -inf)
    hidden[l]  [T, D]     residual stream after layer l; hidden[0] = token embeddings
    key_pos[l] [S]        the position each of the S key columns holds (NumPy ints): 0 .. S-1
                          for a plain cache, another order for a rolling or evicting one
    start      position of the first new token
    """

    start: int
    attn: list = field(default_factory=list)
    scores: list = field(default_factory=list)
    hidden: list = field(default_factory=list)
    key_pos: list = field(default_factory=list)


class Transformer:
    """The weights plus the forward pass. Holds no run state: that lives in a KVCache."""

    def __init__(self, config: Config, weights: Mapping, xp=np):
        if not isinstance(config, Config):
            raise TypeError(f"Transformer needs an engine Config, got {type(config).__name__}")
        if not isinstance(weights, Mapping):
            raise TypeError(f"weights must be a dict of arrays, got {type(weights).__name__}")
        self.config = c = config
        self.xp = xp
        expected = weight_shapes(c)
        _check_weights(weights, expected)

        def load(name):
            with np.errstate(over="ignore"):  # an overflow to inf is reported just below
                w = xp.asarray(weights[name], dtype=c.dtype)
            if not bool(xp.isfinite(w).all()):
                raise ValueError(f"weight {name!r} holds NaN or infinite values (in {c.dtype})")
            return w

        H, KV, hd, F = c.n_heads, c.n_kv_heads, c.head_dim, c.ffn_dim
        self.embed = load("embed")  # [V, D]
        self.norm = load("norm")  # [D]
        self.lm_head = load("lm_head")  # [D, V]
        self.weights = {"embed": self.embed}
        self.layers: list[Layer] = []
        for i in range(c.n_layers):
            p = f"layers.{i}."
            wqkv = xp.concatenate([load(p + "wq"), load(p + "wk"), load(p + "wv")], axis=1)  # [D, (H+2KV)*hd]
            w_gate_up = xp.concatenate([load(p + "w_gate"), load(p + "w_up")], axis=1)  # [D, 2F]
            layer = Layer(attn_norm=load(p + "attn_norm"), wqkv=wqkv, wo=load(p + "wo"),
                          mlp_norm=load(p + "mlp_norm"), w_gate_up=w_gate_up, w_down=load(p + "w_down"))
            self.layers.append(layer)
            self.weights.update({
                p + "attn_norm": layer.attn_norm,
                p + "wq": wqkv[:, : H * hd],
                p + "wk": wqkv[:, H * hd : (H + KV) * hd],
                p + "wv": wqkv[:, (H + KV) * hd :],
                p + "wo": layer.wo,
                p + "mlp_norm": layer.mlp_norm,
                p + "w_gate": w_gate_up[:, :F],
                p + "w_up": w_gate_up[:, F:],
                p + "w_down": layer.w_down,
            })
        self.weights.update({"norm": self.norm, "lm_head": self.lm_head})
        self.cos, self.sin = rope_tables(c, xp)  # [max_seq_len, hd]

    # ------------------------------------------------------------------ construction

    @classmethod
    def random(cls, config: Config, seed: int = 0, xp=np) -> "Transformer":
        """Random weights, scaled so activations stay O(1): std 1/sqrt(fan_in) for matrices,
        with the residual-branch outputs (wo, w_down) further divided by sqrt(2L)."""
        seed = check_int("seed", seed, minimum=0)
        rng = np.random.default_rng(seed)
        out_scale = 1.0 / (2 * config.n_layers) ** 0.5
        weights = {}
        for name, shape in weight_shapes(config).items():
            if len(shape) == 1:  # norm gains near 1, not exactly, so a wrong norm shows up in tests
                w = 1.0 + 0.1 * rng.standard_normal(shape, dtype=np.float32)
            elif name == "embed":
                w = rng.standard_normal(shape, dtype=np.float32)
            else:
                w = rng.standard_normal(shape, dtype=np.float32) * np.float32(shape[0] ** -0.5)
                if name.endswith(("wo", "w_down")):
                    w *= np.float32(out_scale)
            weights[name] = w.astype(config.dtype, copy=False)  # keeps peak memory low for big shapes
        return cls(config, weights, xp=xp)

    def new_cache(self, max_len: int | None = None) -> KVCache:
        """An empty KV cache for this model (max_len defaults to the context window)."""
        return KVCache(self.config, max_len=max_len, xp=self.xp)

    @property
    def num_params(self) -> int:
        return sum(int(w.size) for w in self.weights.values())

    @property
    def weight_bytes(self) -> int:
        return self.num_params * self.config.dtype_bytes

    # ------------------------------------------------------------------ forward

    def forward(self, ids, cache: Cache | None = None, trace: bool = False, last_only: bool = False):
        """Logits [T, V] (float32) for token ids [T] placed at positions cache.length ...

        Without a cache the ids are the whole sequence, from position 0. With one, they
        continue what the cache holds and their K/V are appended. ``last_only`` computes
        logits for the last position only ([1, V]): all that generation needs.
        With ``trace=True`` returns (logits, Trace).

        A cache is written as one unit: begin(T) before the first layer, advance(T) after the
        logits, abort() if anything raises in between -- a failed call leaves it as it was.
        """
        c = self.config
        ids = check_ids(ids, c.vocab_size)
        T = ids.shape[0]
        pos = 0 if cache is None else self._check_cache(cache).length
        check_fits(pos, T, c.max_seq_len)
        if cache is None:
            return self._forward(ids, None, pos, trace, last_only)
        cache.begin(T)
        try:
            out = self._forward(ids, cache, pos, trace, last_only)
            cache.advance(T)  # a cache that refuses the commit does so before it writes anything
        except BaseException:
            cache.abort()
            raise
        return out

    def _check_cache(self, cache) -> Cache:
        """The cache keeps the contract, fits this config, and holds arrays of the model's module."""
        if not isinstance(cache, (BaseCache, Cache)):  # BaseCache first: the Protocol check is slower
            raise TypeError(f"cache must be a KVCache or one of its siblings (model.new_cache()), got {type(cache).__name__}")
        if cache.config != self.config:
            raise ValueError("this KV cache was made for a different model config; use model.new_cache()")
        if xp_name(cache.xp) != xp_name(self.xp):  # NumPy arrays vs CuPy arrays: refused before any write
            raise TypeError(f"this {type(cache).__name__} keeps its arrays in {xp_name(cache.xp)} but the model runs "
                            f"on {xp_name(self.xp)}; make the cache for this model (model.new_cache(), or pass xp=)")
        return cache

    def _forward(self, ids, cache, pos: int, trace: bool, last_only: bool):
        """The layers, for forward (which owns the cache's begin / advance / abort)."""
        c, xp, T = self.config, self.xp, ids.shape[0]
        tr = Trace(start=pos) if trace else None
        cos, sin = self.cos[pos : pos + T], self.sin[pos : pos + T]  # [T, hd]

        x = self.embed[xp.asarray(ids)]  # [T, D]
        if tr is not None:
            tr.hidden.append(x)
        for index, layer in enumerate(self.layers):
            a, probs, scores, key_pos = attention(rmsnorm(x, layer.attn_norm, c.norm_eps), layer, c, cos, sin, pos,
                                                  cache, index, xp)
            x = x + a  # [T, D]
            x = x + mlp(rmsnorm(x, layer.mlp_norm, c.norm_eps), layer.w_gate_up, layer.w_down, c.ffn_dim, xp)  # [T, D]
            if tr is not None:
                tr.attn.append(probs)
                tr.scores.append(scores)
                tr.hidden.append(x)
                tr.key_pos.append(np.arange(probs.shape[-1]) if key_pos is None else np.asarray(key_pos))
        logits = self.logits_from_hidden(x[-1:] if last_only else x)  # [T or 1, V]
        return (logits, tr) if trace else logits

    __call__ = forward

    def logits_from_hidden(self, h):
        """Final RMSNorm + output head: h [..., D] -> logits [..., V] (float32).

        Applied to trace.hidden[l] it gives the "logit lens": what layer l would predict.
        """
        return (rmsnorm(h, self.norm, self.config.norm_eps) @ self.lm_head).astype("float32", copy=False)

    def __repr__(self) -> str:
        return f"Transformer({self.config}, params={self.num_params:,}, backend={self.xp.__name__})"


def _check_weights(weights: Mapping, expected: dict) -> None:
    """Every expected name present with the right shape, nothing extra; say what is wrong."""
    missing = [n for n in expected if n not in weights]
    extra = sorted(str(n) for n in weights if n not in expected)
    problems = []
    if missing:
        more = f" (and {len(missing) - 5} more)" if len(missing) > 5 else ""
        problems.append(f"missing: {', '.join(missing[:5])}{more}")
    if extra:
        more = f" (and {len(extra) - 5} more)" if len(extra) > 5 else ""
        problems.append(f"unexpected: {', '.join(extra[:5])}{more}")
    for name, shape in expected.items():
        if name not in weights:
            continue
        w = weights[name]
        got = getattr(w, "shape", None)
        if got is None:
            raise TypeError(f"weight {name!r} must be an array, got {type(w).__name__}")
        dtype = getattr(w, "dtype", None)
        if dtype is None or getattr(dtype, "kind", "f") not in "fiu":
            raise TypeError(f"weight {name!r} must hold numbers, got dtype {dtype}")
        if tuple(got) != shape:
            problems.append(f"{name} has shape {tuple(got)}, expected {shape}")
    if problems:
        raise ValueError("weights do not match the config: " + "; ".join(problems))
