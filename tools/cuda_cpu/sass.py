"""Reading the SASS that cuobjdump prints for a cubin: instructions, and how many 128-bit global
loads a warp has in flight when it first waits for one of them.

At batch 1 a decode step streams its weights and its KV cache from HBM; what keeps HBM busy
is the number of loads each lane has issued and not yet waited for (Little's law: bytes in
flight = bandwidth x latency). That number is decided by ptxas's schedule, not by the CUDA
source: ``#pragma unroll`` with four loads in a row can still come out as load, use, load,
use. So it is read here from the machine code:

    walk the instructions in order, keeping the set of 128-bit loads issued whose destination
    registers no instruction has read yet ("outstanding"); the first instruction that reads
    one of them is where the warp waits: the outstanding count there is the round's depth.
    A round ends when no load is outstanding any more. A loop (a branch back to an earlier
    address) is walked twice, so that loads issued at the bottom of one iteration for the
    next (software pipelining) count at the top of the second.

Loads with the streaming hint (``LDG.E.EF.128``: __ldcs, what the kernels use for weights
and K/V, read once per step) are counted apart from the others (``LDG.E.128.CONSTANT``:
__ldg, the small vectors every block rereads, and L2 reads of other blocks' partial sums).
"""
from __future__ import annotations

import functools
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path


class SassToolMissing(RuntimeError):
    """cuobjdump / nvdisasm are not installed (pip install ".[cuda-check]")."""


@dataclass(frozen=True)
class Instr:
    addr: int
    op: str            # the opcode with its modifiers, e.g. LDG.E.EF.128
    dst: tuple         # registers written (R numbers)
    src: tuple         # registers read
    target: int | None = None   # a branch's target address

    @property
    def base(self) -> str:
        return self.op.split('.')[0]

    @property
    def load128(self) -> bool:
        return self.base == 'LDG' and '.128' in self.op

    @property
    def streaming(self) -> bool:
        return self.load128 and '.EF' in self.op


@dataclass
class Round:
    addr: int          # where the warp first waits
    in_flight: int     # 128-bit loads outstanding there
    streaming: int     # of which with the streaming hint (weights, K/V)


@dataclass
class KernelSass:
    name: str
    instrs: list = field(default_factory=list)

    @property
    def loads128(self) -> int:
        return sum(i.load128 for i in self.instrs)

    def rounds(self) -> list[Round]:
        return load_rounds(self.instrs)


def tool_dir() -> Path:
    """The folder of the cuobjdump and nvdisasm executables: the nvidia-cuda-* wheels', else a
    CUDA toolkit's on PATH."""
    import importlib.util

    for pkg in ('nvidia.cu13', 'nvidia.cuda_cuobjdump', 'nvidia'):
        try:
            spec = importlib.util.find_spec(pkg)
        except (ModuleNotFoundError, ValueError):
            continue
        for loc in (spec.submodule_search_locations or []) if spec else []:
            for sub in ('bin', 'cu13/bin'):
                d = Path(loc) / sub
                if (d / 'cuobjdump').exists() and (d / 'nvdisasm').exists():
                    return d
    import shutil

    found = shutil.which('cuobjdump')  # a CUDA toolkit's (the H200 image has one)
    if found and (Path(found).parent / 'nvdisasm').exists():
        return Path(found).parent
    raise SassToolMissing('cuobjdump and nvdisasm not found: pip install ".[cuda-check]" '
                          '(nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm)')


@functools.lru_cache(maxsize=64)
def disassemble(cubin: bytes) -> str:
    """cuobjdump -sass of a cubin (cuobjdump runs nvdisasm, found beside it)."""
    tools = tool_dir()
    with tempfile.TemporaryDirectory(prefix='sass-') as tmp:
        path = Path(tmp) / 'k.cubin'
        path.write_bytes(cubin)
        env = {**os.environ, 'PATH': f'{tools}{os.pathsep}{os.environ.get("PATH", "")}'}
        r = subprocess.run([str(tools / 'cuobjdump'), '-sass', str(path)], capture_output=True, text=True, env=env)
    if r.returncode:
        raise RuntimeError(f'cuobjdump failed: {r.stderr.strip()}')
    return r.stdout


_FUNCTION = re.compile(r'^\s*Function\s*:\s*(\S+)')
_LINE = re.compile(r'^\s*/\*([0-9a-f]{4,})\*/\s*(.*?)\s*;')
_REG = re.compile(r'(?<![\w.])R(\d+|Z)((?:\.\w+)*)')


def _regs(operand: str) -> list[int]:
    """Registers an operand names: R12 -> [12]; R12.64 (a pair) -> [12, 13]; RZ -> []."""
    out = []
    for m in _REG.finditer(operand):
        if m.group(1) == 'Z':
            continue
        n, mods = int(m.group(1)), m.group(2)
        width = 4 if '.128' in mods else 2 if '.64' in mods else 1
        out += range(n, n + width)
    return out


_NO_DST = ('ST', 'STG', 'STS', 'STL', 'RED', 'BRA', 'BAR', 'EXIT', 'RET', 'BSYNC', 'BSSY', 'NOP', 'WARPSYNC',
           'MEMBAR', 'CCTL', 'ERRBAR', 'DEPBAR', 'CALL', 'YIELD', 'BPT', 'JMP', 'BRX')


def parse_instr(addr: int, text: str) -> Instr:
    text = re.sub(r'^@!?U?P\w+\s+', '', text.strip())  # the guard predicate reads no R register
    op, _, rest = text.partition(' ')
    operands = [o.strip() for o in rest.split(',')] if rest else []
    base = op.split('.')[0]
    target = None
    if base == 'BRA':
        m = re.search(r'0x([0-9a-f]+)', rest)
        target = int(m.group(1), 16) if m else None
    if base in _NO_DST or not operands:
        return Instr(addr, op, (), tuple(r for o in operands for r in _regs(o)), target)
    dst_op, srcs = operands[0], operands[1:]
    dst = _regs(dst_op)
    if base == 'LDG' or base in ('LDS', 'LD', 'LDC', 'LDSM', 'ATOM', 'ATOMG', 'ATOMS'):
        width = 4 if '.128' in op else 2 if '.64' in op else 1
        dst = list(range(dst[0], dst[0] + width)) if dst else []
    elif '.64' in dst_op or op.endswith('.WIDE') or '.WIDE' in op:
        dst = list(range(dst[0], dst[0] + 2)) if dst else []
    return Instr(addr, op, tuple(dst), tuple(r for o in srcs for r in _regs(o)), target)


def parse(sass: str) -> dict[str, KernelSass]:
    """cuobjdump -sass output -> {kernel name: its instructions}."""
    kernels: dict[str, KernelSass] = {}
    cur = None
    for line in sass.splitlines():
        if m := _FUNCTION.match(line):
            cur = kernels.setdefault(m.group(1), KernelSass(m.group(1)))
        elif cur is not None and (m := _LINE.match(line)):
            cur.instrs.append(parse_instr(int(m.group(1), 16), m.group(2)))
    return kernels


def _walk_order(instrs: list[Instr]) -> list[Instr]:
    """The instructions in address order, with every loop body (a backward branch's target ..
    the branch) walked a second time right after its first pass."""
    index = {i.addr: n for n, i in enumerate(instrs)}
    out, seen = [], set()
    for n, ins in enumerate(instrs):
        out.append(ins)
        if ins.base == 'BRA' and ins.target is not None and ins.target <= ins.addr and ins.addr not in seen:
            seen.add(ins.addr)
            out += instrs[index.get(ins.target, n): n + 1]
    return out


def load_rounds(instrs: list[Instr]) -> list[Round]:
    """Each round of 128-bit loads: where the warp first waits and how many are in flight."""
    outstanding: dict[int, Instr] = {}   # destination register -> its load
    rounds, waited = [], False
    for ins in _walk_order(instrs):
        read = {r for r in ins.src if r in outstanding}
        if read and not waited:
            loads = set(outstanding.values())
            rounds.append(Round(ins.addr, len(loads), sum(i.streaming for i in loads)))
            waited = True
        finished = {id(outstanding[r]) for r in read | {r for r in ins.dst if r in outstanding}}
        for r in [r for r, load in outstanding.items() if id(load) in finished]:  # read: arrived; overwritten: dead
            del outstanding[r]
        if ins.load128:
            for r in ins.dst:
                outstanding[r] = ins
        if not outstanding:
            waited = False
    return rounds
