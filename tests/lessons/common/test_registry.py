"""Every lesson through the one entry point the site calls (never a traceback), and the registry
built from the demos' own NAME and PLATE declarations, held to their files, folders and pages."""
import importlib
import json
import re
from pathlib import Path

import pytest

from lessons.common import registry
from lessons.common.base import LANGS

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


# --------------------------------------------------------------------------- built from the demos' declarations

ROOT = Path(__file__).resolve().parents[3]
DEMO_BLOCK = re.compile(r"^```kv-demo\n(.*?)^```", re.M | re.S)


def _folder_of(plate: str) -> str:
    """The lessons folder of a page: plates/07-shrinking-the-cache -> plate07_shrinking_the_cache."""
    return "plate" + plate.removeprefix("plates/").replace("-", "_") if plate.startswith("plates/") else plate


def _shown(page: Path) -> set[str]:
    """The lessons a page's kv-demo blocks name."""
    return {m.group(1) for block in DEMO_BLOCK.findall(page.read_text(encoding="utf-8"))
            for m in re.finditer(r"^lesson:\s*(\S+)", block, re.M)}


@pytest.mark.parametrize("name", sorted(registry.LESSONS))
def test_a_lesson_lives_in_its_pages_folder_under_its_own_name(name):
    mod = registry.load(name)
    path = Path(mod.__file__)
    assert path.stem == name == mod.NAME
    assert path.parent.name == _folder_of(mod.PLATE), (name, mod.PLATE)
    for suffix in (".md", ".zh-TW.md"):  # the page it names shows it, in both languages
        assert name in _shown(ROOT / "docs" / f"{mod.PLATE}{suffix}"), (name, mod.PLATE, suffix)


def test_the_pages_show_exactly_the_registered_lessons():
    shown = set().union(*(_shown(p) for p in (ROOT / "docs").rglob("*.md")))
    assert shown == set(registry.LESSONS)


def test_lessons_has_few_files_at_its_top_and_no_folder_without_a_role():
    top = ROOT / "lessons"
    assert len([p for p in top.iterdir() if p.is_file()]) <= 6
    folders = {p.name for p in top.iterdir() if (p / "__init__.py").is_file()}
    demo_folders = {Path(importlib.import_module(m).__file__).parent.name for m in registry.LESSONS.values()}
    assert folders == demo_folders | {"common", "facts"}


def _package(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def test_declared_lessons_are_found_and_helpers_and_data_are_not(tmp_path, monkeypatch):
    _package(tmp_path / "fake_lessons", {
        "__init__.py": "",
        "plate01_intro/__init__.py": "",
        "plate01_intro/hello.py": 'NAME = "hello"\nPLATE = "plates/01-intro"\nTITLE = {}\n',
        "plate01_intro/helper.py": '"""Used by hello; declares nothing."""\nNAME_OF_THINGS = "x"\n',
        "common/__init__.py": "",
        "common/shared.py": 'def f():\n    NAME = "indented, not a declaration"\n',
        "data/notes.py": 'NAME = "not in a package"\nPLATE = "x"\n',
    })
    monkeypatch.syspath_prepend(str(tmp_path))
    assert registry.declared_lessons("fake_lessons") == {"hello": "fake_lessons.plate01_intro.hello"}


@pytest.mark.parametrize("files, error", [
    ({"a/x.py": 'NAME = "twice"\nPLATE = "p"\n', "b/y.py": 'NAME = "twice"\nPLATE = "q"\n'},
     "two lessons are named 'twice'"),
    ({"a/x.py": 'NAME = "lonely"\n'}, "declares NAME = 'lonely' but no PLATE"),
])
def test_a_clash_or_a_missing_plate_stops_the_registry(tmp_path, monkeypatch, files, error):
    package = f"fake_bad_{abs(hash(error))}"
    _package(tmp_path / package, {"__init__.py": "", "a/__init__.py": "", "b/__init__.py": "", **files})
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RuntimeError, match=re.escape(error)):
        registry.declared_lessons(package)


def test_load_refuses_a_module_that_declares_another_name(monkeypatch):
    monkeypatch.setitem(registry.LESSONS, "next_token", registry.LESSONS["tokens"])
    with pytest.raises(RuntimeError, match="declares NAME = 'tokens'"):
        registry.load("next_token")
