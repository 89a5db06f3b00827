"""The results-file schema (schema.json beside this module) and validation against it.

The harness must run where jsonschema is not installed (a bare GPU box), so validation
is used when the package is present and skipped, with a note, when it is not. The tests
always validate.
"""
from __future__ import annotations

import json
from importlib import resources

SCHEMA_ID = "kv-classroom/bench-results"
SCHEMA_VERSION = 1


def load_schema() -> dict:
    return json.loads(resources.files("engine.bench").joinpath("schema.json").read_text(encoding="utf-8"))


def validate(doc: dict) -> None:
    """Raise jsonschema.ValidationError if ``doc`` breaks the schema (needs jsonschema)."""
    import jsonschema

    jsonschema.validate(doc, load_schema(), format_checker=jsonschema.FormatChecker())


def validate_if_available(doc: dict) -> bool | None:
    """Validate when jsonschema is importable: True when valid, None when it is absent.

    Invalid documents raise jsonschema.ValidationError either way.
    """
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        return None
    validate(doc)
    return True
