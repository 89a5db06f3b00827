"""Shared by the CPU and GPU tests of the fused decode step: run the same greedy decode through
the plain engine (NumPy, the reference) and through a FusedDecoder, compare at every step.

Imported as ``decode_checks`` (a unique name: pytest puts this folder on sys.path).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from engine import Config, Transformer
from engine.arrays import to_numpy
from engine.gpu.fused_step import FusedDecoder

# logits compared relative to their largest magnitude (issue 8's tolerances)
TOLERANCE = {"float32": 1e-5, "float16": 2e-2}


def gqa_config(dtype: str = "float32", max_seq_len: int = 96, **over) -> Config:
    """A random grouped-query config: 8 query heads share 2 KV heads (G = 4), odd vocabulary."""
    base = dict(vocab_size=301, d_model=64, n_layers=3, n_heads=8, n_kv_heads=2, ffn_dim=96,
                max_seq_len=max_seq_len, rope_theta=10000.0, dtype=dtype)
    return Config(**{**base, **over})


def as_dtype(model: Transformer, dtype: str, xp=np) -> Transformer:
    """The same weights in another dtype and/or on another array module."""
    cfg = Config.from_dict({**model.config.to_dict(), "dtype": dtype})
    return Transformer(cfg, {k: to_numpy(w) for k, w in model.weights.items()}, xp=xp)


def fill_random(caches, n: int, seed: int = 0) -> None:
    """The same random K/V in the first n slots of every cache (a long context without a prefill)."""
    rng = np.random.default_rng(seed)
    for layer in range(len(caches[0].k)):
        for name in ("k", "v"):
            block = rng.standard_normal(getattr(caches[0], name)[layer][:, :n].shape, dtype=np.float32)
            for cache in caches:
                getattr(cache, name)[layer][:, :n] = cache.xp.asarray(block.astype(cache.config.dtype))
    for cache in caches:
        cache.length = n


@dataclass
class Comparison:
    worst: float  # largest |fused - engine| / max |engine| over all steps
    engine_tokens: list[int]
    fused_tokens: list[int]
    near_ties: list[dict] = field(default_factory=list)  # steps where the two may rightly differ

    def same_tokens(self) -> bool:
        """The fused path chose the engine's token at every step, or differed first where the
        engine's two best logits are closer than the tolerance allows to tell apart (-ftz, FMA
        contraction and the GPU's expf can flip such a near tie; after it each path follows
        its own text, so only the steps before the first difference are compared)."""
        for i, (a, b) in enumerate(zip(self.engine_tokens, self.fused_tokens)):
            if a != b:
                return any(t["step"] == i for t in self.near_ties)
        return True


def greedy_compare(reference: Transformer, fused_model: Transformer, kernels, prompt: list[int],
                   steps: int = 32, random_context: int = 0) -> Comparison:
    """Greedy-decode ``steps`` tokens after ``prompt`` in both; each path follows its own choices.

    With ``random_context`` > 0 both caches start with the same random K/V in that many
    slots and ``prompt`` continues from there (long contexts without a long prefill). The
    logits are compared up to the first step where the tokens differ (after it the two
    contexts differ); a step whose top-two logit margin is within the tolerance is recorded
    in ``near_ties``.
    """
    c_ref, c_fused = reference.new_cache(), fused_model.new_cache()
    if random_context:
        fill_random([c_ref, c_fused], random_context)
    logits = reference.forward(prompt, cache=c_ref, last_only=True)
    if len(prompt) > 1:
        fused_model.forward(prompt[:-1], cache=c_fused)  # the engine's prefill, then the fused steps
    decoder = FusedDecoder(fused_model, c_fused, kernels)
    decoder.feed(prompt[-1])
    tol = TOLERANCE[fused_model.config.dtype]
    r = Comparison(0.0, [], [])
    diverged = False
    for i in range(steps):
        decoder.step(greedy=True)  # the argmax into decoder.token, on the device
        decoder.synchronize()
        fused = to_numpy(decoder.logits).astype(np.float32)
        scale = float(np.abs(logits).max())
        if not diverged:
            r.worst = max(r.worst, float(np.abs(fused - logits).max() / scale))
        top2 = np.sort(logits[-1].astype(np.float64))[-2:]
        if top2[1] - top2[0] <= 2 * tol * scale:
            r.near_ties.append({"step": i, "margin": float(top2[1] - top2[0]), "scale": scale})
        r.engine_tokens.append(int(np.argmax(logits[-1])))
        r.fused_tokens.append(int(to_numpy(decoder.token)[0]))
        diverged = diverged or r.engine_tokens[-1] != r.fused_tokens[-1]
        logits = reference.forward([r.engine_tokens[-1]], cache=c_ref, last_only=True)
    return r
