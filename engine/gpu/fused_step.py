"""One cached decode step in a few fused kernels per layer, captured once as a CUDA graph.

The per-op engine (engine/model.py) launches about 60 GPU operations per layer for one new
token, and on an H200 the host's time to launch them, not the bytes, sets the step's time
(../shared/measurements/h200-2026-11-30). This step does the same maths from the same
``Transformer`` weights and the same ``KVCache`` buffers, as 10 launches per layer:

    embed            x = embed[token]; length += 1 (the step claims its cache slot)
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
    then add_rmsnorm with the final norm and the lm_head matmul.

Every array the step touches is allocated once, in ``__init__``. Nothing that changes from
token to token is a launch argument: the input token and the cache length live in device
int32 buffers (``token``, ``length``), embed increments the length and every later kernel
reads the position there, and the attention grid covers the cache's whole capacity (splits
past the length exit at once). So the launches of step 100 are those of step 1, argument for
argument (tests/engine/gpu/test_recording.py proves it on a CPU), a step never reads a
device value on the host, and on a GPU ``capture()`` records the step once with
``Stream.begin_capture()`` / ``end_capture()``; ``replay()`` then launches that graph per token.

The host keeps ``cache.length`` in step with the device buffer; when something else moved
the cache (a prefill with ``model.forward``, ``truncate``), the next step first copies the
new length to the device (one small host-to-device write, outside the graph).
"""
from __future__ import annotations

from engine.caches.contiguous import KVCache
from engine.gpu.kernels_ref import n_chunks
from engine.model import Transformer


class FusedDecoder:
    """Decode one token at a time into ``cache`` with the kernels of ``kernels``.

    ``model`` and ``cache`` are the engine's own (the cache may already hold a prefill done
    with ``model.forward``); ``kernels`` is a kernel set (engine/gpu/kernels_ref.py) whose
    ``xp`` is the model's array module. A kernel set may keep weights in its own layout
    (``prepare_weight``: the CUDA gemv reads them transposed, a copy made here, once).
    """

    def __init__(self, model: Transformer, cache: KVCache, kernels):
        if not isinstance(model, Transformer):
            raise TypeError(f"FusedDecoder needs an engine Transformer, got {type(model).__name__}")
        if type(cache) is not KVCache:
            raise TypeError(f"the fused step reads the contiguous KVCache (slot i = position i), "
                            f"got {type(cache).__name__}")
        if cache.config != model.config:
            raise ValueError("this KV cache was made for a different model config; use model.new_cache()")
        if getattr(model.config, "attention_sinks", 0):
            raise ValueError("the fused step's attention kernel knows a sliding window but not "
                             "attention sinks; decode a config with attention_sinks through model.forward")
        if kernels.xp is not model.xp:
            raise ValueError(f"kernel set {kernels.name!r} works on {kernels.xp.__name__} arrays, "
                             f"the model's are {model.xp.__name__}")
        self.model, self.cache, self.kernels = model, cache, kernels
        self.window = model.config.sliding_window or 0  # 0: no sliding window
        self._allocate()
        self._prepare_weights()
        self._synced = None  # the cache length the device buffer holds
        self._graph = self._stream = None
        self.sync_length()

    def _allocate(self) -> None:
        """Every workspace of a step, once (float32 where the kernels accumulate)."""
        c, xp = self.model.config, self.kernels.xp
        H, KV, hd, D, F = c.n_heads, c.n_kv_heads, c.head_dim, c.d_model, c.ffn_dim
        C = n_chunks(self.cache.max_len, self.kernels.split)  # the whole capacity: same grid every step
        dt = c.dtype
        self.token = xp.zeros((1,), dtype="int32")  # the next input token, on the device
        self.length = xp.zeros((1,), dtype="int32")  # positions in the cache, on the device
        self.x = xp.empty((1, D), dtype=dt)  # residual stream
        self.delta = xp.empty((1, D), dtype=dt)  # a block's output, added by the next add_rmsnorm
        self.n = xp.empty((1, D), dtype=dt)  # normalised input of a projection
        self.qkv = xp.empty((1, (H + 2 * KV) * hd), dtype=dt)
        self.q = xp.empty((H, hd), dtype=dt)
        self.acc = xp.empty((H, C, hd), dtype="float32")  # per-split partial outputs
        self.mx = xp.empty((H, C), dtype="float32")  # per-split max score
        self.sm = xp.empty((H, C), dtype="float32")  # per-split sum of exp
        self.attn = xp.empty((1, H * hd), dtype=dt)
        self.gu = xp.empty((1, 2 * F), dtype=dt)
        self.h = xp.empty((1, F), dtype=dt)
        self.logits = xp.empty((1, c.vocab_size), dtype=dt)

    def _prepare_weights(self) -> None:
        """The projections as the kernel set's matmul reads them (the same arrays for NumPy)."""
        prep = self.kernels.prepare_weight
        self.w = [(prep(l.wqkv), prep(l.wo), prep(l.w_gate_up), prep(l.w_down)) for l in self.model.layers]
        self.lm_head = prep(self.model.lm_head)

    # ------------------------------------------------------------------ the host's side

    def feed(self, token_id: int) -> None:
        """Set the next input token from the host (a prompt token; outside any step)."""
        self.token[...] = token_id

    def sync_length(self) -> None:
        """Copy cache.length to the device buffer if the host moved the cache since the last step."""
        if self._synced != self.cache.length:
            self.length[...] = self.cache.length
            self._synced = self.cache.length

    def _advance(self) -> None:
        """The host's record of the slot the step took (the device already counted it)."""
        self.cache.advance(1)
        self._synced = self.cache.length

    def step(self):
        """Decode ``self.token`` at position cache.length; returns the logits [1, V] buffer.

        The buffer is overwritten by the next step. Greedy decoding keeps the next token on
        the device: ``kernels.argmax(decoder.step(), out=decoder.token)``.
        """
        self.cache.check_room(1)
        self.sync_length()
        self.enqueue()
        self._advance()
        return self.logits

    # ------------------------------------------------------------------ the launches

    def enqueue(self) -> None:
        """The launches of one step, in order: the same kernels and arguments at every step."""
        m, c, k = self.model, self.model.config, self.kernels
        k.embed(m.embed, self.token, self.length, self.x)
        for index, layer in enumerate(m.layers):
            self._layer(index, layer)
        k.add_rmsnorm(self.x, self.delta, m.norm, c.norm_eps, out=self.n)
        k.matmul(self.n, self.lm_head, out=self.logits)

    def _layer(self, index: int, layer) -> None:
        """One block: attention over the cache, then the MLP; leaves its output in delta."""
        c, k, cache = self.model.config, self.kernels, self.cache
        wqkv, wo, w_gate_up, w_down = self.w[index]
        if index == 0:
            k.rmsnorm(self.x, layer.attn_norm, c.norm_eps, out=self.n)
        else:
            k.add_rmsnorm(self.x, self.delta, layer.attn_norm, c.norm_eps, out=self.n)
        k.matmul(self.n, wqkv, out=self.qkv)
        k.rope_store(self.qkv, self.model.cos, self.model.sin, self.length, cache.k[index], cache.v[index],
                     out=self.q)
        k.attention_partial(self.q, cache.k[index], cache.v[index], self.length, self.window,
                            self.acc, self.mx, self.sm)
        k.attention_merge(self.acc, self.mx, self.sm, self.length, self.window, out=self.attn)
        k.matmul(self.attn, wo, out=self.delta)
        k.add_rmsnorm(self.x, self.delta, layer.mlp_norm, c.norm_eps, out=self.n)
        k.matmul(self.n, w_gate_up, out=self.gu)
        k.swiglu(self.gu, out=self.h)
        k.matmul(self.h, w_down, out=self.delta)

    # ------------------------------------------------------------------ CUDA graph (GPU only)

    def capture(self, greedy: bool = True) -> None:
        """Record one step (and, with ``greedy``, the argmax into ``token``) as a CUDA graph.

        Needs CuPy: the launches are captured on a stream of their own with
        ``Stream.begin_capture()`` / ``end_capture()``; nothing runs until ``replay()``. The
        stream is a blocking one, so host writes on the default stream (``feed``, the length
        sync) stay ordered with the replays.
        """
        xp = self.kernels.xp
        if not hasattr(xp, "cuda"):
            raise RuntimeError(f"capture() needs CuPy on a CUDA GPU; the kernels work on {xp.__name__} arrays")
        if hasattr(self.kernels, "load"):
            self.kernels.load(self.model.config.dtype)  # compile and load before capturing
        stream = xp.cuda.Stream(non_blocking=False)
        with stream:
            stream.begin_capture()
            try:
                self.enqueue()
                if greedy:
                    self.kernels.argmax(self.logits, out=self.token)
            finally:
                graph = stream.end_capture()
        self._graph, self._stream = graph, stream

    def replay(self):
        """One step by replaying the captured graph; returns the logits buffer (as ``step``)."""
        if self._graph is None:
            raise RuntimeError("replay() needs capture() first")
        self.cache.check_room(1)
        self.sync_length()
        self._graph.launch(self._stream)
        self._advance()
        return self.logits
