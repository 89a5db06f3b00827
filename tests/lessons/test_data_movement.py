"""data_movement: bytes vs FLOPs per decode step, and the cited energy table."""
from engine.shapes import MODEL_SHAPES
from lessons import registry

from lesson_checks import check_both_languages, check_describe


def test_defaults_both_languages(course):
    check_describe("data_movement")
    check_both_languages("data_movement")


def test_cache_bytes_follow_the_formula_and_grow(course):
    s = MODEL_SHAPES["Llama 3 8B"]
    out = registry.run("data_movement", {"model": "Llama 3 8B", "context": 4096, "batch": 2}, "en")
    rows = out["figures"][0]["table"]["rows"]
    per_pos = 2 * s.n_layers * s.n_kv_heads * s.head_dim * 2  # fp16
    for ctx, weights, kv, flops, _ in rows:
        # read the ctx+1 cached positions, write 1, for each of the 2 sequences
        assert kv == 2 * per_pos * (ctx + 2)
        assert weights == rows[0][1]  # the weights do not depend on the context
    assert rows[-1][3] > rows[0][3]  # attention FLOPs grow with the context
    # intensity stays far below any listed ridge
    intensity = out["figures"][1]["table"]["rows"]
    assert max(r[2] for r in intensity if r[1] != "") < 10
    assert {r[0] for r in intensity if r[1] != ""} == {"decode: Llama 3 8B", "decode: Course model (this site)"}


def test_energy_table_is_horowitz(course):
    out = registry.run("data_movement", {}, "en")
    energy = {r[0]: r[1] for r in out["figures"][2]["table"]["rows"]}
    assert energy["32-bit read, DRAM"] == 640.0
    assert energy["32-bit float add"] == 0.9
    assert energy["32-bit read, 8 KB SRAM"] == 5.0
    assert all("ISSCC 2014" in r[3] for r in out["figures"][2]["table"]["rows"])
    assert any("Horowitz" in n for n in out["notes"])


def test_batch_raises_intensity(course):
    lo = registry.run("data_movement", {"batch": 1}, "en")["figures"][0]["table"]["rows"][-1][4]
    hi = registry.run("data_movement", {"batch": 64}, "en")["figures"][0]["table"]["rows"][-1][4]
    assert hi > lo


def test_gflop_axis_starts_at_zero_with_a_fixed_point_format(course):
    """The right-hand axis once showed "2.74e-15" under its 0 (floating-point dust)."""
    for model in ("course", "Llama 3 8B"):
        lay = registry.run("data_movement", {"model": model}, "en")["figures"][0]["figure"]["layout"]
        y2 = lay["yaxis2"]
        assert y2["range"][0] == 0 and y2["autorange"] is False
        assert y2["tickformat"].endswith("f")  # fixed point: dust prints as 0, never in e-notation
