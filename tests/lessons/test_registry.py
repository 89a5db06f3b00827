"""Every lesson through the one entry point the site calls: never a traceback."""
import json

import pytest

from lessons import registry
from lessons.base import LANGS

from lesson_checks import HOSTILE_TEXTS, check_output

LESSONS = [n for n in registry.LESSONS if not n.startswith("bench")]
MODEL_FREE = {"cache_size", "roofline", "tokens"}


def _needs(name, request):
    if name not in MODEL_FREE:
        request.getfixturevalue("course")


@pytest.mark.parametrize("name", LESSONS)
def test_run_json_defaults_and_hostile_values(name, request):
    _needs(name, request)
    mod = registry.load(name)
    for lang in LANGS:
        reply = json.loads(registry.run_json(name, "{}", lang))
        assert reply["ok"], reply
        check_output(reply["result"])
    for c in mod.CONTROLS:
        bad = [None, [], {"a": 1}, -1e308, "NaN"] + (HOSTILE_TEXTS if c.kind == "text" else ["<b>x</b>"])
        for v in bad:
            for lang in LANGS:
                reply = json.loads(registry.run_json(name, json.dumps({c.name: v}), lang))
                if reply["ok"]:
                    check_output(reply["result"])
                else:  # a reader's mistake: a message in the reader's language, no internals
                    assert reply["error"]["message"] and "detail" not in reply["error"], (c.name, v, reply)


@pytest.mark.parametrize("name", LESSONS)
def test_malformed_json_and_unknown_controls(name, request):
    _needs(name, request)
    for payload in ("{not json", "[1, 2]", json.dumps({"zzz": 1})):
        reply = json.loads(registry.run_json(name, payload, "zh-TW"))
        assert reply["ok"] is False and "detail" not in reply["error"]
