"""The feed's first HTTP poll does not hold the event loop: the httpx client (its import and
its SSL context, which loads the CA bundle) is made in a worker thread. Served by a real HTTP
server on loopback."""

from __future__ import annotations

import http.server
import threading

import httpx
import pytest

from mambaconsole.node.local import LocalNode
from mambaconsole.session.feed import Feed
from mambaconsole.session.settings import HostSettings

pytestmark = pytest.mark.timeout(60)

METRICS = b'# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{model_name="m",tp_rank="0"} 3\n'


@pytest.fixture
def server():
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = METRICS if self.path == "/metrics" else b'{"tp_size": 1}'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv.server_port
    srv.shutdown()


async def test_the_http_client_is_made_off_the_event_loop(server, monkeypatch):
    made_in = []
    real = httpx.AsyncClient

    class Recording(real):
        def __init__(self, *a, **kw):
            made_in.append(threading.current_thread())
            super().__init__(*a, **kw)

    monkeypatch.setattr(httpx, "AsyncClient", Recording)
    loop_thread = threading.current_thread()
    async with LocalNode() as node:
        feed = Feed(node, HostSettings(port=server), adopt=False)
        try:
            info, m = await feed.server_info(server), await feed.metrics(server)
            assert info.error is None and info.data == {"tp_size": 1}
            assert m.error is None and m.values["sglang:num_running_reqs"] == 3
            again = await feed.server_info(server)
            assert again.error is None
        finally:
            await feed.close()
    assert len(made_in) == 1  # one client for every poll
    assert made_in[0] is not loop_thread
