"""Fixtures shared by the whole suite: a real build of the site, and a local server for it.

``built_site`` runs the real ``mkdocs build --strict`` once per test session (about the time
the benchmark ``python tools/bench_build.py`` prints) and every site or browser test reads
that one build. Set ``KV_BUILT_SITE=/path/to/site`` to reuse a build you already made (the
path must hold a build of the current checkout; nothing checks that).

``site_server`` serves the build over HTTP under the same path prefix as the production
``site_url`` (``/kv-classroom/``), so absolute links, the language switcher and hreflang
behave exactly as on GitHub Pages.
"""
from __future__ import annotations

import functools
import http.server
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Tests import engine/ and lessons/ from this checkout, installed or not.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

LANGS = ("en", "zh-TW")


def site_url() -> str:
    """``site_url`` from mkdocs.yml (read as text: the file has MkDocs-only YAML tags)."""
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    match = re.search(r"^site_url:\s*(\S+)", text, re.MULTILINE)
    assert match, "mkdocs.yml has no site_url"
    return match.group(1)


def site_prefix() -> str:
    """The path part of ``site_url``, e.g. ``/kv-classroom/``."""
    path = urlparse(site_url()).path or "/"
    return path if path.endswith("/") else path + "/"


def build_site(site_dir: Path, *extra: str) -> subprocess.CompletedProcess:
    """Run the real ``mkdocs build --strict`` of this checkout into ``site_dir``."""
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site_dir), *extra],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )


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


class _PrefixedHandler(http.server.SimpleHTTPRequestHandler):
    """Serves ``directory`` under ``prefix`` like GitHub Pages serves a project site."""

    prefix = "/"
    extensions_map = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        ".js": "text/javascript",
        ".mjs": "text/javascript",  # module workers refuse any other type
        ".wasm": "application/wasm",
        ".json": "application/json",
        ".whl": "application/octet-stream",
        ".svg": "image/svg+xml",
    }

    def _outside_prefix(self) -> bool:
        path = urlparse(self.path).path
        return not (path + "/").startswith(self.prefix) and path != self.prefix.rstrip("/")

    def send_head(self):
        path = urlparse(self.path).path
        if path == "/" and self.prefix != "/":
            self.send_response(302)
            self.send_header("Location", self.prefix)
            self.end_headers()
            return None
        if self._outside_prefix():
            self.send_error(404, "outside the site prefix")
            return None
        return super().send_head()

    def translate_path(self, path):
        path = urlparse(path).path
        if path.startswith(self.prefix):
            path = "/" + path[len(self.prefix):]
        elif path == self.prefix.rstrip("/"):
            path = "/"
        return super().translate_path(path)

    def end_headers(self):
        self.send_header("Cache-Control", "no-store")
        super().end_headers()

    def log_message(self, format, *args):  # keep pytest output clean
        pass


@pytest.fixture(scope="session")
def site_server(built_site):
    """Base URL (with the site_url path prefix) of ``built_site`` served on 127.0.0.1."""
    prefix = site_prefix()
    handler = functools.partial(
        type("Handler", (_PrefixedHandler,), {"prefix": prefix}), directory=str(built_site)
    )
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="site-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{prefix}"
    finally:
        server.shutdown()
        server.server_close()
