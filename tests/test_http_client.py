"""The feed's HTTP client (``mambaconsole.session.feed``): what its polls of the server
(``/server_info``, ``/metrics`` through the SSH forward's local end) cost the event loop beyond
the request itself, and that it stays safe.

- a poll after the first imports nothing: httpcore 1.0.9 asks ``sniffio`` which async library
  runs (``httpcore/_synchronization.py``, at every lock, event and cancellation shield it sets
  up); without the package installed that was a failed import, a search of ``sys.path``, four
  times per poll, on the event loop;
- its client loads no CA bundle (certifi's: 20-28 ms of CPU) for polls that are plain http,
  and an https server whose certificate it cannot verify is refused, not read unverified;
- an HTTP proxy named in the environment does not take the polls of the local forward;
- once :func:`mambaconsole.opening.preload` ran, making the client imports nothing.

Served by a real HTTP server on loopback (and a real TLS one)."""

from __future__ import annotations

import asyncio
import collections
import datetime
import http.server
import ipaddress
import os
import socket
import ssl
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest

from mambaconsole.node.local import LocalNode
from mambaconsole.session import feed as feed_module
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


async def test_the_feeds_client_loads_no_certificates(sglang_http, monkeypatch):
    """Its polls are plain http to the forward's local end: no CA bundle is read for them."""
    loaded = []
    for method in ("load_verify_locations", "load_default_certs"):
        real = getattr(ssl.SSLContext, method)

        def counting(self, *a, _real=real, _method=method, **kw):
            loaded.append(_method)
            return _real(self, *a, **kw)

        monkeypatch.setattr(ssl.SSLContext, method, counting)
    async with LocalNode() as node:
        feed = Feed(node, HostSettings(port=sglang_http), adopt=False)
        try:
            assert (await feed.server_info(sglang_http)).error is None
            assert (await feed.metrics(sglang_http, "r1")).error is None
        finally:
            await feed.close()
    assert loaded == []


def _self_signed(tmp_path: Path, host: str = "127.0.0.1") -> tuple[Path, Path]:
    """(certificate, key) PEM files for ``host`` alone (an IP address or a DNS name, its one
    subject alternative name), signed by themselves (no CA vouches)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    try:
        alt = x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        alt = x509.DNSName(host)
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([alt]), critical=False)
            .sign(key, hashes.SHA256()))
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_file, key_file


async def test_the_feeds_client_refuses_an_https_server_it_cannot_verify(tmp_path):
    """No CA bundle does not mean no verification: an https URL (which the feed never builds)
    fails on the server's certificate instead of being read unverified."""
    cert_file, key_file = _self_signed(tmp_path)
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert_file, key_file)
    srv.socket = tls.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    client = await asyncio.to_thread(feed_module._http_client)  # as the feed makes it
    try:
        with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
            await client.get(f"https://127.0.0.1:{srv.server_port}/server_info")
    finally:
        await client.aclose()
        srv.shutdown()
        srv.server_close()


async def test_an_environment_proxy_does_not_take_the_polls_of_the_forward(sglang_http, monkeypatch):
    """The polls go to this machine's end of the SSH forward: a proxy named in the environment
    (here one that refuses every connection) is not asked to reach 127.0.0.1 for them."""
    with socket.socket() as s:  # a port nothing listens on: a proxy there refuses the connection
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    for var in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    for var in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(var, dead)
    async with LocalNode() as node:
        feed = Feed(node, HostSettings(port=sglang_http), adopt=False)
        try:
            info = await feed.server_info(sglang_http)
            m = await feed.metrics(sglang_http, "r1")
        finally:
            await feed.close()
    assert info.error is None and info.data["version"] == "0.5.23"
    assert m.error is None and m.values


MAKE_CLIENT = r"""
import sys
from mambaconsole import opening
from mambaconsole.session import feed
from mambaconsole.session.http_client import warm_client
opening.preload()
looked_up = []
class Noting:  # every module looked up from here on (not in sys.modules: found or not)
    def find_spec(self, name, path=None, target=None):
        looked_up.append(name)
        return None
sys.meta_path.insert(0, Noting())
warm_client(feed._http_client)
sys.meta_path.pop(0)
print(" ".join(looked_up))
"""


def test_after_the_preload_making_the_feeds_client_imports_nothing():
    """In a fresh interpreter: once :func:`mambaconsole.opening.preload` ran (before the first
    view), making the client imports nothing more; httpx imports its transport (httpcore:
    14-16 ms of CPU) only when a client is made, in the worker thread the loop shares the
    interpreter with."""
    out = subprocess.run([sys.executable, "-c", MAKE_CLIENT], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "", f"imported by the first client: {out.stdout.strip()}"
