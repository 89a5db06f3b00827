"""lessons/common/base.py: a reader's out-of-range value gets the range in the reader's language,
written with the same thousands separator as the demos' own numbers."""
import pytest

from lessons.common.base import LessonInputError, slider, validate

CONTEXT = slider("context", {"en": "Context", "zh-TW": "上下文長度"}, 8192, 1024, 131072, 1024)


@pytest.mark.parametrize("lang, want", [
    ("en", "“Context” must be between 1,024 and 131,072."),
    ("zh-TW", "「上下文長度」必須介於 1,024 與 131,072 之間。"),
])
def test_out_of_range_names_the_range_with_separators(lang, want):
    with pytest.raises(LessonInputError) as e:
        validate((CONTEXT,), {"context": 200000})
    assert e.value.message(lang) == want


def test_a_value_in_range_passes_as_an_int():
    assert validate((CONTEXT,), {"context": 2048.0}) == {"context": 2048}
