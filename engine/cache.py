"""The KV cache: the model's filing cabinet of keys and values for positions already seen.

Layout (one pair per layer l):  k[l], v[l]  [KV, M, hd]   (M = max_len slots)

Allocated once, up front. Prefill writes a block of T positions, each decode step writes one
position straight into its slot, and attention reads slots 0..pos -- as llama2.c does. Keys
are stored *after* RoPE (as Hugging Face does), so a cached key never needs rotating again.
Nothing is copied or re-allocated while generating; ``length`` is the only moving part.
"""
from __future__ import annotations

import numpy as np

from engine.config import Config


class KVCache:
    def __init__(self, config: Config, max_len: int | None = None, xp=np):
        if not isinstance(config, Config):
            raise TypeError(f"KVCache needs an engine Config, got {type(config).__name__}")
        max_len = config.max_seq_len if max_len is None else max_len
        if isinstance(max_len, bool) or not isinstance(max_len, (int, np.integer)):
            raise TypeError(f"KVCache max_len must be an int, got {type(max_len).__name__}")
        if not 1 <= max_len <= config.max_seq_len:
            raise ValueError(
                f"KVCache max_len must be between 1 and the context window ({config.max_seq_len}), got {max_len}"
            )
        self.config = config
        self.xp = xp
        self.max_len = int(max_len)
        shape = (config.n_kv_heads, self.max_len, config.head_dim)  # [KV, M, hd]
        self.k = [xp.zeros(shape, dtype=config.dtype) for _ in range(config.n_layers)]
        self.v = [xp.zeros(shape, dtype=config.dtype) for _ in range(config.n_layers)]
        self.length = 0  # tokens held: slots 0 .. length-1 are valid

    # ------------------------------------------------------------------ sizes

    @property
    def bytes_per_token(self) -> int:
        """2 (K and V) * layers * kv heads * head_dim * bytes per number."""
        c = self.config
        return 2 * c.n_layers * c.n_kv_heads * c.head_dim * c.dtype_bytes

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

    def check_room(self, n_new: int) -> None:
        """ValueError (before anything is written) when n_new more positions do not fit."""
        if n_new > self.free:
            raise ValueError(
                f"KV cache is full: it holds {self.length} of {self.max_len} positions and cannot take "
                f"{n_new} more. Start again with cache.reset(), or make a larger cache "
                f"(model.new_cache(max_len=...), at most the context window {self.config.max_seq_len})."
            )

    def store(self, layer: int, k, v):
        """Write k, v [KV, T, hd] into slots length .. length+T-1 of ``layer``.

        Returns views K, V [KV, S, hd] of slots 0 .. length+T-1 (S = length + T): what the
        new positions attend to. ``length`` itself moves only in :meth:`advance`, once all
        layers have written.
        """
        pos, t = self.length, k.shape[1]
        self.k[layer][:, pos : pos + t] = k
        self.v[layer][:, pos : pos + t] = v
        return self.k[layer][:, : pos + t], self.v[layer][:, : pos + t]

    def advance(self, n_new: int) -> None:
        self.length += n_new

    def truncate(self, n: int) -> None:
        """Keep only the first n positions (rewind, e.g. to time the same step again)."""
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not 0 <= n <= self.length:
            raise ValueError(f"can only truncate to 0 .. {self.length} positions, got {n!r}")
        self.length = int(n)

    def reset(self) -> None:
        """Forget every entry (slots are zeroed so an inspection never shows stale notes)."""
        for a in self.k + self.v:
            a[...] = 0
        self.length = 0

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
