"""The CUDA kernel set: the sources in engine/gpu/kernels/*.cu behind the kernel-set
interface of engine/gpu/kernels_ref.py, launched with the call shape of ``cupy.RawKernel``.

One class serves two worlds, told apart only by what is injected:

    on a GPU   CudaKernels(cupy.RawModule, cupy)              (engine/gpu/kernels_cupy.py)
    on a CPU   CudaKernels(tools.cuda_cpu.RawModule, numpy)   (tests: the same .cu text, the
                                                               same grids, blocks and arguments)

``module_factory(code=text, options=options)`` must return an object with ``get_function(name)``,
and a function is called as ``fn(grid, block, args)``; array arguments are passed as they are
(CuPy or NumPy arrays, C-contiguous), scalars as ``np.int32`` / ``np.float32`` (CuPy would
pass a Python int as a 64-bit value, which a kernel's ``int`` parameter does not expect).
The engine never imports tools/: the CPU factory is handed in by the tests. A launch goes to
the current stream (CuPy's RawKernel default); the fused decoder makes its own stream current.

Every launch goes through ``_launch``; ``on_launch(name, grid, block, args)``, when set, sees
each one (the tests record the arguments of every launch of every step with it, to prove a
step's launches are the same at every token, which is what replaying a CUDA graph needs).

Each kernel source is one .cu file; ``source()`` hands it over with common.cuh pasted in where
it is included, so the text a module is built from is all there is to it (CuPy's kernel cache
is keyed on the text and the options, not on included files: an edited common.cuh would
otherwise load a stale binary). Compiled on first use, per module and options (attention.cu
takes its shape as -D options, so its loops unroll); every kernel has an ``_f16`` and an
``_f32`` entry point (storage dtype; the maths is float32 in registers either way).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from engine.gpu.kernels_ref import n_chunks

KERNEL_DIR = Path(__file__).parent / "kernels"
# source file -> what it serves
SOURCES = ("embed", "gemv", "attention", "argmax")
SUFFIX = {"float16": "_f16", "float32": "_f32"}
# attention.cu's block and shared-memory bounds
ATT_THREADS, ATT_MAX_G, ATT_MAX_GHD, ATT_MAX_GP = 128, 8, 2048, 4096
# gemv.cu: rows per block (a tile), 16-byte pieces per row per round, threads at most
GEMV_ROWS, GEMV_UNROLL, GEMV_MAX_THREADS = 4, 2, 256
# positions per attention split: Llama-3-8B at 8192 is 8 KV heads x 64 splits = 512 blocks of
# 128 threads on 132 SMs (about 4 per SM, one wave); at 32768, 2048 blocks
DEFAULT_SPLIT = 128

i32, f32 = np.int32, np.float32

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"[^\n]*$', re.M)


def source(name: str) -> str:
    """The text of one kernel module, ``name``.cu, with its local includes (common.cuh) pasted
    in under #line markers (messages still name the right file and line)."""
    text = (KERNEL_DIR / f"{name}.cu").read_text()

    def paste(m: re.Match) -> str:
        line = text.count("\n", 0, m.start()) + 1
        header = (KERNEL_DIR / m.group(1)).read_text().replace("#pragma once", "")  # pasted once
        return f'#line 1 "{m.group(1)}"\n{header}\n#line {line + 1} "{name}.cu"'

    return _INCLUDE.sub(paste, text)


def _round32(n: int) -> int:
    return max(32, -(-n // 32) * 32)


def vector_width(dtype) -> int:
    """Values per 16-byte (128-bit) load: 8 float16, 4 float32."""
    return 16 // np.dtype(dtype).itemsize


def gemv_block(K: int, dtype) -> int:
    """Threads of a gemv block: enough for one round over a row of K values, at most 256."""
    pieces = -(-K // vector_width(dtype))
    return min(GEMV_MAX_THREADS, _round32(-(-pieces // GEMV_UNROLL)))


def attention_options(G: int, hd: int, split: int) -> tuple[str, ...]:
    """attention.cu's compile-time shape (its loops unroll over these)."""
    return (f"-DATT_G={G}", f"-DATT_HD={hd}", f"-DATT_P={split}")


class CudaKernels:
    """The kernel set of engine/gpu/kernels/*.cu (see the module docstring)."""

    def __init__(self, module_factory, xp, *, split: int = DEFAULT_SPLIT, name: str = "cuda", on_launch=None):
        if isinstance(split, bool) or not isinstance(split, int) or split < 1:
            raise ValueError(f"split (positions per attention split) must be an int >= 1, got {split!r}")
        self.module_factory, self.xp, self.split, self.name = module_factory, xp, split, name
        self.on_launch = on_launch
        self._modules: dict[tuple, object] = {}
        self._functions: dict[tuple, object] = {}

    # ------------------------------------------------------------------ launching

    def function(self, module: str, entry: str, options: tuple = ()):
        """The compiled entry point ``entry`` of ``module``.cu built with ``options`` (compiled
        once, on first use)."""
        key = (entry, options)
        if key not in self._functions:
            if (module, options) not in self._modules:
                self._modules[module, options] = self.module_factory(code=source(module), options=options)
            self._functions[key] = self._modules[module, options].get_function(entry)
        return self._functions[key]

    def load(self, dtype, config=None) -> None:
        """Compile every module and look up every entry point for ``dtype`` now (before a
        CUDA graph capture, where nothing may be compiled or loaded); ``config`` (the model's)
        gives attention.cu its shape."""
        for module, entries in (("embed", ("embed",)), ("argmax", ("argmax",)),
                                ("gemv", ("gemv", "gemv_norm", "gemv_residual", "gemv_swiglu", "gemv_rope",
                                          "gemv_argmax"))):
            for entry in entries:
                self.function(module, entry + _suffix(dtype))
        if config is not None:
            G = config.n_heads // config.n_kv_heads
            self.function("attention", "attention" + _suffix(dtype), attention_options(G, config.head_dim, self.split))

    def _launch(self, module: str, entry: str, dtype, grid: tuple, block: tuple, args: tuple, options=()) -> None:
        entry = entry + _suffix(dtype)
        fn = self.function(module, entry, options)
        if self.on_launch is not None:
            self.on_launch(entry, grid, block, args)
        fn(grid, block, args)

    def _gemv(self, entry: str, w, out_dtype, tiles: int, args: tuple) -> None:
        K = w.shape[1]
        self._launch("gemv", entry, out_dtype, (tiles,), (gemv_block(K, w.dtype),), args)

    # ------------------------------------------------------------------ the kernel-set interface

    def embed(self, table, token, length, out) -> None:
        _int32("token", token), _int32("length", length)
        D = out.shape[-1]
        self._launch("embed", "embed", out.dtype, (-(-D // 256),), (256,), (table, token, length, out, i32(D)))

    def prepare_weight(self, w, norm=None):
        """The engine's [K, N] weight as the gemv reads it: [N, K], rows contiguous, with the
        RMSNorm weight before it folded in (row n = w[:, n] * norm, rounded once to w's dtype):
        a copy, made once when the decoder is built."""
        K = w.shape[0]
        if K % vector_width(w.dtype):
            raise ValueError(f"the gemv reads rows in 16-byte pieces: K = {K} must be a multiple of "
                             f"{vector_width(w.dtype)} for {np.dtype(w.dtype).name}")
        xp = self.xp
        if norm is not None:
            w = (w.astype("float32") * norm.astype("float32")[:, None]).astype(w.dtype)
        return xp.ascontiguousarray(w.T)

    def matmul(self, a, b, out) -> None:
        N, K = b.shape
        self._gemv("gemv", b, out.dtype, -(-N // GEMV_ROWS), (a, b, out, i32(N), i32(K)))

    def norm_matmul(self, x, w, eps, out) -> None:
        N, K = w.shape
        self._gemv("gemv_norm", w, out.dtype, -(-N // GEMV_ROWS), (x, w, out, i32(N), i32(K), f32(eps)))

    def norm_matmul_argmax(self, x, w, eps, out, token, best, tickets) -> None:
        _int32("token", token)
        N, K = w.shape
        self._gemv("gemv_argmax", w, out.dtype, -(-N // GEMV_ROWS),
                   (x, w, out, best, tickets, token, i32(N), i32(K), f32(eps)))

    def matmul_add(self, a, w, x) -> None:
        N, K = w.shape
        self._gemv("gemv_residual", w, x.dtype, -(-N // GEMV_ROWS), (a, w, x, i32(N), i32(K)))

    def norm_matmul_swiglu(self, x, w, eps, out) -> None:
        F, (N, K) = out.shape[-1], w.shape
        if N != 2 * F:
            raise ValueError(f"w_gate_up has {N} rows, gate|up of {F} needs {2 * F}")
        self._gemv("gemv_swiglu", w, out.dtype, -(-F // 2), (x, w, out, i32(F), i32(K), f32(eps)))

    def norm_matmul_rope_store(self, x, w, eps, cos, sin, length, k_cache, v_cache, out) -> None:
        _int32("length", length)
        H, (KV, M, hd), K = out.shape[0], k_cache.shape, w.shape[1]
        if hd % 4:
            raise ValueError(f"the fused RoPE takes the rotate_half pairs of a head two at a time: head_dim "
                             f"{hd} must be a multiple of 4")
        self._gemv("gemv_rope", w, out.dtype, (H + 2 * KV) * hd // 4,
                   (x, w, cos, sin, length, out, k_cache, v_cache, i32(H), i32(KV), i32(hd), i32(M), i32(K),
                    f32(eps)))

    def attention(self, q, k_cache, v_cache, length, window, acc, mx, sm, tickets, out) -> None:
        _int32("length", length)
        (H, hd), (KV, M, _) = q.shape, k_cache.shape
        G, C = H // KV, acc.shape[1]
        check_attention_shape(G, hd, self.split, k_cache.dtype)
        if C != n_chunks(M, self.split):
            raise ValueError(f"acc has {C} splits; a cache of {M} slots in splits of {self.split} needs "
                             f"{n_chunks(M, self.split)}")
        if tickets.shape[0] < KV:
            raise ValueError(f"the attention needs a ticket per KV head: {KV}, got {tickets.shape[0]}")
        self._launch("attention", "attention", k_cache.dtype, (KV, C), (ATT_THREADS,),
                     (q, k_cache, v_cache, length, acc, mx, sm, tickets, out, i32(M), i32(window),
                      f32(1.0 / hd**0.5)), attention_options(G, hd, self.split))

    def argmax(self, logits, out) -> None:
        _int32("argmax out", out)
        self._launch("argmax", "argmax", logits.dtype, (1,), (1024,), (logits, out, i32(logits.shape[-1])))


def check_attention_shape(G: int, hd: int, split: int, dtype) -> None:
    """ValueError unless attention.cu's bounds hold for this shape and split."""
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
