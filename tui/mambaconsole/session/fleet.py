"""The fleet: every worker behind SGLang's router (or each of several hosts' servers), as the
router sees it and as the engine itself answers. Headless (httpx + the node layer).

A TARGET is either a router URL (``http://HOST:PORT``: its ``/workers``, ``/get_loads`` and
``/engine_metrics``) or a host of the settings (``[hosts.NAME]``: the one server on its
``port``, no router). With ``via`` (an SSH host or ``local``), every URL (the router's and the
workers' it lists) is as seen from that node and is reached through an SSH port forward.

Per worker, from the engine's own endpoints: ``/health`` (200 healthy, 503 unhealthy, no
connection: dead), ``/server_info`` (``/get_server_info`` before 0.5.9; version, role from
``disaggregation_mode``, the ServerArgs for the diff), ``/v1/loads`` (0.5.23+: running, queued,
accept length, GPU memory) and ``/metrics`` (usage, accept length, TTFT/ITL histograms). What
the engine does not answer is taken from the router where the router has it, and says so
(``source``); what neither gives is None.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from mambaconsole.errors import ConsoleError
from mambaconsole.session.http_client import client_off_loop
from mambaconsole.sglang import router as smg
from mambaconsole.sglang.fleet_args import ArgDifference, diff_server_args
from mambaconsole.sglang.latency import Latency, LatencyWindow
from mambaconsole.sglang.loads import EngineLoads, parse_v1_loads
from mambaconsole.sglang.metrics import MetricsSnapshot, parse_metrics
from mambaconsole.sglang.server_info import ENDPOINTS as SERVER_INFO_PATHS
from mambaconsole.sglang.server_info import ServerInfo, parse_server_info

__all__ = ["Fleet", "WorkerRow", "Disagreement", "parse_target", "Target"]

#: seconds an HTTP request to a router or an engine may take
HTTP_TIMEOUT = 3.0

#: seconds a healthy engine's /server_info is reused (its ServerArgs do not change while it
#: stays up; the big JSON is not fetched every poll)
SERVER_INFO_EVERY_S = 30.0

HEALTHY, UNHEALTHY, DEAD, NO_ANSWER = "healthy", "unhealthy", "dead", "no answer"


@dataclass(frozen=True)
class Target:
    """``kind``: ``router`` (``url``) or ``host`` (``host``: a settings host name)."""

    kind: str
    url: str | None = None
    host: str | None = None


def parse_target(text: str) -> Target:
    """``http(s)://...`` → a router; anything else → a host of the settings."""
    if text.startswith(("http://", "https://")):
        parts = urlsplit(text)
        try:
            parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
        except ValueError:
            raise ConsoleError(f"{text}: not a valid port in the router URL") from None
        if not parts.hostname:
            raise ConsoleError(f"{text}: a router URL needs a host, e.g. http://127.0.0.1:30000")
        return Target("router", url=text.rstrip("/"))
    if not text or "/" in text:
        raise ConsoleError(f"{text!r}: not a router URL (http://HOST:PORT) nor a host name")
    return Target("host", host=text)


@dataclass
class Disagreement:
    """The router and the engine say different things about ``worker``: ``what`` (health,
    role, version), ``router`` and ``engine`` what each says."""

    worker: str
    what: str
    router: str
    engine: str

    def as_json(self) -> dict[str, str]:
        return {"worker": self.worker, "what": self.what, "router": self.router, "engine": self.engine}


@dataclass
class WorkerRow:
    """One worker. ``url``: as the router names it (or the host's server URL); ``host``: the
    settings host it maps to (Enter opens the console there), None when no ``[hosts]`` entry
    matches. ``router_health``: ``healthy`` / ``unhealthy`` / None (not behind a router);
    ``engine_health``: ``healthy`` / ``unhealthy`` / ``dead`` / ``no answer``, with
    ``engine_detail`` (HTTP status or the connection error). Numbers: requests, 0..1 usage,
    GiB, seconds; ``*_source`` says which endpoint a value came from. ``data_age_s``: seconds
    since the engine last answered (None: never)."""

    url: str
    role: str = "regular"
    role_source: str = "router"
    host: str | None = None
    router_health: str | None = None
    router_status: str | None = None
    engine_health: str = NO_ANSWER
    engine_detail: str = ""
    version: str | None = None
    version_source: str | None = None
    running: int | None = None
    queued: int | None = None
    load_source: str | None = None
    kv_usage: float | None = None
    mamba_usage: float | None = None
    accept_length: float | None = None
    gpu_weights_gib: float | None = None
    gpu_kv_gib: float | None = None
    latency: Latency = field(default_factory=Latency)
    args: dict[str, Any] | None = None
    answered_at: float | None = None
    data_age_s: float | None = None

    def as_json(self) -> dict[str, Any]:
        lat = self.latency
        return {
            "url": self.url, "role": self.role, "role_source": self.role_source, "host": self.host,
            "router_health": self.router_health, "router_status": self.router_status,
            "engine_health": self.engine_health, "engine_detail": self.engine_detail,
            "version": self.version, "version_source": self.version_source,
            "running": self.running, "queued": self.queued, "load_source": self.load_source,
            "kv_usage": self.kv_usage, "mamba_usage": self.mamba_usage, "accept_length": self.accept_length,
            "gpu_weights_gib": self.gpu_weights_gib, "gpu_kv_gib": self.gpu_kv_gib,
            "ttft_p50_s": lat.ttft_p50, "ttft_p99_s": lat.ttft_p99,
            "itl_p50_s": lat.itl_p50, "itl_p99_s": lat.itl_p99,
            "latency_window_s": lat.window_s, "data_age_s": self.data_age_s,
        }


#: the fleet table's columns (the CLI table and the screen), see :func:`row_cells`
COLUMNS = ("WORKER", "ROLE", "ROUTER", "ENGINE", "VERSION", "RUN", "QUEUE", "KV", "MAMBA", "ACCEPT",
           "TTFT p50/p99 ms", "ITL p50/p99 ms", "GPU GiB", "AGE")


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v * 100:.0f}%"


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v * 1000:.0f}"


def row_cells(w: "WorkerRow", *, short: bool = False) -> tuple[str, ...]:
    """The :data:`COLUMNS` texts of one worker: usage in %, latencies in ms, GPU memory as
    weights+KV GiB, ``-`` where no source gave the value. ``short`` (the screen, which says the
    rest under the table): the URL without ``http://``, the engine's health without its
    detail."""
    lat = w.latency
    engine = w.engine_health
    if w.engine_detail and w.engine_health != HEALTHY and not short:
        engine += f" ({w.engine_detail})"
    url = w.url.split("://", 1)[-1] if short else w.url
    gpu = "-" if w.gpu_weights_gib is None else f"{w.gpu_weights_gib:.1f}+{(w.gpu_kv_gib or 0):.1f}"
    return (url, w.role, w.router_health or "(no router)", engine, w.version or "-",
            "-" if w.running is None else str(w.running), "-" if w.queued is None else str(w.queued),
            _pct(w.kv_usage), _pct(w.mamba_usage), "-" if w.accept_length is None else f"{w.accept_length:.2f}",
            f"{_ms(lat.ttft_p50)}/{_ms(lat.ttft_p99)}", f"{_ms(lat.itl_p50)}/{_ms(lat.itl_p99)}",
            gpu, "-" if w.data_age_s is None else f"{w.data_age_s:.0f}s")


def difference_line(d: ArgDifference) -> str:
    """One ServerArgs difference in words: ``* field (between): worker=value, ...  - why``."""
    vals = ", ".join(f"{n}={v!r}" for n, v in d.values)
    return f"{'*' if d.matters else ' '} {d.field} ({d.between}): {vals}" + (f"  - {d.why}" if d.matters and d.why else "")


def disagreement_line(d: "Disagreement") -> str:
    return f"! {d.worker}: {d.what}: router says {d.router}, engine says {d.engine}"


@dataclass
class Snapshot:
    """One poll of the fleet: ``workers``, ``disagreements``, the ServerArgs ``differences``
    and ``router_errors`` (router URL → what went wrong)."""

    workers: list[WorkerRow]
    disagreements: list[Disagreement]
    differences: list[ArgDifference]
    router_errors: dict[str, str]
    taken_at: float

    def as_json(self) -> dict[str, Any]:
        return {
            "workers": [w.as_json() for w in self.workers],
            "disagreements": [d.as_json() for d in self.disagreements],
            "args_differences": [{"field": d.field, "between": d.between, "matters": d.matters, "why": d.why,
                                  "values": {n: v for n, v in d.values}} for d in self.differences],
            "router_errors": self.router_errors,
        }


def disagreements(row: WorkerRow, engine_role: str | None, router_version: str | None) -> list[Disagreement]:
    """What the router and the engine disagree on for one worker (the rule, in one place)."""
    out = []
    if row.router_health == HEALTHY and row.engine_health != HEALTHY:
        engine = row.engine_health + (f" ({row.engine_detail})" if row.engine_detail else "")
        out.append(Disagreement(row.url, "health", HEALTHY, engine))
    elif row.router_health == UNHEALTHY and row.engine_health == HEALTHY:
        out.append(Disagreement(row.url, "health", UNHEALTHY, HEALTHY))
    if engine_role and row.router_health is not None and engine_role != row.role:
        out.append(Disagreement(row.url, "role", row.role, engine_role))
    if router_version and row.version_source == "engine" and row.version and router_version != row.version:
        out.append(Disagreement(row.url, "version", router_version, row.version))
    return out


def _http_clients():
    """``(direct, forwarded)``: two new ``httpx.AsyncClient`` for the fleet's requests
    (:data:`HTTP_TIMEOUT`), both verifying TLS as httpx does by default, unlike the feed's
    (:func:`mambaconsole.session.feed._http_client`): a router URL given as https://
    (:func:`parse_target`), and the worker URLs a router lists, may be TLS, verified against
    certifi's CA bundle or ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` (one SSL context for both:
    20-28 ms of CPU, once per fleet).

    - ``direct``, for a URL this machine reaches itself: the environment's proxies
      (``HTTP_PROXY``, ``NO_PROXY`` ...) apply, as for the user's other HTTP tools;
    - ``forwarded``, for this machine's end of a node's forward (``127.0.0.1:<port>``,
      :meth:`Fleet._local`) and a loopback URL: none apply (``trust_env=False``); a proxy
      cannot reach this machine's loopback."""
    import httpx

    tls = httpx.create_ssl_context()  # httpx's default: trust_env, so SSL_CERT_FILE is read
    return (httpx.AsyncClient(timeout=HTTP_TIMEOUT, verify=tls),
            httpx.AsyncClient(timeout=HTTP_TIMEOUT, verify=tls, trust_env=False))


def _is_loopback(host: str | None) -> bool:
    """``localhost``, or an address in 127.0.0.0/8 or ``::1``."""
    import ipaddress

    if host is None:
        return False
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _close_clients(clients) -> None:
    """Closes the clients of :func:`_http_clients` (None: not made)."""
    for client in clients:
        if client is not None:
            await client.aclose()


def _connect_error(exc: BaseException) -> str:
    """``connection refused`` when the OS refused the connection (nothing listens on the
    port: the engine's HTTP server is gone), else the error's own words."""
    seen = exc
    while seen is not None:
        if isinstance(seen, ConnectionRefusedError) or "refused" in str(seen).lower():
            return "connection refused"
        seen = seen.__cause__ or seen.__context__
    return str(exc) or type(exc).__name__


def _role_of(info: ServerInfo | None) -> str | None:
    if info is None:
        return None
    mode = info.effective_args.get("disaggregation_mode", info.internal.get("disaggregation_mode"))
    if mode in (None, "null", "none"):
        return "regular" if "disaggregation_mode" in info.effective_args else None
    return str(mode)


class Fleet:
    """Polls ``targets``. ``hosts``: settings host name → its HTTP port (to map worker URLs
    to hosts and to reach ``host`` targets); ``via``: the node the URLs are seen from (None:
    this machine). Use ``async with Fleet(...) as f: snap = await f.poll()``."""

    def __init__(self, targets: list[Target], *, hosts: dict[str, int] | None = None, via: str | None = None,
                 window_s: float = 60.0, clock=time.monotonic) -> None:
        if not targets:
            raise ConsoleError("fleet: give at least one TARGET (a router URL or a host)")
        self.targets = targets
        self.hosts = dict(hosts or {})
        self.via = via
        self.window_s = window_s
        self.clock = clock
        self._nodes: dict[str, Any] = {}
        self._http = None  # httpx.AsyncClient for the URLs reached directly (__aenter__)
        self._forwarded_http = None  # ... and for the local ends of node forwards, loopback URLs
        #: url as shown → (node name or None = this machine, url as seen from that node)
        self._reach: dict[str, tuple[str | None, str]] = {}
        self._ports: dict[tuple[str | None, str, int], int] = {}
        self._windows: dict[str, LatencyWindow] = {}
        self._answered: dict[str, float] = {}
        self._info: dict[str, tuple[float, ServerInfo]] = {}  # url -> (read at, /server_info)
        self._closed = False  # __aexit__ ran: clients made after it are closed at once

    async def __aenter__(self) -> "Fleet":
        """Makes the HTTP clients (:func:`_http_clients`) in a worker thread
        (:func:`~mambaconsole.session.http_client.client_off_loop`): on the fleet screen's
        event loop their CA bundle and imports would stall the first frames. Closed
        (:meth:`__aexit__`: the screen quit) while they were made, it closes them: a poll then
        fails and asks nothing."""
        clients = await client_off_loop(_http_clients, _close_clients)
        if self._closed:
            await _close_clients(clients)
        self._http, self._forwarded_http = clients
        return self

    async def __aexit__(self, *exc) -> None:
        self._closed = True
        await _close_clients((self._http, self._forwarded_http))
        for node in self._nodes.values():
            await node.close()
        self._nodes.clear()

    # ------------------------------------------------------------ reaching URLs
    async def _local(self, url: str) -> tuple[str, str | None]:
        """``url`` (as shown) as this machine reaches it, and the URL as seen from the node
        when reached through that node's SSH forward (``via``, or a host target's own node):
        ``("http://127.0.0.1:<local port>", "http://HOST:PORT")``; directly: ``(url, None)``."""
        node_name, remote = self._reach.get(url, (self.via, url))
        if node_name is None:
            return remote, None
        parts = urlsplit(remote)
        port = parts.port or (443 if parts.scheme == "https" else 80)
        key = (node_name, parts.hostname or "127.0.0.1", port)
        if key not in self._ports:
            node = self._nodes.get(node_name)
            if node is None:
                from mambaconsole.node import connect

                node = self._nodes[node_name] = await connect(node_name)
            self._ports[key] = await node.forward_port(port, key[1])
        return urlunsplit((parts.scheme, f"127.0.0.1:{self._ports[key]}", parts.path, "", "")), remote

    async def _get(self, url: str, path: str):
        """``GET url + path``: the response, or one line saying why none came. Through a
        forward the request is the one the node would send: ``Host`` names the URL's host and
        port, and an https server's certificate is checked against that host name (TLS SNI),
        not against the forward's 127.0.0.1. A loopback URL reached directly ignores the
        environment's proxies, as a forward's local end does: no proxy can reach this
        machine's loopback."""
        import httpx

        from mambaconsole.node import NodeError

        try:
            base, remote = await self._local(url)
        except NodeError as exc:
            return str(exc)
        try:
            if remote is None:
                client = self._forwarded_http if _is_loopback(urlsplit(base).hostname) else self._http
                return await client.get(base + path)
            seen = urlsplit(remote)
            host = seen.hostname or "127.0.0.1"
            named = f"[{host}]" if ":" in host else host
            return await self._forwarded_http.get(
                base + path, headers={"Host": named if seen.port is None else f"{named}:{seen.port}"},
                extensions={"sni_hostname": host} if seen.scheme == "https" else None)
        except httpx.TimeoutException:
            return "timeout"
        except httpx.ConnectError as exc:
            return _connect_error(exc)
        except httpx.HTTPError as exc:
            return str(exc) or type(exc).__name__

    def host_for(self, url: str) -> str | None:
        """The settings host a worker URL maps to: a ``[hosts.NAME]`` whose name is the URL's
        host name and whose ``port`` is the URL's port; else a loopback URL is on the node it is
        seen from: the ``via`` host, or ``local`` (this machine; Enter passes the URL's port).
        None when nothing matches."""
        parts = urlsplit(url)
        for name, port in self.hosts.items():
            if name == parts.hostname and port == parts.port:
                return name
        if parts.hostname in ("127.0.0.1", "localhost", "::1"):
            return self.via if self.via is not None else "local"
        return None

    # ------------------------------------------------------------ polling
    async def _router(self, url: str) -> tuple[list[smg.RouterWorker], dict[str, smg.WorkerLoad], dict[str, MetricsSnapshot], str | None]:
        r = await self._get(url, "/workers")
        if isinstance(r, str):
            return [], {}, {}, f"{url}/workers: {r}"
        if r.status_code != 200:
            return [], {}, {}, f"{url}/workers: HTTP {r.status_code}"
        try:
            workers = smg.parse_workers(r.content)
        except ConsoleError as exc:
            return [], {}, {}, str(exc)
        loads: dict[str, smg.WorkerLoad] = {}
        metrics: dict[str, MetricsSnapshot] = {}
        lr, mr = await asyncio.gather(self._get(url, "/get_loads"), self._get(url, "/engine_metrics"))
        if not isinstance(lr, str) and lr.status_code == 200:
            try:
                loads = smg.parse_loads(lr.content)
            except ConsoleError:
                loads = {}
        if not isinstance(mr, str) and mr.status_code == 200:
            metrics = smg.split_engine_metrics(mr.content)
        return workers, loads, metrics, None

    async def _engine(self, url: str) -> tuple[Any, ServerInfo | None, EngineLoads | None, MetricsSnapshot | None]:
        health, loads_r, metrics_r = await asyncio.gather(
            self._get(url, "/health"), self._get(url, "/v1/loads"), self._get(url, "/metrics"))
        info = None
        cached = self._info.get(url)
        healthy = not isinstance(health, str) and health.status_code == 200
        if healthy and cached is not None and cached[0] > self.clock() - SERVER_INFO_EVERY_S:
            info = cached[1]
        elif not isinstance(health, str):
            for path in SERVER_INFO_PATHS:
                r = await self._get(url, path)
                if not isinstance(r, str) and r.status_code == 200:
                    try:
                        info = parse_server_info(r.content)
                    except ConsoleError:
                        info = None
                    break
            if healthy and info is not None:
                self._info[url] = (self.clock(), info)
        if not healthy:
            self._info.pop(url, None)  # a server coming back may be another launch: read it again
        loads = None
        if not isinstance(loads_r, str) and loads_r.status_code == 200:
            try:
                loads = parse_v1_loads(loads_r.content)
            except ConsoleError:
                loads = None
        metrics = None
        if not isinstance(metrics_r, str) and metrics_r.status_code == 200:
            metrics = parse_metrics(metrics_r.content)
        return health, info, loads, metrics

    def _fill(self, row: WorkerRow, health, info: ServerInfo | None, loads: EngineLoads | None,
              metrics: MetricsSnapshot | None, rw: smg.RouterWorker | None,
              router_load: smg.WorkerLoad | None, router_metrics: MetricsSnapshot | None, now: float) -> list[Disagreement]:
        if isinstance(health, str):
            row.engine_health = DEAD if health == "connection refused" else NO_ANSWER
            row.engine_detail = health
        else:
            row.engine_health = HEALTHY if health.status_code == 200 else UNHEALTHY
            row.engine_detail = "" if health.status_code == 200 else f"/health HTTP {health.status_code}"
            self._answered[row.url] = now
        engine_role = _role_of(info)
        if row.router_health is None and engine_role:
            row.role, row.role_source = engine_role, "engine"
        version = (loads.version if loads else None) or (info.version if info else None)
        if version:
            row.version, row.version_source = version, "engine"
        elif rw is not None and rw.version:
            row.version, row.version_source = rw.version, "router (at registration)"
        if loads is not None and loads.running is not None:
            row.running, row.queued, row.load_source = loads.running, loads.waiting, "engine /v1/loads"
        elif metrics is not None and metrics.num_running_reqs is not None:
            q = metrics.num_queue_reqs
            row.running, row.queued, row.load_source = int(metrics.num_running_reqs), None if q is None else int(q), "engine /metrics"
        elif router_load is not None and router_load.running is not None:
            row.running, row.queued, row.load_source = router_load.running, router_load.waiting, "router /get_loads"
        m = metrics if metrics is not None else router_metrics
        if m is not None:
            row.kv_usage = m.full_token_usage if m.full_token_usage is not None else m.token_usage
            row.mamba_usage = m.mamba_usage
            row.accept_length = m.spec_accept_length
            row.gpu_weights_gib = m.weight_memory_usage_gb
            row.gpu_kv_gib = m.kv_cache_memory_usage_gb
            if metrics is not None:
                self._windows.setdefault(row.url, LatencyWindow(self.window_s)).add(now, metrics)
        if loads is not None:
            if loads.accept_length is not None:
                row.accept_length = loads.accept_length
            if loads.weight_gib is not None:
                row.gpu_weights_gib, row.gpu_kv_gib = loads.weight_gib, loads.kv_cache_gib
        if row.url in self._windows:
            row.latency = self._windows[row.url].latency()
        if info is not None:
            row.args = dict(info.effective_args)
        if row.url in self._answered:
            row.data_age_s = round(now - self._answered[row.url], 3)
        return disagreements(row, engine_role, rw.version if rw else None)

    async def poll(self) -> Snapshot:
        """One look at every target; never raises for an unreachable router or engine (it
        is in the snapshot)."""
        rows: list[WorkerRow] = []
        found: list[tuple[WorkerRow, smg.RouterWorker | None, smg.WorkerLoad | None, MetricsSnapshot | None]] = []
        errors: dict[str, str] = {}
        for t in self.targets:
            if t.kind == "router":
                workers, loads, metrics, err = await self._router(t.url)
                if err:
                    errors[t.url] = err
                for w in workers:
                    row = WorkerRow(url=w.url, role=w.role, role_source="router", host=self.host_for(w.url),
                                    router_health=None if w.healthy is None else (HEALTHY if w.healthy else UNHEALTHY),
                                    router_status=w.status)
                    found.append((row, w, loads.get(w.url) or w.load, metrics.get(w.url)))
            else:
                port = self.hosts.get(t.host)
                if port is None:
                    raise ConsoleError(f"fleet: host {t.host!r} has no [hosts.{t.host}] section with a port in the settings")
                url = f"{t.host}:{port}"
                self._reach[url] = (t.host, f"http://127.0.0.1:{port}")
                found.append((WorkerRow(url=url, role_source="engine", host=t.host), None, None, None))
        now = self.clock()
        engines = await asyncio.gather(*(self._engine(row.url) for row, *_ in found))
        dis: list[Disagreement] = []
        for (row, rw, rload, rmetrics), (health, info, loads, metrics) in zip(found, engines):
            dis += self._fill(row, health, info, loads, metrics, rw, rload, rmetrics, now)
            rows.append(row)
        diffs = diff_server_args([(r.url, r.role, r.args) for r in rows])
        return Snapshot(rows, dis, diffs, errors, time.time())
