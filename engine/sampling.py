"""Turning logits into the next token: temperature, top-k, top-p, a seeded random draw.

Works on host NumPy arrays (the Generator converts CuPy logits once per step) in float64.
Order of the filters follows Hugging Face: temperature, then top-k, then top-p.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.checks import check_int, check_number


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 1.0  # 0 = greedy (always the most likely token); < 1 sharper, > 1 flatter
    top_k: int = 0  # keep only the k most likely tokens; 0 = off
    top_p: float = 1.0  # keep the smallest set whose probability reaches p; 1.0 = off
    seed: int | None = 0  # seeds np.random.default_rng; None = fresh entropy each start

    def __post_init__(self):
        t = check_number("temperature", self.temperature, minimum=0.0,
                         rule="a finite number >= 0 (0 means greedy)")
        k = check_int("top_k", self.top_k, minimum=0)
        p = check_number("top_p", self.top_p, rule="in (0, 1] (1 turns it off)")
        if not 0 < p <= 1:
            raise ValueError(f"top_p must be in (0, 1] (1 turns it off), got {p!r}")
        if self.seed is not None:
            check_int("seed", self.seed, minimum=0)
        object.__setattr__(self, "temperature", t)
        object.__setattr__(self, "top_k", k)
        object.__setattr__(self, "top_p", float(p))

    @property
    def greedy(self) -> bool:
        return self.temperature == 0


def _check_logits(logits) -> np.ndarray:
    z = np.asarray(logits, dtype=np.float64)
    if z.ndim != 1 or z.size == 0:
        raise ValueError(f"logits must be one non-empty vector [V], got shape {z.shape}")
    if not np.isfinite(z).all():
        raise ValueError("the model produced NaN or infinite logits (a float16 overflow?); try float32")
    return z


def softmax(logits, temperature: float = 1.0) -> np.ndarray:
    """Probabilities [V] (float64) of logits / temperature, via log-sum-exp.

    Subtracting the max first keeps every exponent <= 0, so a tiny temperature cannot
    overflow; temperature 0 is the limit: all mass on the arg-max (first one on ties).
    """
    z = _check_logits(logits)
    if temperature == 0:
        p = np.zeros_like(z)
        p[int(np.argmax(z))] = 1.0
        return p
    with np.errstate(over="ignore", under="ignore"):
        z = (z - z.max()) / temperature  # <= 0; very negative values underflow to exp() = 0
        e = np.exp(z)
    return e / e.sum()


def filter_top_k(p: np.ndarray, k: int) -> np.ndarray:
    """Zero all but the k largest probabilities (exactly k survive) and renormalise."""
    if k <= 0 or k >= p.size:
        return p
    keep = np.argpartition(-p, k - 1)[:k]
    out = np.zeros_like(p)
    out[keep] = p[keep]
    return out / out.sum()


def filter_top_p(p: np.ndarray, top_p: float) -> np.ndarray:
    """Keep the most likely tokens until their total reaches top_p (at least one)."""
    if top_p >= 1.0:
        return p
    order = np.argsort(-p, kind="stable")
    cum = np.cumsum(p[order])
    n_keep = int(np.searchsorted(cum, top_p * cum[-1], side="left")) + 1  # first index reaching p
    keep = order[: min(n_keep, p.size)]
    out = np.zeros_like(p)
    out[keep] = p[keep]
    return out / out.sum()


def distribution(logits, params: SamplingParams) -> np.ndarray:
    """The distribution [V] the next token is drawn from, after all filters."""
    p = softmax(logits, params.temperature)
    if params.greedy:
        return p
    return filter_top_p(filter_top_k(p, params.top_k), params.top_p)


def draw(p: np.ndarray, rng: np.random.Generator) -> int:
    """One token id from probabilities p (inverse CDF; a zero-probability id is never drawn)."""
    cum = np.cumsum(p)
    i = int(np.searchsorted(cum, rng.random() * cum[-1], side="right"))
    return min(i, int(np.flatnonzero(p)[-1]))


def sample(logits, params: SamplingParams, rng: np.random.Generator) -> tuple[int, np.ndarray]:
    """(chosen id, the distribution it was drawn from). Greedy uses no randomness."""
    p = distribution(logits, params)
    if params.greedy:
        return int(np.argmax(p)), p
    return draw(p, rng), p


def top_entries(p: np.ndarray, n: int) -> list[tuple[int, float]]:
    """The n most likely (id, prob) pairs, highest first (ties: lower id first)."""
    n = max(0, min(n, p.size))
    if n == 0:
        return []
    idx = np.argpartition(-p, n - 1)[:n] if n < p.size else np.arange(p.size)
    idx = idx[np.lexsort((idx, -p[idx]))]
    return [(int(i), float(p[i])) for i in idx]
