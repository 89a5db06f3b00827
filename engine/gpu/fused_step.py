"""One cached decode step in a few fused kernels per layer: the GPU decode path's orchestration.

The per-op engine (engine/model.py) launches about 60 GPU operations per layer for one new
token, and on an H200 the host's time to launch them, not the bytes, sets the step's time
(../shared/measurements/h200-2026-11-30). This step does the same maths from the same
``Transformer`` weights and the same ``KVCache`` buffers, as 10 launches per layer:

    layer l, x [1, D] the residual stream, delta [1, D] the previous block's output
      add_rmsnorm    x += delta; n = rmsnorm(x) * attn_norm      (layer 0: rmsnorm, x is new)
      matmul         qkv = n @ wqkv                              [1, (H+2KV)*hd]
      rope_store     q = rope(q); cache.k[l][:, pos] = rope(k); cache.v[l][:, pos] = v
      attention_partial / attention_merge                        flash-decoding over slots 0..pos
      matmul         delta = attn @ wo                           [1, D]
      add_rmsnorm    x += delta; n = rmsnorm(x) * mlp_norm
      matmul         gu = n @ w_gate_up                          [1, 2F]
      swiglu         h = silu(gate) * up                         [1, F]
      matmul         delta = h @ w_down                          [1, D]
    then embed before the first layer, add_rmsnorm with the final norm and the lm_head matmul.

Every array the step touches is allocated once, in ``__init__``; a step only calls kernels
and matmuls into those buffers, never reads a device value on the host (positions and chunk
counts are host integers the decoder keeps), so a GPU step can be enqueued without waiting
and, later, captured as one CUDA graph. The number of launches does not depend on the context.
"""
from __future__ import annotations

from engine.caches.contiguous import KVCache
from engine.gpu.kernels_ref import n_chunks
from engine.model import Transformer


class FusedDecoder:
    """Decode one token at a time into ``cache`` with the kernels of ``kernels``.

    ``model`` and ``cache`` are the engine's own (the cache may already hold a prefill done
    with ``model.forward``); ``kernels`` is a kernel set (engine/gpu/kernels_ref.py) whose
    ``xp`` is the model's array module.
    """

    def __init__(self, model: Transformer, cache: KVCache, kernels):
        if not isinstance(model, Transformer):
            raise TypeError(f"FusedDecoder needs an engine Transformer, got {type(model).__name__}")
        if type(cache) is not KVCache:
            raise TypeError(f"the fused step reads the contiguous KVCache (slot i = position i), "
                            f"got {type(cache).__name__}")
        if cache.config != model.config:
            raise ValueError("this KV cache was made for a different model config; use model.new_cache()")
        if kernels.xp is not model.xp:
            raise ValueError(f"kernel set {kernels.name!r} works on {kernels.xp.__name__} arrays, "
                             f"the model's are {model.xp.__name__}")
        self.model, self.cache, self.kernels = model, cache, kernels
        self._allocate()

    def _allocate(self) -> None:
        """Every workspace of a step, once (float32 where the kernels accumulate)."""
        c, xp = self.model.config, self.kernels.xp
        H, KV, hd, D, F = c.n_heads, c.n_kv_heads, c.head_dim, c.d_model, c.ffn_dim
        C = n_chunks(self.cache.max_len, self.kernels.split)
        dt = c.dtype
        self.token = xp.zeros((1,), dtype="int64")  # the next input token, on the device
        self.x = xp.empty((1, D), dtype=dt)  # residual stream
        self.delta = xp.empty((1, D), dtype=dt)  # a block's output, added by the next add_rmsnorm
        self.n = xp.empty((1, D), dtype=dt)  # normalised input of a projection
        self.qkv = xp.empty((1, (H + 2 * KV) * hd), dtype=dt)
        self.q = xp.empty((H, hd), dtype=dt)
        self.acc = xp.empty((H, C, hd), dtype="float32")  # per-chunk partial outputs
        self.mx = xp.empty((H, C), dtype="float32")  # per-chunk max score
        self.sm = xp.empty((H, C), dtype="float32")  # per-chunk sum of exp
        self.attn = xp.empty((1, H * hd), dtype=dt)
        self.gu = xp.empty((1, 2 * F), dtype=dt)
        self.h = xp.empty((1, F), dtype=dt)
        self.logits = xp.empty((1, c.vocab_size), dtype=dt)

    def feed(self, token_id: int) -> None:
        """Set the next input token from the host (a prompt token; outside any step)."""
        self.token[...] = token_id

    def step(self):
        """Decode ``self.token`` at position cache.length; returns the logits [1, V] buffer.

        The buffer is overwritten by the next step. Greedy decoding keeps the next token on
        the device: ``kernels.argmax(decoder.step(), out=decoder.token)``.
        """
        m, c, k, cache = self.model, self.model.config, self.kernels, self.cache
        cache.check_room(1)
        pos = cache.length
        k.embed(m.embed, self.token, out=self.x)
        for index, layer in enumerate(m.layers):
            self._layer(index, layer, pos)
        k.add_rmsnorm(self.x, self.delta, m.norm, c.norm_eps, out=self.n)
        k.matmul(self.n, m.lm_head, out=self.logits)
        cache.advance(1)
        return self.logits

    def _layer(self, index: int, layer, pos: int) -> None:
        """One block: attention over the cache, then the MLP; leaves its output in delta."""
        c, k, cache = self.model.config, self.kernels, self.cache
        if index == 0:
            k.rmsnorm(self.x, layer.attn_norm, c.norm_eps, out=self.n)
        else:
            k.add_rmsnorm(self.x, self.delta, layer.attn_norm, c.norm_eps, out=self.n)
        k.matmul(self.n, layer.wqkv, out=self.qkv)
        k.rope_store(self.qkv, self.model.cos, self.model.sin, pos, cache.k[index], cache.v[index], out=self.q)
        stop = pos + 1
        start = 0 if c.sliding_window is None else max(0, stop - c.sliding_window)
        k.attention_partial(self.q, cache.k[index], cache.v[index], start, stop, self.acc, self.mx, self.sm)
        k.attention_merge(self.acc, self.mx, self.sm, n_chunks(stop - start, k.split), out=self.attn)
        k.matmul(self.attn, layer.wo, out=self.delta)
        k.add_rmsnorm(self.x, self.delta, layer.mlp_norm, c.norm_eps, out=self.n)
        k.matmul(self.n, layer.w_gate_up, out=self.gu)
        k.swiglu(self.gu, out=self.h)
        k.matmul(self.h, layer.w_down, out=self.delta)
