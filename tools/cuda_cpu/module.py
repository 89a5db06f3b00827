"""RawModule / Function: CUDA C kernels called like cupy.RawModule's, run on the CPU.

    mod = RawModule(code=src, options=('-DHPG=4',), order='reverse')
    k = mod.get_function('add_rmsnorm')
    k((rows,), (256,), (x, r, w, y, np.int32(n), np.float32(eps)), shared_mem=0)

Arrays are NumPy (C-contiguous) and are written in place. Each launch copies every array into
a guarded buffer (see cuda_cpu_runtime.h: inaccessible pages around it, 0xFF canaries in the
slack), runs the kernel, checks the canaries and copies the arrays back. The copy ends against
the upper guard page (a read past the end faults), or in the 'reverse' order starts against the
lower one (a read below index 0 faults): run both orders to catch both. Arguments that overlap
in memory (the same array twice, views of one buffer) share one guarded buffer, so the kernel
sees them alias as it would on the GPU. Buffers behind `const T*` parameters alone are read-only.

Arguments are checked against the compiled parameter types the way a strict CuPy user must
get them right: CuPy passes a Python int as int64 and a float as double, so a scalar must be
the NumPy scalar of the parameter's exact type (np.int32 for int, np.float32 for float ...),
and an array's dtype must match the pointee (float16 for __half and __half2, float32 for
float, float2, float4 ...; void* and byte vectors such as uint4* take any dtype).
"""
from __future__ import annotations

import ctypes
import os
from pathlib import Path

import numpy as np

from . import build
from . import source as srcmod

ORDERS = {'forward': 0, 'reverse': 1, 'seeded': 2}

# Parameter type codes (cuda_cpu_glue.h) -> the NumPy dtypes that may back them.
_SCALAR = {'b1': np.bool_, 'i1': np.int8, 'u1': np.uint8, 'i2': np.int16, 'u2': np.uint16, 'i4': np.int32,
           'u4': np.uint32, 'i8': np.int64, 'u8': np.uint64, 'f2': np.float16, 'f4': np.float32, 'f8': np.float64}
_POINTEE = {'f2': (np.float16,), 'f2x2': (np.float16,), 'f4': (np.float32,), 'f4x2': (np.float32,),
            'f4x3': (np.float32,), 'f4x4': (np.float32,), 'f8': (np.float64,), 'f8x2': (np.float64,),
            'i4': (np.int32,), 'i4x2': (np.int32,), 'i4x3': (np.int32,), 'u4': (np.uint32,), 'i8': (np.int64,),
            'u8': (np.uint64,), 'i2': (np.int16,), 'u2': (np.uint16,), 'i2x2': (np.int16,), 'u2x2': (np.uint16,),
            'b1': (np.bool_, np.uint8, np.int8), 'i1': (np.int8, np.uint8, np.bool_), 'u1': None, 'raw': None,
            'void': None}
MAX_SHARED_DEFAULT = 48 * 1024          # dynamic shared memory without the opt-in attribute
MAX_SHARED_OPTIN = 227 * 1024           # sm_90's opt-in maximum per block


class CudaCpuError(RuntimeError):
    """A kernel did something a GPU would not allow: a divergent barrier, an out-of-bounds
    access, a stack overflow, an assert... The message names the kernel and the place."""


class RawModule:
    """A CUDA C source compiled for the CPU, with cupy.RawModule's construction and lookup.

    order: 'forward' (threads and blocks in index order), 'reverse', or 'seeded' (a random
    order drawn from `seed` for every pass between barriers and for the blocks). A kernel whose
    result changes with the order has a race.
    """

    def __init__(self, code: str | None = None, path: str | os.PathLike | None = None, options=(),
                 *, order: str = 'forward', seed: int = 0, source_name: str | None = None,
                 cpu_time_limit: float = 60.0, stack_kb: int = 64, name_expressions=None, backend='nvrtc',
                 jitify: bool = False):
        if (code is None) == (path is None):
            raise TypeError('RawModule needs exactly one of code= (CUDA C source text) or path=')
        if name_expressions:
            raise NotImplementedError('name_expressions (C++ templates) are not supported by tools.cuda_cpu: '
                                      'declare kernels extern "C"')
        if order not in ORDERS:
            raise ValueError(f'order must be one of {", ".join(ORDERS)}, got {order!r}')
        if not isinstance(options, (tuple, list)):
            raise TypeError(f'options must be a tuple of strings, got {type(options).__name__}')
        include_dirs = []
        if path is not None:
            path = Path(path)
            code = path.read_text()
            include_dirs.append(str(path.resolve().parent))
            source_name = source_name or path.name
        if not isinstance(code, str):
            raise TypeError(f'code must be CUDA C source text (str), got {type(code).__name__}')
        self.code, self.options, self.order, self.seed = code, tuple(options), order, int(seed)
        self.cpu_time_limit, self.stack_bytes = float(cpu_time_limit), int(stack_kb) * 1024
        self._source_name = source_name or 'kernel.cu'
        self._include_dirs = include_dirs
        self._lib = None
        self._kernels: dict[str, srcmod.Kernel] = {}
        self._launches = 0

    def compile(self, log_stream=None) -> None:
        """Build (or load from the cache) the CPU library now; get_function does it on demand."""
        if self._lib is None:
            self._lib, self._kernels = build.compile_library(self.code, self.options, self._source_name,
                                                             self._include_dirs)
            self._sigs = {name: self._lib.kc_kernel_sig(i).decode().rstrip(',')
                          for i, name in enumerate(self._kernels)}
            self._bounds = {name: self._lib.kc_kernel_launch_bounds(i) for i, name in enumerate(self._kernels)}

    def get_function(self, name: str) -> 'Function':
        self.compile()
        if name not in self._kernels:
            hidden = name in srcmod.global_functions(self.code)
            why = (' (it is a __global__ function but not extern "C": its name is mangled)' if hidden else
                   f'; kernels: {", ".join(self._kernels) or "none"}')
            raise AttributeError(f'no kernel named {name!r} in {self._source_name}{why}')
        return Function(self, name, list(self._kernels).index(name))

    def _next_seed(self) -> int:
        self._launches += 1
        return (self.seed * 0x9E3779B1 + self._launches * 0x85EBCA77) & 0xFFFFFFFFFFFFFFFF


class Function:
    """One kernel: call it as `f(grid, block, args, shared_mem=0)`, as cupy's RawKernel."""

    def __init__(self, module: RawModule, name: str, index: int):
        self.module, self.name, self._index = module, name, index
        k = module._kernels[name]
        codes = module._sigs[name].split(',') if module._sigs[name] else []
        self.param_names = [n or f'#{i}' for i, n in enumerate(k.params)] if len(k.params) == len(codes) \
            else [f'#{i}' for i in range(len(codes))]
        self.param_decls = list(k.decls) if len(k.decls) == len(codes) else self.param_names
        self._codes = codes
        self.launch_bounds = module._bounds[name] or None
        self.max_dynamic_shared_size_bytes = MAX_SHARED_DEFAULT

    @property
    def num_params(self) -> int:
        return len(self._codes)

    def __repr__(self) -> str:
        return f'<tools.cuda_cpu kernel {self.name}({", ".join(self.param_decls)})>'

    # ------------------------------------------------------------------ checks
    def _param(self, i: int) -> str:
        return f'parameter {i} `{self.param_decls[i]}`'

    def _arg_error(self, i: int, msg: str) -> TypeError:
        return TypeError(f'kernel {self.name!r}, {self._param(i)}: {msg}')

    def _dims(self, v, what: str) -> tuple[int, int, int]:
        if isinstance(v, (int, np.integer)):
            v = (v,)
        if not isinstance(v, tuple) or not 1 <= len(v) <= 3 or not all(isinstance(d, (int, np.integer)) for d in v):
            raise TypeError(f'kernel {self.name!r}: {what} must be an int or a tuple of 1 to 3 ints, got {v!r}')
        d = tuple(int(x) for x in v) + (1,) * (3 - len(v))
        if min(d) < 1:
            raise ValueError(f'kernel {self.name!r}: {what} {v!r} has a dimension < 1')
        return d

    def _check_launch(self, grid, block, shared_mem) -> None:
        n = block[0] * block[1] * block[2]
        if n > 1024 or block[2] > 64:
            raise CudaCpuError(f'kernel {self.name!r}: block {block} has {n} threads; a CUDA block holds at most '
                               '1024 (and z <= 64): cudaErrorInvalidConfiguration')
        if grid[1] > 65535 or grid[2] > 65535 or grid[0] > 2**31 - 1:
            raise CudaCpuError(f'kernel {self.name!r}: grid {grid} is over the limits (2^31-1, 65535, 65535)')
        if self.launch_bounds and n > self.launch_bounds:
            raise CudaCpuError(f'kernel {self.name!r}: block of {n} threads exceeds its __launch_bounds__'
                               f'({self.launch_bounds}): the launch fails on a GPU')
        if not isinstance(shared_mem, (int, np.integer)) or shared_mem < 0:
            raise TypeError(f'kernel {self.name!r}: shared_mem must be a non-negative int, got {shared_mem!r}')
        limit = min(int(self.max_dynamic_shared_size_bytes), MAX_SHARED_OPTIN)
        if shared_mem > limit:
            raise CudaCpuError(
                f'kernel {self.name!r}: shared_mem={shared_mem} bytes is over {limit}'
                + (' (more than 48 KiB needs kernel.max_dynamic_shared_size_bytes set first, as on the GPU)'
                   if limit == MAX_SHARED_DEFAULT else ''))

    def _scalar(self, i: int, code: str, a):
        want = _SCALAR.get(code.split(':')[0])
        if want is None:
            raise self._arg_error(i, f'tools.cuda_cpu cannot pass a by-value parameter of this type')
        if not isinstance(a, np.generic) or a.dtype != np.dtype(want):
            got = f'NumPy {a.dtype}' if isinstance(a, (np.generic, np.ndarray)) else f'Python {type(a).__name__}'
            hint = ' (CuPy would pass a Python int as int64 and a float as double)' \
                if isinstance(a, (int, float, bool)) else ''
            raise self._arg_error(i, f'needs np.{np.dtype(want).name}, got {got}{hint}')
        return (ctypes.c_char * a.dtype.itemsize).from_buffer_copy(a.tobytes())    # the value's bytes, as CuPy packs them

    def _array(self, i: int, code: str, a) -> None:
        if not isinstance(a, np.ndarray):
            raise self._arg_error(i, f'needs a NumPy array (the device pointer), got {type(a).__name__}')
        pointee = code.lstrip('*').removeprefix('const ').split(':')[0]
        if pointee == '?':
            raise self._arg_error(i, f'tools.cuda_cpu does not know this pointee type')
        want = _POINTEE.get(pointee)
        if want is not None and a.dtype not in [np.dtype(w) for w in want]:
            raise self._arg_error(i, f'array dtype {a.dtype}, the kernel reads '
                            f'{" or ".join(np.dtype(w).name for w in want)}')
        if not a.flags.c_contiguous:
            raise self._arg_error(i, f'array is not C-contiguous (a device pointer addresses contiguous memory)')

    # ------------------------------------------------------------------ launch
    def __call__(self, grid, block, args, shared_mem: int = 0, stream=None, enable_cooperative_groups=False):
        if enable_cooperative_groups:
            raise NotImplementedError('cooperative launches are not supported by tools.cuda_cpu')
        grid, block = self._dims(grid, 'grid'), self._dims(block, 'block')
        if not isinstance(args, (tuple, list)):
            raise TypeError(f'kernel {self.name!r}: args must be a tuple, got {type(args).__name__}')
        if len(args) != len(self._codes):
            raise TypeError(f'kernel {self.name!r} takes {len(self._codes)} arguments '
                            f'({", ".join(self.param_decls)}), got {len(args)}')
        self._check_launch(grid, block, shared_mem)
        holders, arrays = [], []
        for i, (code, a) in enumerate(zip(self._codes, args)):
            if code.startswith('*'):
                self._array(i, code, a)
                arrays.append((i, a, code.startswith('*const ')))
                holders.append(None)
            else:
                holders.append(self._scalar(i, code, a))
        mod = self.module
        lib = mod._lib
        with _Buffers(lib, arrays, at_start=mod.order == 'reverse') as bufs:
            for i, ptr in bufs.pointers.items():
                holders[i] = ctypes.c_void_p(ptr)
            argv = (ctypes.c_void_p * max(1, len(holders)))(*[ctypes.addressof(h) for h in holders])
            g = (ctypes.c_uint * 3)(*grid)
            b = (ctypes.c_uint * 3)(*block)
            rc = lib.kc_launch(self._index, argv, g, b, int(shared_mem), ORDERS[mod.order], mod._next_seed(), 1,
                               mod.cpu_time_limit, mod.stack_bytes)
            if rc == 1:
                raise CudaCpuError(f'kernel {self.name!r}: {lib.kc_last_error().decode()}')
            if rc == 2:
                raise CudaCpuError(f'kernel {self.name!r}: {bufs.explain_fault(self)}')
            if rc == 3:
                raise CudaCpuError(f'kernel {self.name!r}: still running after {mod.cpu_time_limit:g} s of CPU time '
                                   '(an endless loop, or a thread spinning on memory another thread writes: the CPU '
                                   'runs a thread until it waits at a barrier, so such a spin never ends here)')
            bad = bufs.check_canaries()
            if bad:
                i, off = bad
                raise CudaCpuError(f'kernel {self.name!r}: out-of-bounds write to {self._param(i)}: '
                                   f'byte {off} of a {args[i].nbytes}-byte array was changed')
            changed = bufs.copy_back()
            if changed is not None:
                raise CudaCpuError(f'kernel {self.name!r} wrote into {self._param(changed)}, whose NumPy array '
                                   'is read-only (flags.writeable is False)')


class _Buffers:
    """The launch's guarded copies of the array arguments (overlapping arrays share one)."""

    def __init__(self, lib, arrays, at_start: bool):
        self.lib, self.arrays, self.at_start = lib, arrays, at_start
        self.groups: list[dict] = []
        self.pointers: dict[int, int] = {}

    def __enter__(self):
        spans = []
        for i, a, const in self.arrays:
            start = a.ctypes.data
            spans.append((start, start + max(a.nbytes, 0), i, a, const))
        spans.sort(key=lambda s: s[0])
        for s in spans:     # merge arrays whose bytes overlap into one group
            g = self.groups[-1] if self.groups else None
            if g is not None and s[0] < g['end'] and s[1] > g['start']:
                g['end'] = max(g['end'], s[1])
                g['members'].append(s)
            else:
                self.groups.append({'start': s[0], 'end': s[1], 'members': [s]})
        for g in self.groups:
            n = g['end'] - g['start']
            info = (ctypes.c_uint64 * 6)()
            if self.lib.kc_buf_alloc(n, g['start'] % 16, int(self.at_start), info):
                raise MemoryError('tools.cuda_cpu: cannot map a guarded buffer')
            g['info'] = info
            g['ptr'] = info[4]
            if n:
                ctypes.memmove(info[4], g['start'], n)
            for start, _end, i, _a, _c in g['members']:
                self.pointers[i] = info[4] + (start - g['start'])
            g['readonly'] = all(m[4] for m in g['members'])
            if g['readonly']:
                self.lib.kc_buf_protect(info, 0)
        return self

    def check_canaries(self):
        for g in self.groups:
            off = self.lib.kc_buf_check(g['info'])
            if off != -(2**63):
                m = g['members'][0] if off < 0 else max(g['members'], key=lambda s: s[1])
                return m[2], off + g['start'] - m[0]
        return None

    def copy_back(self):
        """Copy results into the arrays; None, or the index of a read-only array the kernel changed."""
        for g in self.groups:
            if g['readonly']:
                continue
            for start, end, i, a, _c in g['members']:
                if end <= start:
                    continue
                src = g['ptr'] + (start - g['start'])
                if a.flags.writeable:
                    ctypes.memmove(start, src, end - start)
                elif ctypes.string_at(src, end - start) != ctypes.string_at(start, end - start):
                    return i
        return None

    def explain_fault(self, fn: Function) -> str:
        addr, sig, write = ctypes.c_uint64(), ctypes.c_int(), ctypes.c_int()
        ids = (ctypes.c_uint * 7)()
        self.lib.kc_fault(ctypes.byref(addr), ctypes.byref(sig), ctypes.byref(write), ids)
        who = f'block ({ids[0]},{ids[1]},{ids[2]}) thread ({ids[3]},{ids[4]},{ids[5]})' if ids[6] else 'the launcher'
        verb = {1: 'write', 0: 'read'}.get(write.value, 'access')
        a = addr.value
        for g in self.groups:
            info = g['info']
            if info[0] <= a < info[0] + info[1]:
                members = g['members']
                near = min(members, key=lambda s: min(abs(a - (g['ptr'] + s[0] - g['start'])),
                                                      abs(a - (g['ptr'] + s[1] - g['start']))))
                off = a - (g['ptr'] + near[0] - g['start'])
                ro = g['readonly'] and 0 <= off < near[1] - near[0]
                what = ('write through a const pointer into' if ro else f'out-of-bounds {verb} of')
                return (f'{who}: {what} {fn._param(near[2])}: byte offset {off} of a {near[3].nbytes}-byte array '
                        f'({near[3].dtype}, shape {near[3].shape})')
        if a == 0 and sig.value == 11:
            return (f'{who}: invalid memory access (a null pointer, or a misaligned 8/16-byte vector load or store: '
                    'CUDA needs float4/uint4 addresses aligned to 16 bytes)')
        return f'{who}: invalid memory {verb} at address 0x{a:x}, outside every argument array'

    def __exit__(self, *exc):
        for g in self.groups:
            self.lib.kc_buf_free(g['info'])
        return False
