"""What the H200 will see of the decode step's kernels, read without a GPU: each kernel compiled
as cupy.RawModule compiles it (the text kernels_cuda.source() hands over, CuPy's own options,
the Llama-3-8B shape's -D options), its registers, occupancy and 128-bit loads in flight from
the SASS, and from those a bytes-per-step model of Llama-3-8B x 4 layers in float16.

    python -m tools.cuda_cpu.sass_check                 # the table, the model; exit 1 if a kernel
                                                        # has fewer loads in flight than it needs
    python -m tools.cuda_cpu.sass_check --json out.json # the same as a document

Loads in flight (tools/cuda_cpu/sass.py): for each round of 128-bit loads, how many a lane has
issued and not yet waited for when it first waits; a kernel's number is its worst round.
REQUIRED says what each kernel must keep: the gemv 8 (2 pieces of 4 rows of W), attention
and argmax 4. Needs the `cuda-check` extra (NVRTC, cuobjdump, nvdisasm); exits 2 without it.

The model (``predict``), per launch of the captured step: the bytes it must move; the warps
resident per SM (occupancy from registers, shared memory and block size, and the grid: a
grid smaller than the GPU leaves SMs idle); bytes in flight per SM = warps x 32 lanes x
streaming loads in flight x 16 B; bandwidth = min(the measured copy rate, SMs x bytes in
flight / memory latency) (Little's law); time = bytes / bandwidth + a fixed cost per graph
node (the gap between dependent kernels and the first loads' latency) + the attention
merge's serial tail (the last block's rounds of L2 reads). Step time = the sum; % of peak =
step bytes / step time / 4.8 TB/s. The assumptions are the ASSUMED table, each with a low
and a high value: the prediction is printed at the central value with the range they give.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass, field

from engine.gpu import kernels_cuda as kc
from tools.cuda_cpu import nvrtc_check as nc
from tools.cuda_cpu import sass

# Llama-3-8B (engine/analysis/model_shapes.py) x 4 layers, float16: what the model predicts
LLAMA = dict(D=4096, H=32, KV=8, hd=128, F=14336, V=128256, layers=4, dtype_bytes=2)
CONTEXTS = (128, 8192, 32768)
DATASHEET_BW = 4.8e12  # NVIDIA H200 datasheet (tools/bench/backend.py's GPU_SPEC_BANDWIDTH)

# H200 (sm_90): SMs and the per-SM limits occupancy is computed from (CUDA C programming guide,
# compute capability 9.0)
SMS, REGS_PER_SM, MAX_WARPS_PER_SM, MAX_BLOCKS_PER_SM, SMEM_PER_SM = 132, 65536, 64, 32, 228 * 1024
REG_ALLOC_UNIT, SMEM_RESERVED_PER_BLOCK = 256, 1024

# (low, central, high): the model's assumptions, replaced by measured values when a GPU session
# has them (gpu_check measures the copy rate and the per-node cost of the step)
ASSUMED = {
    "copy_bw": (4.0e12, 4.3e12, 4.5e12),       # B/s, a device-to-device copy (the issue: ~4.3 TB/s on this H200)
    "dram_latency": (1.0e-6, 0.8e-6, 0.6e-6),  # s, a load under load (low = pessimistic)
    "l2_latency": (0.5e-6, 0.4e-6, 0.3e-6),    # s, a read of another block's partial sums
    "node_cost": (3.0e-6, 2.0e-6, 1.2e-6),     # s per graph node: the launch gap and the ramp
}

# the loads in flight each kernel must keep (its worst round), by entry-point prefix
REQUIRED = {"gemv": 8, "attention": 4, "argmax": 4}
BLOCK = {"embed": 256, "attention": kc.ATT_THREADS, "argmax": 1024}  # gemv: kernels_cuda.gemv_block(K)


def required(kernel: str) -> int:
    return next((n for prefix, n in REQUIRED.items() if kernel.startswith(prefix)), 0)


@dataclass
class KernelFacts:
    module: str
    kernel: str
    registers: int
    smem: int
    spills: int
    block: int
    blocks_per_sm: int
    loads128: int            # 128-bit global loads in the code
    in_flight: int           # in its worst round (0: it has none)
    streaming_in_flight: int  # of which weights / K / V (the streaming hint), in its best round
    required: int
    rounds: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.spills == 0 and self.in_flight >= self.required

    @property
    def warps_per_sm(self) -> int:
        return self.blocks_per_sm * -(-self.block // 32)


def occupancy(registers: int, smem: int, block: int) -> int:
    """Blocks of ``block`` threads resident on one SM (registers, shared memory, warps, blocks)."""
    warps = -(-block // 32)
    per_warp = -(-max(registers, 1) * 32 // REG_ALLOC_UNIT) * REG_ALLOC_UNIT
    by_regs = (REGS_PER_SM // per_warp) // warps
    by_smem = SMEM_PER_SM // (smem + SMEM_RESERVED_PER_BLOCK) if smem else MAX_BLOCKS_PER_SM
    return max(0, min(by_regs, by_smem, MAX_WARPS_PER_SM // warps, MAX_BLOCKS_PER_SM))


def module_options(module: str) -> tuple[str, ...]:
    """The -D options the kernel set compiles a module with, for the Llama-3-8B shape."""
    if module == "attention":
        return kc.attention_options(LLAMA["H"] // LLAMA["KV"], LLAMA["hd"], kc.DEFAULT_SPLIT)
    return ()


def analyse(module: str, text: str | None = None, options: tuple = ()) -> list[KernelFacts]:
    """Compile one module as the GPU will and read each kernel's facts."""
    text = kc.source(module) if text is None else text
    cubin, log = nc.compile_text(text, f"{module}.cu", kc.KERNEL_DIR, module_options(module) + tuple(options))
    ptxas = {r.kernel: r for r in nc.parse_ptxas(log, f"{module}.cu")}
    code = sass.parse(sass.disassemble(cubin))
    out = []
    for name, k in code.items():
        r = ptxas[name]
        block = BLOCK.get(module, kc.GEMV_MAX_THREADS)
        rounds = k.rounds()
        out.append(KernelFacts(
            module, name, r.registers, r.smem, r.spill_stores + r.spill_loads, block,
            occupancy(r.registers, r.smem, block), k.loads128, min((x.in_flight for x in rounds), default=0),
            max((x.streaming for x in rounds), default=0), required(name),
            [(x.addr, x.in_flight, x.streaming) for x in rounds]))
    return sorted(out, key=lambda f: f.kernel)


# --------------------------------------------------------------------------- the step model


@dataclass
class Launch:
    kernel: str       # entry point
    grid: int         # blocks
    block: int        # threads
    bytes: int        # what it must move
    splits: int = 0   # attention: splits its last block merges


def step_launches(context: int, shape: dict = LLAMA, split: int = kc.DEFAULT_SPLIT) -> list[Launch]:
    """The captured greedy step's launches (engine/gpu/fused_step.py's enqueue) for ``shape``
    at ``context`` (tests/tools/test_sass_check.py checks the order against a real capture)."""
    D, H, KV, hd, F, V, b = (shape[k] for k in ("D", "H", "KV", "hd", "F", "V", "dtype_bytes"))
    dt = "float16" if b == 2 else "float32"
    M = context + 1
    C = -(-M // split)
    n_splits = -(-(context + 1) // split)
    kv_bytes = 2 * KV * (context + 1) * hd * b
    out = [Launch("embed_f16", -(-D // 256), 256, 2 * D * b)]
    for _ in range(shape["layers"]):
        out += [
            Launch("gemv_rope_f16", (H + 2 * KV) * hd // 4, kc.gemv_block(D, dt), (H + 2 * KV) * hd * D * b),
            Launch("attention_f16", KV * C, kc.ATT_THREADS, kv_bytes + 2 * H * n_splits * (hd + 2) * 4, n_splits),
            Launch("gemv_residual_f16", -(-D // 4), kc.gemv_block(H * hd, dt), D * H * hd * b),
            Launch("gemv_swiglu_f16", -(-F // 2), kc.gemv_block(D, dt), 2 * F * D * b),
            Launch("gemv_residual_f16", -(-D // 4), kc.gemv_block(F, dt), D * F * b),
        ]
    out.append(Launch("gemv_argmax_f16", -(-V // 4), kc.gemv_block(D, dt), V * D * b))
    return out


def step_bytes(context: int, shape: dict = LLAMA) -> int:
    """tools/bench/gpu_check.step_bytes for the shape: the weights but the embedding table, and K/V."""
    D, H, KV, hd, F, V, b, L = (shape[k] for k in ("D", "H", "KV", "hd", "F", "V", "dtype_bytes", "layers"))
    per_layer = D * (H + 2 * KV) * hd + H * hd * D + D * 2 * F + F * D + 2 * D
    return (L * per_layer + D + D * V) * b + context * 2 * L * KV * hd * b


def launch_time(launch: Launch, facts: KernelFacts, a: dict) -> float:
    """Seconds for one launch under assumptions ``a`` (see the module docstring)."""
    resident = min(launch.grid, SMS * max(facts.blocks_per_sm, 1))
    warps_per_sm = resident * -(-launch.block // 32) / SMS
    in_flight = max(facts.streaming_in_flight, facts.in_flight, 1)
    bw = min(a["copy_bw"], SMS * warps_per_sm * 32 * in_flight * 16 / a["dram_latency"])
    t = launch.bytes / bw + a["node_cost"]
    if launch.splits:  # the last block: max and sum over the splits, then ATT_MERGE_DEPTH loads a round
        t += (2 * math.ceil(launch.splits / 32) + math.ceil(launch.splits / MERGE_DEPTH)) * a["l2_latency"]
    return t


MERGE_DEPTH = 8  # attention.cu's merge: float4 loads of acc in flight per thread


def predict(facts: dict[str, KernelFacts], context: int) -> dict:
    """The step at ``context``: time and % of the datasheet at the central assumptions, and the range."""
    launches = step_launches(context)
    nbytes = step_bytes(context)

    def at(i: int) -> float:
        a = {k: v[i] for k, v in ASSUMED.items()}
        return sum(launch_time(x, facts[x.kernel], a) for x in launches)

    t = {name: at(i) for i, name in enumerate(("low", "central", "high"))}
    pct = {name: 100 * nbytes / s / DATASHEET_BW for name, s in t.items()}
    return {"context": context, "bytes": nbytes, "nodes": len(launches), "us": t["central"] * 1e6,
            "us_range": [t["high"] * 1e6, t["low"] * 1e6], "pct_peak": pct["central"],
            "pct_peak_range": [pct["low"], pct["high"]]}


# --------------------------------------------------------------------------- the command


def check_all(modules=kc.SOURCES) -> dict[str, KernelFacts]:
    return {f.kernel: f for m in modules for f in analyse(m)}


def table(facts) -> str:
    head = ("kernel", "regs", "smem B", "spill B", "block", "blocks/SM", "warps/SM", "128-bit loads",
            "in flight", "of W/KV", "needs", "")
    rows = [(f.kernel, str(f.registers), str(f.smem), str(f.spills), str(f.block), str(f.blocks_per_sm),
             str(f.warps_per_sm), str(f.loads128), str(f.in_flight), str(f.streaming_in_flight), str(f.required),
             "ok" if f.ok else "FAIL") for f in facts]
    widths = [max(len(x) for x in col) for col in zip(head, *rows)]
    line = lambda r: "  ".join(x.ljust(w) for x, w in zip(r, widths)).rstrip()  # noqa: E731
    return "\n".join([line(head), line(["-" * w for w in widths])] + [line(r) for r in rows])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.cuda_cpu.sass_check", description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="also write the facts and the model to this file")
    args = ap.parse_args(argv)
    try:
        facts = check_all()
    except (nc.NvrtcMissing, sass.SassToolMissing) as e:
        print(e, file=sys.stderr)
        return 2
    print(table(facts.values()))
    print(f"\nLlama-3-8B x {LLAMA['layers']} layers, float16, the captured greedy step "
          f"({len(step_launches(CONTEXTS[0]))} graph nodes), against {DATASHEET_BW / 1e12:.1f} TB/s:")
    model = [predict(facts, c) for c in CONTEXTS]
    for p in model:
        print(f"  context {p['context']:>6}: {p['bytes'] / 1e6:8.1f} MB, predicted {p['us']:6.1f} us "
              f"({p['us_range'][0]:.0f} .. {p['us_range'][1]:.0f}), {p['pct_peak']:.1f} % of peak "
              f"({p['pct_peak_range'][0]:.1f} .. {p['pct_peak_range'][1]:.1f})")
    print("  assumptions (low, central, high): " + "; ".join(f"{k} {v}" for k, v in ASSUMED.items()))
    bad = [f for f in facts.values() if not f.ok]
    for f in bad:
        print(f"FAIL {f.kernel}: {f.in_flight} 128-bit loads in flight in its worst round (needs {f.required}), "
              f"{f.spills} B of spills", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"kernels": [asdict(f) for f in facts.values()], "model": model,
                       "assumed": ASSUMED, "shape": LLAMA}, fh, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
