"""A recording array backend: NumPy dressed as a GPU, to prove a decode step's structure on a CPU.

On a GPU three things decide whether a batch-1 step runs at the memory roofline or at the
host's launch rate, and none shows in a CPU timing:
  * launches: each kernel call or matmul costs ~10 us of host time;
  * synchronisation: reading a device value on the host (a transfer, ``float(x)``, ``if x:``)
    stalls the host until the GPU has finished everything queued;
  * allocation: a new array inside a step costs time and forbids capturing it as a graph;
  * arguments: a CUDA graph freezes every launch's scalars and buffer addresses, so a step
    can be captured once and replayed only if each launch repeats its arguments exactly.

``RecordingBackend`` wraps NumPy: its ``xp`` hands out ``DeviceArray`` objects that behave
like CuPy arrays (not NumPy arrays: a host conversion is explicit) and log every operation
done on them outside a kernel, every allocation and every host read, under the current
phase ("setup", "step 0", ...). ``RecordingKernels`` wraps a kernel set: each kernel call
is logged as one launch and runs on the plain NumPy arrays inside, where temporaries are
the kernel's registers and not the step's business.

    rec = RecordingBackend()
    model = Transformer(config, weights, xp=rec.xp); cache = model.new_cache()
    decoder = FusedDecoder(model, cache, RecordingKernels(ReferenceKernels(), rec))
    with rec.phase("step 0"):
        decoder.step()
    rec.events("step 0")   ->  [Event(kind="launch", name="embed", args=(...)), ...]
    launch_changes(rec.log, ["step 0", "step 1"])  ->  []  (what graph replay needs)

Each launch is recorded with its arguments' ``signature``: arrays by device address, shape
and dtype, scalars by type and value. A CUDA kernel set (engine/gpu/kernels_cuda.py) reports
its real launches (grid, block and every argument) through ``on_launch``.

Limits: operations through NumPy submodules (``xp.linalg``) and on plain NumPy arrays that
never came from this backend are not seen.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from numpy.lib.mixins import NDArrayOperatorsMixin

# kinds of events: a kernel launch; an array operation outside a kernel (on a GPU, a launch
# of its own); a new array; a read of a device value by the host (transfer or truth value)
KINDS = ("launch", "op", "alloc", "host")


@dataclass(frozen=True)
class Event:
    phase: str
    kind: str
    name: str
    args: tuple = ()  # a launch's arguments as ``signature`` describes them


def signature(value):
    """What a launch argument is, as a CUDA graph would freeze it: an array by its device
    address, shape and dtype (the same buffer at every step), anything else by its type and
    value. Two steps whose launches have equal signatures can replay one captured graph."""
    if isinstance(value, DeviceArray):
        value = value._a
    if isinstance(value, np.ndarray):
        return ("array", value.__array_interface__["data"][0], value.shape, value.dtype.str)
    if hasattr(value, "data") and hasattr(value.data, "ptr"):  # a CuPy array
        return ("array", int(value.data.ptr), tuple(value.shape), value.dtype.str)
    if isinstance(value, (tuple, list)):
        return tuple(signature(v) for v in value)
    if isinstance(value, np.generic):
        return ("scalar", value.dtype.str, value.item())
    return ("scalar", type(value).__name__, value)


def launch_changes(log: list[Event], phases: list[str]) -> list[str]:
    """How the launches of ``phases`` differ from those of the first: [] when every step
    launches the same kernels with the same arguments (what graph replay needs)."""
    by_phase = [[(e.name, e.args) for e in log if e.phase == p and e.kind == "launch"] for p in phases]
    first, changes = by_phase[0], []
    for phase, launches in zip(phases[1:], by_phase[1:]):
        if len(launches) != len(first):
            changes.append(f"{phase}: {len(launches)} launches, {phases[0]}: {len(first)}")
            continue
        for i, (a, b) in enumerate(zip(first, launches)):
            if a != b:
                changes.append(f"{phase}: launch {i} ({b[0]}) has arguments {b[1]!r}, {phases[0]} had {a[1]!r}")
    return changes


class RecordingBackend:
    """The log, the current phase and the array module ``xp`` that feeds it."""

    def __init__(self):
        self.log: list[Event] = []
        self.current = "setup"
        self.in_kernel = False
        self.xp = RecordingXP(self)

    @contextmanager
    def phase(self, name: str):
        """Attribute everything logged inside the ``with`` block to phase ``name``."""
        before, self.current = self.current, name
        try:
            yield
        finally:
            self.current = before

    def record(self, kind: str, name: str, args: tuple = ()) -> None:
        if not self.in_kernel:
            self.log.append(Event(self.current, kind, name, args))

    def on_launch(self, name: str, grid, block, args) -> None:
        """A CUDA kernel set's launch hook (CudaKernels(on_launch=...)): the entry point, grid,
        block and every argument, recorded as one launch."""
        self.record("launch", name, (tuple(grid), tuple(block)) + signature(tuple(args)))

    def events(self, phase: str, kind: str | None = None) -> list[Event]:
        return [e for e in self.log if e.phase == phase and (kind is None or e.kind == kind)]

    def wrap(self, value):
        """NumPy results become DeviceArrays (tuples and lists element by element); a NumPy
        scalar becomes a 0-d DeviceArray, as a CuPy reduction returns one."""
        if isinstance(value, np.ndarray):
            return DeviceArray(value, self)
        if isinstance(value, np.generic):
            return DeviceArray(np.asarray(value), self)
        if isinstance(value, (tuple, list)):
            return type(value)(self.wrap(v) for v in value)
        return value


def unwrap(value):
    """The NumPy arrays inside DeviceArrays (views: writes reach the device buffer)."""
    if isinstance(value, DeviceArray):
        return value._a
    if isinstance(value, (tuple, list)):
        return type(value)(unwrap(v) for v in value)
    if isinstance(value, dict):
        return {k: unwrap(v) for k, v in value.items()}
    return value


def _new_memory(result, inputs) -> bool:
    """Whether ``result`` holds memory of its own (an allocation) rather than a view of an input."""
    if not isinstance(result, np.ndarray):
        return False
    return not any(np.may_share_memory(result, a) for a in _arrays(inputs))


def _arrays(value):
    if isinstance(value, np.ndarray):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _arrays(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _arrays(v)


class RecordingXP:
    """The array module: NumPy's functions, logged, returning DeviceArrays."""

    __name__ = "numpy (recording)"

    def __init__(self, backend: RecordingBackend):
        self._backend = backend

    def __getattr__(self, name: str):
        obj = getattr(np, name)
        if not callable(obj) or isinstance(obj, type):
            return obj  # constants, dtypes, submodules
        backend = self._backend

        def call(*args, **kwargs):
            raw_args, raw_kwargs = unwrap(args), unwrap(kwargs)
            result = obj(*raw_args, **raw_kwargs)
            backend.record("op", f"xp.{name}")
            if _new_memory(result, (raw_args, raw_kwargs)):
                backend.record("alloc", f"xp.{name}")
            return backend.wrap(result)

        call.__name__ = name
        return call


class DeviceArray(NDArrayOperatorsMixin):
    """A NumPy array that acts like a device array and tells the backend what is done to it."""

    __array_priority__ = 100

    def __init__(self, a: np.ndarray, backend: RecordingBackend):
        self._a, self._b = a, backend

    # -- metadata lives on the host, as with CuPy: free to read
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    nbytes = property(lambda self: self._a.nbytes)
    itemsize = property(lambda self: self._a.itemsize)
    flags = property(lambda self: self._a.flags)

    def __len__(self):
        return len(self._a)

    # -- views are free; anything that computes or copies is an operation
    def __getitem__(self, key):
        raw = unwrap(key)
        out = self._a[raw]
        if any(True for _ in _arrays(raw)) or _new_memory(out, self._a):
            self._b.record("op", "gather")
            self._b.record("alloc", "gather")
        return self._b.wrap(out)

    def __setitem__(self, key, value):
        self._b.record("op", "setitem")
        self._a[unwrap(key)] = unwrap(value)

    def _view_or_copy(self, name: str, out: np.ndarray):
        if _new_memory(out, self._a):
            self._b.record("op", name)
            self._b.record("alloc", name)
        return self._b.wrap(out)

    def reshape(self, *shape, **kw):
        return self._view_or_copy("reshape", self._a.reshape(*shape, **kw))

    def transpose(self, *axes):
        return self._b.wrap(self._a.transpose(*axes))

    T = property(lambda self: self._b.wrap(self._a.T))

    def astype(self, dtype, copy: bool = True, **kw):
        return self._view_or_copy("astype", self._a.astype(dtype, copy=copy, **kw))

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        raw_in, raw_kw = unwrap(inputs), unwrap(kwargs)
        result = getattr(ufunc, method)(*raw_in, **raw_kw)
        self._b.record("op", f"{ufunc.__name__}.{method}" if method != "__call__" else ufunc.__name__)
        if "out" in kwargs:
            return kwargs["out"][0] if isinstance(kwargs["out"], tuple) and len(kwargs["out"]) == 1 else kwargs["out"]
        self._b.record("alloc", ufunc.__name__)
        return self._b.wrap(result)

    def __array_function__(self, func, types, args, kwargs):
        raw_args, raw_kwargs = unwrap(args), unwrap(kwargs)
        result = func(*raw_args, **raw_kwargs)
        self._b.record("op", func.__name__)
        if _new_memory(result, (raw_args, raw_kwargs)):
            self._b.record("alloc", func.__name__)
        return self._b.wrap(result)

    def __getattr__(self, name: str):
        """Other ndarray methods (sum, max, all, copy, ...): logged operations.

        Dunder names are not forwarded: NumPy would read ``__array_interface__`` and take the
        data without a word, where CuPy makes a host copy explicit.
        """
        if name.startswith("__") or name in ("_a", "_b"):
            raise AttributeError(name)
        method = getattr(self._a, name)
        if not callable(method):
            return method

        def call(*args, **kwargs):
            result = method(*unwrap(args), **unwrap(kwargs))
            self._b.record("op", name)
            if _new_memory(result, self._a):
                self._b.record("alloc", name)
            return self._b.wrap(result)

        return call

    # -- the host reads a device value: a synchronisation
    def _host(self, what: str):
        self._b.record("host", what)
        return self._a

    def __array__(self, dtype=None, copy=None):
        a = self._host("to host (np.asarray)")
        return a if dtype is None else a.astype(dtype)

    def get(self):
        return self._host("to host (get)").copy()

    def item(self, *args):
        return self._host("to host (item)").item(*args)

    def tolist(self):
        return self._host("to host (tolist)").tolist()

    def __bool__(self):
        return bool(self._host("truth value"))

    def __float__(self):
        return float(self._host("to host (float)"))

    def __int__(self):
        return int(self._host("to host (int)"))

    def __index__(self):
        return self._host("to host (index)").__index__()

    def __repr__(self):
        return f"DeviceArray({self._host('to host (repr)')!r})"


class RecordingKernels:
    """A kernel set whose every call is logged as one launch, with its arguments' signatures;
    the kernel runs on plain NumPy. ``prepare_weight`` (done once, when a decoder is built)
    is passed through and its result handed back as a DeviceArray."""

    def __init__(self, inner, backend: RecordingBackend):
        self.inner, self.backend = inner, backend
        self.xp = backend.xp
        self.split = inner.split
        self.name = f"recording({inner.name})"

    def prepare_weight(self, w):
        raw = unwrap(w)
        out = self.inner.prepare_weight(raw)
        if _new_memory(out, raw):
            self.backend.record("alloc", "prepare_weight")
        return self.backend.wrap(out)

    def __getattr__(self, name: str):
        kernel = getattr(self.inner, name)
        backend = self.backend

        def launch(*args, **kwargs):
            backend.record("launch", name, signature(args) + signature(tuple(sorted(kwargs.items()))))
            backend.in_kernel = True
            try:
                kernel(*unwrap(args), **unwrap(kwargs))
            finally:
                backend.in_kernel = False

        return launch


def launches_per_step(n_layers: int) -> int:
    """Kernel launches of one fused decode step of an ``n_layers`` model, counted, not computed.

    The count depends on the number of layers only (no kernel loops over heads, widths or
    positions), so a small grouped-query model with that many layers stands in for any
    shape: the recording backend runs one step of it and counts.
    """
    from engine import Config, Transformer
    from engine.gpu.fused_step import FusedDecoder
    from engine.gpu.kernels_ref import ReferenceKernels

    config = Config(vocab_size=16, d_model=16, n_layers=n_layers, n_heads=4, n_kv_heads=2, ffn_dim=16,
                    max_seq_len=2)
    rec = RecordingBackend()
    model = Transformer(config, dict(Transformer.random(config).weights), xp=rec.xp)
    decoder = FusedDecoder(model, model.new_cache(), RecordingKernels(ReferenceKernels(), rec))
    with rec.phase("step"):
        decoder.step()
    return len(rec.events("step", "launch"))
