"""Fixtures shared by the whole suite: a real build of the site, and a local server for it.

``built_site`` runs the real ``mkdocs build --strict`` once per test session (about the time
the benchmark ``python tools/bench/bench_build.py`` prints) and every site or browser test reads
that one build. Set ``KV_BUILT_SITE=/path/to/site`` to reuse a build you already made (the
path must hold a build of the current checkout; nothing checks that).

``site_server`` serves the build over HTTP under the same path prefix as the production
``site_url`` (``/kv-classroom/``), so absolute links, the language switcher and hreflang
behave exactly as on GitHub Pages (``tools/site/server.py``, shared with the tools).
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools.site.build import build_site
from tools.site.server import serve


@pytest.fixture(scope="session")
def built_site(tmp_path_factory) -> Path:
    """Path of a fresh ``mkdocs build --strict`` of the checkout (built once per session)."""
    reuse = os.environ.get("KV_BUILT_SITE")
    if reuse:
        path = Path(reuse)
        if not (path / "index.html").is_file():
            pytest.fail(f"KV_BUILT_SITE={reuse} does not hold a built site (no index.html)")
        return path
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        pytest.skip("mkdocs is not installed: pip install -e '.[docs]'")
    site_dir = tmp_path_factory.mktemp("site")
    result = build_site(site_dir)
    if result.returncode != 0:
        pytest.fail(
            "mkdocs build --strict failed (exit %d):\n%s"
            % (result.returncode, (result.stdout + result.stderr)[-6000:]),
            pytrace=False,
        )
    return site_dir


@pytest.fixture(scope="session")
def site_server(built_site):
    """Base URL (with the site_url path prefix) of ``built_site`` served on 127.0.0.1."""
    with serve(built_site) as base:
        yield base
