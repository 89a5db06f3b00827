"""Number formats and figure helpers shared by every lesson."""
import pytest

from lessons.figures import figure, floats, fmt_bytes, fmt_int, fmt_si, show_piece, unique_labels


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
