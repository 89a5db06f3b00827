"""The heavy-hitter cache: a fixed budget of slots, evicting the positions attention ignores.

H2O (Zhang et al., NeurIPS 2023, "H2O: Heavy-Hitter Oracle for Efficient Generative
Inference of Large Language Models") found that a small share of the tokens collects most
of the attention, and that those "heavy hitters" can be spotted from the attention the model
has already paid them. Its cache keeps a fixed budget of B positions per layer:

    the R most recent positions        (the local context every step needs)
    + the B - R others whose accumulated attention is largest   (the heavy hitters)

and, once full, evicts one position for every new one.

Layout (per layer l, slots 0 .. n-1 in use, oldest position first):

    k[l], v[l]  [KV, B, hd]     keys (after RoPE) and values
    pos[l]      [B]  ints       position held by each slot, -1 = empty
    score[l]    [B]  float64    attention each held position has received so far

The score is the attention weight a position received from every query since it arrived,
summed over all heads and queries of the layer. The H2O paper keeps one set per head; this
engine keeps one per layer, because a cache hands the model one ``key_pos`` per layer (so all
heads of a layer read the same positions).

The score needs the attention weights, which only the model has: ``Transformer`` calls
``cache.observe_attention(layer, probs)`` right after the softmax when the cache has that
method (the optional hook of the BaseCache contract). One forward pass therefore goes:

    store(l, k, v)            K, V = held slots + the T new positions, key_pos = their positions
    observe_attention(l, p)   p [H, T, S]: the scores of those S positions grow by p.sum(H, T)
    advance(T)                every layer keeps B of its S positions: R recent + heavy hitters

Eviction happens in ``advance``, once the whole step has read the cache. Positions keep their
original RoPE angles (see engine/caches/rolling.py), so with B >= the text's length nothing is
evicted and the logits equal the full cache's.
"""
from __future__ import annotations

import numpy as np

from engine.caches.base import BaseCache
from engine.checks import check_int
from engine.config import Config


class HeavyHitterKVCache(BaseCache):
    """B = budget slots per layer: the ``recent`` newest positions plus the heaviest hitters."""

    _logs_writes = True  # nothing is written before advance(): an abort only drops the pending step

    def __init__(self, config: Config, budget: int, recent: int, xp=np):
        super().__init__(config, xp)
        if config.sliding_window is not None:
            raise ValueError(
                "a heavy-hitter cache chooses its own positions; it cannot be combined with a sliding window "
                f"(Config.sliding_window={config.sliding_window}): use a Config without one"
            )
        self.budget = B = check_int("HeavyHitterKVCache budget", budget, minimum=1, maximum=config.max_seq_len)
        self.recent = check_int("HeavyHitterKVCache recent", recent, minimum=0, maximum=B)
        shape = (config.n_kv_heads, B, config.head_dim)  # [KV, B, hd]
        self.k = [xp.zeros(shape, dtype=config.dtype) for _ in range(config.n_layers)]
        self.v = [xp.zeros(shape, dtype=config.dtype) for _ in range(config.n_layers)]
        self.pos = [np.full(B, -1, dtype=np.int64) for _ in range(config.n_layers)]  # [B] each
        self.score = [np.zeros(B, dtype=np.float64) for _ in range(config.n_layers)]  # [B] each
        self._pending: list = [None] * config.n_layers  # per layer: (K, V, key_pos, score) of this step

    # ------------------------------------------------------------------ sizes

    @property
    def held(self) -> int:
        """Positions each layer holds now: every one seen, up to the budget."""
        return min(self.length, self.budget)

    @property
    def bytes_per_token(self) -> int:
        """2 (K and V) * layers * kv heads * head_dim * bytes per number, as KVCache."""
        return self.config.kv_values_per_token * self.config.dtype_bytes

    @property
    def bytes_used(self) -> int:
        """K and V bytes of the held positions (the scores, B floats per layer, are bookkeeping)."""
        return self.held * self.bytes_per_token

    @property
    def bytes_allocated(self) -> int:
        """K and V of B slots, whatever the length of the text."""
        return self.budget * self.bytes_per_token

    @property
    def free(self) -> int:
        """Slots are reused, so the only limit is the context window (the RoPE table)."""
        return self.config.max_seq_len - self.length

    def positions(self, layer: int) -> np.ndarray:
        """The positions ``layer`` holds, oldest first."""
        return self.pos[layer][: self.held].copy()

    # ------------------------------------------------------------------ the step

    def store(self, layer: int, k, v):
        """Hand back the held slots followed by k, v [KV, T, hd] of positions length .. length+T-1.

        Returns K, V [KV, n+T, hd] and key_pos [n+T]; nothing is written until ``advance``.
        """
        n, T = self.held, k.shape[1]
        K = self.xp.concatenate([self.k[layer][:, :n], k], axis=1)  # [KV, n+T, hd]
        V = self.xp.concatenate([self.v[layer][:, :n], v], axis=1)  # [KV, n+T, hd]
        key_pos = np.concatenate([self.pos[layer][:n], np.arange(self.length, self.length + T)])  # [n+T]
        self._pending[layer] = [K, V, key_pos, None]
        return K, V, key_pos

    def observe_attention(self, layer: int, probs) -> None:
        """probs [H, T, S]: the attention weights of this step's queries over what ``store`` handed back."""
        pending = self._pending[layer]
        if pending is None or probs.shape[-1] != pending[2].shape[0]:
            raise ValueError(f"observe_attention(layer {layer}) must follow store() of the same layer, "
                             f"with weights over the {0 if pending is None else pending[2].shape[0]} positions it handed back")
        received = np.asarray(probs, dtype=np.float64).sum(axis=(0, 1))  # [S] over heads and queries
        old = self.score[layer][: self.held]
        pending[3] = np.concatenate([old, np.zeros(len(received) - len(old))]) + received  # [S]

    def keep(self, key_pos: np.ndarray, score: np.ndarray) -> np.ndarray:
        """Indices of the positions to keep (at most B, oldest first): the R newest, then the
        B - R others with the largest score (a tie goes to the newer position)."""
        S, B, R = len(key_pos), self.budget, self.recent
        if S <= B:
            return np.arange(S)
        if S == B + 1:  # a decode step: evict the one older position with the smallest score (the older on a tie)
            if B == R:
                return np.arange(1, S)
            drop = int(np.argmin(score[: S - R]))  # key_pos ascending: index order is age order
            return np.r_[0:drop, drop + 1 : S]
        by_age = np.argsort(key_pos)  # oldest first
        newest, rest = by_age[S - R :], by_age[: S - R]
        heavy = rest[np.lexsort((-key_pos[rest], -score[rest]))][: B - R]  # largest score first
        return np.sort(np.concatenate([heavy, newest]))  # key_pos is ascending, so this is oldest first

    def advance(self, n_new: int) -> None:
        for layer, pending in enumerate(self._pending):  # every layer checked before any is written
            if pending is None or pending[3] is None:
                raise RuntimeError(
                    f"HeavyHitterKVCache: layer {layer} stored keys but never saw their attention weights; "
                    f"it needs a model that calls cache.observe_attention(layer, probs) after the softmax"
                )
        for layer in range(self.config.n_layers):
            K, V, key_pos, score = self._pending[layer]
            kept = self.keep(key_pos, score)
            m = len(kept)
            self.k[layer][:, :m], self.v[layer][:, :m] = K[:, kept], V[:, kept]
            self.pos[layer][:m], self.score[layer][:m] = key_pos[kept], score[kept]
            self._pending[layer] = None
        super().advance(n_new)

    def abort(self) -> None:
        """Drop the open step: store() wrote nothing, so only the pending keys and scores go."""
        self._pending = [None] * self.config.n_layers
        super().abort()

    def keys(self, layer: int):
        """K [KV, held, hd] of ``layer``, oldest position first (a copy; positions(layer) names them)."""
        return self.k[layer][:, : self.held].copy()

    def values(self, layer: int):
        """V [KV, held, hd] of ``layer``, as keys()."""
        return self.v[layer][:, : self.held].copy()

    def truncate(self, n: int) -> None:
        """Refused (except to the current length): the scores remember queries a rewind would drop."""
        if n != self.length:
            raise ValueError("cannot rewind a heavy-hitter cache: its scores hold attention from the positions "
                             "a rewind would drop, and evicted positions are gone; reset() and feed the text again")

    def _clear(self) -> None:
        for a in self.k + self.v:
            a[...] = 0
        for p, s in zip(self.pos, self.score):
            p[:] = -1
            s[:] = 0
        self._pending = [None] * self.config.n_layers

    def __repr__(self) -> str:
        c = self.config
        return (f"HeavyHitterKVCache(layers={c.n_layers}, kv_heads={c.n_kv_heads}, head_dim={c.head_dim}, "
                f"budget={self.budget}, recent={self.recent}, length={self.length}, dtype={c.dtype}, "
                f"bytes_used={self.bytes_used})")
