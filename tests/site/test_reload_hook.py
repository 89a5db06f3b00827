"""overrides/hooks/reload.py's logic (reload_modules.py): a package whose files changed since
the last build is dropped from sys.modules, so the next import reads the new code."""
from __future__ import annotations

import importlib
import os
import sys

import pytest

from reload_modules import ModuleReloader, state


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A throwaway importable package ``kvfixture_pkg`` (VALUE = 1) with a submodule."""
    pkg = tmp_path / "kvfixture_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("VALUE = 1\n", encoding="utf-8")
    (pkg / "sub.py").write_text("from kvfixture_pkg import VALUE\nDOUBLE = 2 * VALUE\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield pkg
    for name in [n for n in sys.modules if n.split(".")[0] == "kvfixture_pkg"]:
        del sys.modules[name]


def _edit(path, text):
    before = path.stat().st_mtime_ns
    path.write_text(text, encoding="utf-8")
    os.utime(path, ns=(before + 2_000_000_000, before + 2_000_000_000))  # a later edit, surely


def test_an_edited_package_is_imported_afresh(package):
    reloader = ModuleReloader(["kvfixture_pkg"])
    import kvfixture_pkg.sub

    assert reloader.forget_if_changed() == []  # the first build only records the state
    _edit(package / "__init__.py", "VALUE = 5\n")
    dropped = reloader.forget_if_changed()
    assert sorted(dropped) == ["kvfixture_pkg", "kvfixture_pkg.sub"]
    assert importlib.import_module("kvfixture_pkg.sub").DOUBLE == 10  # the submodule too
    assert kvfixture_pkg.sub.DOUBLE == 2  # the old module object is left as it was


def test_nothing_is_dropped_when_nothing_changed(package):
    reloader = ModuleReloader(["kvfixture_pkg"])
    import kvfixture_pkg  # noqa: F401

    reloader.forget_if_changed()
    assert reloader.forget_if_changed() == []
    assert "kvfixture_pkg" in sys.modules


def test_a_new_file_counts_as_a_change(package):
    reloader = ModuleReloader(["kvfixture_pkg"])
    import kvfixture_pkg  # noqa: F401

    reloader.forget_if_changed()
    (package / "added.py").write_text("NEW = True\n", encoding="utf-8")
    assert "kvfixture_pkg" in reloader.forget_if_changed()
    assert importlib.import_module("kvfixture_pkg.added").NEW is True


def test_state_skips_bytecode(package):
    (package / "__pycache__").mkdir()
    (package / "__pycache__" / "sub.cpython-311.pyc").write_bytes(b"junk")
    names = [p for p, _, _ in state([package])]
    assert all("__pycache__" not in p for p in names) and len(names) == 2
