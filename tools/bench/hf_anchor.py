"""The transformers anchor of gpu_check: Hugging Face transformers (PyTorch) on the same
weights and the same K/V as the fused step, two ways, each labelled:

    eager         DynamicCache, one ``model(...)`` call per step: what most code runs; bound by
                  the host launching PyTorch's kernels (2.90 ms at 128 and at 8192 on the H200)
    static graph  StaticCache (fixed buffers) and the decode step captured once as a CUDA graph
                  (torch.cuda.CUDAGraph), replayed per step: the graph-vs-graph comparison

and the fused step replayed as a graph at the same context, on K/V copied from transformers'
cache (tools/bench/compare.py's mapping), so the ratios come from one stage and one set of
numbers. The logits of all three are compared with the engine's step (tolerance 5e-2 of the
largest logit in float16), so a fast but wrong anchor cannot pass.

The API used is what transformers 5.17 (the H200 image) and 5.24 (CI) both have: StaticCache's
keyword arguments are taken from its signature, the cache argument's name from the model's
(compare._cache_kw), and a position goes as ``cache_position`` where forward takes it.
"""
from __future__ import annotations

import inspect

import numpy as np

from tools.bench.compare import _cache_kw, _layer_kv, hf_cache_into_engine, hf_model  # noqa: F401
from tools.bench.timers import time_torch_cuda

LOGIT_TOLERANCE = 5e-2  # of the largest logit, float16


def static_cache(hf, max_len: int, device, dtype):
    """A StaticCache of ``max_len`` positions for ``hf``, with the arguments this version takes."""
    from transformers import StaticCache

    params = inspect.signature(StaticCache.__init__).parameters
    extra = {k: v for k, v in {"max_batch_size": 1, "batch_size": 1, "device": device, "dtype": dtype}.items()
             if k in params}
    return StaticCache(config=hf.config, max_cache_len=max_len, **extra)


def _position_kw(hf, positions) -> dict:
    """``cache_position`` where this version's forward takes it (by name or through **kwargs)."""
    params = inspect.signature(type(hf).forward).parameters
    return {"cache_position": positions} if "cache_position" in params or any(
        p.kind is p.VAR_KEYWORD for p in params.values()) else {}


class StaticStep:
    """transformers' decode step at position ``ctx`` over a StaticCache filled with ``ids[:ctx]``;
    ``run()`` is the step (eager), ``capture()`` records it as a CUDA graph and ``replay()``
    launches that. The step writes slot ``ctx`` each time: the same work at every call."""

    def __init__(self, hf, t_ids, ctx: int):
        import torch

        self.hf, self.kw, dev = hf, _cache_kw(), t_ids.device
        self.cache = static_cache(hf, ctx + 1, dev, hf.dtype)
        prefill = torch.arange(ctx, device=dev)
        hf(t_ids[:, :ctx], use_cache=True, logits_to_keep=1, position_ids=prefill[None],
           **_position_kw(hf, prefill), **{self.kw: self.cache})
        self.token = t_ids[:, ctx:ctx + 1].clone()
        self.pos = torch.tensor([ctx], device=dev)
        self.ctx, self.graph, self.logits = ctx, None, None

    def _rewind(self) -> None:
        """Back to ``ctx`` positions: versions whose static layers count their own length (a
        tensor, advanced in place by each step: 5.2x) are set back in place, which a graph
        captures as one more node; versions that go by cache_position need nothing."""
        for layer in getattr(self.cache, "layers", ()):
            n = getattr(layer, "cumulative_length", None)
            if n is not None and hasattr(n, "fill_"):
                n.fill_(self.ctx)

    def run(self):
        self._rewind()
        return self.hf(self.token, use_cache=True, logits_to_keep=1, position_ids=self.pos[None],
                       **_position_kw(self.hf, self.pos), **{self.kw: self.cache}).logits

    def capture(self) -> None:
        import torch

        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up off the capture, as torch.cuda.graph asks
            for _ in range(3):
                self.run()
        torch.cuda.current_stream().wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.logits = self.run()

    def replay(self):
        self.graph.replay()
        return self.logits


def _close(a, b) -> float:
    """Largest |a - b| relative to the largest |b|."""
    return float(np.max(np.abs(a - b)) / max(1.0, float(np.max(np.abs(b)))))


def compare(session, model, contexts, repeats: int, log=print) -> tuple[list, str | None]:
    """One row per context (see the module docstring); (rows, note) with a note when something
    could not be compared."""
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError:
        return [], "transformers comparison skipped: torch and transformers are not installed."
    if not torch.cuda.is_available():
        return [], "transformers comparison skipped: this PyTorch has no CUDA."
    hf = hf_model(model, "cuda")
    rows = []
    for ctx in contexts:
        rows.append(compare_at(session, hf, model, ctx, repeats))
        r = rows[-1]
        log(f"[llama3-8b float16] context {ctx}: fused graph {r['fused_graph_us']:.1f} us, transformers eager "
            f"{r['transformers']['median_s'] * 1e6:.1f} us ({r['vs_transformers_eager']:.2f}x), static cache + "
            f"graph {r['transformers_graph']['median_s'] * 1e6:.1f} us ({r['vs_transformers_graph']:.2f}x)")
    del hf
    return rows, None


def compare_at(session, hf, model, ctx: int, repeats: int) -> dict:
    import torch

    from engine.arrays import to_numpy
    from engine.gpu.fused_step import FusedDecoder
    from tools.bench.gpu_check import stats_us

    kw = _cache_kw()
    ids = np.random.default_rng(7 * ctx).integers(0, model.config.vocab_size, size=ctx + 1)
    timing = dict(warmup=2, repeats=repeats)
    with torch.inference_mode():
        t_ids = torch.from_numpy(ids)[None, :].to("cuda")
        out = hf(t_ids[:, :ctx], use_cache=True, logits_to_keep=1)
        past = out[kw] if kw in out else out.past_key_values

        def eager():
            return hf(t_ids[:, ctx:], use_cache=True, logits_to_keep=1, **{kw: past}).logits

        def rewind():  # DynamicCache.crop takes a negative count of tokens to drop
            extra = past.get_seq_length() - ctx
            if extra > 0:
                past.crop(-extra)

        e = time_torch_cuda(eager, setup=rewind, **timing)
        rewind()
        eager_logits = eager()[0, -1].float().cpu().numpy()
        rewind()
        cache = model.new_cache(max_len=ctx + 1)
        hf_cache_into_engine(past, cache, ctx)
        del past, out
        static = StaticStep(hf, t_ids, ctx)
        static.capture()
        g = time_torch_cuda(static.replay, **timing)
        graph_logits = static.replay()[0, -1].float().cpu().numpy()
        del static
    decoder = FusedDecoder(model, cache, session.kernels)
    decoder.feed(int(ids[ctx]))

    def rewind_ours():
        with decoder.on_stream():
            cache.truncate(ctx)
        decoder.sync_length()

    decoder.capture(greedy=False)
    ours = session.time(decoder.replay, stream=decoder.stream, setup=rewind_ours, **timing)
    rewind_ours()
    decoder.replay()
    decoder.synchronize()
    ours_logits = to_numpy(decoder.logits).astype(np.float32)[-1]
    diffs = {"transformers_eager": _close(eager_logits, ours_logits),
             "transformers_graph": _close(graph_logits, ours_logits)}
    bad = {k: v for k, v in diffs.items() if not v <= LOGIT_TOLERANCE}
    if bad:
        raise RuntimeError(f"at context {ctx} the logits differ from the fused step's by {bad} of the largest: "
                           "the two do not compute the same step")
    return {"shape": "llama3-8b", "dtype": "float16", "context": ctx,
            "engine": ours.to_json(), "fused_graph_us": ours.median * 1e6, "fused_graph_stats": stats_us(ours),
            "transformers": e.to_json(), "transformers_graph": g.to_json(),
            "labels": {"transformers": "transformers eager, DynamicCache",
                       "transformers_graph": "transformers, StaticCache, decode step captured as a CUDA graph"},
            "vs_transformers_eager": e.median / ours.median, "vs_transformers_graph": g.median / ours.median,
            "ratio": e.median / ours.median, "logit_diff": diffs}
