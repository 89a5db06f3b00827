"""MkDocs hook: ```kv-demo blocks become pre-rendered, live-capable demos.

Thin on purpose: the logic lives in ``demos_render`` (blocks -> HTML), ``demos_config``
(the runtime's page config), ``demos_plotly`` (the served plotly.js) and ``demos_wheel``
(the course wheel), all unit-tested. One ``on_*`` function per concern:

- on_config: check extra.pyodide early, so a typo fails the build before any page renders;
- on_pre_build: build (or reuse) the course wheel Pyodide installs;
- on_page_markdown: swap each block for a placeholder (Markdown never sees our HTML);
- on_page_content: swap the placeholders for the rendered demos + the runtime config;
- on_post_build: copy the wheel into the site.

The lessons run from the installed project (``pip install -e .``, as dev.py does) or from
the current folder (``python -m mkdocs`` at the repository root); the wheel is built from
the same checkout. plotly.js and the runtime's scripts are theme files (``overrides/``).
"""
from __future__ import annotations

import logging
import uuid
from pathlib import Path

from mkdocs.exceptions import PluginError

# MkDocs puts this folder on sys.path while it imports the hook: enough for these imports.
import demos_config
import demos_render
import demos_wheel

log = logging.getLogger("mkdocs.hooks.demos")
_state: dict = {"wheel": None}
_PAGE_DEMOS: dict[str, list[tuple[str, dict]]] = {}  # page src_uri -> demos for on_page_content


def on_config(config, **kwargs):
    try:
        demos_config.pyodide_settings(config.extra)
    except demos_config.ConfigError as e:
        raise PluginError(f"kv-demo: {e}") from None
    return config


def on_pre_build(config, **kwargs):
    try:
        root = demos_wheel.project_root()
        wheel = demos_wheel.build_wheel(root, root / ".cache" / "kv-wheel")
    except demos_wheel.WheelError as e:
        raise PluginError(f"kv-demo: {e}") from None
    if wheel != _state["wheel"]:
        log.info(f"kv-demo: course wheel {wheel.parent.name}/{wheel.name} ({wheel.stat().st_size // 1024} KiB)")
    _state["wheel"] = wheel


def _page_lang(page, config) -> str:
    """The language of the page's content: mkdocs-static-i18n sets ``file.locale``."""
    lang = getattr(page.file, "locale", None) or config.theme.get("language") or "en"
    return "zh-TW" if str(lang).replace("_", "-").lower() == "zh-tw" else str(lang)


def on_page_markdown(markdown, page, config, files, **kwargs):
    from lessons.common import registry  # imported per build: the reload hook may have dropped it

    try:
        fences = demos_render.find_demo_fences(markdown)
        if not fences:
            return markdown
        lang = _page_lang(page, config)
        pending = []
        for n, fence in enumerate(fences, start=1):
            block = demos_render.parse_block(fence.body, registry.LESSONS)
            demo = demos_render.build_demo(block["lesson"], lang, n, registry.describe, registry.run)
            pending.append((f"KVDEMO{uuid.uuid4().hex}", demo))
    except Exception as e:  # the build must name the page, whatever went wrong
        raise PluginError(f"kv-demo in {page.file.src_uri}: {e}") from e
    _PAGE_DEMOS[page.file.src_uri] = pending
    return demos_render.replace_fences(markdown, fences, [ph for ph, _ in pending])


def on_page_content(html, page, config, files, **kwargs):
    pending = _PAGE_DEMOS.pop(page.file.src_uri, None)
    if not pending:
        return html
    for placeholder, demo in pending:
        rendered = demos_render.render_demo(demo)
        before = html
        html = html.replace(f"<p>{placeholder}</p>", rendered)
        if html == before:
            raise PluginError(f"kv-demo in {page.file.src_uri}: demo {demo['lesson']!r} lost its place in the page")
    wheel = _state["wheel"]
    wheel_rel = demos_wheel.site_path(wheel) if wheel else None
    runtime = demos_config.runtime_config(config.extra, pending[0][1]["lang"], wheel_rel)
    return html + demos_render.render_runtime_config(runtime)


def on_post_build(config, **kwargs):
    if _state["wheel"] is None:
        return
    try:
        demos_wheel.install_wheel(_state["wheel"], Path(config.site_dir))
    except OSError as e:
        raise PluginError(f"kv-demo: copying the course wheel into the site failed: {e}") from None
