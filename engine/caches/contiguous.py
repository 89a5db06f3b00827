"""The contiguous KV cache: one slot per position, allocated once.

Layout of KVCache (one pair per layer l):  k[l], v[l]  [KV, M, hd]   (M = max_len slots)

Allocated once, up front. Prefill writes a block of T positions, each decode step writes one
position straight into its slot, and attention reads slots 0..pos -- as llama2.c does. Keys
are stored *after* RoPE (as Hugging Face does), so a cached key never needs rotating again.
Nothing is copied or re-allocated while generating; ``length`` is the only moving part.
Slots past ``length`` always hold zeros (reset, truncate and abort clear them), so undoing a
failed write costs nothing on the way: abort zeroes the slots it wrote.
"""
from __future__ import annotations

import numpy as np

from engine.caches.base import BaseCache
from engine.checks import check_int
from engine.config import Config


class KVCache(BaseCache):
    """The contiguous cache: max_len slots per layer, slot i holds position i."""

    def __init__(self, config: Config, max_len: int | None = None, xp=np):
        super().__init__(config, xp)
        max_len = check_int("KVCache max_len", config.max_seq_len if max_len is None else max_len)
        if not 1 <= max_len <= config.max_seq_len:
            raise ValueError(
                f"KVCache max_len must be between 1 and the context window ({config.max_seq_len}), got {max_len}"
            )
        self.max_len = int(max_len)
        shape = (config.n_kv_heads, self.max_len, config.head_dim)  # [KV, M, hd]
        self.k = [xp.zeros(shape, dtype=config.dtype) for _ in range(config.n_layers)]
        self.v = [xp.zeros(shape, dtype=config.dtype) for _ in range(config.n_layers)]

    # ------------------------------------------------------------------ sizes

    @property
    def bytes_per_token(self) -> int:
        """2 (K and V) * layers * kv heads * head_dim * bytes per number."""
        return self.config.kv_values_per_token * self.config.dtype_bytes

    @property
    def bytes_used(self) -> int:
        """Bytes holding real entries (grows by bytes_per_token each step)."""
        return self.length * self.bytes_per_token

    @property
    def bytes_allocated(self) -> int:
        """Bytes reserved up front for max_len positions."""
        return self.max_len * self.bytes_per_token

    @property
    def free(self) -> int:
        return self.max_len - self.length

    # ------------------------------------------------------------------ writes

    def store(self, layer: int, k, v):
        """Write k, v [KV, T, hd] into slots length .. length+T-1 of ``layer``.

        Returns views K, V [KV, S, hd] of slots 0 .. length+T-1 (S = length + T) and
        key_pos None (slot i is position i): what the new positions attend to. ``length``
        itself moves only in :meth:`advance`, once all layers have written.
        """
        pos, t = self.length, k.shape[1]
        self.k[layer][:, pos : pos + t] = k  # slots past length hold zeros: abort re-zeroes them
        self.v[layer][:, pos : pos + t] = v
        return self.k[layer][:, : pos + t], self.v[layer][:, : pos + t], None

    # KVCache needs no log: slots past length are zeros, so abort zeroes what the write touched
    def begin(self, n_new: int) -> None:
        self.check_room(n_new)
        self._txn_n = n_new

    def abort(self) -> None:
        pos, n, self._txn_n = self.length, self._txn_n, 0
        for a in self.k + self.v:
            a[:, pos : pos + n] = 0

    def truncate(self, n: int) -> None:
        super().truncate(n)
        for a in self.k + self.v:
            a[:, self.length :] = 0  # the invariant abort relies on

    def _clear(self) -> None:
        for a in self.k + self.v:
            a[...] = 0

    # ------------------------------------------------------------------ reads

    def keys(self, layer: int):
        """K [KV, length, hd] of ``layer`` (a view)."""
        return self.k[layer][:, : self.length]

    def values(self, layer: int):
        """V [KV, length, hd] of ``layer`` (a view)."""
        return self.v[layer][:, : self.length]

    def __repr__(self) -> str:
        c = self.config
        return (
            f"KVCache(layers={c.n_layers}, kv_heads={c.n_kv_heads}, head_dim={c.head_dim}, "
            f"length={self.length}/{self.max_len}, dtype={c.dtype}, bytes_used={self.bytes_used})"
        )
