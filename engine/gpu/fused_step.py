"""One cached decode step in five fused kernels per layer, captured once as a CUDA graph.

The per-op engine (engine/model.py) launches about 60 GPU operations per layer for one new
token, and on an H200 the host's time to launch them, not the bytes, sets the step's time
(../shared/measurements/h200-2026-11-30). This step does the same maths from the same
``Transformer`` weights and the same ``KVCache`` buffers, as 5 launches per layer:

    embed                   x = embed[token]; length += 1 (the step claims its cache slot)
    layer l, x [1, D] the residual stream
      norm_matmul_rope_store  q | k | v = rmsnorm(x) @ wqkv; RoPE on q and k; k, v into slot pos
      attention               flash-decoding over slots 0..pos, splits merged by the last block
      matmul_add              x += attn @ wo
      norm_matmul_swiglu      h = silu(gate) * up of rmsnorm(x) @ w_gate_up
      matmul_add              x += h @ w_down
    then norm_matmul (or, greedy, norm_matmul_argmax: the token too) with the final norm and
    the LM head. Llama-3-8B x 4 layers: 22 launches, the nodes of its CUDA graph.

Every array the step touches is allocated once, in ``__init__``. Nothing that changes from
token to token is a launch argument: the input token and the cache length live in device
int32 buffers (``token``, ``length``), embed increments the length and every later kernel
reads the position there, and the attention grid covers the cache's whole capacity (splits
past the length exit at once). So the launches of step 100 are those of step 1, argument for
argument (tests/engine/gpu/test_recording.py proves it on a CPU), a step never reads a
device value on the host, and on a GPU ``capture()`` records the step once with
``Stream.begin_capture()`` / ``end_capture()``; ``replay()`` then launches that graph per token.

Streams, explicitly: on a GPU the decoder owns one non-blocking stream, ``decoder.stream``,
and everything it does goes there: the weight copies it prepares, ``feed``, the length
write, the eager launches, the capture and every replay (a benchmark records its clock's
events and truncates the cache on it too). Nothing relies on the legacy default stream's
implicit synchronisation. Work the caller queued on its own current stream (uploading
weights, a prefill with ``model.forward``) is waited for through an event, at construction
and whenever the host moved the cache; the caller reads the decoder's outputs after
``decoder.synchronize()`` (or on ``decoder.stream``).

The host keeps ``cache.length`` in step with the device buffer; when something else moved
the cache (a prefill with ``model.forward``, ``truncate``), the next step first copies the
new length to the device (one small host-to-device write, outside the graph).
"""
from __future__ import annotations

from contextlib import nullcontext

from engine.caches.contiguous import KVCache
from engine.gpu.kernels_ref import n_chunks
from engine.model import Transformer


class FusedDecoder:
    """Decode one token at a time into ``cache`` with the kernels of ``kernels``.

    ``model`` and ``cache`` are the engine's own (the cache may already hold a prefill done
    with ``model.forward``); ``kernels`` is a kernel set (engine/gpu/kernels_ref.py) whose
    ``xp`` is the model's array module. A kernel set keeps the weights in its own layout
    (``prepare_weight``: the norms folded in, and for the CUDA gemv transposed): copies made
    here, once.
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
        cuda = getattr(kernels.xp, "cuda", None)
        self.stream = cuda.Stream(non_blocking=True) if cuda is not None else None
        self._graph = None
        self._synced = None  # the cache length the device buffer holds
        with self.on_stream():
            self._follow_callers_stream()  # the weights and the cache, as the caller left them
            self._allocate()
            self._prepare_weights()
            self.sync_length()
        self.synchronize()

    def _allocate(self) -> None:
        """Every workspace of a step, once (float32 where the kernels accumulate)."""
        c, xp = self.model.config, self.kernels.xp
        H, KV, hd, D, F = c.n_heads, c.n_kv_heads, c.head_dim, c.d_model, c.ffn_dim
        C = n_chunks(self.cache.max_len, self.kernels.split)  # the whole capacity: same grid every step
        dt = c.dtype
        self.token = xp.zeros((1,), dtype="int32")  # the next input token, on the device
        self.length = xp.zeros((1,), dtype="int32")  # positions in the cache, on the device
        self.x = xp.empty((1, D), dtype=dt)  # residual stream
        self.q = xp.empty((H, hd), dtype=dt)
        self.acc = xp.empty((H, C, hd), dtype="float32")  # per-split partial outputs
        self.mx = xp.empty((H, C), dtype="float32")  # per-split max score
        self.sm = xp.empty((H, C), dtype="float32")  # per-split sum of exp
        self.attn = xp.empty((1, H * hd), dtype=dt)
        self.h = xp.empty((1, F), dtype=dt)
        self.logits = xp.empty((1, c.vocab_size), dtype=dt)
        # the CUDA kernels' scratch: a ticket per KV head (the attention's last block merges),
        # the greedy LM head's running best and its ticket; the kernels leave them zeroed
        self.tickets = xp.zeros((KV,), dtype="uint32")
        self.best = xp.zeros((1,), dtype="uint64")
        self.best_tickets = xp.zeros((1,), dtype="uint32")

    def _prepare_weights(self) -> None:
        """The projections as the kernel set reads them, each RMSNorm folded into the next one."""
        prep = self.kernels.prepare_weight
        self.w = [(prep(l.wqkv, l.attn_norm), prep(l.wo), prep(l.w_gate_up, l.mlp_norm), prep(l.w_down))
                  for l in self.model.layers]
        self.lm_head = prep(self.model.lm_head, self.model.norm)

    # ------------------------------------------------------------------ the host's side

    def on_stream(self):
        """``with decoder.on_stream():`` makes the decoder's stream current (nothing on a CPU)."""
        return self.stream if self.stream is not None else nullcontext()

    def synchronize(self) -> None:
        """Wait until everything queued on the decoder's stream has run (before reading its outputs)."""
        if self.stream is not None:
            self.stream.synchronize()

    def _follow_callers_stream(self) -> None:
        """Make the decoder's stream wait (on the device) for what the caller's current stream
        has queued so far: an event, not the legacy stream's implicit ordering."""
        if self.stream is None:
            return
        cuda = self.kernels.xp.cuda
        theirs = cuda.get_current_stream()
        if getattr(theirs, "ptr", theirs) == getattr(self.stream, "ptr", self.stream):
            return
        done = cuda.Event(disable_timing=True)
        done.record(theirs)
        self.stream.wait_event(done)

    def feed(self, token_id: int) -> None:
        """Set the next input token from the host (a prompt token; outside any step)."""
        with self.on_stream():
            self.token[...] = token_id

    def sync_length(self) -> None:
        """Copy cache.length to the device buffer if the host moved the cache since the last
        step (after the work the caller queued on its own stream: a prefill, a truncate)."""
        if self._synced != self.cache.length:
            with self.on_stream():
                self._follow_callers_stream()
                self.length[...] = self.cache.length
            self._synced = self.cache.length

    def _advance(self) -> None:
        """The host's record of the slot the step took (the device already counted it)."""
        self.cache.advance(1)
        self._synced = self.cache.length

    def step(self, greedy: bool = False):
        """Decode ``self.token`` at position cache.length; returns the logits [1, V] buffer.

        The buffer is overwritten by the next step. With ``greedy`` the LM head also writes
        the argmax into ``token``, on the device: the next step's input.
        """
        self.cache.check_room(1)
        self.sync_length()
        with self.on_stream():
            self.enqueue(greedy)
        self._advance()
        return self.logits

    # ------------------------------------------------------------------ the launches

    def enqueue(self, greedy: bool = False) -> None:
        """The launches of one step, in order: the same kernels and arguments at every step."""
        m, c, k = self.model, self.model.config, self.kernels
        k.embed(m.embed, self.token, self.length, self.x)
        for index in range(c.n_layers):
            self._layer(index)
        if greedy:
            k.norm_matmul_argmax(self.x, self.lm_head, c.norm_eps, self.logits, self.token, self.best,
                                 self.best_tickets)
        else:
            k.norm_matmul(self.x, self.lm_head, c.norm_eps, out=self.logits)

    def _layer(self, index: int) -> None:
        """One block: attention over the cache, then the MLP, each added into x."""
        m, k, cache = self.model, self.kernels, self.cache
        eps = m.config.norm_eps
        wqkv, wo, w_gate_up, w_down = self.w[index]
        k.norm_matmul_rope_store(self.x, wqkv, eps, m.cos, m.sin, self.length, cache.k[index], cache.v[index],
                                 out=self.q)
        k.attention(self.q, cache.k[index], cache.v[index], self.length, self.window, self.acc, self.mx, self.sm,
                    self.tickets, out=self.attn)
        k.matmul_add(self.attn, wo, self.x)
        k.norm_matmul_swiglu(self.x, w_gate_up, eps, out=self.h)
        k.matmul_add(self.h, w_down, self.x)

    # ------------------------------------------------------------------ CUDA graph (GPU only)

    def capture(self, greedy: bool = True) -> None:
        """Record one step (with ``greedy``, the argmax into ``token`` too) as a CUDA graph.

        Needs a GPU backend (CuPy, or the recording backend's stand-in): the launches are
        captured on the decoder's stream with ``Stream.begin_capture()`` / ``end_capture()``;
        nothing runs until ``replay()``. Every kernel is compiled and loaded first, and the
        length is written before the capture, outside the graph.
        """
        if self.stream is None:
            raise RuntimeError(f"capture() needs CuPy on a CUDA GPU; the kernels work on "
                               f"{self.kernels.xp.__name__} arrays")
        if hasattr(self.kernels, "load"):
            self.kernels.load(self.model.config.dtype, self.model.config)  # nothing compiled while capturing
        self.sync_length()
        with self.stream:
            self.stream.begin_capture()
            try:
                self.enqueue(greedy)
            finally:
                graph = self.stream.end_capture()
        self._graph = graph

    def replay(self):
        """One step by replaying the captured graph; returns the logits buffer (as ``step``)."""
        if self._graph is None:
            raise RuntimeError("replay() needs capture() first")
        self.cache.check_room(1)
        self.sync_length()
        self._graph.launch(self.stream)
        self._advance()
        return self.logits
