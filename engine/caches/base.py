"""The KV cache: the model's filing cabinet of keys and values for positions already seen.

``Cache`` (a typing.Protocol) is the contract every cache keeps with the model and the
lessons; ``BaseCache`` implements its bookkeeping. The caches live one module each in
engine/caches/: contiguous (KVCache), rolling, quant, paged (over the allocator in pool.py).

The contract, as ``Transformer.forward`` uses it, for T new positions pos .. pos+T-1
(pos = ``length``):

    cache.begin(T)                      ValueError, before anything is written, if T won't fit;
                                        else a write of T positions is open
    K, V, key_pos = cache.store(l, k, v)   per layer l: k, v [KV, T, hd] (keys after RoPE) go in;
                                        K, V [KV, S, hd] in the model's dtype come out: every
                                        key/value the new queries may read, the new ones
                                        included. key_pos [S] (ints) says which position each
                                        of the S slots holds, or is None when slot i holds
                                        position i (the model masks the future and, with
                                        Config.sliding_window, positions out of the window).
    cache.advance(T)                    once all layers stored: length += T (the commit)
    cache.abort()                       instead of advance, when anything raised after begin:
                                        every array, the length (and a pool's free list and
                                        reference counts) go back to what they were at begin

plus ``config``, ``xp`` (the array module: the model refuses a cache of another one),
``length``, ``free``, ``bytes_used``, ``bytes_allocated``, ``check_room(n)``, ``reset()``,
``truncate(n)``, and the reads ``keys(l)`` / ``values(l)`` -> [KV, n, hd], the positions a
next query could read, oldest first, as numbers (a quantized cache decodes them).

One optional hook (the model looks for it with getattr; the Protocol does not require it), for
a cache that chooses what to keep by attention (H2O, engine/caches/evicting.py):

    cache.observe_attention(l, probs)   if the cache has this method, the model calls it per layer
                                        right after the softmax: probs [H, T, S] float32, the new
                                        queries' weights over the S keys ``store`` handed back

"""
from __future__ import annotations

import copy
from typing import Protocol, runtime_checkable

import numpy as np

from engine.checks import check_int
from engine.config import Config


@runtime_checkable
class Cache(Protocol):
    """Every member the model (forward) and the lessons use; see the module doc."""

    config: Config
    xp: object
    length: int

    @property
    def free(self) -> int: ...
    @property
    def bytes_used(self) -> int: ...
    @property
    def bytes_allocated(self) -> int: ...
    def check_room(self, n_new: int) -> None: ...
    def begin(self, n_new: int) -> None: ...
    def store(self, layer: int, k, v) -> tuple: ...
    def advance(self, n_new: int) -> None: ...
    def abort(self) -> None: ...
    def truncate(self, n: int) -> None: ...
    def reset(self) -> None: ...
    def keys(self, layer: int): ...
    def values(self, layer: int): ...


class BaseCache:
    """What every KV cache shares: its config, ``length``, the checks on it, and the undo of a
    failed write.

    Subclasses implement ``store`` (see the module doc), ``bytes_used``, ``bytes_allocated``,
    ``free``, ``keys``, ``values`` and ``_clear`` (forget the stored entries). For the undo,
    a subclass either logs each array region before overwriting it (``self._keep_for_undo(a, index)``
    in ``store``; set ``_logs_writes = True``), or leaves the default: ``begin`` keeps a deep
    copy of the cache's state, correct for any cache, slower for a big one.
    """

    _logs_writes = False  # True: store() calls _keep_for_undo before each write (cheap undo)
    _not_copied = ("config", "xp", "_txn_log", "_txn_state")  # shared, never part of the undo copy

    def __init__(self, config: Config, xp=np):
        if not isinstance(config, Config):
            raise TypeError(f"{type(self).__name__} needs an engine Config, got {type(config).__name__}")
        self.config = config
        self.xp = xp
        self.length = 0  # positions seen: the next token goes to position ``length``
        self._txn_log: list | None = None  # open write: (array, index, old contents), oldest first
        self._txn_state: dict | None = None  # open write without a log: the state at begin
        self._txn_n = 0  # positions of the open write

    def store(self, layer: int, k, v):  # pragma: no cover - the contract, see the module doc
        raise NotImplementedError

    def keys(self, layer: int):  # pragma: no cover - see the class doc
        raise NotImplementedError(f"{type(self).__name__} does not implement keys(layer)")

    def values(self, layer: int):  # pragma: no cover - see the class doc
        raise NotImplementedError(f"{type(self).__name__} does not implement values(layer)")

    @property
    def free(self) -> int:
        """How many more positions fit."""
        raise NotImplementedError  # pragma: no cover

    @property
    def bytes_used(self) -> int:
        """Bytes holding the positions held (what the cache costs now)."""
        raise NotImplementedError  # pragma: no cover

    @property
    def bytes_allocated(self) -> int:
        """Bytes reserved, held positions or not."""
        raise NotImplementedError  # pragma: no cover

    def check_room(self, n_new: int) -> None:
        """ValueError (before anything is written) when n_new more positions do not fit."""
        if n_new > self.free:
            raise ValueError(
                f"KV cache is full: it holds {self.length} positions and has room for {self.free} more, "
                f"not {n_new}. Start again with cache.reset(), or make a larger cache "
                f"(model.new_cache(max_len=...), at most the context window {self.config.max_seq_len})."
            )

    # ------------------------------------------------------------------ one write: begin, then advance or abort

    def begin(self, n_new: int) -> None:
        """Open a write of n_new positions (room checked first): from here to ``advance`` or
        ``abort`` the cache can be put back as it is now."""
        self.check_room(n_new)
        self._txn_n = n_new
        if self._logs_writes:
            self._txn_log = []
        else:
            self._txn_state = {k: copy.deepcopy(v) for k, v in vars(self).items() if k not in self._not_copied}

    def _keep_for_undo(self, array, index) -> None:
        """Keep array[index] as it is, to put back on abort (a no-op outside begin .. advance)."""
        if self._txn_log is not None:
            self._txn_log.append((array, index, array[index].copy()))

    def abort(self) -> None:
        """Undo the open write: every array region, the length and the bookkeeping as at begin."""
        undo, self._txn_log, self._txn_n = self._txn_log, None, 0
        for array, index, old in reversed(undo or []):
            array[index] = old
        if self._txn_state is not None:
            vars(self).update(self._txn_state)
            self._txn_state, self._txn_n = None, 0

    def advance(self, n_new: int) -> None:
        """Commit: the n_new stored positions count from now on."""
        self.length += n_new
        self._txn_log = self._txn_state = None
        self._txn_n = 0

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
        self._txn_log = self._txn_state = None

    def _clear(self) -> None:  # pragma: no cover - see the class doc
        raise NotImplementedError


def write(cache: Cache, keys, values, attention=None) -> None:
    """Write known entries into ``cache`` as one write of the contract, with no model pass: a
    replay of keys and values computed before (a lesson reusing a reference run, a simulated
    server reusing its recorded run).

    keys, values: per layer [KV, n, hd] (after RoPE) for positions length .. length+n-1;
    attention: per layer [H, n, S] weights for a cache that watches them (observe_attention),
    over the S entries its store() hands back. begin(n) .. store per layer .. advance(n), and
    abort() if anything raises in between, as Transformer.forward does.
    """
    n = keys[0].shape[1]
    cache.begin(n)
    try:
        for layer, (k, v) in enumerate(zip(keys, values)):
            cache.store(layer, k, v)
            if attention is not None and hasattr(cache, "observe_attention"):
                cache.observe_attention(layer, attention[layer])
        cache.advance(n)
    except BaseException:
        cache.abort()
        raise
