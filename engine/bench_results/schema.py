"""The results-file schema (schema.json beside this module) and validation against it.

A GPU box often lacks ``jsonschema``, and a results file that is not checked there is only
found broken after the GPU time is gone. So ``validate`` uses jsonschema when it is
installed and otherwise a small built-in interpreter of the part of JSON Schema that
schema.json uses (type, required, properties, additionalProperties, items, minItems,
maxItems, enum, const, oneOf, $ref, minimum, exclusiveMinimum, minLength). Both read the
same schema.json, so they cannot drift apart; a test checks that they agree.
"""
from __future__ import annotations

import json
from importlib import resources

SCHEMA_ID = "kv-classroom/bench-results"
SCHEMA_VERSION = 1


class ResultsInvalid(ValueError):
    """The document breaks schema.json; the message names the place and the rule."""


def load_schema() -> dict:
    return json.loads(resources.files("engine.bench_results").joinpath("schema.json").read_text(encoding="utf-8"))


def validate(doc: dict, *, use_jsonschema: bool | None = None) -> str:
    """Raise ResultsInvalid if ``doc`` breaks schema.json; return which validator ran.

    ``use_jsonschema`` None: jsonschema when importable, else the built-in check.
    """
    schema = load_schema()
    if use_jsonschema is None:
        try:
            import jsonschema  # noqa: F401
            use_jsonschema = True
        except ImportError:
            use_jsonschema = False
    if use_jsonschema:
        import jsonschema

        try:
            jsonschema.validate(doc, schema, format_checker=jsonschema.FormatChecker())
        except jsonschema.ValidationError as e:
            where = "/".join(str(p) for p in e.absolute_path) or "(top)"
            raise ResultsInvalid(f"{where}: {e.message}") from None
        return "jsonschema"
    problem = check(doc, schema, schema, "")
    if problem:
        raise ResultsInvalid(problem)
    return "built-in"


# --------------------------------------------------------------------------- built-in check

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
}


def _resolve(ref: str, root: dict) -> dict:
    if not ref.startswith("#/"):
        raise ValueError(f"only local $ref are supported, got {ref!r}")
    node = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def check(value, schema: dict, root: dict, where: str) -> str | None:
    """The first rule ``value`` breaks, as 'path: reason', or None when it follows ``schema``."""
    at = where or "(top)"
    if "$ref" in schema:
        return check(value, _resolve(schema["$ref"], root), root, where)
    if "oneOf" in schema:
        passing = sum(check(value, s, root, where) is None for s in schema["oneOf"])
        if passing != 1:
            return f"{at}: matches {passing} of the {len(schema['oneOf'])} allowed forms, not exactly one"
    types = schema.get("type")
    if types is not None:
        types = [types] if isinstance(types, str) else types
        if not any(_TYPES[t](value) for t in types):
            return f"{at}: {value!r:.60} is not of type {' or '.join(types)}"
    if "const" in schema and value != schema["const"]:
        return f"{at}: {value!r:.60} is not {schema['const']!r}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{at}: {value!r:.60} is not one of {schema['enum']}"
    return _check_number(value, schema, at) or _check_string(value, schema, at) or \
        _check_array(value, schema, root, where) or _check_object(value, schema, root, where)


def _check_number(value, schema: dict, at: str) -> str | None:
    if not _TYPES["number"](value):
        return None
    if "minimum" in schema and value < schema["minimum"]:
        return f"{at}: {value} is less than the minimum {schema['minimum']}"
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        return f"{at}: {value} is not greater than {schema['exclusiveMinimum']}"
    return None


def _check_string(value, schema: dict, at: str) -> str | None:
    if isinstance(value, str) and len(value) < schema.get("minLength", 0):
        return f"{at}: {value!r} is shorter than {schema['minLength']} characters"
    return None


def _check_array(value, schema: dict, root: dict, where: str) -> str | None:
    if not isinstance(value, list):
        return None
    at = where or "(top)"
    if len(value) < schema.get("minItems", 0):
        return f"{at}: has {len(value)} items, fewer than {schema['minItems']}"
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        return f"{at}: has {len(value)} items, more than {schema['maxItems']}"
    if "items" in schema:
        for i, item in enumerate(value):
            problem = check(item, schema["items"], root, f"{where}/{i}")
            if problem:
                return problem
    return None


def _check_object(value, schema: dict, root: dict, where: str) -> str | None:
    if not isinstance(value, dict):
        return None
    at = where or "(top)"
    missing = [k for k in schema.get("required", ()) if k not in value]
    if missing:
        return f"{at}: missing required field(s) {', '.join(missing)}"
    props = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        if key in props:
            sub = props[key]
        elif extra is False:
            return f"{at}: unexpected field {key!r}"
        elif isinstance(extra, dict):
            sub = extra
        else:
            continue
        problem = check(item, sub, root, f"{where}/{key}")
        if problem:
            return problem
    return None
