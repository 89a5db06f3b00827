"""The facts hook (overrides/hooks/facts.py): [[fact:KEY]] becomes an engine-computed number, or the build stops."""
from __future__ import annotations

import re
import subprocess
import sys
import textwrap

import pytest

from facts_placeholders import FactError, fact_keys, load_facts, substitute

from site_pages import DOCS, ROOT


def test_substitute_replaces_every_placeholder():
    md = "Layers: [[fact:course.n_layers]]; again [[fact:course.n_layers]], vocab [[fact:v.x-1]]."
    out = substitute(md, {"course.n_layers": "4", "v.x-1": "1,024"}, "p.md")
    assert out == "Layers: 4; again 4, vocab 1,024."


def test_unknown_key_names_page_and_key():
    with pytest.raises(FactError) as err:
        substitute("x [[fact:course.nope]]", {"course.n_layers": "4"}, "plates/05-kv-cache.md")
    assert "plates/05-kv-cache.md" in str(err.value)
    assert "course.nope" in str(err.value)


@pytest.mark.parametrize("bad", ["[[fact: course.n_layers]]", "[[fact:course.n_layers]",
                                 "[[ fact:course.n_layers]]", "[[fact:]]"])
def test_malformed_placeholder_is_an_error_with_line(bad):
    with pytest.raises(FactError, match=r"p\.md:3: malformed"):
        substitute(f"a\nb\n{bad}\n", {"course.n_layers": "4"}, "p.md")


def test_facts_are_not_loaded_for_pages_without_placeholders():
    def explode():
        raise AssertionError("facts loaded for a page that needs none")
    assert substitute("# Plain page\n\n[[not a fact]]", explode, "p.md") == "# Plain page\n\n[[not a fact]]"


def test_fact_keys_in_order_of_first_use():
    assert fact_keys("[[fact:b]] [[fact:a]] [[fact:b]]") == ["b", "a"]


def test_missing_facts_module_fails_clearly(monkeypatch):
    monkeypatch.setitem(sys.modules, "lessons.facts.table", None)  # makes the import fail
    with pytest.raises(FactError, match=r"index\.md uses \[\[fact:course\.d_model\]\].*lessons\.facts"):
        load_facts("en", "index.md", ["course.d_model"])


def test_failing_facts_function_fails_clearly(monkeypatch):
    import types

    broken = types.ModuleType("lessons.facts.table")

    def facts(lang):
        raise FileNotFoundError("engine/data/course_model.npz")
    broken.facts = facts
    monkeypatch.setitem(sys.modules, "lessons.facts.table", broken)
    with pytest.raises(FactError, match=r"p\.md uses \[\[fact:course\.d_model\]\] but .*FileNotFoundError: engine/data"):
        load_facts("zh-TW", "p.md", ["course.d_model"])


def _keys_used_in_docs() -> dict[str, set[str]]:
    used: dict[str, set[str]] = {"en": set(), "zh-TW": set()}
    for path in DOCS.rglob("*.md"):
        lang = "zh-TW" if path.name.endswith(".zh-TW.md") else "en"
        used[lang] |= set(fact_keys(path.read_text(encoding="utf-8")))
    return used


@pytest.mark.parametrize("lang", ["en", "zh-TW"])
def test_every_key_the_pages_use_exists(lang):
    try:
        from lessons.facts.table import facts
    except ImportError as exc:
        pytest.fail(f"lessons/facts/table.py is not importable ({exc}); the site build fails on it")
    try:
        table = facts(lang)
    except FileNotFoundError as exc:  # the course model ships in engine/data: a broken checkout
        pytest.fail(f"the trained course model is not in engine/data ({exc})")
    missing = sorted(_keys_used_in_docs()[lang] - set(table))
    assert not missing, f"pages use fact keys that lessons.facts.table.facts({lang!r}) lacks: {missing}"
    assert all(isinstance(v, str) and v.strip() for v in table.values())


def test_built_pages_hold_no_placeholder(built_site):
    leftovers = [str(p.relative_to(built_site)) for p in built_site.rglob("*.html")
                 if "[[fact:" in p.read_text(encoding="utf-8")]
    assert not leftovers


def test_unknown_key_stops_a_real_build(tmp_path):
    """A tiny site wired to the real hook: the build fails and says which page and key."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text("# Home\n\nNo facts here.\n", encoding="utf-8")
    (docs / "sizes.md").write_text("# Sizes\n\nIt has [[fact:no.such_key]] layers.\n",
                                   encoding="utf-8")
    (tmp_path / "mkdocs.yml").write_text(textwrap.dedent(f"""\
        site_name: facts fixture
        hooks:
          - {ROOT / 'overrides' / 'hooks' / 'facts.py'}
        """), encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0
    message = result.stdout + result.stderr
    assert re.search(r"sizes\.md.*no\.such_key", message), message
    assert "Traceback" not in message
