"""Serve a built site on 127.0.0.1 the way GitHub Pages serves it: under the path prefix of
``site_url`` (``/kv-classroom/``), so absolute links, the language switcher and hreflang
behave as in production. Used by the test fixtures and by the browser tools.

``CONTENT_TYPES`` is the one MIME map of the project: the site server and the routes that
answer Pyodide's files from a local copy both use it.
"""
from __future__ import annotations

import contextlib
import functools
import http.server
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

from tools.site.config import site_prefix

CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript",
    ".mjs": "text/javascript",  # module scripts and workers refuse any other type
    ".css": "text/css",
    ".wasm": "application/wasm",  # WebAssembly.instantiateStreaming needs it
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".zip": "application/zip",
    # A wheel is a zip archive but has no registered type of its own; Pyodide reads the bytes.
    ".whl": "application/octet-stream",
}


def content_type(path: str | Path) -> str:
    """The Content-Type to send for a file name (``application/octet-stream`` if unknown)."""
    return CONTENT_TYPES.get(Path(path).suffix.lower(), "application/octet-stream")


class PrefixedHandler(http.server.SimpleHTTPRequestHandler):
    """Serves ``directory`` under ``prefix``; ``/`` redirects there, anything else is a 404."""

    prefix = "/"
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map, **CONTENT_TYPES}

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

    def log_message(self, format, *args):  # keep test and tool output clean
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        """A browser that closes a connection early (a page closed mid-download, an aborted
        route) is not an error worth a traceback; anything else still prints one."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@contextlib.contextmanager
def serve(site: Path, prefix: str | None = None) -> Iterator[str]:
    """Serve ``site`` in a background thread; yields its base URL (ending in the prefix)."""
    prefix = site_prefix() if prefix is None else prefix
    handler = functools.partial(type("Handler", (PrefixedHandler,), {"prefix": prefix}),
                                directory=str(site))
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="site-server", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{prefix}"
    finally:
        server.shutdown()
        server.server_close()
