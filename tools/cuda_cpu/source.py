"""Reading a CUDA C source for the CPU build: its kernels, their parameters, and the few
rewrites g++ needs (an ``extern __shared__`` array becomes a pointer to the launch's dynamic
shared memory), all keeping the source's line numbers so messages point at the .cu lines.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# A kernel the module exports by name: `extern "C" __global__ [__launch_bounds__(..)] void
# [__launch_bounds__(..)] name(`, as cupy.RawModule's get_function(name) needs it.
_LB = r'__launch_bounds__\s*\(((?:[^()]|\([^()]*\))*)\)\s*'
_KERNEL = re.compile(
    r'extern\s+"C"\s+__global__\s+(?:' + _LB + r')?void\s+(?:' + _LB + r')?(\w+)\s*\(([^)]*)\)', re.S)
_GLOBAL = re.compile(r'__global__\s+(?:' + _LB + r')?void\s+(?:' + _LB + r')?(\w+)\s*\(', re.S)
_EXTERN_SHARED = re.compile(
    r'extern\s+__shared__\s+((?:__align__\s*\(\s*\d+\s*\)\s*|alignas\s*\(\s*\d+\s*\)\s*)*)([A-Za-z_][\w:\s]*?)\s*'
    r'((?:__align__\s*\(\s*\d+\s*\)\s*)*)\b(\w+)\s*\[\s*\]\s*;')
_INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


@dataclass(frozen=True)
class Kernel:
    name: str
    params: tuple[str, ...]        # parameter names, in order ("" where unparsable)
    decls: tuple[str, ...]         # parameter declarations as written
    launch_bounds: str | None      # the first __launch_bounds__ argument, as written


def strip_comments(src: str) -> str:
    """The source with comments blanked out (newlines kept, so line numbers stay)."""
    def blank(m: re.Match) -> str:
        s = m.group(0)
        if s.startswith('"') or s.startswith("'"):
            return s
        return re.sub(r'[^\n]', ' ', s)
    return re.sub(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|//[^\n]*|/\*.*?\*/', blank, src, flags=re.S)


def _split_params(text: str) -> list[str]:
    out, depth, cur = [], 0, ''
    for ch in text:
        if ch in '<([':
            depth += 1
        elif ch in '>)]':
            depth -= 1
        if ch == ',' and depth == 0:
            out.append(cur.strip())
            cur = ''
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def kernels(src: str) -> dict[str, Kernel]:
    """The exported (extern "C") kernels of a source, by name, in source order."""
    code = strip_comments(src)
    out: dict[str, Kernel] = {}
    for m in _KERNEL.finditer(code):
        lb = m.group(1) or m.group(2)
        name, plist = m.group(3), m.group(4)
        decls = tuple(' '.join(d.split()) for d in _split_params(plist))
        if decls == ('void',):
            decls = ()
        names = tuple((re.findall(r'(\w+)\s*$', d) or [''])[0] for d in decls)
        out[name] = Kernel(name, names, decls, lb.strip() if lb else None)
    return out


def global_functions(src: str) -> list[str]:
    """Every __global__ function's name, exported or not (to explain a get_function miss)."""
    return [m.group(3) for m in _GLOBAL.finditer(strip_comments(src))]


def rewrite_for_cpu(src: str) -> str:
    """`extern __shared__ [__align__(n)] T name[];` -> a `T*` to the launch's dynamic shared memory.

    g++ has no storage class for "one array per block, sized at launch"; a pointer declared in
    the same place, with the same name and type, reads the same in the kernel body."""
    def repl(m: re.Match) -> str:
        typ = ' '.join(m.group(2).split())
        return f'{typ}* const {m.group(4)} = reinterpret_cast<{typ}*>(::kc::dyn_shared());'
    return _EXTERN_SHARED.sub(repl, src)


def local_includes(src: str) -> list[str]:
    """The names in `#include "name"` lines (for the build cache key)."""
    return _INCLUDE.findall(strip_comments(src))
