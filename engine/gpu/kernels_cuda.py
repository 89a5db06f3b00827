"""The CUDA kernel set: the sources in engine/gpu/kernels/*.cu behind the kernel-set
interface of engine/gpu/kernels_ref.py, launched with the call shape of ``cupy.RawKernel``.

One class serves two worlds, told apart only by what is injected:

    on a GPU   CudaKernels(cupy.RawModule, cupy)              (engine/gpu/kernels_cupy.py)
    on a CPU   CudaKernels(tools.cuda_cpu.RawModule, numpy)   (tests: the same .cu text, the
                                                               same grids, blocks and arguments)

``module_factory(code=text, options=OPTIONS)`` must return an object with ``get_function(name)``, and a
function is called as ``fn(grid, block, args)``; array arguments are passed as they are
(CuPy or NumPy arrays, C-contiguous), scalars as ``np.int32`` / ``np.float32`` (CuPy would
pass a Python int as a 64-bit value, which a kernel's ``int`` parameter does not expect).
The engine never imports tools/: the CPU factory is handed in by the tests.

Every launch goes through ``_launch``; ``on_launch(name, grid, block, args)``, when set, sees
each one (the tests record the arguments of every launch of every step with it, to prove a
step's launches are the same at every token, which is what replaying a CUDA graph needs).

Each kernel source is one .cu file that includes ``common.cuh`` (``-I`` names their folder),
compiled on first use; every kernel has an ``_f16`` and an ``_f32`` entry point (storage dtype; the maths is
float32 in registers either way).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.gpu.kernels_ref import n_chunks

KERNEL_DIR = Path(__file__).parent / "kernels"
# source file -> the kernel-set methods it serves
SOURCES = ("embed", "add_rmsnorm", "rope_store", "attention_partial", "attention_merge", "swiglu", "gemv",
           "argmax")
SUFFIX = {"float16": "_f16", "float32": "_f32"}
# attention_partial's shared-memory bounds (engine/gpu/kernels/attention_partial.cu)
ATT_THREADS, ATT_MAX_G, ATT_MAX_GHD, ATT_MAX_GP = 128, 8, 2048, 4096
# positions per attention split: Llama-3-8B at 8192 is 8 KV heads x 64 splits = 512 blocks of
# 128 threads on 132 SMs (about 4 per SM, one wave); at 32768, 2048 blocks
DEFAULT_SPLIT = 128

i32, f32 = np.int32, np.float32


OPTIONS = (f"-I{KERNEL_DIR}",)  # each .cu includes "common.cuh" from its own folder


def source(name: str) -> str:
    """The text of one kernel module, ``name``.cu (it includes common.cuh)."""
    return (KERNEL_DIR / f"{name}.cu").read_text()


def _round32(n: int) -> int:
    return max(32, -(-n // 32) * 32)


def vector_width(dtype) -> int:
    """Values per 16-byte (128-bit) load: 8 float16, 4 float32."""
    return 16 // np.dtype(dtype).itemsize


class CudaKernels:
    """The kernel set of engine/gpu/kernels/*.cu (see the module docstring)."""

    def __init__(self, module_factory, xp, *, split: int = DEFAULT_SPLIT, name: str = "cuda", on_launch=None):
        if isinstance(split, bool) or not isinstance(split, int) or split < 1:
            raise ValueError(f"split (positions per attention split) must be an int >= 1, got {split!r}")
        self.module_factory, self.xp, self.split, self.name = module_factory, xp, split, name
        self.on_launch = on_launch
        self._modules: dict[str, object] = {}
        self._functions: dict[str, object] = {}

    # ------------------------------------------------------------------ launching

    def function(self, module: str, entry: str):
        """The compiled entry point ``entry`` of ``module``.cu (compiled once, on first use)."""
        if entry not in self._functions:
            if module not in self._modules:
                self._modules[module] = self.module_factory(code=source(module), options=OPTIONS)
            self._functions[entry] = self._modules[module].get_function(entry)
        return self._functions[entry]

    def load(self, dtype) -> None:
        """Compile every module and look up every entry point for ``dtype`` now (before a
        CUDA graph capture, where nothing should be compiled or loaded)."""
        for module in SOURCES:
            self.function(module, module + _suffix(dtype))

    def _launch(self, module: str, dtype, grid: tuple, block: tuple, args: tuple) -> None:
        entry = module + _suffix(dtype)
        fn = self.function(module, entry)
        if self.on_launch is not None:
            self.on_launch(entry, grid, block, args)
        fn(grid, block, args)

    # ------------------------------------------------------------------ the kernel-set interface

    def embed(self, table, token, length, out) -> None:
        _int32("token", token), _int32("length", length)
        D = out.shape[-1]
        self._launch("embed", out.dtype, (-(-D // 256),), (256,), (table, token, length, out, i32(D)))

    def rmsnorm(self, x, w, eps, out) -> None:
        D = out.shape[-1]  # delta is not read when add = 0: x stands in for it
        self._launch("add_rmsnorm", out.dtype, (1,), (min(1024, _round32(D)),),
                     (x, x, w, f32(eps), out, i32(D), i32(0)))

    def add_rmsnorm(self, x, delta, w, eps, out) -> None:
        D = out.shape[-1]
        self._launch("add_rmsnorm", out.dtype, (1,), (min(1024, _round32(D)),),
                     (x, delta, w, f32(eps), out, i32(D), i32(1)))

    def rope_store(self, qkv, cos, sin, length, k_cache, v_cache, out) -> None:
        _int32("length", length)
        H, (KV, M, hd) = out.shape[0], k_cache.shape
        self._launch("rope_store", out.dtype, (H + 2 * KV,), (_round32(hd // 2),),
                     (qkv, cos, sin, length, k_cache, v_cache, out, i32(H), i32(KV), i32(hd), i32(M)))

    def attention_partial(self, q, k_cache, v_cache, length, window, acc, mx, sm) -> None:
        _int32("length", length)
        (H, hd), (KV, M, _) = q.shape, k_cache.shape
        G, C = H // KV, acc.shape[1]
        check_attention_shape(G, hd, self.split, k_cache.dtype)
        if C != n_chunks(M, self.split):
            raise ValueError(f"acc has {C} splits; a cache of {M} slots in splits of {self.split} needs "
                             f"{n_chunks(M, self.split)}")
        self._launch("attention_partial", k_cache.dtype, (KV, C), (ATT_THREADS,),
                     (q, k_cache, v_cache, length, acc, mx, sm, i32(G), i32(hd), i32(M), i32(self.split),
                      i32(window), f32(1.0 / hd**0.5)))

    def attention_merge(self, acc, mx, sm, length, window, out) -> None:
        _int32("length", length)
        H, C, hd = acc.shape
        if hd > 256:
            raise ValueError(f"the CUDA attention merge takes head_dim <= 256, got {hd}")
        self._launch("attention_merge", out.dtype, (H,), (256,),
                     (acc, mx, sm, length, out, i32(hd), i32(C), i32(self.split), i32(window)))

    def swiglu(self, gu, out) -> None:
        F = out.shape[-1]
        self._launch("swiglu", out.dtype, (-(-F // 256),), (256,), (gu, out, i32(F)))

    def prepare_weight(self, w):
        """The engine's [K, N] weight as the gemv reads it: [N, K], rows contiguous (a copy,
        made once when the decoder is built)."""
        K = w.shape[0]
        if K % vector_width(w.dtype):
            raise ValueError(f"the gemv reads rows in 16-byte pieces: K = {K} must be a multiple of "
                             f"{vector_width(w.dtype)} for {np.dtype(w.dtype).name}")
        return self.xp.ascontiguousarray(w.T)

    def matmul(self, a, b, out) -> None:
        N, K = b.shape
        self._launch("gemv", out.dtype, (-(-N // 8),), (256,), (a, b, out, i32(N), i32(K)))

    def argmax(self, logits, out) -> None:
        _int32("argmax out", out)
        self._launch("argmax", logits.dtype, (1,), (1024,), (logits, out, i32(logits.shape[-1])))


def check_attention_shape(G: int, hd: int, split: int, dtype) -> None:
    """ValueError unless attention_partial.cu's bounds hold for this shape and split."""
    lanes = hd // vector_width(dtype)
    problems = []
    if hd % vector_width(dtype) or lanes > 32 or lanes & (lanes - 1):
        problems.append(f"head_dim {hd} must be {vector_width(dtype)} x a power of two up to 32")
    if G > ATT_MAX_G or G * hd > ATT_MAX_GHD:
        problems.append(f"{G} query heads per KV head x head_dim {hd} exceeds {ATT_MAX_G} heads / "
                        f"{ATT_MAX_GHD} values")
    if G * split > ATT_MAX_GP:
        problems.append(f"{G} heads x split {split} exceeds {ATT_MAX_GP} scores")
    if problems:
        raise ValueError("the CUDA attention kernel cannot take this shape: " + "; ".join(problems))


def _suffix(dtype) -> str:
    name = np.dtype(dtype).name
    if name not in SUFFIX:
        raise TypeError(f"the CUDA kernels store float16 or float32, not {name}")
    return SUFFIX[name]


def _int32(what: str, a) -> None:
    if np.dtype(a.dtype) != np.int32:
        raise TypeError(f"{what} must be a device int32 array, got {np.dtype(a.dtype).name}")
