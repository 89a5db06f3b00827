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

``xp.cuda`` stands in for ``cupy.cuda``'s streams, events and graph capture: every event is
logged with the stream that was current (``with stream:``), so a test can prove that a
decoder's writes, launches, capture, replay and a benchmark clock's events all go to one
named stream; ``stream.begin_capture()`` / ``end_capture()`` collect the launches made on
that stream into a ``RecordingGraph`` instead of running them (as CUDA does), and
``graph.launch(stream)`` runs its nodes. A host read or a launch on another stream during a
capture is an error, as it is for CUDA.

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
# one; a stream event (an event recorded or waited for, a synchronisation, a graph launched)
KINDS = ("launch", "op", "alloc", "host", "stream")


@dataclass(frozen=True)
class Event:
    phase: str
    kind: str
    name: str
    args: tuple = ()  # a launch's arguments as ``signature`` describes them
    stream: str = "legacy default"  # the stream current when it happened


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

    def __init__(self, keep_log: bool = True):
        self.log: list[Event] = []
        self.keep_log = keep_log  # False: a long run (a benchmark's dry run) keeps no log
        self.current = "setup"
        self.in_kernel = False
        self.stream = RecordingStream(self, "legacy default")  # the current stream
        self.graph: RecordingGraph | None = None  # the graph being captured, if any
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
        if self.in_kernel:
            return
        if self.graph is not None and kind == "host":
            raise RuntimeError(f"{name} during a CUDA graph capture: the host cannot wait for work that has "
                               "not run (cudaErrorStreamCaptureUnsupported)")
        if self.keep_log:
            self.log.append(Event(self.current, kind, name, args, self.stream.name))

    def capturing(self) -> bool:
        """Whether work enqueued now goes into a graph (a capture on the current stream);
        RuntimeError for work on another stream while one is being captured."""
        if self.graph is None:
            return False
        if self.stream is not self.graph.stream:
            raise RuntimeError(f"work on {self.stream.name} while {self.graph.stream.name} is being captured "
                               "(cudaErrorStreamCaptureImplicit)")
        return True

    def on_launch(self, name: str, grid, block, args) -> None:
        """A CUDA kernel set's launch hook (CudaKernels(on_launch=...)): the entry point, grid,
        block and every argument, recorded as one launch."""
        self.record("launch", name, (tuple(grid), tuple(block)) + signature(tuple(args)))

    def events_on(self, phase: str, kinds=("launch", "op", "stream")) -> dict[str, int]:
        """stream name -> how many events of ``kinds`` phase ``phase`` put on it."""
        out: dict[str, int] = {}
        for e in self.log:
            if e.phase == phase and e.kind in kinds:
                out[e.stream] = out.get(e.stream, 0) + 1
        return out

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


class RecordingStream:
    """A stand-in for cupy.cuda.Stream: ``with stream:`` makes it current; it can capture a graph."""

    _count = 0

    def __init__(self, backend: "RecordingBackend", name: str | None = None, non_blocking: bool = False):
        if name is None:
            RecordingStream._count += 1
            name = f"stream {RecordingStream._count}"
        self._backend, self.name, self.non_blocking = backend, name, non_blocking
        self._before = []

    def __enter__(self):
        self._before.append(self._backend.stream)
        self._backend.stream = self
        return self

    def __exit__(self, *exc):
        self._backend.stream = self._before.pop()
        return False

    def _on_me(self, name: str) -> None:
        before, self._backend.stream = self._backend.stream, self
        try:
            self._backend.record("stream", name)
        finally:
            self._backend.stream = before

    def synchronize(self) -> None:
        if self._backend.graph is not None:
            raise RuntimeError("synchronize during a CUDA graph capture (cudaErrorStreamCaptureUnsupported)")
        self._on_me("synchronize")

    def wait_event(self, event: "RecordingEvent") -> None:
        self._on_me(f"wait for an event recorded on {event.stream}")

    def begin_capture(self, mode=None) -> None:
        if self._backend.graph is not None:
            raise RuntimeError("a capture is already in progress")
        self._on_me("begin capture")
        self._backend.graph = RecordingGraph(self)

    def end_capture(self) -> "RecordingGraph":
        graph, self._backend.graph = self._backend.graph, None
        if graph is None or graph.stream is not self:
            raise RuntimeError(f"end_capture on {self.name}, which is not capturing")
        self._on_me(f"end capture: {len(graph.nodes)} nodes")
        return graph


class RecordingGraph:
    """The launches captured on one stream; ``launch(stream)`` runs them in order there."""

    def __init__(self, stream: RecordingStream):
        self.stream, self.nodes = stream, []  # nodes: (name, its arguments' signature, run)

    def launch(self, stream: RecordingStream | None = None) -> None:
        backend = self.stream._backend
        on = stream or backend.stream
        before, backend.stream = backend.stream, on
        try:
            backend.record("stream", f"graph launch: {len(self.nodes)} nodes")
            backend.in_kernel = True
            try:
                for _name, _sig, run in self.nodes:
                    run()
            finally:
                backend.in_kernel = False
        finally:
            backend.stream = before


class RecordingEvent:
    """A stand-in for cupy.cuda.Event: recorded on a stream; the host clock at that moment
    stands for the GPU's (here every launch has run by the time the next line runs)."""

    def __init__(self, backend: "RecordingBackend", block: bool = False, disable_timing: bool = False,
                 interprocess: bool = False):
        self._backend, self.stream, self.time = backend, None, None

    def record(self, stream: RecordingStream | None = None) -> None:
        import time

        s = stream or self._backend.stream
        self.stream, self.time = s.name, time.perf_counter()
        s._on_me("record an event")

    def synchronize(self) -> None:
        self._backend.record("host", "wait for an event")


class RecordingCuda:
    """``xp.cuda`` of the recording backend: Stream, Event, the current stream, elapsed time."""

    def __init__(self, backend: "RecordingBackend"):
        self._backend = backend

    def Stream(self, null: bool = False, non_blocking: bool = False, ptds: bool = False) -> RecordingStream:  # noqa: N802
        return RecordingStream(self._backend, non_blocking=non_blocking)

    def Event(self, block: bool = False, disable_timing: bool = False, interprocess: bool = False):  # noqa: N802
        return RecordingEvent(self._backend, block, disable_timing, interprocess)

    def get_current_stream(self) -> RecordingStream:
        return self._backend.stream

    @staticmethod
    def get_elapsed_time(start: RecordingEvent, end: RecordingEvent) -> float:
        """Milliseconds between two recorded events (cupy.cuda.get_elapsed_time's unit)."""
        return (end.time - start.time) * 1e3


class RecordingXP:
    """The array module: NumPy's functions, logged, returning DeviceArrays."""

    __name__ = "numpy (recording)"

    def __init__(self, backend: RecordingBackend):
        self._backend = backend
        self.cuda = RecordingCuda(backend)

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
        raw_key, raw_value = unwrap(key), unwrap(value)
        if self._b.capturing():  # a fill or copy node of the graph: it happens at each replay

            def run(a=self._a, k=raw_key, v=raw_value):
                a[k] = v

            self._b.graph.nodes.append(("setitem", (), run))
            return
        self._a[raw_key] = raw_value

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
    the kernel runs on plain NumPy (or, during a capture on the current stream, becomes a node
    of the graph, run at each replay). ``prepare_weight`` (done once, when a decoder is built)
    is passed through and its result handed back as a DeviceArray."""

    def __init__(self, inner, backend: RecordingBackend):
        self.inner, self.backend = inner, backend
        self.xp = backend.xp
        self.split = inner.split
        self.name = f"recording({inner.name})"

    def prepare_weight(self, w, norm=None):
        raw = unwrap(w)
        out = self.inner.prepare_weight(raw, unwrap(norm))
        if _new_memory(out, raw):
            self.backend.record("alloc", "prepare_weight")
        return self.backend.wrap(out)

    def __getattr__(self, name: str):
        kernel = getattr(self.inner, name)
        backend = self.backend

        def launch(*args, **kwargs):
            sig = signature(args) + signature(tuple(sorted(kwargs.items())))
            backend.record("launch", name, sig)
            raw_args, raw_kwargs = unwrap(args), unwrap(kwargs)

            def run():
                before, backend.in_kernel = backend.in_kernel, True
                try:
                    kernel(*raw_args, **raw_kwargs)
                finally:
                    backend.in_kernel = before

            if backend.capturing():
                backend.graph.nodes.append((name, sig, run))
            else:
                run()

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
