"""Argument checks shared by the engine's public API: one place for each rule and its message.

Every check raises TypeError (wrong kind of value) or ValueError (right kind, wrong value)
with a message that says what to do, so a caller never sees a NumPy traceback instead.
"""
from __future__ import annotations

import math

import numpy as np


def check_int(name: str, value, minimum: int | None = None, maximum: int | None = None) -> int:
    """``value`` as a Python int in [minimum, maximum]; a bool is never an int here."""
    # bool is an int subclass; True as a layer count or a seed is always a mistake
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise ValueError(f"{name} must be <= {maximum}, got {value}")
    return value


def check_number(name: str, value, minimum: float | None = None, rule: str = "a finite number") -> float:
    """``value`` as a finite Python float >= minimum (ints accepted; bools, NaN and inf refused).

    ``rule`` is how the message states what is allowed, e.g. "a finite number >= 0 (0 means greedy)".
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not math.isfinite(value) or (minimum is not None and value < minimum):
        raise ValueError(f"{name} must be {rule}, got {value!r}")
    return value


def check_ids(ids, vocab_size: int) -> np.ndarray:
    """Token ids (list/tuple/1-D integer array) -> int64 array [T]; clear errors otherwise."""
    if isinstance(ids, (str, bytes)):
        raise TypeError("token ids must be a list of ints, got a string; encode it first: tok.encode(text)")
    if isinstance(ids, np.ndarray) or hasattr(ids, "__array__") and hasattr(ids, "dtype"):
        arr = np.asarray(ids.get() if hasattr(ids, "get") else ids)
        if arr.ndim != 1:
            raise ValueError(f"token ids must be one sequence (1-D), got shape {arr.shape}")
        if arr.dtype.kind not in "iu":
            raise TypeError(f"token ids must be integers, got an array of {arr.dtype}")
        arr = arr.astype(np.int64, copy=False)
    elif isinstance(ids, (list, tuple)):
        for t in ids:
            if isinstance(t, bool) or not isinstance(t, (int, np.integer)):
                raise TypeError(f"token ids must be ints, got {type(t).__name__} {t!r}")
        arr = np.array(ids, dtype=np.int64)
    else:
        raise TypeError(f"token ids must be a list of ints, got {type(ids).__name__}")
    if arr.size == 0:
        raise ValueError("the prompt is empty (no tokens); give at least one token")
    bad = (arr < 0) | (arr >= vocab_size)
    if bad.any():
        raise ValueError(f"token id {int(arr[bad][0])} is outside the vocabulary 0 .. {vocab_size - 1}")
    return arr


def check_fits(n_before: int, n_new: int, window: int, hint: str = "") -> None:
    """ValueError when n_new positions after n_before do not fit a context window of ``window``."""
    if n_before + n_new > window:
        hint = hint or "shorten the prompt or generate fewer tokens"
        raise ValueError(
            f"too many tokens: {n_before} already in context + {n_new} new = {n_before + n_new}, "
            f"but the context window is {window}; {hint}"
        )
