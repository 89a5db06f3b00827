"""MkDocs hook: each build runs the engine and the lessons as they are on disk now.

MkDocs imports its hooks once per process and Python imports a module once, so under
``mkdocs serve`` an author's edit to a lesson or to the engine used to rebuild the page with
the old code. Listed first in mkdocs.yml, this hook forgets the imported ``engine`` and
``lessons`` modules when their files changed since the last build (``reload_modules.py``);
the facts and demos hooks import them lazily, so they run the new code. Edits to the hooks'
own Python files still need a restart of ``mkdocs serve``.
"""
from __future__ import annotations

import logging

from reload_modules import ModuleReloader

log = logging.getLogger("mkdocs.hooks.reload")
_reloader = ModuleReloader(("engine", "lessons"))


def on_config(config, **kwargs):
    forgotten = _reloader.forget_if_changed()
    if forgotten:
        log.info(f"engine/lessons changed: {len(forgotten)} modules will be imported afresh")
    return config
