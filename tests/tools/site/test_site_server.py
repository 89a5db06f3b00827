"""tools/site/server.py: the site under its path prefix, as GitHub Pages serves it."""
from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from tools.site.server import CONTENT_TYPES, content_type, serve


@pytest.fixture
def server(tmp_path):
    (tmp_path / "index.html").write_text("<h1>home</h1>", encoding="utf-8")
    (tmp_path / "worker.mjs").write_text("export {}", encoding="utf-8")
    (tmp_path / "kv.whl").write_bytes(b"PK\x03\x04")
    with serve(tmp_path, "/kv/") as base:
        yield base.removesuffix("/kv/")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@pytest.mark.parametrize(("name", "expected"), [
    ("worker.mjs", "text/javascript"),  # module workers refuse any other type
    ("kv.whl", "application/octet-stream"),
])
def test_serves_the_site_under_the_prefix_with_its_types(server, name, expected):
    with urllib.request.urlopen(f"{server}/kv/{name}") as r:
        assert r.status == 200 and r.headers["Content-Type"] == expected
    with urllib.request.urlopen(server + "/kv/") as r:
        assert b"home" in r.read()


def test_root_redirects_and_outside_is_404(server):
    opener = urllib.request.build_opener(_NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as redirect:
        opener.open(server + "/")
    assert redirect.value.code == 302 and redirect.value.headers["Location"] == "/kv/"
    with pytest.raises(urllib.error.HTTPError) as outside:
        urllib.request.urlopen(server + "/index.html")
    assert outside.value.code == 404


@pytest.mark.parametrize(("name", "expected"), [
    ("pyodide.asm.wasm", "application/wasm"),
    ("pyodide.MJS", "text/javascript"),
    ("no-suffix", "application/octet-stream"),
])
def test_one_mime_map_for_every_server(name, expected):
    assert content_type(name) == expected
    assert set(CONTENT_TYPES) >= {".js", ".mjs", ".wasm", ".json", ".whl"}



def test_a_client_that_hangs_up_early_is_no_traceback(tmp_path, capfd):
    """Browsers close connections mid-download (a closed page, an aborted route); the server
    says nothing about it, where it used to print a BrokenPipeError traceback per request."""
    import socket
    import time

    (tmp_path / "big.bin").write_bytes(bytes(32_000_000))
    with serve(tmp_path, "/kv/") as base:
        host, port = base.split("//")[1].split("/")[0].split(":")
        with socket.create_connection((host, int(port))) as s:
            s.sendall(b"GET /kv/big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
            s.recv(1024)
        time.sleep(0.5)  # the server's thread meets the closed socket
    assert "Traceback" not in capfd.readouterr().err
