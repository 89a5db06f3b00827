"""data_movement: bytes vs FLOPs per decode step, the cited energy table, and its two ratios."""
import re

import pytest

from engine.analysis.model_shapes import MODEL_SHAPES
from lessons.common import registry

from lesson_checks import check_both_languages, check_describe, column, number, numbers, records


def test_defaults_both_languages(course):
    check_describe("data_movement")
    check_both_languages("data_movement")


def test_cache_bytes_follow_the_formula_and_grow(course):
    s = MODEL_SHAPES["Llama 3 8B"]
    out = registry.run("data_movement", {"model": "Llama 3 8B", "context": 4096, "batch": 2}, "en")
    tbl = out["figures"][0]["table"]
    per_pos = 2 * s.n_layers * s.n_kv_heads * s.head_dim * 2  # fp16
    weights = numbers(tbl, "weights (bytes)")
    for ctx, kv in zip(numbers(tbl, "context (tokens)"), numbers(tbl, "KV cache (bytes)")):
        # read the ctx+1 cached positions, write 1, for each of the 2 sequences
        assert kv == 2 * per_pos * (ctx + 2)
    assert len(set(weights)) == 1  # the weights do not depend on the context
    flops = numbers(tbl, "FLOPs")
    assert flops[-1] > flops[0]  # attention FLOPs grow with the context
    # intensity stays far below any listed ridge
    intensity = out["figures"][1]["table"]
    decode = [r for r in records(intensity) if r["context (tokens)"] != ""]
    assert max(number(r["arithmetic intensity (FLOP/byte)"]) for r in decode) < 10
    assert {r["line"] for r in decode} == {"decode: Llama 3 8B, fp16", "decode: Course model (this site), fp32"}


@pytest.mark.parametrize("context", [8192, 32768])
def test_mistral_cache_traffic_stops_at_the_window(context):
    """Issue 9: Mistral 7B's cache grew without limit; a step reads at most W = 4,096 positions
    (plus the new one) and writes one, and the weights read stay the same at every context."""
    s = MODEL_SHAPES["Mistral 7B"]
    out = registry.run("data_movement", {"model": "Mistral 7B", "context": context, "batch": 1}, "en")
    tbl = out["figures"][0]["table"]
    per_pos = 2 * s.n_layers * s.n_kv_heads * s.head_dim * 2  # fp16
    for ctx, kv in zip(numbers(tbl, "context (tokens)"), numbers(tbl, "KV cache (bytes)")):
        assert kv == per_pos * (min(ctx + 1, s.sliding_window) + 1)
    assert len(set(numbers(tbl, "weights (bytes)"))) == 1
    assert any("sliding-window attention" in n for n in out["notes"])


@pytest.mark.parametrize("bits", ["8", "4", "3.5", "2.5"])
def test_cache_bits_scale_the_cache_part_only(bits, course):
    values = {"model": "Llama 3 8B", "context": 32768, "batch": 8}
    full = registry.run("data_movement", values, "en")
    fewer = registry.run("data_movement", {**values, "cache_bits": bits}, "en")
    t16, tb = full["figures"][0]["table"], fewer["figures"][0]["table"]
    assert numbers(tb, "KV cache (bytes)") == [kv * float(bits) / 16 for kv in numbers(t16, "KV cache (bytes)")]
    assert numbers(tb, "weights (bytes)") == numbers(t16, "weights (bytes)")
    assert numbers(tb, "FLOPs") == numbers(t16, "FLOPs")
    assert f"{bits}-bit KV cache" in fewer["figures"][0]["title"] and f"{bits}-bit KV cache" in fewer["figures"][1]["title"]
    # a 16-bit reference line appears only when the cache has fewer bits
    names = [[tr["name"] for tr in o["figures"][0]["figure"]["data"]] for o in (full, fewer)]
    assert "total with a 16-bit cache" in names[1] and "total with a 16-bit cache" not in names[0]
    # the intensity of the chosen model rises as its cache shrinks
    lines = [[number(r["arithmetic intensity (FLOP/byte)"]) for r in records(o["figures"][1]["table"])
              if r["line"] == "decode: Llama 3 8B, fp16"] for o in (full, fewer)]
    assert all(b >= a for a, b in zip(*lines)) and lines[1][-1] > lines[0][-1]  # 3 digits: equal at short contexts


def test_energy_table_is_horowitz_as_tabulated_by_han(course):
    tbl = registry.run("data_movement", {}, "en")["figures"][2]["table"]
    energy = dict(zip(column(tbl, "operation"), numbers(tbl, "energy (pJ)")))
    # Han et al., NIPS 2015, Fig. 1 (45 nm, from Horowitz, ISSCC 2014)
    assert energy == {"32-bit float add": 0.9, "32-bit float multiply": 3.7, "32-bit read, on-chip SRAM": 5.0,
                      "32-bit read, DRAM": 640.0}
    assert all("ISSCC 2014" in c and "NIPS 2015" in c for c in column(tbl, "source"))


def _ratio(note: str, before: str) -> float:
    """The number followed by "×" right after ``before`` in a note."""
    return float(re.search(re.escape(before) + r"([\d.,]+)×", note).group(1).replace(",", ""))


@pytest.mark.parametrize("values", [{}, {"batch": 16}, {"model": "course"}, {"model": "Llama 3 70B", "context": 256}])
def test_per_operation_and_per_step_ratios_are_told_apart_and_agree(course, values):
    """Per operation: 640 / (0.9 + 3.7) for a multiply-add, whatever the step. Per step: that
    ratio divided by the multiply-adds each 32-bit word read feeds, computed here from the
    figure's own FLOPs and bytes."""
    out = registry.run("data_movement", values, "en")
    per_op, per_step = out["notes"][-2], out["notes"][-1]
    assert "estimates, not measurements" in per_op and "Han et al. derived" in per_op
    assert _ratio(per_op, "") == pytest.approx(640 / 0.9, rel=2e-3)  # the first "N×": vs an add
    tbl = out["figures"][0]["table"]
    flops = numbers(tbl, "FLOPs")[-1]
    moved = numbers(tbl, "weights (bytes)")[-1] + numbers(tbl, "KV cache (bytes)")[-1]
    expected = (moved / 4 * 640) / (flops / 2 * (0.9 + 3.7))
    assert _ratio(per_step, "moving data costs ") == pytest.approx(expected, rel=5e-3)
    assert _ratio(per_step, "less than the ") == pytest.approx(640 / 4.6, rel=5e-3)


def test_batch_raises_intensity(course):
    lo = registry.run("data_movement", {"batch": 1}, "en")["figures"][0]["table"]
    hi = registry.run("data_movement", {"batch": 64}, "en")["figures"][0]["table"]
    assert numbers(hi, "FLOP/byte")[-1] > numbers(lo, "FLOP/byte")[-1]


def test_gflop_axis_starts_at_zero_with_a_fixed_point_format(course):
    """The right-hand axis once showed "2.74e-15" under its 0 (floating-point dust)."""
    for model in ("course", "Llama 3 8B"):
        lay = registry.run("data_movement", {"model": model}, "en")["figures"][0]["figure"]["layout"]
        y2 = lay["yaxis2"]
        assert y2["range"][0] == 0 and y2["autorange"] is False
        assert y2["tickformat"].endswith("f")  # fixed point: dust prints as 0, never in e-notation
