"""Fixtures of the lesson tests (the checks themselves are in lesson_checks.py)."""
from __future__ import annotations

import pytest

from lesson_checks import HOSTILE_TEXTS


@pytest.fixture
def hostile_texts():
    return HOSTILE_TEXTS


def _course_model_available() -> str | None:
    """None when the course model loads, else the reason it does not."""
    try:
        from engine import load_course_model

        load_course_model()
        return None
    except (FileNotFoundError, OSError) as e:
        return f"the trained course model is not in engine/data yet ({e.__class__.__name__}); run python -m engine.training.train"


@pytest.fixture(scope="session")
def course():
    """(model, tokenizer) of the shipped course model; a missing model fails the test (it ships
    in engine/data: its absence is a broken checkout, not a reason to skip)."""
    reason = _course_model_available()
    if reason:
        pytest.fail(reason)
    from engine import load_course_model

    return load_course_model()
