"""The models a cost lesson can be asked about: the course model or a published shape.

Cost lessons (roofline, data movement) need only an engine Config: the course model's own,
or one built from a real model's published shape (engine.analysis.model_shapes). Both come from here so the
select boxes list the same models in the same order everywhere.
"""
from __future__ import annotations

from engine import load_course_model
from engine.analysis.model_shapes import MODEL_SHAPES, config_from_shape
from engine.config import Config

COURSE = "course"
# Shapes the engine's Llama-style cost formulas would get wrong (GPT-2: two-matrix GELU MLP,
# learned positions): left out of the cost lessons; cache_size still shows their exact cache.
NOT_LLAMA = {"GPT-2 small"}
COURSE_LABEL = {"en": "Course model (this site)", "zh-TW": "課程模型（本網站）"}


def options(include_course: bool = True) -> list[tuple[str, dict]]:
    """(value, label) pairs for a select control."""
    real = [(name, {"en": s.display_name, "zh-TW": s.display_name}) for name, s in MODEL_SHAPES.items()
            if name not in NOT_LLAMA]
    return ([(COURSE, COURSE_LABEL)] if include_course else []) + real


def config_for(key: str, dtype: str = "float16") -> Config:
    """The engine Config of ``key`` (the course model keeps its own dtype)."""
    if key == COURSE:
        return load_course_model()[0].config
    return config_from_shape(key, dtype=dtype)


def trained_context(key: str) -> int | None:
    """The context a real model was trained on, where it is shorter than its config allows."""
    return None if key == COURSE else MODEL_SHAPES[key].trained_context


def label(key: str, lang: str) -> str:
    """The model's name as readers see it ("Mistral 7B v0.1": the release the shape is)."""
    return COURSE_LABEL[lang] if key == COURSE else MODEL_SHAPES[key].display_name
