"""Adam with decoupled weight decay (AdamW), global-norm clipping and a warmup + cosine schedule.

Plain NumPy on a dict of parameter arrays, updated in place. Deterministic: no randomness.
"""
from __future__ import annotations

import math

import numpy as np


def lr_at(step: int, total: int, peak: float, warmup: int, min_ratio: float) -> float:
    """Learning rate of step ``step`` (0-based): linear warmup, then cosine down to peak*min_ratio."""
    if step < warmup:
        return peak * (step + 1) / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return peak * (min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress))))


def clip_by_global_norm(grads: dict, max_norm: float) -> float:
    """Scale all gradients together so their joint L2 norm is at most ``max_norm``; return the norm before."""
    norm = math.sqrt(sum(float((g.astype(np.float64) ** 2).sum()) for g in grads.values()))
    if max_norm > 0 and norm > max_norm:
        scale = max_norm / (norm + 1e-12)
        for g in grads.values():
            g *= scale
    return norm


class AdamW:
    """m <- b1 m + (1-b1) g;  v <- b2 v + (1-b2) g^2;  w <- w - lr (m_hat / (sqrt(v_hat) + eps) + wd w).

    m_hat = m / (1 - b1^t) and v_hat = v / (1 - b2^t) undo the bias of starting at zero.
    Weight decay applies to matrices (embeddings, projections, head), not to norm gains.
    """

    def __init__(self, params: dict, betas=(0.9, 0.95), eps: float = 1e-8, weight_decay: float = 0.0):
        self.b1, self.b2 = betas
        self.eps = eps
        self.weight_decay = weight_decay
        self.m = {k: np.zeros_like(w) for k, w in params.items()}
        self.v = {k: np.zeros_like(w) for k, w in params.items()}
        self.t = 0

    def step(self, params: dict, grads: dict, lr: float) -> None:
        self.t += 1
        c1 = 1.0 - self.b1 ** self.t
        c2 = 1.0 - self.b2 ** self.t
        for k, w in params.items():
            g = grads[k]
            m, v = self.m[k], self.v[k]
            m *= self.b1
            m += (1.0 - self.b1) * g
            v *= self.b2
            v += (1.0 - self.b2) * (g * g)
            update = (m / c1) / (np.sqrt(v / c2) + self.eps)
            if self.weight_decay and w.ndim >= 2:
                update += self.weight_decay * w
            w -= (lr * update).astype(w.dtype, copy=False)
