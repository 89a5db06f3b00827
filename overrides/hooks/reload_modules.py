"""Forget imported packages whose files changed, so that the next import reads them afresh.

Plain logic for the ``reload`` hook (unit-tested in tests/site/test_reload_hook.py). A
package's state is the list of its files with their sizes and modification times (cheap:
no file is read). All the watched packages are forgotten together: a lesson holds objects
of the engine (``from engine import ...``), so reloading one alone would mix old and new.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Iterable
from pathlib import Path

_SKIP = {"__pycache__"}


def package_dirs(name: str) -> list[Path]:
    """Where package ``name`` is imported from (or would be): its ``__path__`` folders."""
    module = sys.modules.get(name)
    if module is not None and getattr(module, "__path__", None):
        return [Path(p) for p in module.__path__]
    spec = importlib.util.find_spec(name)
    return [Path(p) for p in (spec.submodule_search_locations or [])] if spec else []


def state(folders: Iterable[Path]) -> tuple:
    """(path, size, mtime_ns) of every source file under ``folders``, sorted."""
    files = []
    for folder in folders:
        for f in folder.rglob("*"):
            if f.is_file() and not (_SKIP & set(f.parts)) and f.suffix != ".pyc":
                st = f.stat()
                files.append((str(f), st.st_size, st.st_mtime_ns))
    return tuple(sorted(files))


class ModuleReloader:
    """Remembers the state of ``packages`` at each build; drops their modules on a change."""

    def __init__(self, packages: Iterable[str]):
        self.packages = tuple(packages)
        self.seen: tuple | None = None

    def _loaded(self) -> list[str]:
        return [n for n in list(sys.modules) if n.split(".", 1)[0] in self.packages]

    def forget_if_changed(self) -> list[str]:
        """Names of the modules dropped from ``sys.modules`` (none on the first call, or when
        nothing changed since the previous call)."""
        now = state(d for name in self.packages for d in package_dirs(name))
        changed = self.seen is not None and now != self.seen
        self.seen = now
        if not changed:
            return []
        dropped = self._loaded()
        for name in dropped:
            del sys.modules[name]
        importlib.invalidate_caches()  # a new lesson file is found on the next import
        return dropped
