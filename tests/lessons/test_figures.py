"""Number formats and figure helpers shared by every lesson."""
import pytest

from lessons.figures import figure, layout, zero_based_axis, floats, fmt_bytes, fmt_int, fmt_si, show_piece, unique_labels


@pytest.mark.parametrize("n, text", [
    (0, "0 B"), (1023, "1,023 B"), (1024, "1 KiB"), (4096, "4 KiB"), (1536, "1.5 KiB"),
    (2.3 * 1024**2, "2.3 MiB"), (1024**3, "1 GiB"), (1024**4 * 1.26, "1.3 TiB"),
    (1024**2 - 1, "1 MiB"),  # rounds up into the next unit instead of "1,024 KiB"
])
def test_fmt_bytes_binary_units(n, text):
    assert fmt_bytes(n) == text


def test_fmt_int_and_si():
    assert fmt_int(1234567) == "1,234,567"
    assert fmt_si(3.35e12, "B/s") == "3.35 TB/s"
    assert fmt_si(989e12, "FLOP/s") == "989 TFLOP/s"


def test_floats_rejects_nan_and_numpy_types():
    import numpy as np

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
    lay = layout("Shown in the figcaption", "x", "y", xaxis={"type": "log"})
    assert "title" not in lay
    assert lay["xaxis"]["title"]["text"] == "x" and lay["xaxis"]["type"] == "log"
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
