"""The same cached decode step on the same weights in Hugging Face transformers (PyTorch CPU).

The engine's weights go into a ``LlamaForCausalLM`` through the engine's own mapping
(``engine/hf.py``). Both sides then time one decode step at the same context, back to back, with
the same clock and the same thread count (``torch.set_num_threads``), and the logits of
that step are compared, so a fast-but-wrong mapping cannot pass as a speed result.
"""
from __future__ import annotations

import numpy as np

from engine.bench.timing import time_host


def hf_model(model):
    """A LlamaForCausalLM holding exactly ``model``'s weights, in the model's dtype.

    Built on the meta device and filled with ``assign=True``, so the weights exist once in
    torch's memory (a Llama-3-8B-shaped head is 2 GiB), then the rotary buffers are rebuilt.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from engine.hf import config_to_hf_kwargs, weights_to_hf

    c = model.config
    hf_cfg = LlamaConfig(**config_to_hf_kwargs(c))
    state = {k: torch.from_numpy(v) for k, v in weights_to_hf(model.weights, c).items()}
    with torch.device("meta"):
        hf = LlamaForCausalLM(hf_cfg)
    hf.load_state_dict(state, assign=True, strict=True)
    hf.model.rotary_emb = type(hf.model.rotary_emb)(config=hf_cfg)  # its buffers were on "meta"
    return hf.to(torch.float16 if c.dtype == "float16" else torch.float32).eval()


def _cache_kw() -> str:
    """transformers 5.2x renamed the ``past_key_values`` argument and output to ``cache``."""
    import inspect

    from transformers import LlamaForCausalLM

    return "cache" if "cache" in inspect.signature(LlamaForCausalLM.forward).parameters else "past_key_values"


def compare_with_transformers(model, run: dict, backend, opts, threads: dict | None, log=print):
    """Time the cached step in both at the run's first and last context.

    Returns (comparisons, note): note says why nothing was compared, when that happens.
    """
    if backend.name != "numpy":
        return [], "The transformers comparison runs with the NumPy backend (PyTorch CPU) only."
    try:
        import torch
        import transformers  # noqa: F401
    except ImportError:
        return [], "transformers comparison skipped: torch and transformers are not installed."
    if threads and threads.get("pinned"):
        torch.set_num_threads(threads["count"])
    hf = hf_model(model)
    contexts = sorted({run["points"][0]["context"], run["points"][-1]["context"]})
    found = []
    for ctx in contexts:
        rng = np.random.default_rng(opts.seed + 7 * ctx)
        ids = rng.integers(0, model.config.vocab_size, size=ctx + 1, dtype=np.int64)
        with torch.inference_mode():
            t_ids = torch.from_numpy(ids)[None, :]
            kw = _cache_kw()
            out = hf(t_ids[:, :ctx], use_cache=True)
            past = out[kw] if kw in out else out.past_key_values

            def hf_step():
                return hf(t_ids[:, ctx:], use_cache=True, logits_to_keep=1, **{kw: past}).logits

            def hf_rewind():  # DynamicCache.crop takes a negative count of tokens to drop
                extra = past.get_seq_length() - ctx
                if extra > 0:
                    past.crop(-extra)

            hf_stats = time_host(hf_step, setup=hf_rewind, warmup=opts.warmup, repeats=opts.repeats,
                                 max_seconds=opts.max_point_seconds,
                                 min_seconds=opts.min_point_seconds)
            hf_rewind()
            hf_logits = hf_step()[0, -1].float().numpy()
        cache = model.new_cache(max_len=ctx + 1)
        model.forward(ids[:ctx], cache=cache, last_only=True)

        def rewind():
            cache.truncate(ctx)

        eng_stats = time_host(lambda: model.forward(ids[ctx:], cache=cache, last_only=True), setup=rewind,
                              warmup=opts.warmup, repeats=opts.repeats, max_seconds=opts.max_point_seconds,
                              min_seconds=opts.min_point_seconds)
        rewind()
        eng_logits = np.asarray(model.forward(ids[ctx:], cache=cache, last_only=True))[-1]
        diff = float(np.max(np.abs(eng_logits - hf_logits)))
        tol = 5e-2 if model.config.dtype == "float16" else 1e-3
        scale = max(1.0, float(np.max(np.abs(hf_logits))))
        if diff > tol * scale:
            return found, (f"transformers comparison stopped: {run['shape']} logits differ by {diff:.3g} "
                           f"at context {ctx}, so the two do not compute the same step")
        ratio = hf_stats.median / eng_stats.median
        log(f"[{run['shape']} {run['dtype']}] context {ctx}: engine {eng_stats.median * 1e3:.3f} ms, "
            f"transformers {hf_stats.median * 1e3:.3f} ms, ratio {ratio:.2f}, max |logit diff| {diff:.2g}")
        found.append({
            "shape": run["shape"], "dtype": run["dtype"], "context": ctx,
            "engine": eng_stats.to_json(), "transformers": hf_stats.to_json(), "ratio": ratio,
            "device": "cpu",
        })
    return found, None
