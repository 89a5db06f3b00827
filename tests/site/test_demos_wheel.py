"""The course wheel (overrides/hooks/demos_wheel.py): built from a private copy of the sources,
cached by their hash, pruned, and a clear error when the project cannot be built."""
from __future__ import annotations

from pathlib import Path

import pytest

import demos_wheel


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "engine").mkdir(parents=True)
    (root / "lessons").mkdir()
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "kv-classroom"\nversion = "0.1.0"\n'
        '[tool.setuptools.packages.find]\ninclude = ["engine*", "lessons*"]\n'
    )
    (root / "engine" / "__init__.py").write_text("X = 1\n")
    (root / "lessons" / "__init__.py").write_text("")
    return root


def test_source_hash_follows_the_sources(tmp_path):
    root = _tree(tmp_path)
    h1 = demos_wheel.source_hash(root)
    (root / "engine" / "__pycache__").mkdir()
    (root / "engine" / "__pycache__" / "x.pyc").write_bytes(b"junk")
    assert demos_wheel.source_hash(root) == h1  # caches do not count
    (root / "engine" / "__init__.py").write_text("X = 2\n")
    assert demos_wheel.source_hash(root) != h1


def test_wheel_is_built_once_per_source_state(tmp_path):
    import zipfile

    root = _tree(tmp_path)
    cache = tmp_path / "cache"
    w1 = demos_wheel.build_wheel(root, cache)
    assert w1.name == "kv_classroom-0.1.0-py3-none-any.whl"
    names = zipfile.ZipFile(w1).namelist()
    assert "engine/__init__.py" in names and "lessons/__init__.py" in names
    stamp = w1.stat().st_mtime_ns
    assert demos_wheel.build_wheel(root, cache) == w1 and w1.stat().st_mtime_ns == stamp  # cached
    (root / "engine" / "__init__.py").write_text("X = 3\n")
    w2 = demos_wheel.build_wheel(root, cache)
    assert w2 != w1 and w2.parent.name != w1.parent.name
    assert not (root / "build").exists()  # built from a private copy, the checkout stays clean


def test_old_wheels_are_pruned(tmp_path):
    root = _tree(tmp_path)
    cache = tmp_path / "cache"
    for n in range(demos_wheel.KEEP_WHEELS + 2):
        (root / "engine" / "__init__.py").write_text(f"X = {n}\n")
        newest = demos_wheel.build_wheel(root, cache)
    kept = [d for d in cache.iterdir() if d.is_dir()]
    assert len(kept) == demos_wheel.KEEP_WHEELS and newest.parent in kept


def test_broken_project_gives_a_clear_error(tmp_path):
    root = _tree(tmp_path)
    (root / "pyproject.toml").write_text("[project\nname=")
    with pytest.raises(demos_wheel.WheelError, match="building the course wheel failed"):
        demos_wheel.build_wheel(root, tmp_path / "cache")


def test_the_wheel_is_built_from_the_checkout_python_imports():
    """The build runs the lessons Python imports; the wheel must hold that same code."""
    import lessons

    assert demos_wheel.project_root() == Path(lessons.__file__).resolve().parents[1]


def test_site_path_names_the_hash_folder(tmp_path):
    wheel = tmp_path / "0123abcd" / "kv_classroom-0.1.0-py3-none-any.whl"
    wheel.parent.mkdir()
    wheel.write_bytes(b"PK")
    rel = demos_wheel.install_wheel(wheel, tmp_path / "site")
    assert rel == demos_wheel.site_path(wheel) == "assets/wheels/0123abcd/kv_classroom-0.1.0-py3-none-any.whl"
    assert (tmp_path / "site" / rel).read_bytes() == b"PK"


def test_the_course_wheel_in_the_site_carries_the_engine_and_lessons_but_no_tools(built_site):
    """What every reader downloads: engine/ and lessons/ (with the course model and the
    benchmark's committed results, read by the benchmark page), and nothing of tools/ -- the
    benchmark harness, the site helpers and the CPU execution of CUDA C stay in the checkout."""
    import zipfile

    wheels = sorted(built_site.glob("assets/wheels/*/kv_classroom-*.whl"))
    assert len(wheels) == 1, wheels
    names = zipfile.ZipFile(wheels[0]).namelist()
    tops = {n.split("/")[0] for n in names if not n.startswith("kv_classroom-")}
    assert tops == {"engine", "lessons"}, tops
    assert "engine/data/course_model.npz" in names
    assert any(n.startswith("engine/bench_results/results/") and n.endswith(".json") for n in names)
    assert not [n for n in names if "/bench/" in n and n.startswith("engine/")]  # the harness is tools/bench
    # every lesson folder and its data (plate 2's tokenizer counts): the worker imports them all
    root = Path(__file__).resolve().parents[2]
    lesson_files = {p.relative_to(root).as_posix() for p in (root / "lessons").rglob("*")
                    if p.suffix in (".py", ".json") and "__pycache__" not in p.parts}
    assert "lessons/plate02_tokens/real_token_counts.json" in lesson_files
    assert lesson_files <= set(names), sorted(lesson_files - set(names))


def test_lessons_and_the_engine_never_import_tools():
    """tools/ is not in the wheel: an import of it from engine/ or lessons/ would fail in Pyodide."""
    import ast

    root = Path(demos_wheel.project_root())
    bad = []
    for path in [*root.glob("engine/**/*.py"), *root.glob("lessons/**/*.py")]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and node.level == 0 else [])
            bad += [f"{path.relative_to(root)}: {n}" for n in names if n == "tools" or n.startswith("tools.")]
    assert not bad, bad
