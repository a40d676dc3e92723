"""The console's one seam to the node: everything the workers ask of the node goes through a
:class:`Feed`, which turns the node layer's answers into :mod:`mambaconsole.state` events.

It uses the node layer (:mod:`mambaconsole.node`: run commands, stream lines, forward ports;
the run store under ``$MAMBACONSOLE_HOME/runs/``) and SGLang knowledge
(:mod:`mambaconsole.sglang`) where those exist, and HTTP through httpx on the forwarded port.
Nothing here imports Textual.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from mambaconsole.errors import ConsoleError
from mambaconsole.node.agent import agent_once, agent_record_batches, read_lines
from mambaconsole.node.base import Node, in_folder
from mambaconsole.node.runs import Run, RunStore
from mambaconsole.node.supervisor import Supervisor
from mambaconsole.sglang.text import display_text
from mambaconsole.state import (
    GpuProcess, GpuReading, GpuSnapshot, LogLines, MetricsSnapshot, NodeFacts, RunInfo,
    RunsListed, ServerInfo,
)
from mambaconsole.session.http_client import client_off_loop
from mambaconsole.session.settings import HostSettings

#: lines per LogLines batch at most (the pane redraws once per batch)
BATCH = 500
#: seconds between GPU samples of the node agent's stream (nvitop and k9s refresh every 1-2 s)
GPU_INTERVAL = 2.0

_STATE = {"starting": "starting", "running": "running", "exited": "exited", "lost": "dead",
          "adopted": "adopted", "gone": "dead", "exiting": "dead"}


@dataclass(frozen=True)
class RunStatus:
    """From a run's log stream: the node agent saw its status.json or liveness change."""

    run_id: str
    alive: bool


def run_info(run: Run) -> RunInfo:
    """A :class:`RunInfo` for the UI from the node's run record (:class:`mambaconsole.node.runs.Run`).
    ``lost`` (the wrapper died without recording an exit), ``exiting`` (the server is gone, the
    exit is being recorded) and ``gone`` (an adopted server that ended) all show as dead: never
    as running; a run whose program never started (``never_started``) as never started."""
    rec = run.record or {}

    def num(k):
        v = rec.get(k)
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    return RunInfo(
        run_id=run.run_id, argv=tuple(run.argv), started=run.started, ended=run.ended,
        exit_code=run.exit_code, outcome=rec.get("outcome"),
        state="never_started" if rec.get("never_started") else _STATE.get(run.state, run.state),
        pid=run.pid, pids=tuple(p for p in (rec.get("pids") or ()) if isinstance(p, int)),
        log_path=run.log_path, log_mtime=num("log_mtime"), log_idle_s=num("log_idle_s"),
        time_to_ready=num("time_to_ready"),
        peak_mem_mib=num("peak_mem_mib"), mean_accept_len=num("mean_accept_len"), adopted=run.adopted,
        launched_by=rec.get("launched_by"), error=rec.get("error"), stopped=isinstance(rec.get("stopped"), dict),
        log_lost=run.log_loss_text.lstrip("; ") or None,
        env=tuple(sorted((str(k), str(v)) for k, v in (rec.get("env") or {}).items())) if isinstance(rec.get("env"), dict) else (),
        cwd=rec.get("cwd") if isinstance(rec.get("cwd"), str) and rec.get("cwd") else None,
    )


def flag_value(argv, flag: str) -> str | None:
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
    return None


#: bytes of a /server_info answer read at most (SGLang's: 10-60 KiB)
SERVER_INFO_BYTES = 4 << 20
#: bytes of a /metrics body read at most (SGLang's, histograms included: well under 1 MiB)
METRICS_BYTES = 16 << 20


def _num(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def gpu_snapshot(rec: dict, now: float, *, simulated: bool = False) -> GpuSnapshot | None:
    """A :class:`GpuSnapshot` from one node-agent record (shapes in ``agent/node_agent.py``):
    ``gpu`` gives the readings, each process on the GPU whose list holds it (NVML's
    per-device process lists, or nvidia-smi's ``gpu_uuid`` mapped to the index); ``no_gpu`` and a
    failed sample (``error``) give an unavailable snapshot saying why; other records None.
    Memory in MiB; ``now`` (console clock) stamps it."""
    kind = rec.get("type")
    if kind == "gpu":
        sim = bool(rec.get("simulated"))
        gpus, procs = [], []
        for g in rec.get("gpus") or []:
            idx = int(g.get("index", len(gpus)))
            gpus.append(GpuReading(idx, display_text(str(g.get("name") or "?")), _num(g.get("memory_used_mib")) or 0.0,
                                   _num(g.get("memory_total_mib")) or 0.0, _num(g.get("utilization_pct")),
                                   simulated=sim, t=now))
            for p in g.get("processes") or []:
                pid = p.get("pid")
                if not isinstance(pid, int):
                    continue
                cmd = p.get("cmdline")
                # another user's command line: its escapes never reach the terminal
                procs.append(GpuProcess(idx, pid, _num(p.get("used_mib")) or 0.0, display_text(str(cmd or "")),
                                        resolved=bool(cmd)))
        return GpuSnapshot(tuple(gpus), tuple(procs), simulated=sim, t=now)
    if kind == "no_gpu":
        return GpuSnapshot((), available=False, reason=str(rec.get("reason") or "no GPU on this node")[:200],
                           simulated=simulated, t=now)
    if kind == "error" and "sample failed" in str(rec.get("message", "")):
        msg = str(rec.get("message"))
        if simulated:
            msg = ("simulated GPU: no readings yet" if "No such file" in msg
                   else f"simulated GPU: unreadable readings ({msg})")
        return GpuSnapshot((), available=False, reason=msg[:200], simulated=simulated, t=now)
    return None


async def _aclose(client) -> None:
    await client.aclose()


def _http_client():
    """A new ``httpx.AsyncClient`` for the server's HTTP polls (5 s timeout); made in a worker
    thread (:meth:`Feed._client`, :func:`~mambaconsole.session.http_client.client_off_loop`).

    Every URL it is given is plain http to this machine's end of an SSH forward
    (:meth:`Feed._get_body` builds them all: ``http://127.0.0.1:<forwarded port><path>``), so:

    - it trusts no certificate authority: httpx's default context loads certifi's CA bundle
      (about 28 ms of CPU, the interpreter held in 5 ms slices while the loop waits) for TLS
      these polls never use. Its context still verifies (``CERT_REQUIRED``, host names), so
      an https URL would fail on the server's certificate, never be read unverified;
    - it ignores the environment (``trust_env=False``): an ``HTTP_PROXY`` / ``ALL_PROXY`` set
      for the user's other traffic would otherwise be asked to reach 127.0.0.1 for it (and each
      proxy named builds a transport with a CA bundle of its own)."""
    import ssl

    import httpx

    no_ca = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verify_mode CERT_REQUIRED, check_hostname
    return httpx.AsyncClient(timeout=5.0, verify=no_ca, trust_env=False)


class Feed:
    """Talks to one node for the console. ``home`` is the node's MAMBACONSOLE_HOME ("" = the
    node's default); ``agent_python`` runs the stdlib agent scripts on the node, while
    ``settings.python`` is the server's python (SGLang's, used for the resolver, launches and
    the GPU reader);
    ``adopt``: record a server this user started by hand (found by its command line) in a pane
    of the host's tmux session (``settings.session``) as an adopted run; any other only on
    request (``mambaconsole runs HOST --adopt``).
    The current run is the newest live run we launched, else the newest live adopted one."""

    def __init__(self, node: Node, settings: HostSettings, *, home: str = "",
                 simulated: bool = False, clock: Callable[[], float] = time.time,
                 agent_python: str = "python3", adopt: bool = True,
                 sim_gpu_file: str | None = None) -> None:
        self.node = node
        self.settings = settings
        self.home = home
        self.simulated = simulated
        self.clock = clock
        self.adopt = adopt
        self.agent_python = agent_python
        self.sim_gpu_file = sim_gpu_file
        self.store = RunStore(node, python=agent_python, home=home or None)
        #: owns the connection: its status is what the header shows; streams resume through it
        self.link = Supervisor(node, clock=clock)
        self._warm = None
        self._facts: dict[str, dict] = {}  # node facts per model path (node_facts)
        self._warm_key: tuple = ((), None)
        self._closing_warm: set[asyncio.Future] = set()
        self._http = None  # httpx.AsyncClient, made on the first request
        self._latency = None  # sglang.latency.LatencyWindow over the /metrics polls
        self._latency_run: str | None = None  # the run whose server those polls asked
        self._local_port: dict[int, int] = {}
        self._gpu_streams = 0  # gpu_stream iterators running now (the pane's)
        self._gpu_last: GpuSnapshot | None = None
        self._gpu_sampled = asyncio.Event()  # set (and replaced) at each streamed sample

    @property
    def host(self) -> str:
        return self.node.name

    async def close(self) -> None:
        if self._warm is not None:
            with contextlib.suppress(Exception):
                await self._warm.close()
        await self.link.close()
        if self._http is not None:
            await self._http.aclose()
        await self.node.close()

    # ----------------------------------------------------------------- facts
    async def facts(self) -> NodeFacts:
        r = await self.node.run([self.settings.python, "-c",
                                 "import importlib.metadata as m\ntry: print(m.version('sglang'))\nexcept Exception: print('')"],
                                timeout=30)
        ver = r.out.strip() or None
        return NodeFacts(host=self.host, sglang_version=ver, simulated=self.simulated, python=self.settings.python)

    # ----------------------------------------------------------------- runs
    async def runs(self) -> RunsListed:
        """The node's runs (with ``adopt``, a server started by hand in the host's tmux session
        is adopted first; this user's others are named in ``not_adopted``); the current run is
        the newest live one, else the newest."""
        return self._runs_listed(await self.store.request("list", self._runs_request()))

    def _runs_request(self) -> dict:
        """The run store's ``list`` request of :meth:`runs` (``agent/runs_agent.py``): the node
        says which run is current (its ``current_run``, the one place of that rule)."""
        req: dict = ({"adopt": "session", "session": self.settings.session, "others": True} if self.adopt
                     else {"adopt": False})
        return self.store.with_home({**req, "current": True})

    @staticmethod
    def _runs_listed(result: dict) -> RunsListed:
        """The node's answer to :meth:`_runs_request` as the state's event; runs oldest first."""
        runs = sorted((Run.from_record(r) for r in result["runs"]), key=lambda r: (r.started or 0.0, r.run_id))
        return RunsListed(runs=tuple(run_info(r) for r in runs), current=result.get("current"),
                          not_adopted=tuple({k: o.get(k) for k in ("pid", "argv", "started", "tmux_session")}
                                            for o in result.get("not_adopted") or ()))

    async def first_look(self, on_gpu: Callable[[GpuSnapshot | None], None] | None = None
                         ) -> tuple[RunsListed, AsyncIterator[list[dict]] | None]:
        """:meth:`runs`, and the node agent started on the current run's log from its start as
        :meth:`tail` starts it, in ONE command on the node
        (:func:`mambaconsole.node.agent.first_look`): opening the console then waits for the
        node's command start-up once, not twice in a row (over SSH each command starts the
        login shell; its rc files may take 100-200 ms). Returns the listing and that agent's
        record batches (None without a current run), which the caller passes to
        ``tail(current run, 0, first=...)`` or closes. Raises ConsoleError when the listing
        failed, NodeError when the node could not be asked.

        ``on_gpu``: the same command takes the first GPU sample (as :meth:`gpu_stream`'s, with
        :attr:`gpu_python`), and ``on_gpu`` gets it as a :class:`GpuSnapshot` when it arrives
        (it may come while the batches are read), or None once none will come."""
        from mambaconsole.node.agent import first_look
        from mambaconsole.node.runs import RunError

        kw: dict = {}
        if on_gpu is not None:
            def sampled(rec: dict | None) -> None:
                on_gpu(None if rec is None else gpu_snapshot(rec, self.clock(), simulated=bool(self.sim_gpu_file)))

            kw = dict(on_gpu=sampled, gpu_python=self.gpu_python, gpu_choice=self._gpu_choice(),
                      gpu_sim_file=self.sim_gpu_file)
        answer, batches = await first_look(self.node, self._runs_request(), **self._tail_options(0), **kw)
        if not answer.get("ok"):
            raise RunError(f"{self.node.name}: {answer.get('error')}")
        try:
            listed = self._runs_listed(answer["result"])
        except BaseException:
            if batches is not None:
                await batches.aclose()
            raise
        return listed, batches

    # ----------------------------------------------------------------- log
    def _tail_options(self, offset: int) -> dict:
        """The node agent's options of :meth:`tail` from byte ``offset``."""
        from mambaconsole.sglang.events import READY_MESSAGE

        return dict(home=self.home or None, python=self.agent_python, interval=0.0, gpu="none",
                    tail_bytes=int(self.settings.log_tail_mib * 2**20) if offset == 0 else 0,
                    head_until=READY_MESSAGE)

    async def tail(self, run: RunInfo, offset: int, *,
                   first: AsyncIterator[list[dict]] | None = None) -> AsyncIterator[LogLines | RunStatus]:
        """Follow ``run``'s log from byte ``offset``; yields batches of consecutive complete
        lines with their byte offsets, and a :class:`RunStatus` whenever the node agent saw the
        run's status.json or liveness change (the console re-reads the runs then). It runs through the node's :class:`Supervisor`
        (:attr:`link`): across a dropped connection it resumes from the offset just past the last
        line received, so no line is lost or repeated; ``LogLines.reset`` marks a log that was
        truncated or rotated (its lines restart at offset 0).

        From offset 0, a log longer than its boot and the last ``settings.log_tail_mib`` MiB is
        opened from its head (up to the first ready line: the ServerArgs dump, the memory lines,
        the ready summary) and that tail, not its middle (``LogLines.skipped``, the byte range
        left out; :meth:`read_page` pages back into it). Each batch says the file's size on the
        node (``size``); after each (re)open, where its whole lines ended then (``opened_size``, the
        agent's ``lines_end``: the lines before it are history; a last line without its newline
        yet, such as a progress bar, is not) and how to read the log's own timestamps on this clock (``time_shift``).
        ``first``: the record batches of the agent :meth:`first_look` started for this run."""
        opts = self._tail_options(offset)
        stream = self.link.follow_log(run_id=run.run_id, offset=offset, home=opts["home"], python=opts["python"],
                                      tail_bytes=opts["tail_bytes"], head_until=opts["head_until"], first=first)
        try:
            async for fb in stream:
                opened = shift = None
                if fb.opened is not None:
                    # history: the whole lines the file held (a last line without its newline comes later)
                    opened = int(fb.opened.get("lines_end", fb.opened.get("size")) or 0)
                    node_t, utc = _num(fb.opened.get("time")), _num(fb.opened.get("utc_offset"))
                    if node_t is not None and utc is not None:
                        shift = (self.clock() - node_t) - utc  # node local time -> this console's clock
                if fb.lines or fb.reset or fb.skipped or opened is not None:
                    yield LogLines(run.run_id, fb.lines, reset=bool(fb.reset), size=fb.size, skipped=fb.skipped,
                                   opened_size=opened, time_shift=shift)
                if fb.run is not None:
                    yield RunStatus(run.run_id, bool(fb.run.get("alive")))
        finally:
            await stream.aclose()

    async def read_page(self, run: RunInfo, offset: int, end: int, aligned: bool) -> LogLines:
        """Paging back: the whole lines of ``run``'s log in bytes ``[offset, end)``
        (:meth:`ConsoleState.page_back_range`), as one :class:`LogLines` with ``earlier`` set."""
        lines = await read_lines(self.node, run.log_path, offset, end, aligned=aligned)
        return LogLines(run.run_id, tuple(lines), earlier=(offset, end))

    async def run_summary(self, run: RunInfo, max_bytes: int = 8 << 20) -> dict:
        """What a run's log says, for the history: ``outcome`` (sglang.summary's words),
        ``time_to_ready`` (seconds from the log's first timestamp to the ready line),
        ``budget_gb`` (the memory budget the log reported: weights + KV + Mamba + graphs, in
        SGLang's "GB" as it prints them, 2**30 bytes; a budget, not a measured peak),
        ``mean_accept_len``, ``oom_in_use_gib`` (what PyTorch's OOM message says the process had
        in use when it failed, GiB; None without one), ``failure``. Reads at most ``max_bytes`` of the log
        (its head and its tail when longer)."""
        from mambaconsole.sglang.events import LogParser
        from mambaconsole.sglang.summary import summarize
        from mambaconsole.sglang.text import envelope_seconds

        half = max_bytes // 2
        r = await self.node.run(["sh", "-c", 'f="$1"; n=$(wc -c < "$f"); if [ "$n" -le "$2" ]; then cat "$f"; '
                                 'else head -c "$3" "$f"; printf "\\n"; tail -c "$3" "$f"; fi',
                                 "sh", run.log_path, str(max_bytes), str(half)], timeout=60)
        if not r.ok:
            return {"outcome": run.outcome or "unknown", "time_to_ready": None, "budget_gb": None, "mean_accept_len": None}
        parser = LogParser()
        events = []
        for line in r.out.splitlines():
            events.extend(parser.feed(line))
        events.extend(parser.flush())
        s = summarize(events)
        first = next((e.time for e in events if e.time), None)
        ready = s.last.ready_time
        ttr = None
        if first and ready:
            t0, t1 = envelope_seconds(first), envelope_seconds(ready)
            ttr = t1 - t0 if t0 is not None and t1 is not None else None
        mem = s.memory_gb()
        parts = [mem.get(k) for k in ("weights", "kv_cache", "mamba_total", "cuda_graph")]
        budget = round(sum(p for p in parts if p), 2) if any(parts) else None
        oom = s.failure.oom if s.failure is not None else None
        return {"outcome": s.outcome, "time_to_ready": ttr, "budget_gb": budget, "mean_accept_len": s.spec.mean_accept_len,
                "oom_in_use_gib": oom.in_use_gib if oom is not None else None,
                "failure": (f"{s.failure.exception or ''}: {s.failure.message or ''}".strip(": ")
                            + (f" ({s.failure.where})" if s.failure.where else "") if s.failure else None)}

    # ----------------------------------------------------------------- gpu
    @property
    def gpu_python(self) -> str:
        """The python the GPU reader runs with: the server's (``settings.python``, the node's
        ``--python``), where SGLang's nvidia-ml-py (pynvml) is installed; the node's default
        ``python3`` often has none and would read the GPUs through nvidia-smi or not at all."""
        return self.settings.python or self.agent_python

    def _gpu_choice(self) -> str:
        return "sim" if self.sim_gpu_file else "auto"

    async def gpu_stream(self, interval: float = GPU_INTERVAL) -> AsyncIterator[GpuSnapshot]:
        """GPU memory, utilisation and processes every ``interval`` seconds from ONE long-lived
        node agent (``agent/node_agent.py``: pynvml, else ``nvidia-smi``, or the simulated
        node's GPU file), until the iterator is closed (that stops the agent). Raises
        :class:`~mambaconsole.node.base.NodeError` when the stream breaks (connection lost,
        agent cannot start); the caller starts it again."""
        batches = agent_record_batches(self.node, python=self.gpu_python, interval=interval,
                                       gpu=self._gpu_choice(), sim_file=self.sim_gpu_file)
        self._gpu_streams += 1
        try:
            async for recs in batches:
                snap = None
                for rec in recs:  # a late batch: only its newest sample matters
                    snap = gpu_snapshot(rec, self.clock(), simulated=bool(self.sim_gpu_file)) or snap
                if snap is not None:
                    self._gpu_last = snap
                    sampled, self._gpu_sampled = self._gpu_sampled, asyncio.Event()
                    sampled.set()
                    yield snap
        finally:
            self._gpu_streams -= 1
            await batches.aclose()

    async def next_gpu(self, wait: float) -> GpuSnapshot:
        """A GPU sample taken after this call: the running :meth:`gpu_stream`'s next one (the
        pane's stream, at its interval) when one comes within ``wait`` seconds, else one short
        agent run (:meth:`gpu`): the relaunch's wait for free GPU memory reads the stream the
        console already has instead of starting an agent on the node every second."""
        if self._gpu_streams:
            sampled = self._gpu_sampled
            try:
                await asyncio.wait_for(sampled.wait(), wait)
            except asyncio.TimeoutError:
                pass
            else:
                if self._gpu_last is not None:
                    return self._gpu_last
        return await self.gpu()

    async def gpu(self) -> GpuSnapshot:
        """One GPU sample (see :meth:`gpu_stream`) from a short agent run: what
        :meth:`next_gpu` falls back to when no stream is running (or it went quiet)."""
        hello, rec = await agent_once(self.node, python=self.gpu_python, gpu=self._gpu_choice(),
                                      sim_file=self.sim_gpu_file, timeout=30)
        snap = gpu_snapshot(rec, self.clock(), simulated=bool(self.sim_gpu_file))
        return snap or GpuSnapshot((), available=False, reason="no GPU record from the node agent", t=self.clock())

    # ----------------------------------------------------------------- http
    def port_of(self, run: RunInfo | None) -> int:
        if run is not None:
            v = flag_value(run.argv, "--port")
            if v and v.isdigit():
                return int(v)
        return self.settings.port

    async def _client(self):
        """The feed's ``httpx.AsyncClient`` (:func:`_http_client`), made on first use in a
        worker thread (:func:`~mambaconsole.session.http_client.client_off_loop`): importing
        httpx and anyio's asyncio backend take 30-40 ms of CPU where
        :func:`mambaconsole.opening.preload` has not done it yet, which on the event loop would
        hold the first drawn frames and keys."""
        if self._http is None:
            client = await client_off_loop(_http_client, _aclose)
            if self._http is None:
                self._http = client
            else:  # another poll made one meanwhile
                await client.aclose()
        return self._http

    async def _get_body(self, port: int, path: str, limit: int) -> tuple[int, bytes]:
        """(status, body) of GET ``path``, reading at most ``limit`` bytes: ValueError (one
        line) for a longer body, which is not read further."""
        if port not in self._local_port:
            self._local_port[port] = await self.node.forward_port(port)
        http = await self._client()
        async with http.stream("GET", f"http://127.0.0.1:{self._local_port[port]}{path}") as r:
            body = bytearray()
            async for chunk in r.aiter_bytes():
                body += chunk
                if len(body) > limit:
                    raise ValueError(f"{path} answered more than {limit >> 20} MiB: not read")
            return r.status_code, bytes(body)

    async def server_info(self, port: int) -> ServerInfo:
        """A poll of ``/server_info`` (``/get_server_info`` before 0.5.x): its JSON object, or
        ``error`` (one line) when it did not answer, answered more than SERVER_INFO_BYTES,
        nested deeper than :data:`mambaconsole.bounded.MAX_JSON_DEPTH`, or answered JSON that
        is not an object (a list, a string, a number)."""
        await self._client()  # imports httpx off the event loop
        import httpx

        from mambaconsole.bounded import json_loads

        try:
            status, body = await self._get_body(port, "/server_info", SERVER_INFO_BYTES)
            if status == 404:
                status, body = await self._get_body(port, "/get_server_info", SERVER_INFO_BYTES)
            if status >= 400:
                return ServerInfo(None, error=f"HTTP {status}", t=self.clock())
            data = json_loads(body)
            if not isinstance(data, dict):
                return ServerInfo(None, error=f"answered a JSON {type(data).__name__}, not an object", t=self.clock())
            return ServerInfo(data, t=self.clock())
        except (httpx.HTTPError, ValueError, UnicodeDecodeError) as exc:
            return ServerInfo(None, error=f"{type(exc).__name__}: {exc}"[:200], t=self.clock())

    async def metrics(self, port: int, run_id: str | None = None) -> MetricsSnapshot:
        """``/metrics`` through :func:`mambaconsole.sglang.metrics.parse_metrics` (the rank-0
        series of each metric; NaN is "no data" and left out); a body longer than
        METRICS_BYTES is an error, not read. ``run_id``: the run whose server answers; another
        run starts a new TTFT/ITL window (a relaunched server whose counters never rose past
        the previous one's shows no counter reset)."""
        await self._client()  # imports httpx off the event loop
        import httpx

        from mambaconsole.sglang.metrics import COUNTERS, parse_metrics

        try:
            status, body = await self._get_body(port, "/metrics", METRICS_BYTES)
            if status == 404:
                return MetricsSnapshot({}, error="metrics disabled (404)", t=self.clock())
            if status >= 400:
                return MetricsSnapshot({}, error=f"HTTP {status}", t=self.clock())
            snap = parse_metrics(body)
            values = {name: v for name in snap.samples if (v := snap.value(name)) is not None}
            if self._latency is None or run_id != self._latency_run:
                from mambaconsole.sglang.latency import LatencyWindow

                self._latency, self._latency_run = LatencyWindow(), run_id
            self._latency.add(self.clock(), snap)
            totals = {k: v for k, name in COUNTERS.items() if (v := snap.total(name)) is not None}
            return MetricsSnapshot(values, t=self.clock(), latency=self._latency.latency(), totals=totals)
        except (httpx.HTTPError, ValueError) as exc:
            return MetricsSnapshot({}, error=f"{type(exc).__name__}: {exc}"[:200], t=self.clock())

    # ----------------------------------------------------------------- resolver
    @property
    def is_sim(self) -> bool:
        """The node's "SGLang" is the simulated one (``python -m mambaconsole.sim``): its own
        ``--sim-resolve`` / ``--sim-params`` answer in the resolver's JSON shapes."""
        return self.settings.module == "mambaconsole.sim"

    async def _sim_json(self, args: list[str]) -> Any:
        r = await self.node.run([self.settings.python, "-m", "mambaconsole.sim", *args], timeout=60)
        try:
            return json.loads(r.out)
        except ValueError:
            raise ConsoleError(f"simulated resolver failed: {(r.err.strip().splitlines() or ['no output'])[-1]}") from None

    def run_environment(self, run: RunInfo | None) -> tuple[dict[str, str], str | None]:
        """The extra environment and working folder a server of ``run`` runs with, the one rule
        for every use (pre-flight, ServerArgs resolution, parser options, source view, relaunch,
        ``R``): the host settings' ``env`` overlaid with the run's own ``env.json``, and the run's
        ``cwd``, else the settings' ``workdir``; with no run, the settings' alone. ``None`` folder:
        the node's default (the login folder)."""
        env = dict(self.settings.env or {})
        if run is not None:
            env.update(dict(run.env))
        cwd = (run.cwd if run is not None else None) or self.settings.workdir or None
        return env, cwd

    async def resolve(self, args: list[str], *, env: dict[str, str] | None = None, cwd: str | None = None) -> dict:
        """The resolver's JSON (issue-4 shape) for the SGLang ``args`` on the node: the values
        SGLang will use and who set them, or its error; run with ``env`` and in ``cwd`` (a run's,
        :meth:`run_environment`; default: the settings'). Raises ConsoleError (one line) when the
        resolver cannot run."""
        if self.is_sim:
            return await self._sim_json(["--sim-resolve", *args])
        return await self.warm_resolver(env, cwd).resolve(list(args))

    async def node_facts(self, model_path: str, args: list[str] | None = None, *, env: dict[str, str] | None = None,
                         cwd: str | None = None) -> dict:
        """What a memory plan reads on the node (``mambaconsole.agent.node_facts``' JSON): the
        model's config.json and weights' bytes, the GPUs' memory, read with the run's ``env``
        and in its ``cwd`` (:meth:`run_environment`: a relative ``--model-path`` or ``HF_HOME``
        is the run's); the simulated node answers ``--sim-facts`` for its model and GPU
        (``args``: the run's, for ``--sim-gpu``). Cached per model path and folder for the
        session (the GPU's free memory is read once: the plan assumes the old server's memory
        is given back)."""
        cache = self._facts
        key = f"{cwd or ''}\0{model_path}"
        if key in cache:
            return cache[key]
        if self.is_sim:
            gpu = flag_value(args or [], "--sim-gpu")
            facts = await self._sim_json(["--sim-facts"] + (["--sim-gpu", gpu] if gpu else []))
        else:
            from mambaconsole.node.runs import agent_script

            r = await self.node.run([self.settings.python, "-u", "-", model_path], input=agent_script("node_facts.py"),
                                    env=env if env is not None else (self.settings.env or None), cwd=cwd, timeout=60)
            try:
                facts = json.loads(r.out.strip().splitlines()[-1])
            except (ValueError, IndexError):
                raise ConsoleError(f"node facts failed: {(r.err.strip().splitlines() or ['no output'])[-1]}") from None
        cache[key] = facts
        return facts

    async def memory_plan(self, resolved: dict, args: list[str] | None = None, *, env: dict[str, str] | None = None,
                          cwd: str | None = None) -> dict:
        """For a resolve result that SGLang accepted: ``{"memory_plan": ...}``
        (:func:`mambaconsole.sglang.budget.plan_from_node` on :meth:`node_facts`), or
        ``{"memory_plan_error": why}`` when no prediction can be made (no config.json, no GPU
        readable, ...). Never raises: the arguments' verdict stands without it."""
        from mambaconsole.sglang.budget import plan_from_node

        try:
            model = str((resolved["fields"].get("model_path") or {}).get("value") or "")
            facts = await self.node_facts(model, args, env=env, cwd=cwd)
            return {"memory_plan": plan_from_node({**resolved, "simulated": self.is_sim or resolved.get("simulated")},
                                                  facts)}
        except Exception as exc:  # noqa: BLE001 - any failure only means no prediction
            return {"memory_plan_error": str(exc)[:200]}

    async def params(self, args: list[str] | None = None, *, env: dict[str, str] | None = None,
                     cwd: str | None = None) -> list[dict]:
        """The node's SGLang parser options (option_strings, dest, default, choices, type,
        nargs, help) for the editor form; ``args`` (the current run's) may name the simulated
        version."""
        if self.is_sim:
            version = flag_value(args or [], "--sim-version")
            return await self._sim_json(["--sim-params"] + (["--sim-version", version] if version else []))
        answer = await self.warm_resolver(env, cwd).params()
        return [p for p in answer.get("params", []) if not p.get("hidden")]

    def warm_resolver(self, env: dict[str, str] | None = None, cwd: str | None = None):
        """The node's warm resolver (:class:`mambaconsole.resolve.WarmResolver`) with the server's
        python, in ``env`` and ``cwd`` (default: the settings' :meth:`run_environment` with no run);
        one at a time: asked for another environment or folder (another run's), the old one is
        closed (its process ends with its channel) and a new one starts on first use. Closed with
        the feed."""
        if env is None and cwd is None:
            env, cwd = self.run_environment(None)
        key = (tuple(sorted((env or {}).items())), cwd or None)
        if self._warm is not None and self._warm_key != key:
            old, self._warm = self._warm, None
            task = asyncio.ensure_future(old.close())
            self._closing_warm.add(task)
            task.add_done_callback(self._closing_warm.discard)
        if self._warm is None:
            from mambaconsole.resolve import WarmResolver

            self._warm = WarmResolver(self.node, self.settings.python, env=dict(env or {}) or None, cwd=cwd)
            self._warm_key = key
        return self._warm

    async def read_source(self, file: str, line: int, context: int = 12, *, env: dict[str, str] | None = None,
                          cwd: str | None = None) -> str:
        """Lines ``line-context .. line+context`` of SGLang's ``file`` (relative to the node
        python's site-packages), numbered, the writer line marked with ``>``. Raises ConsoleError
        ``not found on the node: FILE (searched PYTHON: sglang DIR)`` when no such file is on
        that python's ``sys.path``."""
        script = (
            "import sys, os, sysconfig\n"
            "rel, ln, ctx = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])\n"
            "paths = [rel] if os.path.isabs(rel) else [os.path.join(p, rel) for p in sys.path if p]\n"
            "for p in paths:\n"
            "    if os.path.isfile(p):\n"
            "        lines = open(p, encoding='utf-8', errors='replace').read().splitlines()\n"
            "        lo, hi = max(1, ln - ctx), min(len(lines), ln + ctx)\n"
            "        for i in range(lo, hi + 1):\n"
            "            print(('>' if i == ln else ' ') + '%5d  ' % i + lines[i - 1])\n"
            "        sys.exit(0)\n"
            "import importlib.util\n"
            "try:\n"
            "    spec = importlib.util.find_spec('sglang')\n"
            "except Exception:\n"
            "    spec = None\n"
            "where = os.path.dirname(spec.origin) if spec and spec.origin else 'no sglang importable'\n"
            "sys.exit('not found on the node: %s (searched %s: sglang %s)' % (rel, sys.executable, where))\n"
        )
        r = await self.node.run(in_folder([self.settings.python, "-c", script, file, str(int(line)), str(int(context))], cwd),
                                env=env or None, timeout=30)
        if not r.ok:
            raise ConsoleError(r.err.strip().splitlines()[-1] if r.err.strip() else f"reading {file} failed")
        return r.out
