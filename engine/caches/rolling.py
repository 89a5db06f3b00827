"""The rolling-buffer KV cache of sliding-window attention (Mistral 7B v0.1's, in llama2.c
style), with StreamingLLM's attention sinks as an option.

With ``Config.sliding_window = W`` a query at position p reads only positions p-W+1 .. p, so
a key older than W positions is never read again. The cache therefore needs W slots, not
max_seq_len: position p is written into slot p % W, over the position p - W that just fell
out of the window. The memory stays W positions however long the text grows.

Attention sinks. StreamingLLM (Xiao et al., ICLR 2024, "Efficient Streaming Language Models
with Attention Sinks") observed that many models pour a large share of every query's
attention onto the first tokens of the text, whatever those tokens say. A plain window throws
them away as soon as it moves past them, and their attention lands somewhere else. With
``Config(sliding_window=W, attention_sinks=S)`` a query at position p also reads positions
0 .. S-1 (the model's mask says so), and the cache keeps them in S slots that never move:

    position p < S     lives in slot p                       (never overwritten)
    position p >= S    lives in slot S + (p - S) % W         (over the position W older)

so S = 0, the default, is the plain rolling buffer: slot p % W.

Layout (one pair per layer l):   k[l], v[l]  [KV, S+W, hd]    slot_pos [S+W] ints, -1 = empty

``slot_pos`` is ``key_pos`` of the cache contract: it tells the model which position each
slot holds, because once the window wraps the slots are no longer in order. The model masks
by position (the future, and everything W or more positions back that is not a sink), so the
order of the slots does not matter to attention.

Positions. Keys are stored *after* RoPE, with their position in the text, as in every cache
of this engine; a query at position 200 that reads sink 0 sees a key 200 positions away.
StreamingLLM instead numbers positions *inside the cache* (it caches keys before RoPE and
rotates them at every step) so that a text longer than the model's training length never
shows it a distance it did not learn. The course model never leaves its context window, so
keeping the text's own positions costs nothing there, keeps the keys written once, and lets
this cache equal the full cache under the same mask exactly -- which the tests check.

Decode (T = 1) writes one slot and hands back the buffer itself: after the write it holds
exactly the positions the new query may see. A prefill block (T > 1) may be longer than the
window: its early queries need keys that its own later positions will overwrite, so
``store`` hands back the sinks and the old window *followed by* all T new keys (masked by
position), and only then keeps the sinks and the last W of them in the buffer.
"""
from __future__ import annotations

import numpy as np

from engine.caches.base import BaseCache
from engine.config import Config


class RollingKVCache(BaseCache):
    """S = config.attention_sinks slots that never move (none by default), then a rolling
    window of W = config.sliding_window slots."""

    _logs_writes = True  # store() logs the slots it overwrites (they may hold live positions)

    def __init__(self, config: Config, xp=np):
        super().__init__(config, xp)
        if config.sliding_window is None:
            raise ValueError(
                "a rolling-buffer cache needs a sliding window: set Config(sliding_window=W) "
                "(and attention_sinks=S to keep the first S positions too); "
                "without one every position stays visible, so use KVCache"
            )
        self.window, self.sinks = W, S = config.sliding_window, config.attention_sinks
        shape = (config.n_kv_heads, S + W, config.head_dim)  # [KV, S+W, hd]
        self.k = [xp.zeros(shape, dtype=config.dtype) for _ in range(config.n_layers)]
        self.v = [xp.zeros(shape, dtype=config.dtype) for _ in range(config.n_layers)]
        self.slot_pos = np.full(S + W, -1, dtype=np.int64)  # [S+W] position held by each slot

    # ------------------------------------------------------------------ sizes

    @property
    def slots(self) -> int:
        """S + W: the positions this cache can hold."""
        return self.sinks + self.window

    @property
    def bytes_per_token(self) -> int:
        """2 (K and V) * layers * kv heads * head_dim * bytes per number, as KVCache."""
        return self.config.kv_values_per_token * self.config.dtype_bytes

    @property
    def bytes_used(self) -> int:
        """Bytes holding positions a later query may still read: at most S + W positions."""
        return min(self.length, self.slots) * self.bytes_per_token

    @property
    def bytes_allocated(self) -> int:
        """S + W slots, whatever the length of the text."""
        return self.slots * self.bytes_per_token

    @property
    def free(self) -> int:
        """Slots are reused, so the only limit is the context window (the RoPE table)."""
        return self.config.max_seq_len - self.length

    # ------------------------------------------------------------------ writes

    def slot_of(self, positions):
        """Slot of each position: p itself for a sink, S + (p - S) % W for the window."""
        p = np.asarray(positions)
        S, W = self.sinks, self.window
        return np.where(p < S, p, S + (p - S) % W)

    def _kept(self, n_new: int):
        """Indices (into the n_new new positions) that stay after the write: every sink, the last W others."""
        new_pos = np.arange(self.length, self.length + n_new)
        sinks = np.flatnonzero(new_pos < self.sinks)
        others = np.flatnonzero(new_pos >= self.sinks)[-self.window :]
        return np.concatenate([sinks, others])

    def store(self, layer: int, k, v):
        """Write k, v [KV, T, hd] for positions length .. length+T-1; see the module doc.

        Returns K, V [KV, S', hd] and key_pos [S'] (None while slot i holds position i): the
        buffer itself for a decode step, the sinks and old window plus the new block for T > 1.
        """
        xp, pos, T = self.xp, self.length, k.shape[1]
        new_pos = np.arange(pos, pos + T)  # [T]
        if T > 1:  # the block's first query still needs the old window: read it before writing
            old_pos = self._visible(pos, self.window - 1)  # [S_old] sinks, then the window, oldest first
            old = self.slot_of(old_pos)
            K = xp.concatenate([self.k[layer][:, old], k], axis=1)  # [KV, S_old+T, hd]
            V = xp.concatenate([self.v[layer][:, old], v], axis=1)  # [KV, S_old+T, hd]
            key_pos = np.concatenate([old_pos, new_pos])  # [S_old+T]
        kept = self._kept(T)
        slots = self.slot_of(new_pos[kept])
        self._keep_for_undo(self.k[layer], (slice(None), slots))
        self._keep_for_undo(self.v[layer], (slice(None), slots))
        self.k[layer][:, slots] = k[:, kept]
        self.v[layer][:, slots] = v[:, kept]
        if T > 1:
            return K, V, None if pos == 0 else key_pos
        if pos < self.slots:  # still filling: slots 0 .. pos hold positions 0 .. pos
            return self.k[layer][:, : pos + 1], self.v[layer][:, : pos + 1], None
        held = self.slot_pos.copy()  # slot_pos itself moves in advance(), after every layer
        held[slots] = new_pos[kept]
        return self.k[layer], self.v[layer], held

    def advance(self, n_new: int) -> None:
        new_pos = np.arange(self.length, self.length + n_new)[self._kept(n_new)]
        self.slot_pos[self.slot_of(new_pos)] = new_pos
        super().advance(n_new)

    def truncate(self, n: int) -> None:
        """Rewind to n positions; refused once a position the rewind needs was overwritten."""
        if self.length > self.slots and n != self.length:
            sinks = f"0 .. {self.sinks - 1} and " if self.sinks else ""
            raise ValueError(
                f"cannot rewind a rolling cache past overwritten slots: it holds positions "
                f"{sinks}{self.length - self.window} .. {self.length - 1} only; reset() and feed the text again"
            )
        super().truncate(n)
        self.slot_pos[self.slot_pos >= self.length] = -1

    # ------------------------------------------------------------------ reads

    def _visible(self, n: int, window: int) -> np.ndarray:
        """Of positions 0 .. n-1: the sinks, then the last ``window`` others, oldest first."""
        return np.concatenate([np.arange(min(n, self.sinks)), np.arange(max(self.sinks, n - window), n)])

    def held_positions(self) -> np.ndarray:
        """The positions a next query could read, oldest first: the sinks, then the window."""
        return self._visible(self.length, self.window)

    def keys(self, layer: int):
        """K [KV, held, hd] of ``layer``: the sinks, then the window, oldest position first (a copy)."""
        return self.k[layer][:, self.slot_of(self.held_positions())]

    def values(self, layer: int):
        """V [KV, held, hd] of ``layer``, as keys()."""
        return self.v[layer][:, self.slot_of(self.held_positions())]

    def _clear(self) -> None:
        for a in self.k + self.v:
            a[...] = 0
        self.slot_pos[:] = -1

    def __repr__(self) -> str:
        c = self.config
        sinks = f"sinks={self.sinks}, " if self.sinks else ""
        return (f"RollingKVCache(layers={c.n_layers}, kv_heads={c.n_kv_heads}, head_dim={c.head_dim}, "
                f"{sinks}window={self.window}, length={self.length}, dtype={c.dtype}, bytes_used={self.bytes_used})")
