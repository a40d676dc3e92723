"""``ConsoleState``: everything the console shows, fed by typed events; widgets only read it.

No Textual here. Workers produce the events of :mod:`mambaconsole.state_events` (from the
node, the log, the HTTP endpoints and the resolver); :meth:`ConsoleState.apply` folds one
event in and returns the names of the panes whose data changed (``"header"``, ``"gpu"``,
``"args"``, ``"log"``, ``"spec"``, ``"runs"``) so the app refreshes only those.

The state is made of slices, one per data source (:mod:`mambaconsole.slices`: ``link``,
``runs``, ``log``, ``fold``, ``gpu``, ``spec``, ``server``, ``args``, ``ranks``), each owning its fields and
the handlers of its events; :data:`SLICES` says which slices' handlers take each event type and
:data:`LOG_EVENTS` which take each SGLang event of the run's log. ``ConsoleState`` is the
facade: it wires the slices, forwards the fields the panes read, and composes the claims that
need several slices (:attr:`ConsoleState.status`, :attr:`ConsoleState.failure_headline`).
Panes read selectors (public fields, properties, methods), never a ``_private`` field
(``tests/test_slices.py`` checks ``ui/`` and ``commands/``).

Units: GPU memory in MiB as NVML / ``nvidia-smi`` report it; memory-budget items in GB as
SGLang prints them (``... size: 13.50GB``, SGLang's "GB" is 2**30 bytes); times are Unix
seconds (``time.time()``); throughput in tokens/s. What the run's log says comes from
:mod:`mambaconsole.sglang` (its typed events and the run fold, the same rules as ``inspect``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mambaconsole.sglang import events as E
# the events the state is fed (re-exported: workers and tests build them from here)
from mambaconsole.state_events import (  # noqa: F401
    LogLine, LogLines, GpuReading, GpuProcess, GpuSnapshot, RunInfo, RunsListed,
    ServerInfo, MetricsSnapshot, Resolution, Connection, NodeFacts, Phase,
)

# line severity and poll access lines: SGLang / uvicorn knowledge, re-exported for the panes
from mambaconsole.sglang.log_lines import (  # noqa: F401
    POLL_PATHS, classify, is_poll_access, poll_access_flags, severities, severity,
)

# the view data and buffers live with their slices; re-exported here for the panes
from mambaconsole.slices.args import ArgRow, ArgsSlice, dp_ranks  # noqa: F401
from mambaconsole.slices.buffers import LineBuffer, ShownLine, SpecBuffer, SpecPoint, TupleBuffer  # noqa: F401
from mambaconsole.slices.fold import FoldSlice
from mambaconsole.slices.gpu import GPU_HISTORY, GPU_STALE_S, GpuSlice  # noqa: F401 - re-exported
from mambaconsole.slices.link import LinkSlice
from mambaconsole.slices.ranks import RanksRead, RanksSlice  # noqa: F401 - RanksRead re-exported
from mambaconsole.slices.log import BEHIND_BYTES, LOG_KEEP, LOG_SILENT_S, LogSlice  # noqa: F401 - re-exported
from mambaconsole.slices.runs import RunsSlice
from mambaconsole.slices.server import ServerSlice
from mambaconsole.slices.spec import COLLAPSE_LEN, COLLAPSE_RUN, RECENT_BATCHES, SPEC_KEEP, SpecSlice  # noqa: F401
from mambaconsole.units import fmt_duration  # noqa: F401 - the one duration formatter, re-exported

SOURCES = ("default", "cli", "config", "env", "derived", "overridden")

# ----------------------------------------------------------------------------- run states

#: the status words of a run whose server may still serve (the others are over)
LIVE_WORDS = frozenset({"ready", "starting", "adopted"})
#: status words that carry the exit code once the process has ended
_WITH_EXIT = frozenset({"dead", "stopped", "oom", "arg error", "crashed"})


def status_word(run: RunInfo, outcome: str | None = None, *, ready: bool = False) -> str:
    """The state word of ``run`` in the console's one vocabulary (header, history, run picker;
    ``mambaconsole runs`` prints the node's record instead, as it reads no logs): ``never
    started``, ``stopped`` (a console stopped it: :attr:`RunInfo.stopped`), ``oom``, ``arg
    error``, ``crashed``, ``dead`` (ended otherwise), ``ready``, ``adopted``, ``starting``. ``outcome`` (default
    ``run.outcome``): what the run's log says (sglang.summary's words: ``ready``, ``oom``,
    ``arg_error``, ``crashed``, ``exited``, ``unknown``); ``ready``: the ready line was seen."""
    if run.state == "never_started":
        return "never started"
    if run.stopped and (run.state in ("exited", "dead") or run.exit_code is not None):
        return "stopped"  # its end was a console's stop, whatever the log says after SIGINT
    out = outcome if outcome is not None else run.outcome
    if out in ("oom", "crashed"):
        return out
    if out == "arg_error":
        return "arg error"
    if run.state in ("exited", "dead") or run.exit_code is not None:
        return "dead"
    if ready or run.state == "ready" or out == "ready":
        return "ready"
    if run.adopted or run.state == "adopted":
        return "adopted"
    return "starting"


def state_label(word: str, exit_code: int | None = None) -> str:
    """The one wording of a state word (:func:`status_word`, or ``connection lost`` / ``no run``)
    for display: upper case, with ``exit N`` once an ended run's exit code is known
    (``READY``, ``OOM exit 137``, ``DEAD exit 130``, ``NEVER STARTED``)."""
    label = word.upper()
    if word in _WITH_EXIT and exit_code is not None:
        label += f" exit {exit_code}"
    return label


# ----------------------------------------------------------------------------- the facade


@dataclass(frozen=True)
class Slices:
    """:class:`ConsoleState`'s slices, one per data source (:mod:`mambaconsole.slices`)."""

    link: LinkSlice
    runs: RunsSlice
    log: LogSlice
    fold: FoldSlice
    gpu: GpuSlice
    spec: SpecSlice
    server: ServerSlice
    args: ArgsSlice
    ranks: RanksSlice


def _forward(slice_name: str, field_name: str, *, writable: bool = True) -> property:
    """A :class:`ConsoleState` property that reads (and, ``writable``, writes) ``field_name`` of
    its slice ``slice_name`` (the selectors the panes have always read)."""
    attr = "_" + slice_name

    def get(self: Any) -> Any:
        return getattr(getattr(self, attr), field_name)

    def put(self: Any, value: Any) -> None:
        setattr(getattr(self, attr), field_name, value)

    return property(get, put if writable else None, doc=f"``state.slices.{slice_name}.{field_name}``")


class ConsoleState:
    """The one state object the app feeds and the panes read: a facade over its slices
    (:attr:`slices`, one per data source). :meth:`apply` hands each event to its slices'
    handlers (:data:`SLICES`) and returns the panes to redraw; the fields and selectors the
    panes read are forwarded to the slice that owns them (``state.gpu`` is
    ``state.slices.gpu.snapshot``). ``clock`` gives the current time (frozen in snapshot tests)."""

    def __init__(self, host: str = "", *, clock: Callable[[], float] = time.time, log_keep: int = LOG_KEEP,
                 log_silent_s: float = LOG_SILENT_S) -> None:
        self.clock = clock
        #: SLICES / LOG_EVENTS slice names -> the slice objects their handlers are called with
        slice_of: dict[str, Any] = {}
        link = LinkSlice(host, clock)
        runs = RunsSlice(clock, self._new_run)
        fold = FoldSlice(clock, runs, self._new_boot, LOG_EVENTS, slice_of, LOG_DECODE_RUNS)
        log = LogSlice(clock, runs, fold, log_keep=log_keep, log_silent_s=log_silent_s)
        gpu = GpuSlice(clock, lambda: runs.run, link.note_simulated)
        spec = SpecSlice(fold.when_time, gpu)
        server = ServerSlice(clock, runs.note_data)
        args = ArgsSlice(server, spec)
        ranks = RanksSlice()
        #: the slices, one per data source (:mod:`mambaconsole.slices`)
        self.slices = Slices(link=link, runs=runs, log=log, fold=fold, gpu=gpu, spec=spec, server=server, args=args,
                             ranks=ranks)
        slice_of.update(vars(self.slices))
        self._slice_of = slice_of
        self._link, self._runs, self._log, self._fold = link, runs, log, fold
        self._gpu, self._spec, self._server, self._args, self._ranks = gpu, spec, server, args, ranks

    def _new_run(self) -> None:
        """The node's current run became another: every slice forgets what the previous run said."""
        for sl in (self._fold, self._log, self._spec, self._gpu, self._args, self._server, self._ranks):
            sl.new_run()

    def _new_boot(self) -> None:
        """A new boot in the same log: what the earlier boot said (budget, caps, capacity) is void."""
        for sl in (self._gpu, self._args, self._spec):
            sl.new_boot()

    # --------------------------------------------------------------- apply
    def apply(self, ev: Any) -> set[str]:
        """Fold one event in; return the panes to refresh. The event's type picks its data
        sources' handlers (:data:`SLICES`), each called with its slice."""
        entry = SLICES.get(type(ev))
        if entry is None:
            raise TypeError(f"ConsoleState cannot apply {type(ev).__name__}")
        changed = {"header"}
        for name, handler in entry:
            changed |= handler(self._slice_of[name], ev)
        return changed

    def flush_log(self) -> set[str]:
        """The log went idle: complete the pending record (a traceback at the end of the log)
        (:meth:`FoldSlice.flush <mambaconsole.slices.fold.FoldSlice.flush>`)."""
        return self._fold.flush()

    def show_log_of(self, run_id: str) -> None:
        """The log pane switches to ``run_id``'s log (run picker): start empty, from byte 0."""
        self._log.show_log_of(run_id)

    # --------------------------------------------------------------- slices' fields
    host = _forward("link", "host")
    sglang_version = _forward("link", "sglang_version")
    simulated = _forward("link", "simulated")
    python = _forward("link", "python")
    no_sglang = _forward("link", "no_sglang")
    connected = _forward("link", "connected")
    lost_since = _forward("link", "lost_since")
    connection_detail = _forward("link", "connection_detail")
    reconnect_attempts = _forward("link", "reconnect_attempts")
    retry_at = _forward("link", "retry_at")
    runs = _forward("runs", "runs")
    run = _forward("runs", "run")
    not_adopted = _forward("runs", "not_adopted")
    phase = _forward("runs", "phase")
    notice = _forward("runs", "notice")
    last_data = _forward("runs", "last_data")
    log = _forward("log", "log")
    log_run_id = _forward("log", "log_run_id")
    log_total = _forward("log", "log_total")
    log_dropped = _forward("log", "log_dropped")
    first_error_offset = _forward("log", "first_error_offset")
    log_offset = _forward("log", "log_offset")
    log_generation = _forward("log", "log_generation")
    log_size = _forward("log", "log_size")
    log_open_size = _forward("log", "log_open_size")
    log_skipped = _forward("log", "log_skipped")
    log_silent_s = _forward("log", "log_silent_s")
    fold = _forward("fold", "fold")
    ready_seen = _forward("fold", "ready_seen")
    ready_at = _forward("fold", "ready_at")
    failure = _forward("fold", "failure", writable=False)
    failure_phase = _forward("fold", "failure_phase", writable=False)
    failure_exception = _forward("fold", "failure_exception", writable=False)
    request_error = _forward("fold", "request_error", writable=False)
    request_errors = _forward("fold", "request_errors", writable=False)
    oom_seen = _forward("fold", "oom_seen", writable=False)
    oom_numbers = _forward("fold", "oom_numbers", writable=False)
    oom_site = _forward("fold", "oom_site", writable=False)
    gpu = _forward("gpu", "snapshot")
    gpu_interval_s = _forward("gpu", "interval_s")
    gpu_history = _forward("gpu", "history")
    gpu_peak_mib = _forward("gpu", "peak_mib")
    budget_gb = _forward("gpu", "budget_gb")
    spec = _forward("spec", "points")
    spec_enabled = _forward("spec", "enabled")
    spec_sum = _forward("spec", "accept_sum")
    spec_n = _forward("spec", "accept_n")
    collapsed = _forward("spec", "collapsed")
    last_batch = _forward("spec", "last_batch")
    batch_t = _forward("spec", "batch_t")
    recent_batches = _forward("spec", "recent_batches")
    mamba_pool_slots = _forward("spec", "mamba_pool_slots")
    mamba_slots_per_request = _forward("spec", "mamba_slots_per_request")
    server_info = _forward("server", "server_info")
    server_info_error = _forward("server", "server_info_error")
    metrics = _forward("server", "metrics")
    metric_totals = _forward("server", "metric_totals")
    metrics_t = _forward("server", "metrics_t")
    latency = _forward("server", "latency")
    resolution = _forward("args", "resolution")
    rows = _forward("args", "rows")
    dumped_args = _forward("args", "dumped_args")
    runtime_caps = _forward("args", "runtime_caps")
    runtime_cap_events = _forward("args", "runtime_cap_events")
    memory_plan = _forward("args", "memory_plan", writable=False)

    # --------------------------------------------------------------- selectors
    @property
    def status(self) -> str:
        """Header state word: ``connection lost``, ``ready``, ``starting``, ``crashed``, ``oom``,
        ``arg error``, ``dead`` (exited, with its exit code), ``adopted``, ``never started``,
        ``no run``.

        A run is failed (``crashed``/``oom``/``arg error``) only when (a) its process is gone
        with a non-zero (or unknown) exit code after a traceback that no batch line followed,
        or (b) SGLang's own crash evidence is in the log — a ``<Process> hit an exception``
        traceback from a scheduler / detokenizer / tokenizer manager, the SIGQUIT lines, a
        child crash, a scheduler death or watchdog timeout — and no decode/prefill batch
        line followed it. Any other traceback while the process lives is a request error
        (:attr:`request_error`, a warning): SGLang logs those and keeps serving."""
        if not self._link.connected:
            return "connection lost"
        r = self._runs.run
        if r is None:
            return "no run"
        out = r.outcome
        if out is None:
            out = self._fold.outcome()  # oom / arg_error / crashed, by the fold's one rule
        return status_word(r, out, ready=self._fold.ready_seen)

    @property
    def live(self) -> bool:
        """The current run's server may still be serving (its numbers are current)."""
        return self.status in LIVE_WORDS

    def status_label(self) -> str:
        """:attr:`status` in the one wording (:func:`state_label`)."""
        r = self._runs.run
        return state_label(self.status, r.exit_code if r is not None else None)

    @property
    def failure_headline(self) -> str | None:
        """The header's failure line: for an OOM at a known allocation, what it was allocating,
        how much, and the flags that size it with their values (``OOM allocating
        intermediate_ssm_state_cache 9.56 GiB (Mamba pool, speculative) · sized by
        --max-running-requests 16, ...``); else :attr:`failure`."""
        fold = self._fold
        site = fold.oom_site
        if site is None:
            return fold.failure
        n = fold.oom_numbers
        size = f" {n.tried_gib:.2f} GiB" if n is not None else ""
        vals = self._args.flag_values(site.flags)
        sized = ", ".join(f"{f} {'(not given)' if v is None else v}" for f, v in vals) if vals else " ".join(site.flags)
        return f"OOM allocating {site.name}{size} ({site.short}) · sized by {sized}"

    def flag_values(self, flags) -> list[tuple[str, Any]]:
        """:meth:`ArgsSlice.flag_values <mambaconsole.slices.args.ArgsSlice.flag_values>`."""
        return self._args.flag_values(flags)

    def live_values(self) -> dict[str, tuple[Any, str]]:
        """:meth:`ArgsSlice.live_values <mambaconsole.slices.args.ArgsSlice.live_values>`."""
        return self._args.live_values()

    def live_explanation(self, row: ArgRow) -> str | None:
        """:meth:`ArgsSlice.live_explanation <mambaconsole.slices.args.ArgsSlice.live_explanation>`."""
        return self._args.live_explanation(row)

    def gpu_age(self) -> float | None:
        """:meth:`GpuSlice.age <mambaconsole.slices.gpu.GpuSlice.age>`."""
        return self._gpu.age()

    def gpu_stale_age(self) -> float | None:
        """:meth:`GpuSlice.stale_age <mambaconsole.slices.gpu.GpuSlice.stale_age>`."""
        return self._gpu.stale_age()

    def peak_mib(self, run: RunInfo) -> float | None:
        """:meth:`GpuSlice.peak_of <mambaconsole.slices.gpu.GpuSlice.peak_of>`."""
        return self._gpu.peak_of(run)

    def lost_for(self) -> float | None:
        """:meth:`LinkSlice.lost_for <mambaconsole.slices.link.LinkSlice.lost_for>`."""
        return self._link.lost_for()

    def uptime(self) -> float | None:
        """:meth:`RunsSlice.uptime <mambaconsole.slices.runs.RunsSlice.uptime>`."""
        return self._runs.uptime()

    def server_pids(self) -> set[int]:
        """:meth:`RunsSlice.server_pids <mambaconsole.slices.runs.RunsSlice.server_pids>`."""
        return self._runs.server_pids()

    def mean_accept(self) -> float | None:
        """:meth:`SpecSlice.mean_accept <mambaconsole.slices.spec.SpecSlice.mean_accept>`."""
        return self._spec.mean_accept()

    def log_since(self, total: int, *, raw: bool = False) -> list[Any]:
        """:meth:`LogSlice.log_since <mambaconsole.slices.log.LogSlice.log_since>`."""
        return self._log.log_since(total, raw=raw)

    def page_back_range(self, nbytes: int = 1 << 20) -> tuple[int, int, bool] | None:
        """:meth:`LogSlice.page_back_range <mambaconsole.slices.log.LogSlice.page_back_range>`."""
        return self._log.page_back_range(nbytes)

    def reading_left(self) -> int | None:
        """:meth:`LogSlice.reading_left <mambaconsole.slices.log.LogSlice.reading_left>`."""
        return self._log.reading_left()

    def behind_bytes(self) -> int | None:
        """:meth:`LogSlice.behind_bytes <mambaconsole.slices.log.LogSlice.behind_bytes>`."""
        return self._log.behind_bytes()

    def log_is_stale(self) -> bool:
        """:meth:`LogSlice.log_is_stale <mambaconsole.slices.log.LogSlice.log_is_stale>`."""
        return self._log.log_is_stale()

    def log_silent_for(self) -> float | None:
        """:meth:`LogSlice.log_silent_for <mambaconsole.slices.log.LogSlice.log_silent_for>`."""
        return self._log.log_silent_for()


#: every event type the state folds in -> its handlers as (data source, handler), in order;
#: each handler is called with that slice of the state and returns the panes to redraw:
#: ``link`` the connection and node facts, ``runs`` the node's run history and the relaunch
#: phase, ``log`` the shown log (its current run's lines go on to ``fold``), ``gpu`` the GPU
#: readings, ``server`` the live server's HTTP answers (``link``, ``args`` and ``spec`` read
#: what they need of ``/server_info``), ``args`` the resolved ServerArgs, ``ranks`` the ranks of a
#: run across nodes
SLICES: dict[type, tuple[tuple[str, Callable[[Any, Any], set[str]]], ...]] = {
    Connection: (("link", LinkSlice.on_connection),),
    NodeFacts: (("link", LinkSlice.on_node_facts),),
    RunsListed: (("runs", RunsSlice.on_runs_listed),),
    Phase: (("runs", RunsSlice.on_phase),),
    LogLines: (("log", LogSlice.on_lines),),
    GpuSnapshot: (("gpu", GpuSlice.on_snapshot),),
    ServerInfo: (("server", ServerSlice.on_info), ("link", LinkSlice.on_server_info),
                 ("args", ArgsSlice.on_server_info), ("spec", SpecSlice.on_server_info)),
    MetricsSnapshot: (("server", ServerSlice.on_metrics),),
    Resolution: (("args", ArgsSlice.on_resolution),),
    RanksRead: (("ranks", RanksSlice.on_ranks),),
}

#: what the panes show of each event the run's log gives (:mod:`mambaconsole.sglang.events`)
#: beyond the run fold's claims: event type -> its handlers as (slice, handler), in order; a
#: subclass takes its base's entry (:class:`~mambaconsole.slices.fold.FoldSlice` dispatches)
LOG_EVENTS: dict[type, tuple[tuple[str, Callable[[Any, Any], set[str]]], ...]] = {
    E.DecodeBatch: (("spec", SpecSlice.on_decode),),
    E.WeightsLoaded: (("gpu", GpuSlice.on_weights),),
    E.MambaCacheAllocated: (("gpu", GpuSlice.on_mamba), ("spec", SpecSlice.on_mamba_pool)),
    E.KVCacheAllocated: (("gpu", GpuSlice.on_kv),),
    E.GraphCaptureEnd: (("gpu", GpuSlice.on_graphs),),
    E.ReadySummary: (("args", ArgsSlice.on_ready_summary),),
    E.ServerReady: (("fold", FoldSlice.on_ready),),
    E.FollowerReady: (("fold", FoldSlice.on_ready),),
    E.ServerArgsDump: (("args", ArgsSlice.on_args_dump),),
    E.ConcurrencyCapped: (("args", ArgsSlice.on_capped), ("spec", SpecSlice.on_capped)),
    E.Traceback: (("gpu", GpuSlice.on_traceback),),
}

#: what the panes show of a run of decode lines history's block fold read in bulk
#: (:class:`~mambaconsole.sglang.block_fold.DecodeRun`, with the ``(shift, now)`` its lines are
#: dated by): what :data:`LOG_EVENTS` gives each ``DecodeBatch``, for the run at once; the
#: other lines of such a run (prefill, access, plain text) have no entry in :data:`LOG_EVENTS`
#: (else the fold slice reads every line one at a time)
LOG_DECODE_RUNS: tuple[tuple[str, Callable[[Any, Any, Any], set[str]]], ...] = (
    ("spec", SpecSlice.on_decode_run),
)
