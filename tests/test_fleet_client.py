"""The fleet's HTTP clients (``mambaconsole.session.fleet``): made off the event loop, and
still verifying as httpx does (against a CA bundle, ``SSL_CERT_FILE`` honoured), unlike the
feed's (``tests/test_http_client.py``); the environment's proxies taken for the URLs this
machine reaches itself, never for the local end of a node's forward.

Served by real HTTP servers on loopback: a router's ``/workers`` answered (an empty list), over
TLS with a self-signed certificate, and a plain HTTP proxy that answers for any host."""

from __future__ import annotations

import http.server
import json
import socket
import ssl
import threading
from urllib.parse import urlsplit

import pytest

from mambaconsole.session.fleet import Fleet, Target
from test_http_client import _self_signed

pytestmark = pytest.mark.timeout(120)

WORKERS = json.dumps({"workers": []}).encode()  # smg's /workers with no worker registered


class _Router(http.server.BaseHTTPRequestHandler):
    """A router's ``/workers`` (the server's ``workers``: URLs, none by default) and an
    engine's ``/health`` (200, empty), 404 for the rest (``self.path`` is the absolute URL where
    asked as a proxy); each request's path kept in the server's ``asked``, its ``Host`` header
    in ``hosts``."""

    def do_GET(self):
        self.server.asked.append(self.path)
        self.server.hosts.append(self.headers["Host"])
        path = urlsplit(self.path).path
        found = path in ("/workers", "/health")
        workers = getattr(self.server, "workers", [])
        body = (json.dumps({"workers": [{"url": u} for u in workers]}).encode() if workers else WORKERS) \
            if path == "/workers" else b""
        self.send_response(200 if found else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


@pytest.fixture
def serve():
    """``serve(tls=None)``: a started :class:`_Router` server (wrapped in ``tls``, an
    ``ssl.SSLContext``, where given)."""
    servers = []

    def start(tls: ssl.SSLContext | None = None) -> http.server.ThreadingHTTPServer:
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Router)
        srv.asked, srv.hosts = [], []
        if tls is not None:
            srv.socket = tls.wrap_socket(srv.socket, server_side=True)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return srv

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


@pytest.fixture
def no_proxies(monkeypatch):
    for var in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy",
                "NO_PROXY", "no_proxy", "SSL_CERT_FILE", "SSL_CERT_DIR"):
        monkeypatch.delenv(var, raising=False)


async def test_the_fleet_makes_its_client_off_the_event_loop(serve, no_proxies, monkeypatch):
    """Opening the fleet (the screen's first await) reads the CA bundle into the client's SSL
    context on another thread than the event loop's; the client still reads it (verifies)."""
    loaded_on: list[int] = []
    real = ssl.SSLContext.load_verify_locations

    def noting(self, *a, **kw):
        loaded_on.append(threading.get_ident())
        return real(self, *a, **kw)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", noting)
    srv = serve()
    loop_thread = threading.get_ident()
    async with Fleet([Target("router", url=f"http://127.0.0.1:{srv.server_port}")]) as fleet:
        opened = list(loaded_on)
        snap = await fleet.poll()
    assert opened and loop_thread not in opened, (opened, loop_thread)
    assert snap.router_errors == {} and snap.workers == []


async def test_the_fleets_client_verifies_https_against_a_ca_bundle_and_honours_ssl_cert_file(
        serve, no_proxies, tmp_path, monkeypatch):
    """An https router whose certificate no CA in the bundle vouches for is refused; named as
    trusted in ``SSL_CERT_FILE`` (httpx's ``trust_env``), the same router is read."""
    cert_file, key_file = _self_signed(tmp_path)
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert_file, key_file)
    url = f"https://127.0.0.1:{serve(tls).server_port}"
    async with Fleet([Target("router", url=url)]) as fleet:
        refused = await fleet.poll()
    assert "CERTIFICATE_VERIFY_FAILED" in refused.router_errors.get(url, ""), refused.router_errors
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
    async with Fleet([Target("router", url=url)]) as fleet:
        read = await fleet.poll()
    assert read.router_errors == {} and read.workers == []


async def test_the_fleets_requests_go_through_the_environments_proxy(serve, no_proxies, monkeypatch):
    """A router URL reached directly from this machine goes through ``HTTP_PROXY`` as the
    user's other HTTP tools would (the proxy here answers for any host, so a name that does not
    resolve is read through it)."""
    proxy = serve()
    monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{proxy.server_port}")
    url = "http://router.invalid:30000"  # .invalid never resolves: only the proxy can answer
    async with Fleet([Target("router", url=url)]) as fleet:
        snap = await fleet.poll()
    assert snap.router_errors == {} and snap.workers == []
    assert proxy.asked[0] == f"{url}/workers", proxy.asked


@pytest.fixture
def dead_proxy(no_proxies, monkeypatch):
    """Every proxy variable names a port nothing listens on: a request through it is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    for var in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(var, dead)


async def test_a_host_the_fleet_reaches_through_its_node_is_not_asked_of_the_environments_proxy(
        serve, dead_proxy):
    """A host target's engine is reached at this machine's end of its node's forward
    (127.0.0.1; ``local``: the port itself): a proxy named in the environment (here one that
    refuses every connection) cannot reach it and is not asked; the engine answers healthy."""
    engine = serve()
    async with Fleet([Target("host", host="local")], hosts={"local": engine.server_port}) as fleet:
        snap = await fleet.poll()
    [row] = snap.workers
    assert (row.url, row.engine_health) == (f"local:{engine.server_port}", "healthy"), row
    assert "/health" in engine.asked


async def test_a_loopback_router_reached_directly_is_not_asked_of_the_environments_proxy(serve, dead_proxy):
    """A router on this machine's loopback, given by its URL (no ``via``): no proxy can reach
    that loopback, so the one named in the environment is not asked; the router is read."""
    router = serve()
    url = f"http://127.0.0.1:{router.server_port}"
    async with Fleet([Target("router", url=url)]) as fleet:
        snap = await fleet.poll()
    assert snap.router_errors == {} and snap.workers == []
    assert router.asked[0] == "/workers", router.asked


async def test_an_https_worker_reached_through_a_forward_is_verified_against_its_own_name(
        serve, no_proxies, tmp_path, monkeypatch):
    """The router, seen from the node (``via``; ``local`` forwards a port to itself), lists a
    worker as ``https://localhost:PORT`` whose certificate names ``localhost`` alone. Reached
    at the forward's 127.0.0.1, it is verified against ``localhost`` (TLS SNI) and asked with
    ``Host: localhost:PORT``, as from the node: healthy. The same certificate is refused for
    a worker listed by its address, 127.0.0.1, which it does not name."""
    cert_file, key_file = _self_signed(tmp_path, "localhost")
    monkeypatch.setenv("SSL_CERT_FILE", str(cert_file))
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert_file, key_file)
    engine, router = serve(tls), serve()
    named, by_address = f"https://localhost:{engine.server_port}", f"https://127.0.0.1:{engine.server_port}"
    router.workers = [named, by_address]
    async with Fleet([Target("router", url=f"http://127.0.0.1:{router.server_port}")], via="local") as fleet:
        snap = await fleet.poll()
    rows = {row.url: row for row in snap.workers}
    assert rows[named].engine_health == "healthy", rows[named]
    assert f"localhost:{engine.server_port}" in engine.hosts, engine.hosts
    assert rows[by_address].engine_health != "healthy", rows[by_address]
    assert "CERTIFICATE_VERIFY_FAILED" in (rows[by_address].engine_detail or ""), rows[by_address]


@pytest.fixture
def held_clients(monkeypatch):
    """The fleet's clients, made by the real :func:`_http_clients` once ``release`` is set;
    ``started`` is set when the worker thread begins making them; the made clients kept in
    ``made``."""
    import mambaconsole.session.fleet as fleet_mod

    started, release, made = threading.Event(), threading.Event(), []
    real = fleet_mod._http_clients

    def held():
        started.set()
        assert release.wait(30)
        clients = real()
        made.extend(clients)
        return clients

    monkeypatch.setattr(fleet_mod, "_http_clients", held)
    yield started, release, made
    release.set()


async def _until(pred, timeout=10.0):
    import asyncio
    import time

    deadline = time.monotonic() + timeout
    while not pred() and time.monotonic() < deadline:
        await asyncio.sleep(0.02)
    return pred()


async def test_a_fleet_closed_while_its_clients_are_made_closes_them_and_asks_nothing(serve, no_proxies, held_clients):
    """The screen quits (``__aexit__``) while the worker thread still makes the clients: once
    made they are closed, and a poll after it fails without a request to the router."""
    import asyncio

    started, release, made = held_clients
    srv = serve()
    url = f"http://127.0.0.1:{srv.server_port}"
    fleet = Fleet([Target("router", url=url)])
    opening = asyncio.create_task(fleet.__aenter__())
    assert await asyncio.to_thread(started.wait, 10)
    await fleet.__aexit__(None, None, None)
    release.set()
    await opening
    assert len(made) == 2 and all(c.is_closed for c in made), made
    with pytest.raises(RuntimeError, match="client has been closed"):
        await fleet.poll()
    assert srv.asked == []


async def test_clients_made_for_an_opening_cancelled_meanwhile_are_closed(serve, no_proxies, held_clients):
    """The opening itself is cancelled (the screen's mount handler, its app torn down: a key
    cannot quit it before the handler's await returns) while the worker thread makes the
    clients: nothing will receive them, and they are closed once made."""
    import asyncio

    started, release, made = held_clients
    fleet = Fleet([Target("router", url=f"http://127.0.0.1:{serve().server_port}")])
    opening = asyncio.create_task(fleet.__aenter__())
    assert await asyncio.to_thread(started.wait, 10)
    opening.cancel()
    with pytest.raises(asyncio.CancelledError):
        await opening
    release.set()
    assert await _until(lambda: len(made) == 2 and all(c.is_closed for c in made)), made
