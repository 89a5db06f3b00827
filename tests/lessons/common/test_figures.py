"""Number formats and figure helpers shared by every lesson."""
import numpy as np
import pytest

from lessons.common.figures import (cell, figure, floats, fmt_bytes, fmt_int, fmt_num, fmt_percent, fmt_seconds, fmt_si, layout,
                             show_piece, table, unique_labels, zero_based_axis)


@pytest.mark.parametrize("n, text", [
    (0, "0 B"), (1023, "1,023 B"), (1024, "1 KiB"), (4096, "4 KiB"), (1536, "1.5 KiB"),
    (2.3 * 1024**2, "2.3 MiB"), (1024**3, "1 GiB"), (1024**4 * 1.26, "1.3 TiB"),
    (1024**2 - 1, "1 MiB"),  # rounds up into the next unit instead of "1,024 KiB"
])
def test_fmt_bytes_binary_units(n, text):
    assert fmt_bytes(n) == text


@pytest.mark.parametrize("value, text", [
    # counts: every digit, thousands separators
    (1234567, "1,234,567"), (np.int64(4096), "4,096"), (0, "0"), (-12, "-12"),
    # measured or derived values: 3 significant digits, separators, no trailing zeros
    (1234567.5, "1,230,000"),  # the cell that read "1.23457e+06" before a live run and "1234570" after
    (0.78412, "0.784"), (640.0, "640"), (0.9, "0.9"), (5.0, "5"), (999.7, "1,000"), (1 / 3, "0.333"),
    (np.float32(0.5), "0.5"), (0.000123, "0.000123"), (2.5e-07, "2.5e-7"), (-0.04567, "-0.0457"),
    # text as it is, None as an empty cell
    ("7.1 GiB", "7.1 GiB"), ("—", "—"), (None, ""),
])
def test_one_rule_for_every_table_cell(value, text):
    assert cell(value) == text


@pytest.mark.parametrize("value, error", [(True, TypeError), (np.bool_(False), TypeError), ([1], TypeError),
                                          (float("nan"), ValueError), (float("inf"), ValueError)])
def test_cells_without_an_honest_display_raise(value, error):
    with pytest.raises(error):
        cell(value)


@pytest.mark.parametrize("fn, args, text", [
    (fmt_int, (1234567,), "1,234,567"),
    (fmt_si, (3.35e12, "B/s"), "3.35 TB/s"),
    (fmt_si, (989e12, "FLOP/s"), "989 TFLOP/s"),
    (fmt_si, (999.96e9, "B"), "1 TB"),  # rounding moves it into the next prefix, not "1e+03 GB"
    (fmt_si, (8.62e-4, "J"), "862 µJ"),
    (fmt_si, (1.5, "J"), "1.5 J"),
    (fmt_seconds, (0.00042,), "420 µs"),
    (fmt_seconds, (0.99996,), "1 s"),
    (fmt_seconds, (0.0123,), "12.3 ms"),
    (fmt_percent, (0.78412,), "78.4%"),
    (fmt_percent, (1.0,), "100%"),
    (fmt_num, (0.0,), "0"),
])
def test_unit_formats(fn, args, text):
    assert fn(*args) == text


def test_figure_and_table_cells_leave_as_display_strings():
    fig = figure("k", "t", [], {}, ["n", "share", "note"], [[1234, 0.5, "a"], [2, None, "b"]])
    assert fig["table"]["rows"] == [["1,234", "0.5", "a"], ["2", "", "b"]]
    assert table("t", ["x"], [[1.23456]])["rows"] == [["1.23"]]


def test_floats_rejects_nan_and_numpy_types():
    out = floats(np.array([0.5, 1 / 3], dtype=np.float32))
    assert all(type(v) is float for v in out)
    with pytest.raises(ValueError):
        floats([float("nan")])


def test_figure_table_must_match_columns():
    with pytest.raises(AssertionError):
        figure("k", "t", [], {}, ["a", "b"], [[1]])


def test_pieces_made_visible_and_unique():
    assert show_piece(" cat") == "␣cat"
    assert show_piece("\n") == "↵"
    assert unique_labels(["a", "b", "a"], [1, 2, 3]) == ["a #1", "b", "a #3"]


def test_layout_leaves_the_title_to_the_figcaption_and_the_legend_above():
    lay = layout("x", "y", xaxis={"type": "log"})
    assert "title" not in lay
    assert lay["xaxis"]["title"]["text"] == "x" and lay["yaxis"]["title"]["text"] == "y"
    assert lay["xaxis"]["type"] == "log"
    assert lay["legend"]["y"] >= 1 and lay["legend"]["yanchor"] == "bottom"
    assert lay["margin"]["t"] < 50  # the margin a Plotly title needed is given back


@pytest.mark.parametrize("top", [18.5, 0.0016, 950.0, 3e6])
def test_zero_based_axis_starts_at_zero_and_prints_dust_as_zero(top):
    axis = zero_based_axis(top)
    assert axis["range"][0] == 0 and axis["range"][1] >= top and axis["autorange"] is False
    decimals = int(axis["tickformat"].split(".")[1].rstrip("~f"))
    # the d3 format ",.N~f" behaves like Python's ",.Nf" (then trims zeros)
    assert float(f"{2.74e-15:,.{decimals}f}") == 0
    assert float(f"{top:.{decimals}f}") > 0  # the largest value still shows
