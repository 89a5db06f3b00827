"""The rolling-buffer KV cache of sliding-window attention (Mistral 7B's, in llama2.c style).

With ``Config.sliding_window = W`` a query at position p reads only positions p-W+1 .. p, so
a key older than W positions is never read again. The cache therefore needs W slots, not
max_seq_len: position p is written into slot p % W, over the position p - W that just fell
out of the window. The memory stays W positions however long the text grows.

Layout (one pair per layer l):   k[l], v[l]  [KV, W, hd]      slot_pos  [W] ints, -1 = empty

``slot_pos`` is ``key_pos`` of the BaseCache contract: it tells the model which position
each slot holds, because after the first W positions the slots are no longer in order. The
model masks by position (the future, and everything W or more positions back), so the
order of the slots does not matter to attention.

Decode (T = 1) writes one slot and hands back the buffer itself: after the write it holds
exactly the W positions the new query may see. A prefill block (T > 1) may be longer than
W: its early queries need keys that its own later positions will overwrite, so ``store``
hands back the old window *followed by* all T new keys (up to W-1 + T entries, masked by
position), and only then keeps the last W of them in the buffer.
"""
from __future__ import annotations

import numpy as np

from engine.caches.base import BaseCache
from engine.config import Config


class RollingKVCache(BaseCache):
    """W = config.sliding_window slots per layer; position p lives in slot p % W."""

    _logs_writes = True  # store() logs the slots it overwrites (they may hold live positions)

    def __init__(self, config: Config, xp=np):
        super().__init__(config, xp)
        if config.sliding_window is None:
            raise ValueError(
                "a rolling-buffer cache needs a sliding window: set Config(sliding_window=W); "
                "without one every position stays visible, so use KVCache"
            )
        self.window = W = config.sliding_window
        shape = (config.n_kv_heads, W, config.head_dim)  # [KV, W, hd]
        self.k = [xp.zeros(shape, dtype=config.dtype) for _ in range(config.n_layers)]
        self.v = [xp.zeros(shape, dtype=config.dtype) for _ in range(config.n_layers)]
        self.slot_pos = np.full(W, -1, dtype=np.int64)  # [W] position held by each slot

    # ------------------------------------------------------------------ sizes

    @property
    def bytes_per_token(self) -> int:
        """2 (K and V) * layers * kv heads * head_dim * bytes per number, as KVCache."""
        return self.config.kv_values_per_token * self.config.dtype_bytes

    @property
    def bytes_used(self) -> int:
        """Bytes holding positions the next query may still read: at most W positions."""
        return min(self.length, self.window) * self.bytes_per_token

    @property
    def bytes_allocated(self) -> int:
        """W slots, whatever the length of the text."""
        return self.window * self.bytes_per_token

    @property
    def free(self) -> int:
        """Slots are reused, so the only limit is the context window (the RoPE table)."""
        return self.config.max_seq_len - self.length

    # ------------------------------------------------------------------ writes

    def store(self, layer: int, k, v):
        """Write k, v [KV, T, hd] for positions length .. length+T-1; see the module doc.

        Returns K, V [KV, S, hd] and key_pos [S]: the buffer itself (S = W, or fewer while
        it fills) for a decode step, the old window plus the new block for a longer block.
        """
        xp, W, pos, T = self.xp, self.window, self.length, k.shape[1]
        new_pos = np.arange(pos, pos + T)  # [T]
        if T > 1:  # the block's first query still needs the old window: read it before writing
            old = np.arange(max(0, pos - W + 1), pos) % W  # [S_old] slots, oldest position first
            K = xp.concatenate([self.k[layer][:, old], k], axis=1)  # [KV, S_old+T, hd]
            V = xp.concatenate([self.v[layer][:, old], v], axis=1)  # [KV, S_old+T, hd]
            key_pos = np.concatenate([self.slot_pos[old], new_pos])  # [S_old+T]
        slots, kept = self._slots(T)
        self._keep_for_undo(self.k[layer], (slice(None), slots))
        self._keep_for_undo(self.v[layer], (slice(None), slots))
        self.k[layer][:, slots] = k[:, kept]
        self.v[layer][:, slots] = v[:, kept]
        if T > 1:
            return K, V, None if pos == 0 else key_pos
        if pos < W:  # still filling: slots 0 .. pos hold positions 0 .. pos
            return self.k[layer][:, : pos + 1], self.v[layer][:, : pos + 1], None
        held = self.slot_pos.copy()  # slot_pos itself moves in advance(), after every layer
        held[slots] = new_pos[kept]
        return self.k[layer], self.v[layer], held

    def _slots(self, n_new: int):
        """(slots, which of the n_new positions go there): the last W new positions only."""
        kept = slice(max(0, n_new - self.window), n_new)
        return np.arange(self.length, self.length + n_new)[kept] % self.window, kept

    def advance(self, n_new: int) -> None:
        slots, kept = self._slots(n_new)
        self.slot_pos[slots] = np.arange(self.length, self.length + n_new)[kept]
        super().advance(n_new)

    def truncate(self, n: int) -> None:
        """Rewind to n positions; refused once a position the rewind needs was overwritten."""
        if self.length > self.window and n != self.length:
            raise ValueError(
                f"cannot rewind a rolling cache past overwritten slots: it holds positions "
                f"{self.length - self.window} .. {self.length - 1} only; reset() and feed the text again"
            )
        super().truncate(n)
        self.slot_pos[self.slot_pos >= self.length] = -1

    # ------------------------------------------------------------------ reads

    def _held(self):
        """Slots of the positions a next query could read, oldest first (at most W)."""
        n = min(self.length, self.window)
        return np.arange(self.length - n, self.length) % self.window

    def keys(self, layer: int):
        """K [KV, min(length, W), hd] of ``layer``: the window, oldest position first (a copy)."""
        return self.k[layer][:, self._held()]

    def values(self, layer: int):
        """V [KV, min(length, W), hd] of ``layer``, as keys()."""
        return self.v[layer][:, self._held()]

    def _clear(self) -> None:
        for a in self.k + self.v:
            a[...] = 0
        self.slot_pos[:] = -1

    def __repr__(self) -> str:
        c = self.config
        return (f"RollingKVCache(layers={c.n_layers}, kv_heads={c.n_kv_heads}, head_dim={c.head_dim}, "
                f"window={self.window}, length={self.length}, dtype={c.dtype}, bytes_used={self.bytes_used})")
