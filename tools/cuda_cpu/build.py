"""Compiling a CUDA C source with g++ into a shared library that runs its kernels on the CPU.

The library holds the kernel source (after source.rewrite_for_cpu), compiled with
include/cuda_cpu.h force-included, plus generated glue: for every exported kernel a function
that unpacks a ``void** args`` array (as cuLaunchKernel takes) into the kernel's own parameter
types, and the compiled parameter types as a string, so the Python side checks arguments
against what g++ saw rather than against a regex's reading of the signature.

Libraries are cached by a hash of everything that goes into them, in ``$KV_CUDA_CPU_CACHE``
or ``~/.cache/kv-classroom/cuda_cpu``, and loaded once per process.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from . import source as srcmod

INCLUDE = Path(__file__).resolve().parent / 'include'
# -fstack-clash-protection: a large local array probes every page, so it meets the fiber stack's
# guard page instead of silently landing in the next thread's stack.
CXX_FLAGS = ('-std=c++17', '-O2', '-g0', '-fPIC', '-shared', '-fno-strict-aliasing', '-fvisibility=hidden',
             '-fstack-clash-protection',
             '-Wno-unknown-pragmas', '-Wno-unused-result', '-Wno-attributes')

# NVRTC options that say nothing to the CPU build (code generation, debug info, ptxas).
_IGNORED = re.compile(
    r'^(-arch|--gpu-architecture|-ftz|--ftz|-prec-div|--prec-div|-prec-sqrt|--prec-sqrt|-fmad|--fmad|'
    r'--use_fast_math|-use_fast_math|-lineinfo|--generate-line-info|-G|--device-debug|-Xptxas|--ptxas-options|'
    r'-maxrregcount|--maxrregcount|--device-as-default-execution-space|-default-device|'
    r'--extra-device-vectorization|-extra-device-vectorization|-dopt|--dopt|-restrict|--restrict|-w|'
    r'--disable-warnings|-dw|--relocatable-device-code|-rdc|--minimal|-minimal|--dlink-time-opt|-dlto)(=.*)?$')

_loaded: dict[str, ctypes.CDLL] = {}


def cache_dir() -> Path:
    env = os.environ.get('KV_CUDA_CPU_CACHE')
    return Path(env) if env else Path.home() / '.cache' / 'kv-classroom' / 'cuda_cpu'


def gxx_options(options) -> tuple[list[str], list[str]]:
    """NVRTC options -> (g++ options, include dirs). Raises ValueError on an option it can't map."""
    out, incs, std = [], [], '-std=c++17'
    it = iter(options)
    for o in it:
        if not isinstance(o, str):
            raise TypeError(f'options must be strings, got {o!r}')
        if o in ('-D', '-U', '-I', '--define-macro', '--undefine-macro', '--include-path'):
            try:
                v = next(it)
            except StopIteration:
                raise ValueError(f'option {o} needs a value') from None
            o = {'--define-macro': '-D', '--undefine-macro': '-U', '--include-path': '-I'}.get(o, o) + v
        for long, short in (('--define-macro=', '-D'), ('--undefine-macro=', '-U'), ('--include-path=', '-I')):
            if o.startswith(long):
                o = short + o[len(long):]
        if o.startswith(('-D', '-U')):
            out.append(o)
        elif o.startswith('-I'):
            incs.append(o[2:])
        elif re.fullmatch(r'-{1,2}std=c\+\+(\d\d)', o):
            year = int(re.fullmatch(r'-{1,2}std=c\+\+(\d\d)', o).group(1))
            std = '-std=c++17' if year in (3, 11, 14, 17) else f'-std=c++{year}'
        elif _IGNORED.match(o):
            continue
        else:
            raise ValueError(f'option {o!r} has no meaning for the CPU build (tools/cuda_cpu); '
                             'known: -D, -U, -I, -std=c++NN and NVRTC code-generation flags, which are ignored')
    return [std] + out, incs


def _local_includes(src: str, dirs: list[str], seen: dict[str, str]) -> dict[str, str]:
    """{include name: file text} for the quoted includes a source reaches through `dirs`,
    recursively (they go into the cache key, and are rewritten like the source itself)."""
    for name in srcmod.local_includes(src):
        if name in seen or os.path.isabs(name) or '..' in Path(name).parts:
            continue
        for d in dirs:
            p = os.path.join(d, name)
            if os.path.isfile(p):
                seen[name] = Path(p).read_text(errors='replace')
                _local_includes(seen[name], [os.path.dirname(p)] + dirs, seen)
                break
    return seen


def glue(kernels: dict[str, srcmod.Kernel]) -> str:
    """C++ appended after the kernel source: launchers, parameter types, launch bounds."""
    names = list(kernels)
    bodies = '\n'.join(f'static void kc_body_{i}(void** a) {{ ::kc_glue::call(&::{n}, a); }}' for i, n in enumerate(names))
    table = ', '.join(f'&kc_body_{i}' for i in range(len(names))) or 'nullptr'
    sigs = ', '.join(f'::kc_glue::sig(&::{n})' for n in names) or '""'
    lbs = ', '.join(f'(int)({k.launch_bounds.split(",")[0]})' if k.launch_bounds else '0' for k in kernels.values()) or '0'
    return f'''
#line 1 "cuda_cpu_glue"
#include "cuda_cpu_glue.h"
{bodies}
static void (*const kc_bodies[])(void**) = {{ {table} }};
extern "C" {{
__attribute__((visibility("default"))) int kc_kernel_count() {{ return {len(names)}; }}
__attribute__((visibility("default"))) const char* kc_kernel_sig(int k) {{
    static const std::string s[] = {{ {sigs} }};
    return s[k].c_str();
}}
__attribute__((visibility("default"))) int kc_kernel_launch_bounds(int k) {{
    static const int lb[] = {{ {lbs} }};
    return lb[k];
}}
__attribute__((visibility("default"))) int kc_launch(int k, void** args, const unsigned* grid, const unsigned* block,
        unsigned long long smem, int order, unsigned long long seed, int ftz, double cpu_s, unsigned long long stack) {{
    return ::kc::launch(kc_bodies[k], args, grid, block, smem, order, seed, ftz, cpu_s, stack);
}}
__attribute__((visibility("default"))) const char* kc_last_error() {{ return kc_error(); }}
}}
'''


def compile_library(code: str, options=(), source_name: str = 'kernel.cu', include_dirs=()) -> tuple[ctypes.CDLL, dict]:
    """(loaded library, kernels) for a CUDA C source; g++ runs only on a cache miss."""
    kernels = srcmod.kernels(code)
    std = re.search(r'(?<![\w:])std\s*::\s*(\w+)', srcmod.strip_comments(code))
    if std:
        line = code[:std.start()].count('\n') + 1
        raise CompileError(f'{source_name}:{line}: std::{std.group(1)}: NVRTC has no C++ standard library, so this '
                           'would not compile for the GPU (use CUDA\'s min/max/fmaxf ..., CUDART_INF_F for infinity)')
    flags, incs = gxx_options(options)
    incs = [str(Path(d).resolve()) for d in list(include_dirs) + incs]
    unit = f'#line 1 "{source_name}"\n{srcmod.rewrite_for_cpu(code)}\n{glue(kernels)}'
    cxx = os.environ.get('CXX', 'g++')
    cmd = [cxx, *CXX_FLAGS, *flags, f'-I{INCLUDE}', *(f'-I{d}' for d in incs), '-include', 'cuda_cpu.h']
    headers = ''.join(p.read_text() for p in sorted(INCLUDE.glob('*.h')))
    includes = _local_includes(code, incs, {})
    key = hashlib.sha256('\0'.join([unit, ' '.join(cmd), headers, repr(sorted(includes.items())),
                                    _compiler_id(cxx)]).encode()).hexdigest()[:24]
    if key in _loaded:
        return _loaded[key], kernels
    out_dir = cache_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    so = out_dir / f'{Path(source_name).stem}-{key}.so'
    if not so.exists():
        with tempfile.TemporaryDirectory(prefix='cuda_cpu-') as tmp:
            cpp = Path(tmp) / (Path(source_name).stem + '.cpp')
            cpp.write_text(unit)
            for name, text in includes.items():     # found first (beside the unit), extern __shared__ rewritten
                copy = Path(tmp) / name
                copy.parent.mkdir(parents=True, exist_ok=True)
                copy.write_text(f'#line 1 "{name}"\n{srcmod.rewrite_for_cpu(text)}')
            tmp_so = Path(tmp) / 'out.so'
            r = subprocess.run([*cmd, str(cpp), '-o', str(tmp_so)], capture_output=True, text=True)
            if r.returncode:
                raise CompileError(f'g++ could not compile {source_name} for the CPU:\n{r.stderr.strip()}')
            part = so.with_suffix(f'.{os.getpid()}.part')
            shutil.copyfile(tmp_so, part)
            os.replace(part, so)
    lib = ctypes.CDLL(str(so))
    lib.kc_kernel_sig.restype = ctypes.c_char_p
    lib.kc_kernel_sig.argtypes = [ctypes.c_int]
    lib.kc_kernel_launch_bounds.argtypes = [ctypes.c_int]
    lib.kc_last_error.restype = ctypes.c_char_p
    lib.kc_launch.restype = ctypes.c_int
    lib.kc_launch.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_ulonglong,
                              ctypes.c_int, ctypes.c_ulonglong, ctypes.c_int, ctypes.c_double, ctypes.c_ulonglong]
    lib.kc_buf_alloc.argtypes = [ctypes.c_uint64, ctypes.c_uint64, ctypes.c_int, ctypes.c_void_p]
    lib.kc_buf_check.restype = ctypes.c_int64
    lib.kc_buf_check.argtypes = [ctypes.c_void_p]
    lib.kc_buf_protect.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.kc_buf_free.argtypes = [ctypes.c_void_p]
    lib.kc_fault.argtypes = [ctypes.c_void_p] * 4
    _loaded[key] = lib
    return lib, kernels


_compiler_ids: dict[str, str] = {}


def _compiler_id(cxx: str) -> str:
    if cxx not in _compiler_ids:
        try:
            _compiler_ids[cxx] = subprocess.run([cxx, '--version'], capture_output=True, text=True).stdout
        except OSError as e:
            raise CompileError(f'no C++ compiler: {cxx!r} ({e}); tools/cuda_cpu needs g++ (set CXX to use another)') from None
    return _compiler_ids[cxx]


class CompileError(RuntimeError):
    """g++ rejected the source (the message carries g++'s diagnostics)."""
