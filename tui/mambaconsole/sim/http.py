"""HTTP endpoints of the simulated server (stdlib ``http.server`` in a thread).

Endpoints as SGLang's FastAPI app serves them (``../shared/reference/sglang-observables.md`` §5):
``/health`` and ``/health_generate`` (200 empty body once warmed up, 503 before),
``/server_info`` and ``/model_info`` (0.5.9+), the deprecated ``/get_server_info`` and
``/get_model_info`` (each call logs SGLang's deprecation WARNING), ``/v1/models``, ``/v1/loads``
(0.5.23; :mod:`mambaconsole.sim.loads`), and ``/metrics``
(Prometheus text, only with ``--enable-metrics``; 404 ``{"detail":"Not Found"}`` otherwise, as
FastAPI answers unknown paths). Each request writes a uvicorn access line to stdout
(``INFO:     127.0.0.1:PORT - "GET /health HTTP/1.1" 200 OK``).
"""

from __future__ import annotations

import json
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


class SimHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address) -> None:
        """A client that hangs up mid-request (a console cancelling a poll) is not an error
        worth a traceback in the server's log: uvicorn, in front of a real SGLang server, logs
        nothing then. Anything else keeps socketserver's report."""
        import sys

        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)


def make_handler(app, follower: bool = False) -> type[BaseHTTPRequestHandler]:
    """A request handler bound to ``app`` (a :class:`mambaconsole.sim.server.SimServer`);
    ``follower``: a rank >= 1 of a run across nodes, whose stand-in server answers only
    ``/ping``, ``/health`` and ``/health_generate``, always 200, and logs no access lines
    (0.5.23 ``srt/utils/common.py:3624`` ``launch_dummy_health_check_server``, uvicorn at
    ``log_level="warning"``)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "uvicorn"
        sys_version = ""

        def log_message(self, format, *args):  # noqa: A002 - stdlib signature
            pass

        def _send(self, status: int, body: bytes, ctype: str = "application/json", log: bool = True) -> None:
            self.send_response(status)
            self.send_header("content-type", ctype)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)
            if not log:
                return
            phrase = HTTPStatus(status).phrase
            host, port = self.client_address[:2]
            app.access_log(f'INFO:     {host}:{port} - "{self.command} {self.path} HTTP/1.1" {status} {phrase}')

        def _json(self, status: int, obj) -> None:
            self._send(status, json.dumps(obj).encode())

        def do_GET(self):  # noqa: N802 - stdlib name
            path = self.path.split("?", 1)[0]
            if follower:
                if path in ("/ping", "/health", "/health_generate"):
                    self._send(200, b"", "text/plain", log=False)
                else:
                    self._send(404, b'{"detail":"Not Found"}', log=False)
                return
            routes: dict[str, Callable[[], None]] = {
                "/health": self._health,
                "/health_generate": self._health,
                "/server_info": lambda: self._json(200, app.server_info()),
                "/get_server_info": self._get_server_info,
                "/model_info": lambda: self._json(200, app.model_info()),
                "/get_model_info": self._get_model_info,
                "/v1/models": lambda: self._json(200, app.models_list()),
            }
            # 0.5.11 serves another shape (io_struct.GetLoadsReqOutput, "dp_rank_count", "aggregate"):
            # not simulated, so 404 there
            if app.version != "0.5.11":
                routes["/v1/loads"] = lambda: self._send(*app.loads(self.path.partition("?")[2]))
            if app.metrics_enabled:
                routes["/metrics"] = lambda: self._send(200, app.metrics_text(), "text/plain; version=0.0.4; charset=utf-8")
            handler = routes.get(path)
            if handler is None:
                self._json(404, {"detail": "Not Found"})
            else:
                handler()

        do_HEAD = do_GET

        def do_POST(self):  # noqa: N802
            length = int(self.headers.get("content-length") or 0)
            if length:
                self.rfile.read(length)
            self._json(404, {"detail": "Not Found"})

        def _health(self):
            self._send(200 if app.healthy() else 503, b"", "text/plain")

        def _get_server_info(self):
            app.log_main(
                "Endpoint '/get_server_info' is deprecated and will be removed in a future version. "
                "Please use '/server_info' instead."
            )
            self._json(200, app.server_info())

        def _get_model_info(self):
            app.log_main(
                "Endpoint '/get_model_info' is deprecated and will be removed in a future version. "
                "Please use '/model_info' instead."
            )
            self._json(200, app.model_info())

    return Handler


def serve_in_thread(app, host: str, port: int, follower: bool = False) -> SimHTTPServer:
    """Bind ``host:port`` and serve ``app`` from a daemon thread (``follower``: see
    :func:`make_handler`); raises OSError if the bind fails."""
    server = SimHTTPServer((host, port), make_handler(app, follower))
    thread = threading.Thread(target=server.serve_forever, name="sim-http", daemon=True)
    thread.start()
    return server


def _stdout_line(text: str) -> None:
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
