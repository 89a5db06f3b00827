"""The KV cache: the model's filing cabinet of keys and values for positions already seen.

Two classes: ``BaseCache``, the contract every cache keeps with the model (the rolling,
quantized and paged caches are its siblings, one module each), and ``KVCache``, the plain
contiguous cache below.

The contract, as ``Transformer.forward`` uses it, for T new positions pos .. pos+T-1
(pos = ``length``):

    cache.check_room(T)                 ValueError, before anything is written, if T won't fit
    K, V, key_pos = cache.store(l, k, v)   per layer l: k, v [KV, T, hd] (keys after RoPE) go in;
                                        K, V [KV, S, hd] in the model's dtype come out: every
                                        key/value the new queries may read, the new ones
                                        included. key_pos [S] (ints) says which position each
                                        of the S slots holds, or is None when slot i holds
                                        position i (the model masks the future and, with
                                        Config.sliding_window, positions out of the window).
    cache.advance(T)                    once all layers stored: length += T

and one optional hook, for a cache that chooses what to keep by attention (H2O,
engine/evicting_cache.py):

    cache.observe_attention(l, probs)   if the cache has this method, the model calls it per layer
                                        right after the softmax: probs [H, T, S] float32, the new
                                        queries' weights over the S keys ``store`` handed back

plus ``length``, ``bytes_used``, ``bytes_allocated``, ``reset()`` and ``truncate(n)``.

Layout of KVCache (one pair per layer l):  k[l], v[l]  [KV, M, hd]   (M = max_len slots)

Allocated once, up front. Prefill writes a block of T positions, each decode step writes one
position straight into its slot, and attention reads slots 0..pos -- as llama2.c does. Keys
are stored *after* RoPE (as Hugging Face does), so a cached key never needs rotating again.
Nothing is copied or re-allocated while generating; ``length`` is the only moving part.
"""
from __future__ import annotations

import numpy as np

from engine.checks import check_int
from engine.config import Config


class BaseCache:
    """What every KV cache shares: its config, ``length`` and the checks on it.

    Subclasses implement ``store`` (see the module doc), ``bytes_used``, ``bytes_allocated``,
    ``free`` and ``_clear`` (forget the stored entries).
    """

    def __init__(self, config: Config, xp=np):
        if not isinstance(config, Config):
            raise TypeError(f"{type(self).__name__} needs an engine Config, got {type(config).__name__}")
        self.config = config
        self.xp = xp
        self.length = 0  # positions seen: the next token goes to position ``length``

    def store(self, layer: int, k, v):  # pragma: no cover - the contract, see the module doc
        raise NotImplementedError

    @property
    def free(self) -> int:
        """How many more positions fit."""
        raise NotImplementedError  # pragma: no cover

    def check_room(self, n_new: int) -> None:
        """ValueError (before anything is written) when n_new more positions do not fit."""
        if n_new > self.free:
            raise ValueError(
                f"KV cache is full: it holds {self.length} positions and has room for {self.free} more, "
                f"not {n_new}. Start again with cache.reset(), or make a larger cache "
                f"(model.new_cache(max_len=...), at most the context window {self.config.max_seq_len})."
            )

    def advance(self, n_new: int) -> None:
        self.length += n_new

    def truncate(self, n: int) -> None:
        """Keep only the first n positions (rewind, e.g. to time the same step again)."""
        try:
            n = check_int("truncate length", n, minimum=0, maximum=self.length)
        except (TypeError, ValueError):
            raise ValueError(f"can only truncate to 0 .. {self.length} positions, got {n!r}") from None
        self.length = n

    def reset(self) -> None:
        """Forget every entry (storage is cleared so an inspection never shows stale notes)."""
        self._clear()
        self.length = 0

    def _clear(self) -> None:  # pragma: no cover - see the class doc
        raise NotImplementedError


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
        self.k[layer][:, pos : pos + t] = k
        self.v[layer][:, pos : pos + t] = v
        return self.k[layer][:, : pos + t], self.v[layer][:, : pos + t], None

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
