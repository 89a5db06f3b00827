"""MkDocs hook: ```kv-demo blocks become pre-rendered, live-capable demos.

Thin on purpose: the logic lives in ``demo_render`` (blocks -> HTML) and ``demo_assets``
(the course wheel and plotly.js), both unit-tested. One ``on_*`` function per concern:

- on_config: check extra.pyodide early (this module makes engine/, lessons/ importable);
- on_pre_build: build (or reuse) the course wheel Pyodide installs;
- on_page_markdown: swap each block for a placeholder (Markdown never sees our HTML);
- on_page_content: swap the placeholders for the rendered demos + the runtime config;
- on_post_build: copy the wheel and plotly.js into the site.
"""
from __future__ import annotations

import logging
import sys
import uuid
from pathlib import Path

from mkdocs.exceptions import PluginError

_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parents[1]  # the repository: engine/, lessons/, pyproject.toml
for _p in (_HERE, _ROOT):
    if str(_p) not in sys.path:
        sys.path.insert(0, str(_p))

import demo_assets  # noqa: E402
import demo_render  # noqa: E402

log = logging.getLogger("mkdocs.hooks.demos")
_state: dict = {"wheel": None}
_PAGE_DEMOS: dict[str, list[dict]] = {}  # page src_uri -> demos waiting for on_page_content


def on_config(config, **kwargs):
    # MkDocs restores sys.path after loading a hook; lessons import engine/ at build time.
    if str(_ROOT) not in sys.path:
        sys.path.insert(0, str(_ROOT))
    # Validate extra.pyodide once, early, so a typo fails the build before any page renders.
    try:
        demo_render.runtime_config(config.extra, "en", None, "")
    except demo_render.DemoBlockError as e:
        raise PluginError(f"kv-demo: {e}") from None
    return config


def on_pre_build(config, **kwargs):
    try:
        wheel = demo_assets.build_wheel(_ROOT, _ROOT / ".cache" / "kv-wheel")
    except demo_assets.AssetError as e:
        raise PluginError(f"kv-demo: {e}") from None
    if wheel != _state["wheel"]:
        log.info(f"kv-demo: course wheel {wheel.parent.name}/{wheel.name} ({wheel.stat().st_size // 1024} KiB)")
    _state["wheel"] = wheel


def _page_lang(page, config) -> str:
    """The language of the page's content: mkdocs-static-i18n sets ``file.locale``."""
    lang = getattr(page.file, "locale", None) or config.theme.get("language") or "en"
    return "zh-TW" if str(lang).replace("_", "-").lower() == "zh-tw" else str(lang)


def on_page_markdown(markdown, page, config, files, **kwargs):
    from lessons import registry

    try:
        fences = demo_render.find_demo_fences(markdown)
        if not fences:
            return markdown
        lang = _page_lang(page, config)
        demos, placeholders = [], []
        for n, fence in enumerate(fences, start=1):
            block = demo_render.parse_block(fence.body, registry.LESSONS)
            demos.append(demo_render.build_demo(block["lesson"], lang, n, registry.describe, registry.run))
            placeholders.append(f"KVDEMO{uuid.uuid4().hex}")
    except Exception as e:  # the build must name the page, whatever went wrong
        raise PluginError(f"kv-demo in {page.file.src_uri}: {e}") from e
    _PAGE_DEMOS[page.file.src_uri] = list(zip(placeholders, demos, [lang] * len(demos)))
    return demo_render.replace_fences(markdown, fences, placeholders)


def on_page_content(html, page, config, files, **kwargs):
    pending = _PAGE_DEMOS.pop(page.file.src_uri, None)
    if not pending:
        return html
    for placeholder, demo, _ in pending:
        rendered = demo_render.render_demo(demo)
        before = html
        html = html.replace(f"<p>{placeholder}</p>", rendered)
        if html == before:
            raise PluginError(f"kv-demo in {page.file.src_uri}: demo {demo['lesson']!r} lost its place in the page")
    lang = pending[0][2]
    wheel = _state["wheel"]
    wheel_rel = f"assets/wheels/{wheel.parent.name}/{wheel.name}" if wheel else None
    runtime = demo_render.runtime_config(config.extra, lang, wheel_rel, demo_assets.plotly_rel_path())
    return html + demo_render.render_runtime_config(runtime)


def on_post_build(config, **kwargs):
    site_dir = Path(config.site_dir)
    try:
        if _state["wheel"] is not None:
            demo_assets.install_wheel(_state["wheel"], site_dir)
        demo_assets.install_plotly(site_dir)
    except (demo_assets.AssetError, OSError) as e:
        raise PluginError(f"kv-demo: {e}") from None
