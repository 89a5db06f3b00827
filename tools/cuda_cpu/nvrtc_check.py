"""Compile CUDA C kernels for sm_90 with NVRTC, on a machine without a GPU, and report what
ptxas says about each kernel: registers, shared memory, stack, spill stores and loads.

    python -m tools.cuda_cpu.nvrtc_check                      # every engine/gpu/kernels/*.cu
    python -m tools.cuda_cpu.nvrtc_check a.cu b.cu -DHPG=4    # these files, with options

Exits 1 on a compile error or any spill (a spill means the kernel keeps registers in local
memory: slow, and a sign the kernel's per-thread state is too large), 2 when NVRTC is missing.
Needs the `cuda-check` extra (cuda-bindings, nvidia-cuda-nvrtc, nvidia-cuda-runtime for
cuda_fp16.h); NVRTC runs on the CPU, so no GPU or driver is needed. The options mirror
cupy.RawModule's NVRTC call (-ftz=true, as CuPy appends it) plus -arch=sm_90 -Xptxas=-v.
"""
from __future__ import annotations

import argparse
import functools
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / 'engine' / 'gpu' / 'kernels'
ARCH = 'sm_90'


class NvrtcMissing(RuntimeError):
    """cuda-bindings / NVRTC / the CUDA headers are not installed (pip install .[cuda-check])."""


class NvrtcError(RuntimeError):
    """NVRTC rejected the source (the message carries its log)."""


@dataclass
class KernelReport:
    file: str
    kernel: str
    registers: int = 0
    smem: int = 0              # static shared memory, bytes
    stack: int = 0             # stack frame, bytes
    spill_stores: int = 0
    spill_loads: int = 0

    @property
    def spills(self) -> bool:
        return self.spill_stores > 0 or self.spill_loads > 0


def cuda_include_dir() -> str:
    """The CUDA headers' folder (cuda_fp16.h) from the nvidia-cuda-runtime wheel."""
    try:
        from cuda import pathfinder
        found = pathfinder.find_nvidia_header_directory('cudart')
        if found:
            return str(found)
    except Exception:                      # an older cuda-pathfinder, or none: look in the wheels
        pass
    import importlib.util
    for pkg in ('nvidia.cu13', 'nvidia.cuda_runtime'):
        try:
            spec = importlib.util.find_spec(pkg)
        except ModuleNotFoundError:
            continue
        for loc in (spec.submodule_search_locations or []) if spec else []:
            if (Path(loc) / 'include' / 'cuda_fp16.h').exists():
                return str(Path(loc) / 'include')
    raise NvrtcMissing('cuda_fp16.h not found: install the nvidia-cuda-runtime wheel (pip install ".[cuda-check]")')


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
        nvrtc.nvrtcVersion()
    except Exception as e:                 # ImportError, or the library that the bindings load is missing
        raise NvrtcMissing(f'NVRTC is not available ({type(e).__name__}: {e}); pip install ".[cuda-check]"') from None
    return nvrtc


# what cupy.RawModule adds to a kernel's own options (CuPy 14: compiler.py appends -ftz=true
# and --device-as-default-execution-space), and NVRTC's automatic precompiled headers
CUPY_OPTIONS = ('-ftz=true', '--device-as-default-execution-space', '--pch')


def nvrtc_options(include_dir: Path, options=()) -> list[str]:
    return [f'-I{cuda_include_dir()}', f'-I{include_dir}', '--std=c++17', *CUPY_OPTIONS,
            f'-arch={ARCH}', '-Xptxas=-v', *options]


def compile_cubin(path: Path, options=()) -> tuple[bytes, str]:
    """(cubin, NVRTC + ptxas log) for one .cu file; NvrtcError with the log if it fails."""
    return compile_text(path.read_text(), path.name, path.resolve().parent, tuple(options))


@functools.lru_cache(maxsize=64)
def compile_text(text: str, name: str, include_dir: Path, options=()) -> tuple[bytes, str]:
    """(cubin, NVRTC + ptxas log) for CUDA C source text (``name`` in messages); remembered
    per process (the tests and the checks compile the same modules more than once)."""
    import tempfile

    nvrtc = _nvrtc()

    def ok(r):
        if r[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise NvrtcError(f'{name}: {nvrtc.nvrtcGetErrorString(r[0])[1].decode()}')
        return r[1] if len(r) == 2 else None

    prog = ok(nvrtc.nvrtcCreateProgram(text.encode(), name.encode(), 0, [], []))
    pch = tempfile.TemporaryDirectory(prefix='nvrtc-pch-')
    try:
        opts = [o.encode() for o in nvrtc_options(Path(include_dir), options) + [f'--pch-dir={pch.name}']]
        res = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
        size = ok(nvrtc.nvrtcGetProgramLogSize(prog))
        log = b' ' * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        log_text = log.rstrip(b'\0 ').decode(errors='replace')
        if res[0] != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise NvrtcError(f'{name} does not compile for {ARCH}:\n{log_text}')
        size = ok(nvrtc.nvrtcGetCUBINSize(prog))
        cubin = b' ' * size
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        return bytes(cubin), log_text
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
        pch.cleanup()


_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(sm_\w+)'")
_PROPS = re.compile(r'Function properties for (\S+)')
_FRAME = re.compile(r'(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads')
_USED = re.compile(r'Used (\d+) registers')
_SMEM = re.compile(r'(\d+) bytes smem')


def parse_ptxas(log: str, file: str = '') -> list[KernelReport]:
    """ptxas -v's report -> one KernelReport per entry function (kernel), in log order."""
    reports: dict[str, KernelReport] = {}
    cur = None
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            cur = reports.setdefault(m.group(1), KernelReport(file, m.group(1)))
        elif m := _PROPS.search(line):
            cur = reports.get(m.group(1))     # device functions have properties too; only kernels count
        elif cur is not None and (m := _FRAME.search(line)):
            cur.stack, cur.spill_stores, cur.spill_loads = (int(g) for g in m.groups())
        elif cur is not None and (m := _USED.search(line)):
            cur.registers = int(m.group(1))
            if s := _SMEM.search(line):
                cur.smem = int(s.group(1))
    return list(reports.values())


def table(reports: list[KernelReport]) -> str:
    head = ('file', 'kernel', 'registers', 'smem B', 'stack B', 'spill st B', 'spill ld B')
    rows = [(r.file, r.kernel, str(r.registers), str(r.smem), str(r.stack), str(r.spill_stores),
             str(r.spill_loads)) for r in reports]
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    fmt = '  '.join(f'{{:<{w}}}' if i < 2 else f'{{:>{w}}}' for i, w in enumerate(widths))
    return '\n'.join([fmt.format(*head), fmt.format(*('-' * w for w in widths))] + [fmt.format(*r) for r in rows])


def check(paths, options=()) -> tuple[list[KernelReport], list[str]]:
    """Compile each file; (kernel reports, error messages)."""
    reports, errors = [], []
    for p in paths:
        p = Path(p)
        try:
            _cubin, log = compile_cubin(p, options)
        except NvrtcError as e:
            errors.append(str(e))
            continue
        found = parse_ptxas(log, p.name)
        if not found:
            errors.append(f'{p.name}: compiled, but ptxas reported no kernel (no extern "C" __global__ function?)')
        reports += found
    return reports, errors


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog='python -m tools.cuda_cpu.nvrtc_check', description=__doc__.split('\n\n')[0])
    ap.add_argument('files', nargs='*', help=f'.cu files (default: {KERNELS.relative_to(ROOT)}/*.cu)')
    args, extra = ap.parse_known_args(argv)
    bad = [o for o in extra if not o.startswith('-')]
    if bad:
        ap.error(f'unexpected arguments: {" ".join(bad)}')
    files = [Path(f) for f in args.files] or sorted(KERNELS.glob('*.cu'))
    if not files:
        print(f'no .cu files in {KERNELS}', file=sys.stderr)
        return 1
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        print(f'no such file: {", ".join(missing)}', file=sys.stderr)
        return 1
    try:
        reports, errors = check(files, tuple(extra))
    except NvrtcMissing as e:
        print(e, file=sys.stderr)
        return 2
    if reports:
        print(table(reports))
    for e in errors:
        print(f'\nERROR {e}', file=sys.stderr)
    spilled = [r for r in reports if r.spills]
    for r in spilled:
        print(f'SPILL {r.file}:{r.kernel}: {r.spill_stores} B stored, {r.spill_loads} B loaded', file=sys.stderr)
    print(f'\n{len(files)} file(s), {len(reports)} kernel(s) for {ARCH}: {len(errors)} error(s), '
          f'{len(spilled)} with spills')
    return 1 if errors or spilled else 0


if __name__ == '__main__':
    sys.exit(main())
