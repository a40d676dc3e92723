"""A client that resets its connection mid-request leaves no traceback in the sim's log: a
healthy simulated server must not look crashed (uvicorn logs nothing in that case)."""

from __future__ import annotations

import socket
import struct
import time

from mambaconsole.sim.http import SimHTTPServer

from http.server import BaseHTTPRequestHandler


class _Slow(BaseHTTPRequestHandler):
    def do_GET(self):  # the client is gone by the time we answer
        time.sleep(0.2)
        for _ in range(50):
            self.wfile.write(b"x" * 65536)
            self.wfile.flush()

    def log_message(self, *a):
        pass


def test_connection_reset_by_client_is_not_logged(capfd):
    server = SimHTTPServer(("127.0.0.1", 0), _Slow)
    import threading

    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        c = socket.create_connection(server.server_address)
        c.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST on close
        c.close()
        time.sleep(1.0)
    finally:
        server.shutdown()
        server.server_close()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "Exception occurred" not in err, err
