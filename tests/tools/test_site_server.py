"""The ``site_server`` fixture's handler: the site under its path prefix, as GitHub Pages serves it."""
from __future__ import annotations

import functools
import http.server
import threading
import urllib.error
import urllib.request

import pytest

from site_pages import ROOT


def _root_conftest():
    """tests/conftest.py as a module (the name `conftest` here is tests/site/conftest.py)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("kv_tests_conftest", ROOT / "tests" / "conftest.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_root = _root_conftest()
_PrefixedHandler, site_prefix = _root._PrefixedHandler, _root.site_prefix


@pytest.fixture
def server(tmp_path):
    (tmp_path / "index.html").write_text("<h1>home</h1>", encoding="utf-8")
    (tmp_path / "worker.mjs").write_text("export {}", encoding="utf-8")
    handler = functools.partial(type("H", (_PrefixedHandler,), {"prefix": "/kv/"}),
                                directory=str(tmp_path))
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def test_serves_the_site_under_the_prefix(server):
    with urllib.request.urlopen(server + "/kv/") as r:
        assert r.status == 200 and b"home" in r.read()
    with urllib.request.urlopen(server + "/kv/worker.mjs") as r:
        assert r.headers["Content-Type"] == "text/javascript"  # module workers need it


def test_root_redirects_and_outside_is_404(server):
    opener = urllib.request.build_opener(_NoRedirect)
    with pytest.raises(urllib.error.HTTPError) as redirect:
        opener.open(server + "/")
    assert redirect.value.code == 302 and redirect.value.headers["Location"] == "/kv/"
    with pytest.raises(urllib.error.HTTPError) as outside:
        urllib.request.urlopen(server + "/index.html")
    assert outside.value.code == 404


def test_prefix_comes_from_site_url():
    assert site_prefix() == "/kv-classroom/"
