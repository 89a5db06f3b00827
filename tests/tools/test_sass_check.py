"""tools/cuda_cpu/sass_check: the loads in flight read from the SASS, occupancy, and the bytes-per-step
model. The reading of SASS text is tested on samples; the compiles need the `cuda-check` extra
(NVRTC, cuobjdump, nvdisasm) and skip without it. A kernel that loses its loads in flight fails
the check: planted regressions (the gemv before issue 27, attention without its warp barrier)."""
from __future__ import annotations

from pathlib import Path

import pytest

from engine.gpu import kernels_cuda as kc
from tools.cuda_cpu import nvrtc_check as nc
from tools.cuda_cpu import sass
from tools.cuda_cpu import sass_check as sc

SAMPLES = Path(__file__).parent / "cuda_cpu_kernels" / "nvrtc"


def _sass(body: str) -> str:
    lines = [f"        /*{16 * i:04x}*/                   {ins} ;  /* 0x0 */" for i, ins in enumerate(body.strip().splitlines())]
    return "\t\tFunction : k\n" + "\n".join(lines) + "\n"


def test_loads_issued_before_the_first_wait_count_as_one_round():
    code = sass.parse(_sass("""
        LDG.E.EF.128 R4, desc[UR4][R2.64]
        LDG.E.EF.128 R8, desc[UR4][R2.64+0x200]
        LDG.E.128.CONSTANT R12, desc[UR4][R20.64]
        HADD2.F32 R17, -RZ, R4.H0_H0
        FFMA R18, R17, R12, RZ
        LDG.E.EF.128 R24, desc[UR4][R2.64+0x400]
        FFMA R19, R8, R24, R18
        EXIT
    """))["k"]
    rounds = code.rounds()
    # one round: R8 is still outstanding when R24 is issued, so the loads never all arrive in between
    assert [(r.in_flight, r.streaming) for r in rounds] == [(3, 2)]
    assert code.loads128 == 4


def test_interleaved_loads_are_one_in_flight_and_a_pipelined_loop_counts_its_next_round():
    interleaved = sass.parse(_sass("""
        LDG.E.EF.128 R4, desc[UR4][R2.64]
        FFMA R18, R4, R5, RZ
        LDG.E.EF.128 R8, desc[UR4][R2.64+0x200]
        FFMA R18, R8, R9, R18
    """))["k"]
    assert [r.in_flight for r in interleaved.rounds()] == [1, 1]
    pipelined = sass.parse(_sass("""
        LDG.E.EF.128 R4, desc[UR4][R2.64]
        LDG.E.EF.128 R8, desc[UR4][R2.64+0x200]
        MOV R20, R4
        MOV R24, R8
        LDG.E.EF.128 R4, desc[UR4][R2.64+0x400]
        LDG.E.EF.128 R8, desc[UR4][R2.64+0x600]
        FFMA R18, R20, R24, R18
        @P0 BRA 0x20
        EXIT
    """))["k"]
    # the loop (0x20 .. 0x70) walked twice: the loads at its bottom are waited for at its top
    assert [r.in_flight for r in pipelined.rounds()] == [2, 2]


def test_register_operands_are_read_with_their_width():
    ins = sass.parse_instr(0, "STG.E.128 desc[UR4][R2.64], R8")
    assert ins.dst == () and set(ins.src) == {2, 3, 8}  # an address pair; the store's first register
    load = sass.parse_instr(0, "@!P0 LDG.E.EF.128 R12, desc[UR4][R12.64]")
    assert load.dst == (12, 13, 14, 15) and load.src == (12, 13) and load.streaming


@pytest.mark.parametrize("regs, smem, block, blocks", [(88, 160, 256, 2), (32, 0, 256, 8), (71, 6180, 128, 7),
                                                        (30, 40000, 128, 5), (255, 0, 1024, 0)])
def test_occupancy(regs, smem, block, blocks):
    assert sc.occupancy(regs, smem, block) == blocks


def test_the_modelled_step_is_the_decoders_captured_graph():
    """step_launches must follow engine/gpu/fused_step.py: the same kernels in the same order
    as a real capture (recording backend) of a 4-layer grouped-query model."""
    from engine import Config, Transformer
    from engine.gpu.fused_step import FusedDecoder
    from engine.gpu.kernels_ref import ReferenceKernels
    from engine.gpu.recording import RecordingBackend, RecordingKernels

    config = Config(vocab_size=64, d_model=32, n_layers=4, n_heads=8, n_kv_heads=2, ffn_dim=48, max_seq_len=16)
    rec = RecordingBackend()
    model = Transformer(config, dict(Transformer.random(config).weights), xp=rec.xp)
    decoder = FusedDecoder(model, model.new_cache(), RecordingKernels(ReferenceKernels(4), rec))
    decoder.capture(greedy=True)
    names = {"embed": "embed", "norm_matmul_rope_store": "gemv_rope", "attention": "attention",
             "matmul_add": "gemv_residual", "norm_matmul_swiglu": "gemv_swiglu", "norm_matmul_argmax": "gemv_argmax"}
    captured = [names[n] for n, _, _ in decoder._graph.nodes]
    assert [x.kernel.removesuffix("_f16") for x in sc.step_launches(8192)] == captured
    assert len(captured) == 22


def test_step_bytes_are_gpu_checks():
    from tools.bench.gpu_check import step_bytes

    class Shape:  # the bytes gpu_check computes from a model, for the Llama shape's numbers
        class config:
            vocab_size, d_model, dtype_bytes = 128256, 4096, 2
            kv_values_per_token = 2 * 4 * 8 * 128
        weight_bytes = (4 * (4096 * 6144 + 4096 * 4096 + 4096 * 28672 + 14336 * 4096 + 2 * 4096) + 4096
                        + 2 * 4096 * 128256) * 2

    assert step_bytes(Shape, 8192) == sc.step_bytes(8192)


# --------------------------------------------------------------------------- compiled (cuda-check extra)


@pytest.fixture(scope="module")
def tools():
    try:
        nc._nvrtc()
        nc.cuda_include_dir()
        sass.tool_dir()
    except (nc.NvrtcMissing, sass.SassToolMissing) as e:
        pytest.skip(f"the cuda-check extra is not installed: {e}")


@pytest.fixture(scope="module")
def facts(tools):
    return sc.check_all()


def test_every_engine_kernel_keeps_its_loads_in_flight(facts):
    bad = {k: (f.in_flight, f.required, f.spills) for k, f in facts.items() if not f.ok}
    assert not bad, bad
    assert all(facts[k].streaming_in_flight >= 8 for k in facts if k.startswith("gemv"))  # W loads
    assert all(facts[k].streaming_in_flight >= 4 for k in facts if k.startswith("attention"))  # K / V loads


def test_the_model_predicts_80_percent_of_the_datasheet_at_8192(facts):
    p = sc.predict(facts, 8192)
    assert p["nodes"] == 22 and p["pct_peak"] >= 80.0, p


def test_the_interleaved_gemv_of_before_fails_the_check(tools):
    text = (SAMPLES / "gemv_interleaved.cu").read_text()  # includes the engine's common.cuh
    cubin, _ = nc.compile_text(text, "gemv_interleaved.cu", kc.KERNEL_DIR)
    worst = min(r.in_flight for r in sass.parse(sass.disassemble(cubin))["gemv_f16"].rounds())
    assert worst < sc.required("gemv_f16")


def test_attention_without_its_warp_barrier_fails_the_check(tools):
    """Without the __syncwarp() after a group of K loads, ptxas sinks each load to its use."""
    text = kc.source("attention")
    assert text.count("__syncwarp();") == 2
    bad = {f.kernel: f for f in sc.analyse("attention", text.replace("__syncwarp();", ""))}
    assert not bad["attention_f16"].ok and bad["attention_f16"].in_flight < 4


def test_the_command_prints_the_table_and_the_model(tools, capsys, tmp_path):
    assert sc.main(["--json", str(tmp_path / "sass.json")]) == 0
    out = capsys.readouterr().out
    assert "gemv_rope_f16" in out and "context   8192" in out and "% of peak" in out
    import json

    doc = json.loads((tmp_path / "sass.json").read_text())
    assert {k["kernel"] for k in doc["kernels"]} >= {"gemv_f16", "attention_f16", "argmax_f16"}
