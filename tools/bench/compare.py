"""The same cached decode step on the same weights in Hugging Face transformers (PyTorch):
on the CPU beside the NumPy backend, on the same GPU beside the CuPy backend.

The engine's weights go into a ``LlamaForCausalLM`` through the engine's own mapping
(``engine/hf.py``), on the backend's device. The prompt goes through transformers once and
its cache (keys after RoPE, as the engine stores them) is copied into the engine's cache,
so both sides time one decode step over the same keys and values at the same context, at
any context (the engine's own prefill would need [H, T, T] scores: 137 GB at 32k tokens
for the Llama shape). Clocks: the host timer with the same thread count on a CPU, CUDA
events on a GPU. The two steps' logits are compared, so a fast-but-wrong mapping cannot
pass as a speed result.
"""
from __future__ import annotations

import numpy as np

from engine.arrays import to_numpy
from tools.bench.steps import StepPath, cached_step
from tools.bench.timers import time_host, time_torch_cuda

COMPARE_NEAR = 8192  # besides the first and last context: the point issue 8's goal is set at
TORCH_DEVICE = {"numpy": "cpu", "cupy": "cuda"}  # where transformers runs, beside each backend


def hf_model(model, device: str = "cpu"):
    """A LlamaForCausalLM holding exactly ``model``'s weights, in the model's dtype, on ``device``.

    Built on the meta device and filled with ``assign=True``, so the weights exist once in
    torch's host memory (a Llama-3-8B-shaped head is 2 GiB), then the rotary buffers are rebuilt.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from engine.hf import config_to_hf_kwargs, weights_to_hf

    c = model.config
    hf_cfg = LlamaConfig(**config_to_hf_kwargs(c))
    host = {k: to_numpy(v) for k, v in model.weights.items()}
    state = {k: torch.from_numpy(v) for k, v in weights_to_hf(host, c).items()}
    with torch.device("meta"):
        hf = LlamaForCausalLM(hf_cfg)
    hf.load_state_dict(state, assign=True, strict=True)
    hf.model.rotary_emb = type(hf.model.rotary_emb)(config=hf_cfg)  # its buffers were on "meta"
    return hf.to(device=device, dtype=torch.float16 if c.dtype == "float16" else torch.float32).eval()


def _cache_kw() -> str:
    """transformers 5.2x renamed the ``past_key_values`` argument and output to ``cache``."""
    import inspect

    from transformers import LlamaForCausalLM

    return "cache" if "cache" in inspect.signature(LlamaForCausalLM.forward).parameters else "past_key_values"


def _layer_kv(past, i: int):
    """Keys and values [1, KV, S, hd] of layer i in a transformers cache (4.x and 5.x layouts)."""
    if hasattr(past, "layers"):
        return past.layers[i].keys, past.layers[i].values
    return past.key_cache[i], past.value_cache[i]


def hf_cache_into_engine(past, cache, ctx: int) -> None:
    """Copy the first ``ctx`` positions of a transformers cache into an engine KVCache."""
    xp = cache.xp
    for i in range(len(cache.k)):
        keys, values = _layer_kv(past, i)
        cache.k[i][:, :ctx] = xp.asarray(keys[0, :, :ctx].detach().to("cpu").numpy())
        cache.v[i][:, :ctx] = xp.asarray(values[0, :, :ctx].detach().to("cpu").numpy())
    cache.length = ctx


def compare_contexts(run: dict) -> list[int]:
    """The run's first and last context, and the one nearest 8192 tokens."""
    ctx = [p["context"] for p in run["points"]]
    return sorted({ctx[0], ctx[-1], min(ctx, key=lambda c: abs(c - COMPARE_NEAR))})


def compare_with_transformers(model, run: dict, backend, opts, threads: dict | None,
                              step: StepPath = StepPath("engine"), log=print):
    """Time the cached step in both at compare_contexts(run).

    Returns (comparisons, note): note says why something was not compared, when that happens.
    """
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError:
        return [], "transformers comparison skipped: torch and transformers are not installed."
    gpu = backend.name == "cupy"
    if gpu and not torch.cuda.is_available():
        return [], "transformers comparison skipped: this PyTorch has no CUDA."
    if threads and threads.get("pinned"):
        torch.set_num_threads(threads["count"])
    hf = hf_model(model, TORCH_DEVICE[backend.name])
    found = []
    for ctx in compare_contexts(run):
        result = _compare_at(hf, model, run, ctx, backend, opts, step)
        if isinstance(result, str):
            return found, result
        log(f"[{run['shape']} {run['dtype']}] context {ctx}: engine {result['engine']['median_s'] * 1e3:.3f} ms, "
            f"transformers {result['transformers']['median_s'] * 1e3:.3f} ms, ratio {result['ratio']:.2f}")
        found.append(result)
    del hf
    return found, None


def _compare_at(hf, model, run: dict, ctx: int, backend, opts, step: StepPath):
    """One context: a comparison dict, or a note (str) when the two steps disagree."""
    import torch

    gpu, device = backend.name == "cupy", TORCH_DEVICE[backend.name]
    timing = dict(warmup=opts.warmup, repeats=opts.repeats, max_seconds=opts.max_point_seconds,
                  min_seconds=opts.min_point_seconds)
    ids = np.random.default_rng(opts.seed + 7 * ctx).integers(0, model.config.vocab_size, size=ctx + 1)
    kw = _cache_kw()
    with torch.inference_mode():
        t_ids = torch.from_numpy(ids)[None, :].to(device)
        out = hf(t_ids[:, :ctx], use_cache=True, logits_to_keep=1)
        past = out[kw] if kw in out else out.past_key_values

        def hf_step():
            return hf(t_ids[:, ctx:], use_cache=True, logits_to_keep=1, **{kw: past}).logits

        def hf_rewind():  # DynamicCache.crop takes a negative count of tokens to drop
            extra = past.get_seq_length() - ctx
            if extra > 0:
                past.crop(-extra)

        hf_timer = time_torch_cuda if gpu else time_host
        hf_stats = hf_timer(hf_step, setup=hf_rewind, **timing)
        hf_rewind()
        hf_logits = hf_step()[0, -1].float().cpu().numpy()
        hf_rewind()
        cache = model.new_cache(max_len=ctx + 1)
        hf_cache_into_engine(past, cache, ctx)
    engine_step = cached_step(model, cache, int(ids[ctx]), step)
    eng_stats = backend.timer(engine_step, setup=lambda: cache.truncate(ctx), **timing)
    cache.truncate(ctx)
    eng_logits = to_numpy(engine_step()).astype(np.float32)[-1]
    diff = float(np.max(np.abs(eng_logits - hf_logits)))
    tol = 5e-2 if model.config.dtype == "float16" else 1e-3
    if diff > tol * max(1.0, float(np.max(np.abs(hf_logits)))):
        return (f"transformers comparison stopped: {run['shape']} logits differ by {diff:.3g} at context {ctx}, "
                "so the two do not compute the same step")
    return {"shape": run["shape"], "dtype": run["dtype"], "context": ctx, "engine": eng_stats.to_json(),
            "transformers": hf_stats.to_json(), "ratio": hf_stats.median / eng_stats.median,
            "device": backend.device["name"] if gpu else "cpu"}
