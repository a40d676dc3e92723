"""The feed's HTTP client (``mambaconsole.session.feed``): what its polls of the server
(``/server_info``, ``/metrics`` through the SSH forward's local end) cost the event loop beyond
the request itself, and that it stays safe.

- a poll after the first imports nothing: httpcore 1.0.9 asks ``sniffio`` which async library
  runs (``httpcore/_synchronization.py``, at every lock, event and cancellation shield it sets
  up); without the package installed that was a failed import, a search of ``sys.path``, four
  times per poll, on the event loop;

Served by a real HTTP server on loopback."""

from __future__ import annotations

import collections
import http.server
import sys
import threading
from pathlib import Path

import pytest

from mambaconsole.node.local import LocalNode
from mambaconsole.session.feed import Feed
from mambaconsole.session.settings import HostSettings

pytestmark = pytest.mark.timeout(120)

#: a real SGLang 0.5.23 /metrics body (qwen3next-tiny on CPU)
METRICS = (Path(__file__).parent / "data" / "logs" / "real-0.5.23-qnext-metrics.txt").read_bytes()
SERVER_INFO = b'{"model_path": "/srv/models/qwen3next-tiny", "tp_size": 1, "version": "0.5.23"}'


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: the client's pool reuses its connection, as in use

    def do_GET(self):
        body = METRICS if self.path == "/metrics" else SERVER_INFO
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def sglang_http():
    """The port of a loopback HTTP server answering /server_info and /metrics."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_port
    srv.shutdown()
    srv.server_close()


class LookupsOnThisThread:
    """A ``sys.meta_path`` finder that finds nothing and counts, by name, the modules looked
    up on the thread that made it: every import of a module not in ``sys.modules`` asks it
    first, a failed one (an optional package not installed) included."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.names: collections.Counter[str] = collections.Counter()

    def find_spec(self, name, path=None, target=None):
        if threading.get_ident() == self.thread:
            self.names[name] += 1


async def test_a_poll_after_the_first_imports_nothing_on_the_event_loop(sglang_http, monkeypatch):
    async with LocalNode() as node:
        feed = Feed(node, HostSettings(port=sglang_http), adopt=False)
        try:
            assert (await feed.server_info(sglang_http)).error is None  # the first: imports at first use
            assert (await feed.metrics(sglang_http, "r1")).error is None
            lookups = LookupsOnThisThread()
            monkeypatch.setattr(sys, "meta_path", [lookups, *sys.meta_path])
            for _ in range(5):
                info = await feed.server_info(sglang_http)
                assert info.error is None and info.data["tp_size"] == 1
                m = await feed.metrics(sglang_http, "r1")
                assert m.error is None and m.values
        finally:
            await feed.close()
    assert dict(lookups.names) == {}

