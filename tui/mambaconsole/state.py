"""``ConsoleState``: everything the console shows, fed by typed events; widgets only read it.

No Textual here. Workers produce the events below (from the node, the log, the HTTP
endpoints and the resolver); :meth:`ConsoleState.apply` folds one event in and returns the
names of the panes whose data changed (``"header"``, ``"gpu"``, ``"args"``, ``"log"``,
``"spec"``, ``"runs"``) so the app refreshes only those.

Units: GPU memory in MiB as NVML / ``nvidia-smi`` report it; memory-budget items in GB as
SGLang prints them (``... size: 13.50GB``, SGLang's "GB" is 2**30 bytes); times are Unix
seconds (``time.time()``); throughput in tokens/s.

Log-line understanding comes from :mod:`mambaconsole.sglang` when it is importable (its
typed events for decode batches, memory lines, ready, tracebacks); without it the log pane
still works (text and severity only) and the speculative pane stays empty.
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Callable, NamedTuple

from mambaconsole.sglang import events as E
from mambaconsole.sglang.run_fold import Failure, RunFold, failure_is_final as fold_failure_is_final
from mambaconsole.sglang.run_fold import failure_line, failure_line_of, failure_outcome
from mambaconsole.sglang.oom_site import oom_site
from mambaconsole.sglang.spec import COLLAPSE_ACCEPT_LEN, COLLAPSE_BATCHES
from mambaconsole.slices.gpu import GPU_HISTORY, GPU_STALE_S, GpuSlice  # noqa: F401 - re-exported
from mambaconsole.slices.link import LinkSlice
from mambaconsole.slices.ranks import RanksRead, RanksSlice  # noqa: F401 - RanksRead re-exported
from mambaconsole.slices.runs import RunsSlice
from mambaconsole.slices.server import ServerSlice
from mambaconsole.units import fmt_duration  # noqa: F401 - the one duration formatter, re-exported

#: lines kept in memory for the log pane, whatever the log size
LOG_KEEP = 5000
#: speculative points kept (one per decode batch line)
SPEC_KEEP = 600
#: a live server's log that has not grown for this many seconds is flagged "log silent"
LOG_SILENT_S = 300.0
# the collapse alarm is SGLang knowledge's: accept length at 1.00 for the last
# COLLAPSE_RUN speculative decode lines
COLLAPSE_LEN = COLLAPSE_ACCEPT_LEN
COLLAPSE_RUN = COLLAPSE_BATCHES

#: bytes of the node's log not yet read past which the header says the console is behind
BEHIND_BYTES = 1 << 20

#: decode lines kept for the Mamba slot estimate (sglang.capacity.HELD_WINDOW)
RECENT_BATCHES = 16

SOURCES = ("default", "cli", "config", "env", "derived", "overridden")

# ----------------------------------------------------------------------------- events


@dataclass(frozen=True)
class LogLine:
    """One line of a run's log. ``offset`` is the byte offset of its first byte in the file;
    ``nbytes`` its length in bytes without the newline (None: the UTF-8 length of ``text``,
    which differs when the line held invalid UTF-8 that ``text`` shows replaced)."""

    run_id: str
    offset: int
    text: str
    nbytes: int | None = None


@dataclass(frozen=True)
class LogLines:
    """A batch of consecutive lines of one run's log (workers batch to keep the UI cheap).
    ``lines``: :class:`LogLine` or any object with its ``offset``, ``text`` and ``nbytes`` (the
    node layer's :class:`mambaconsole.node.agent.LogLine`, taken as is: one object per line).
    ``reset``: the file was truncated or rotated; ``lines`` restart at offset 0.
    ``size``: the file's size on the node when the batch was sent (bytes; ``size`` minus the
    offset read so far is how far behind the node the console is). ``opened_size``: the reader
    (re)opened the file when it was that long: lines before it are history, read with their own
    timestamps, the log's envelope time (node local time read as UTC, see
    :func:`mambaconsole.sglang.text.envelope_seconds`) + ``time_shift`` seconds being this
    console's clock. ``skipped``: ``(offset, end)``, after these lines the bytes in between were
    not read (a long log's middle). ``earlier``: ``(offset, end)``, these lines are a page read
    back before the lines kept (they go first, and only into the log pane)."""

    run_id: str
    lines: tuple[Any, ...]
    reset: bool = False
    size: int | None = None
    opened_size: int | None = None
    time_shift: float | None = None
    skipped: tuple[int, int] | None = None
    earlier: tuple[int, int] | None = None


@dataclass(frozen=True)
class GpuReading:
    """One GPU at one time: memory in MiB (2**20 bytes, as NVML / ``nvidia-smi`` report it),
    utilisation in percent (``None`` when unknown). Two readings are equal when everything but
    the time ``t`` is (a sample that changed nothing redraws nothing)."""

    index: int
    name: str
    used_mib: float
    total_mib: float
    util: float | None = None
    simulated: bool = False
    #: when the console received it (console clock, Unix seconds); None: not known
    t: float | None = field(default=None, compare=False)


@dataclass(frozen=True)
class GpuProcess:
    """A process holding GPU memory on GPU ``gpu`` (its index, the device NVML / nvidia-smi
    listed it under), ``used_mib`` MiB. ``resolved`` is False when the node cannot map the PID
    to a process it sees (containers report host PIDs): shown labelled, never hidden."""

    gpu: int
    pid: int
    used_mib: float
    command: str = ""
    resolved: bool = True


@dataclass(frozen=True)
class GpuSnapshot:
    """All GPUs and their processes at one time; ``available`` False = the node has no GPU
    reading (``reason`` says why)."""

    gpus: tuple[GpuReading, ...]
    processes: tuple[GpuProcess, ...] = ()
    available: bool = True
    reason: str = ""
    simulated: bool = False
    t: float = field(default=0.0, compare=False)

    def max_used_mib(self) -> float | None:
        """The used memory of the fullest GPU (MiB), None without readings."""
        return max((g.used_mib for g in self.gpus), default=None) if self.available else None


@dataclass(frozen=True)
class RunInfo:
    """A run as the node keeps it under ``$MAMBACONSOLE_HOME/runs/<run_id>/``.

    ``state``: ``starting``/``running``/``ready``/``exited``/``dead``/``adopted``/``never_started``;
    ``outcome`` (when known): ``ready``/``oom``/``arg_error``/``crashed``/``exited``/``unknown``.
    ``started``/``ended`` are Unix seconds; ``log_mtime`` the log file's mtime (for the
    stale-log warning); ``pids`` the server's process ids (to mark its GPU processes)."""

    run_id: str
    argv: tuple[str, ...] = ()
    started: float | None = None
    ended: float | None = None
    exit_code: int | None = None
    state: str = "running"
    outcome: str | None = None
    pid: int | None = None
    pids: tuple[int, ...] = ()
    log_path: str = ""
    log_mtime: float | None = None
    log_idle_s: float | None = None  # seconds since the log last grew, when the node was polled
    time_to_ready: float | None = None
    #: the highest used memory of one GPU (MiB) a console saw while this run was current and
    #: alive (stored with the run on the node, see RunStore.note); None: never observed
    peak_mem_mib: float | None = None
    mean_accept_len: float | None = None
    adopted: bool = False
    launched_by: str | None = None
    error: str | None = None  # why the run store says it failed (e.g. the program could not start)
    #: a console stopped it (``mambaconsole stop``, ``S``, a relaunch): its end is "stopped"
    stopped: bool = False
    #: what the run's log could not take (a full disk on the node): "log lost 2.0 MiB (No space left on device)"
    log_lost: str | None = None
    #: the extra environment the run was started with (its ``env.json``), as sorted (name, value) pairs
    env: tuple[tuple[str, str], ...] = ()
    #: the run's working folder on the node (``status.json`` ``cwd``; None: the node's default)
    cwd: str | None = None


@dataclass(frozen=True)
class RunsListed:
    """The node's run history, oldest first; ``current`` is the run the console follows;
    ``not_adopted``: this user's servers the store left alone (outside its tmux session), each
    ``{"pid", "argv", "started", "tmux_session"}`` (see RunStore.list_with_others)."""

    runs: tuple[RunInfo, ...]
    current: str | None
    not_adopted: tuple[dict, ...] = ()


@dataclass(frozen=True)
class ServerInfo:
    """A poll of ``/server_info`` (or ``/get_server_info``): the decoded JSON object, or
    ``error`` when the server did not answer."""

    data: dict | None
    error: str | None = None
    t: float = 0.0


@dataclass(frozen=True)
class MetricsSnapshot:
    """A poll of ``/metrics``: metric name -> value (first sample), or ``error``; ``latency``:
    TTFT/ITL p50/p99 over the last minute (:class:`mambaconsole.sglang.latency.Latency`)."""

    values: dict
    error: str | None = None
    t: float = 0.0
    latency: Any = None
    #: the server's counters summed over their series (:data:`mambaconsole.sglang.metrics.COUNTERS`)
    totals: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Resolution:
    """The resolver's answer for the current run's argv (issue-4 JSON shape)."""

    result: dict
    argv: tuple[str, ...] = ()


@dataclass(frozen=True)
class Connection:
    """The link to the node: ``up`` False from ``since`` on (Unix seconds); while down,
    ``attempts`` failed reconnects so far and ``retry_at`` when the next starts (Unix seconds)."""

    up: bool
    since: float
    detail: str = ""
    attempts: int = 0
    retry_at: float | None = None


@dataclass(frozen=True)
class NodeFacts:
    """What the session learned about the node once: host name, SGLang version, simulated."""

    host: str
    sglang_version: str | None = None
    simulated: bool = False
    python: str | None = None


@dataclass(frozen=True)
class Phase:
    """A relaunch phase to show in the header (``lock``, ``stop``, ``wait-gpu``, ``start``,
    ``follow``, ``done``, ``failed``); ``text`` empty clears it."""

    name: str
    text: str = ""
    run_id: str | None = None  # the new run, once started


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


# ----------------------------------------------------------------------------- view data


@dataclass
class ArgRow:
    """One ServerArgs field for the table: ``flag`` is the CLI option (or the field name)."""

    field: str
    flag: str
    value: Any
    default: Any
    source: str
    changed_by: str = ""  # "function file:line" of the last writer, when SGLang changed it
    writer_file: str | None = None
    writer_line: int | None = None
    live: Any = None  # the value the live server reports (/server_info, its scheduler, the log)
    disagrees: bool = False
    live_from: str = ""  # where ``live`` was read: "/server_info", "scheduler", "log"
    #: False when the resolution failed (SGLang's error or a usage error): ``value`` is then the
    #: argv's or the default as parsed, not what SGLang resolved, so nothing "differs" from it
    resolved: bool = True


class SpecPoint(NamedTuple):
    """One decode batch's speculative numbers (kept in a :class:`TupleBuffer`)."""

    t: float  # console clock, Unix seconds
    accept_len: float  # tokens per request per verify step
    accept_rate: float | None
    throughput: float | None  # gen throughput, token/s


# line severity and poll access lines: SGLang / uvicorn knowledge (mambaconsole.sglang.log_lines)
from mambaconsole.sglang.log_lines import (  # noqa: E402,F401 - re-exported for the panes
    POLL_PATHS, classify, is_poll_access, poll_access_flags, severities, severity,
)


class ShownLine(NamedTuple):
    """One kept line of the shown log, as :class:`LineBuffer` hands it out."""

    offset: int  # byte offset of the line in the run's log
    text: str
    severity: str  # severity(text)
    access: bool = False  # an HTTP access line of a poll (is_poll_access)


class TupleBuffer:
    """A bounded deque of records (a NamedTuple type of atoms: numbers, strings, None), oldest
    first, for records that arrive by the thousand per second (log lines, decode batches).

    Stored as plain tuples, which the garbage collector stops tracking after their first
    collection: as tracked objects (NamedTuple or dataclass instances) a flood would promote
    thousands per second to the oldest generation and lengthen every full collection (each
    one a dropped frame). Records are built on access; iterate or index like a deque."""

    __slots__ = ("_d",)
    _make: Callable[[Iterable[Any]], Any] = tuple

    def __init__(self, lines: Iterable[tuple] = (), maxlen: int | None = None) -> None:
        self._d: deque[tuple] = deque((tuple(ln) for ln in lines), maxlen=maxlen)

    @property
    def maxlen(self) -> int | None:
        return self._d.maxlen

    def __len__(self) -> int:
        return len(self._d)

    def __bool__(self) -> bool:
        return bool(self._d)

    def __iter__(self) -> Iterator[Any]:
        return map(type(self)._make, self._d)

    def __reversed__(self) -> Iterator[Any]:
        return map(type(self)._make, reversed(self._d))

    def __getitem__(self, i: int) -> Any:
        return type(self)._make(self._d[i])

    def raw(self, i: int) -> tuple:
        """Record ``i`` as the stored plain tuple."""
        return self._d[i]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self._d)} records, maxlen={self._d.maxlen})"

    def append(self, *fields: Any) -> None:
        """Append one record, given as its fields."""
        self._d.append(fields)

    def extend(self, records: Iterable[tuple]) -> None:
        """Append records (the NamedTuple or plain tuples)."""
        self._d.extend(tuple(r) if type(r) is not tuple else r for r in records)

    def clear(self) -> None:
        self._d.clear()

    def tail(self, n: int) -> list[Any]:
        """The last ``n`` records, oldest first (costs ``n``, not the records kept)."""
        return list(map(type(self)._make, self.tail_raw(n)))

    def tail_raw(self, n: int) -> list[tuple]:
        """:meth:`tail` as the stored plain tuples (field order of the record type)."""
        if n <= 0:
            return []
        out = list(itertools.islice(reversed(self._d), n))
        out.reverse()
        return out


class LineBuffer(TupleBuffer):
    """The last ``maxlen`` lines of a log as :class:`ShownLine` (see :class:`TupleBuffer`)."""

    __slots__ = ()
    _make = ShownLine._make


class SpecBuffer(TupleBuffer):
    """The last ``maxlen`` decode batches' :class:`SpecPoint` (see :class:`TupleBuffer`)."""

    __slots__ = ()
    _make = SpecPoint._make


_UNSEEN = object()  # a log event type whose handler is not looked up yet


@dataclass(frozen=True)
class Slices:
    """:class:`ConsoleState`'s slices, one per data source (:mod:`mambaconsole.slices`)."""

    link: LinkSlice
    runs: RunsSlice
    gpu: GpuSlice
    server: ServerSlice
    ranks: RanksSlice


def _forward(slice_name: str, field_name: str) -> property:
    """A :class:`ConsoleState` property that reads and writes ``field_name`` of the slice kept
    in its ``_<slice_name>`` attribute (the panes' long-standing selectors)."""
    attr = "_" + slice_name

    def get(self: Any) -> Any:
        return getattr(getattr(self, attr), field_name)

    def put(self: Any, value: Any) -> None:
        setattr(getattr(self, attr), field_name, value)

    return property(get, put, doc=f"``state.slices.{slice_name}.{field_name}``")


class ConsoleState:
    """The one state object. ``clock`` gives the current time (frozen in snapshot tests)."""

    def __init__(self, host: str = "", *, clock: Callable[[], float] = time.time, log_keep: int = LOG_KEEP,
                 log_silent_s: float = LOG_SILENT_S) -> None:
        self.clock = clock
        self.log_silent_s = log_silent_s
        self._line_t: float | None = None  # when the current run's log last gave a line
        link = LinkSlice(host, clock)
        runs = RunsSlice(clock, self._new_run)
        gpu = GpuSlice(clock, lambda: runs.run, link.note_simulated)
        server = ServerSlice(clock, runs.note_data)
        #: the slices, one per data source (:mod:`mambaconsole.slices`)
        ranks = RanksSlice()
        self.slices = Slices(link=link, runs=runs, gpu=gpu, server=server, ranks=ranks)
        self._link, self._runs, self._gpu, self._server = link, runs, gpu, server
        #: SLICES / LOG_EVENTS slice names -> the objects their handlers are called with
        self._slice_of: dict[str, Any] = {"link": link, "runs": runs, "gpu": gpu, "server": server, "ranks": ranks,
                                          "state": self}
        self._log_view: dict[type, Callable[[Any], set[str]] | None] = {}  # LOG_EVENTS, bound
        self.log_run_id: str | None = None  # whose log the log pane shows
        # server
        self.ready_seen = False
        self.ready_at: float | None = None
        # what the current run's log says (outcome, failure, request errors): the run fold,
        # the same rules as inspect / history / report (mambaconsole.sglang.run_fold)
        self.fold = RunFold()
        self.last_batch: Any = None  # the last decode batch line (sglang.events.DecodeBatch)
        self.batch_t: float | None = None  # when it arrived (console clock)
        # args
        self.resolution: dict | None = None
        self.rows: list[ArgRow] = []
        # log
        self._log_keep = log_keep
        self.log = LineBuffer(maxlen=log_keep)
        self.log_total = 0
        self.log_dropped = 0
        self.first_error_offset: int | None = None
        self.log_offset = 0  # next byte to read of the shown run's log
        self.log_generation = 0  # bumped whenever the log pane must start over
        self.log_size: int | None = None  # the shown log's size on the node, last we heard (bytes)
        self.log_open_size: int | None = None  # its size when the reader (re)opened it
        self.log_skipped: tuple[int, int] | None = None  # (offset, end): the middle not read
        self._time_shift: float | None = None  # envelope time (as UTC) + this = console clock
        self._replaying = False  # the lines being folded are history (their own timestamps)
        # spec
        self.spec = SpecBuffer(maxlen=SPEC_KEEP)
        self.spec_enabled: bool | None = None  # None: not known yet
        self.spec_sum = 0.0
        self.spec_n = 0
        self.collapsed = False
        self._low_run = 0
        self._parser_obj: Any = None  # made on the first log line (SGLang knowledge loads then)
        # the next byte of the current run's log SGLang knowledge has not folded in yet: folding
        # is once per (run, byte offset), whatever log the pane re-reads (the run picker)
        self._understood = 0
        self.dumped_args: dict | None = None
        #: runtime values SGLang logged after resolution (the ready summary, the Mamba cap)
        self.runtime_caps: dict[str, Any] = {}
        #: the log event each runtime cap was read from (its line: ``v``'s explanation)
        self.runtime_cap_events: dict[str, Any] = {}
        # Mamba slot capacity (sglang.capacity): the last decode lines, the pool size the
        # ``Mamba Cache is allocated`` line printed, the slots per request of the cap warning
        self.recent_batches: deque[Any] = deque(maxlen=RECENT_BATCHES)
        self.mamba_pool_slots: int | None = None
        self.mamba_slots_per_request: int | None = None

    @property
    def _parser(self) -> Any:
        if self._parser_obj is None:
            self._parser_obj = E.LogParser()  # stateful: joins tracebacks, wrapped lines
        return self._parser_obj

    @_parser.setter
    def _parser(self, value: Any) -> None:
        self._parser_obj = value

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
    gpu = _forward("gpu", "snapshot")
    gpu_interval_s = _forward("gpu", "interval_s")
    gpu_history = _forward("gpu", "history")
    gpu_peak_mib = _forward("gpu", "peak_mib")
    budget_gb = _forward("gpu", "budget_gb")
    server_info = _forward("server", "server_info")
    server_info_error = _forward("server", "server_info_error")
    metrics = _forward("server", "metrics")
    metric_totals = _forward("server", "metric_totals")
    metrics_t = _forward("server", "metrics_t")
    latency = _forward("server", "latency")

    # --------------------------------------------------------------- derived
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
        if not self.connected:
            return "connection lost"
        r = self.run
        if r is None:
            return "no run"
        out = r.outcome
        f = self._failure() if out is None else None
        if f is not None:
            out = failure_outcome(f)  # oom / arg_error / crashed, by the fold's one rule
        return status_word(r, out, ready=self.ready_seen)

    @property
    def live(self) -> bool:
        """The current run's server may still be serving (its numbers are current)."""
        return self.status in LIVE_WORDS

    def status_label(self) -> str:
        """:attr:`status` in the one wording (:func:`state_label`)."""
        return state_label(self.status, self.run.exit_code if self.run is not None else None)

    def _failure(self):
        """The fold's failure of the last boot (:class:`~mambaconsole.sglang.run_fold.Failure`)
        once it ended the run: SGLang's crash evidence (a ``<Process> hit an exception``
        traceback, crash lines, a scheduler death, ...), or any traceback no batch line
        followed once the process is gone with a non-zero or unknown exit code; None while the
        process lives after a traceback that is no crash evidence (a request error)."""
        b = self.fold.last
        f = b.failure
        r = self.run
        ended_badly = self._runs.ended() and r is not None and r.exit_code != 0
        if f is not None:
            return f if (ended_badly or fold_failure_is_final(b)) else None
        ev = b.pending_error
        if ev is not None and ended_badly:
            return Failure(phase="runtime", exception=ev.exc_type, message=ev.exc_message, rank=ev.rank, event=ev)
        return None

    @property
    def failure(self) -> str | None:
        """One line naming what ended (or is ending) the run (:meth:`_failure`): ``origin:
        ExcType: message`` or the crash line; None otherwise."""
        f = self._failure()
        return failure_line(f) if f is not None else None

    @property
    def failure_phase(self) -> str | None:
        """The phase the run failed in (``args``/``load``/``startup``/``runtime``, the fold's rule)."""
        f = self._failure()
        return f.phase if f is not None else None

    @property
    def failure_exception(self) -> str | None:
        """The root cause's exception type as printed (the fold's rule), None when not shown."""
        f = self._failure()
        return f.exception if f is not None else None

    def _request_error_events(self) -> list:
        b = self.fold.last
        errs = list(b.request_errors)
        f = b.failure
        if f is not None and isinstance(f.event, E.Traceback) and self._failure() is None:
            errs.append(f.event)  # a traceback while the process lives: not (yet) what ended it
        elif self._failure() is not None and b.pending_error is not None and b.pending_error in errs:
            errs.remove(b.pending_error)
        return errs

    @property
    def request_error(self) -> str | None:
        """The last traceback the server kept serving after (or, before it served, a
        traceback while its process lives), as one line; None when none."""
        errs = self._request_error_events()
        return failure_line_of(errs[-1]) if errs else None

    @property
    def request_errors(self) -> int:
        return len(self._request_error_events())

    @property
    def oom_seen(self) -> bool:
        """The failure (:attr:`failure`) is an out-of-memory error."""
        f = self._failure()
        return f is not None and f.event is not None and bool(getattr(f.event, "oom", None))

    @property
    def oom_numbers(self):
        """PyTorch's numbers (:class:`mambaconsole.sglang.events.TorchOom`, GiB) of the OOM
        that ended the run (:attr:`oom_seen`), when its message gave them; else None."""
        f = self._failure()
        return f.oom if f is not None and self.oom_seen else None

    @property
    def oom_site(self):
        """Where the OOM that ended the run was allocating (:class:`mambaconsole.sglang.oom_site.OomSite`),
        when its traceback shows a known SGLang allocation; else None."""
        f = self._failure()
        if f is None or not self.oom_seen or not isinstance(f.event, E.Traceback):
            return None
        return oom_site(f.event.frames)

    @property
    def memory_plan(self) -> dict | None:
        """The current run's memory budget as predicted from its resolved arguments before it
        loaded (``mambaconsole plan --json``'s object, :func:`mambaconsole.sglang.budget.plan_from_node`),
        carried by its :class:`Resolution`; None when none could be made."""
        return (self.resolution or {}).get("memory_plan")

    def flag_values(self, flags) -> list[tuple[str, Any]]:
        """``(flag, resolved value)`` for each of ``flags`` the resolution has (its order)."""
        by_flag = {r.flag: r.value for r in self.rows}
        return [(f, by_flag[f]) for f in flags if f in by_flag]

    @property
    def failure_headline(self) -> str | None:
        """The header's failure line: for an OOM at a known allocation, what it was allocating,
        how much, and the flags that size it with their values (``OOM allocating
        intermediate_ssm_state_cache 9.56 GiB (Mamba pool, speculative) · sized by
        --max-running-requests 16, ...``); else :attr:`failure`."""
        site = self.oom_site
        if site is None:
            return self.failure
        n = self.oom_numbers
        size = f" {n.tried_gib:.2f} GiB" if n is not None else ""
        vals = self.flag_values(site.flags)
        sized = ", ".join(f"{f} {'(not given)' if v is None else v}" for f, v in vals) if vals else " ".join(site.flags)
        return f"OOM allocating {site.name}{size} ({site.short}) · sized by {sized}"

    def gpu_age(self) -> float | None:
        """:meth:`GpuSlice.age <mambaconsole.slices.gpu.GpuSlice.age>`."""
        return self._gpu.age()

    def gpu_stale_age(self) -> float | None:
        """:meth:`GpuSlice.stale_age <mambaconsole.slices.gpu.GpuSlice.stale_age>`."""
        return self._gpu.stale_age()

    def lost_for(self) -> float | None:
        """:meth:`LinkSlice.lost_for <mambaconsole.slices.link.LinkSlice.lost_for>`."""
        return self._link.lost_for()

    def uptime(self) -> float | None:
        """:meth:`RunsSlice.uptime <mambaconsole.slices.runs.RunsSlice.uptime>`."""
        return self._runs.uptime()

    def log_is_stale(self) -> bool:
        """The shown log is not the current run's, or its file is older than the run."""
        r = self.run
        if r is None:
            return False
        if self.log_run_id is not None and self.log_run_id != r.run_id:
            return True
        return r.log_mtime is not None and r.started is not None and r.log_mtime < r.started - 1

    def log_silent_for(self) -> float | None:
        """Seconds the current run's log has not grown while its process is alive, once that
        exceeds ``log_silent_s``; else None. Known from the node's log mtime at the last run
        poll and from lines received since."""
        r = self.run
        if r is None or r.state not in ("running", "adopted", "starting", "ready") or r.log_idle_s is None \
                or self._runs.listed_at is None:
            return None
        last = self._runs.listed_at - r.log_idle_s
        if self._line_t is not None and self.log_run_id == r.run_id:
            last = max(last, self._line_t)
        silent = self.clock() - last
        return silent if silent > self.log_silent_s else None

    def mean_accept(self) -> float | None:
        return self.spec_sum / self.spec_n if self.spec_n else None

    def server_pids(self) -> set[int]:
        """:meth:`RunsSlice.server_pids <mambaconsole.slices.runs.RunsSlice.server_pids>`."""
        return self._runs.server_pids()

    # --------------------------------------------------------------- apply
    def apply(self, ev: Any) -> set[str]:
        """Fold one event in; return the panes to refresh. The event's type picks its data
        source's handler (:data:`SLICES`), called with that slice."""
        entry = SLICES.get(type(ev))
        if entry is None:
            raise TypeError(f"ConsoleState cannot apply {type(ev).__name__}")
        changed = {"header"}
        for name, handler in entry:
            changed |= handler(self._slice_of[name], ev)
        return changed

    def peak_mib(self, run: RunInfo) -> float | None:
        """:meth:`GpuSlice.peak_of <mambaconsole.slices.gpu.GpuSlice.peak_of>`."""
        return self._gpu.peak_of(run)

    def _new_run(self) -> None:
        self.ready_seen = False
        self.ready_at = None
        self.fold = RunFold()
        self.log.clear()
        self.log_total = 0
        self.log_dropped = 0
        self.first_error_offset = None
        self.log_offset = 0
        self.log_run_id = None
        self.log_generation += 1
        self._reset_reader()
        self._line_t = None
        self.spec.clear()
        self.spec_sum = 0.0
        self.spec_n = 0
        self.spec_enabled = None
        self.collapsed = False
        self._low_run = 0
        self._gpu.new_run()
        self._parser = None  # a fresh one on the new run's first line
        self._understood = 0
        self.dumped_args = None
        self.runtime_caps = {}
        self.runtime_cap_events = {}
        self._server.new_run()
        self.last_batch = None
        self.batch_t = None
        self.recent_batches.clear()
        self.mamba_pool_slots = None
        self.mamba_slots_per_request = None

    def show_log_of(self, run_id: str) -> None:
        """The log pane switches to ``run_id``'s log (run picker): start empty, from byte 0."""
        self.log.clear()
        self.log_total = 0
        self.log_dropped = 0
        self.first_error_offset = None
        self.log_offset = 0
        self.log_run_id = run_id
        self.log_generation += 1
        self._reset_reader()

    def _reset_reader(self) -> None:
        """What the reader of the shown log said (sizes, the skipped middle, its clock)."""
        if self.log.maxlen != self._log_keep:  # paging back grew it
            self.log = LineBuffer(maxlen=self._log_keep)
        self.log_size = self.log_open_size = self.log_skipped = self._time_shift = None

    def log_since(self, total: int, *, raw: bool = False) -> list[Any]:
        """The kept lines appended after :attr:`log_total` was ``total`` (oldest first), as
        :class:`ShownLine` or (``raw``) plain ``(offset, text, severity, access)`` tuples;
        costs the lines returned, not the lines kept."""
        n = min(self.log_total - total, len(self.log))
        return self.log.tail_raw(n) if raw else self.log.tail(n)

    def _on_LogLines(self, ev: LogLines) -> set[str]:
        if self.log_run_id is None:
            self.log_run_id = ev.run_id
        if ev.run_id != self.log_run_id:
            return set()
        if ev.earlier is not None:
            return self._earlier(ev)
        changed = {"log"}
        following_current = self.run is not None and ev.run_id == self.run.run_id
        if ev.opened_size is not None:
            self.log_open_size, self._time_shift = ev.opened_size, ev.time_shift
        if ev.size is not None:
            self.log_size = ev.size
        if ev.reset:
            self.log_offset = 0  # truncated or rotated: the file's offsets start over
            self.log_skipped = None
            if following_current:
                self._understood = 0
                self.notice = ("the run's log was truncated or replaced on the node: read again from its start "
                               "(what it held before is gone from the file)")
        lines = [ln for ln in ev.lines if ln.offset >= self.log_offset] if self.log_offset else list(ev.lines)
        # lines the file held when it was opened are history: their own timestamps, not now
        history = bool(lines) and self.log_open_size is not None and lines[0].offset < self.log_open_size \
            and self._time_shift is not None
        if lines:
            self._line_t = self.clock()
            if history:
                self._line_t = self._last_line_time(lines) or self._line_t
            if following_current:
                self._runs.note_data(self._line_t, history=history)
        texts = [ln.text for ln in lines]
        sevs, access = classify(texts)
        log = self.log
        understand: list[str] = []
        for line, text, sev, acc in zip(lines, texts, sevs, access):
            if line.offset < self.log_offset:
                continue  # already seen (reconnect resumes from an offset): never repeat a line
            n = line.nbytes if line.nbytes is not None else len(text.encode("utf-8", "surrogateescape"))
            self.log_offset = line.offset + n + 1
            if following_current and line.offset >= self._understood:
                understand.append(text)  # never folded twice: the pane may re-read the log from 0
                self._understood = self.log_offset
            if len(log) == log.maxlen:
                self.log_dropped += 1
            log.append(line.offset, text, sev, acc)
            self.log_total += 1
            if sev == "error" and self.first_error_offset is None:
                self.first_error_offset = line.offset
        if understand and following_current:
            self._replaying = history
            try:
                changed |= self._understand_many(understand)
            finally:
                self._replaying = False
        if ev.skipped is not None:
            a, b = ev.skipped
            if b > self.log_offset:
                self.log_skipped = (max(a, self.log_offset), b)
                self.log_offset = b
                if following_current:
                    # the head's last record completes here (the tail starts with other lines)
                    changed |= self.flush_log()
                    self._understood = max(self._understood, b)
        return changed

    def page_back_range(self, nbytes: int = 1 << 20) -> tuple[int, int, bool] | None:
        """The bytes to read for the log pane's next page back, ``(offset, end, aligned)``
        (``aligned``: ``offset`` is a line start), at most ``nbytes``: the end of the skipped
        middle while the head's lines are still kept, else before the first kept line (lines
        the bounded buffer let go, then the middle, then the head). None: the log's start is
        already kept."""
        if not self.log:
            return None
        first = self.log.raw(0)[0]
        skip = self.log_skipped
        if skip is not None and first < skip[0]:
            lo, end = max(skip[0], skip[1] - nbytes), skip[1]
        else:
            lo, end = max(0, first - nbytes), first
        if end <= 0 or lo >= end:
            return None
        return lo, end, lo == 0 or (skip is not None and lo == skip[0])

    def _earlier(self, ev: LogLines) -> set[str]:
        """A page read back (:meth:`page_back_range`): its lines go in their place among the
        kept ones, for the log pane only (SGLang knowledge already has what the head and the
        tail said; the server's counters cover the middle); the buffer grows by the page."""
        lo, end = ev.earlier
        kept = list(self.log.tail_raw(len(self.log)))
        have = {r[0] for r in kept if lo <= r[0] < end}
        lines = [ln for ln in ev.lines if ln.offset not in have]
        if self.log_skipped is not None and lo < self.log_skipped[1] and end >= self.log_skipped[1]:
            a = self.log_skipped[0]
            self.log_skipped = (a, lo) if lo > a else None
        if not lines:
            return {"log"}
        texts = [ln.text for ln in lines]
        recs = list(zip((ln.offset for ln in lines), texts, *classify(texts)))
        merged = sorted(kept + recs, key=lambda r: r[0])  # two sorted runs: one merge
        self.log = LineBuffer(merged, maxlen=(self.log.maxlen or LOG_KEEP) + len(recs))
        err = next((r[0] for r in recs if r[2] == "error"), None)
        if err is not None and (self.first_error_offset is None or err < self.first_error_offset):
            self.first_error_offset = err
        self.log_total += len(recs)
        self.log_generation += 1  # the pane starts over, with the page in place
        return {"log"}

    def _last_line_time(self, lines: list[Any]) -> float | None:
        """This console's clock time of the last of ``lines`` that carries an envelope time."""
        from mambaconsole.sglang.text import envelope_seconds

        for ln in reversed(lines[-64:]):
            t = ln.text
            if t.startswith("["):
                v = envelope_seconds(t[1:24])  # "[2026-10-01 12:34:56.789 TP0] ..." (ms optional)
                if v is not None:
                    return v + self._time_shift
        return None

    def _when(self, e: Any) -> float:
        """When a log event happened on this console's clock: its own timestamp for a line
        replayed from history, else now."""
        if self._replaying and e.time:
            from mambaconsole.sglang.text import envelope_seconds

            v = envelope_seconds(e.time)
            if v is not None:
                return v + self._time_shift
        return self.clock()

    def reading_left(self) -> int | None:
        """Bytes of the log's history still to read (the console is catching up with what the
        file held when it was opened; a skipped middle not counted), else None."""
        if self.log_open_size is None or self.log_offset >= self.log_open_size:
            return None
        return self.log_open_size - self.log_offset

    def behind_bytes(self) -> int | None:
        """Bytes the node's log holds that this console has not read yet, once the first read
        is done and that exceeds :data:`BEHIND_BYTES`; else None."""
        if self.log_size is None or self.reading_left() is not None:
            return None
        left = self.log_size - self.log_offset
        return left if left > BEHIND_BYTES else None

    def _understand_many(self, texts: list[str]) -> set[str]:
        """:meth:`_understand` for a batch of lines, through the parser's batch entry
        (:meth:`~mambaconsole.sglang.events.LogParser.feed_many`, same events as per line)."""
        changed: set[str] = set()
        feed_many, fold = self._parser.feed_many, self._on_sglang
        # in chunks: a whole batch's events alive at once would outlive the young generation
        for i in range(0, len(texts), 64):
            try:
                events = feed_many(texts[i:i + 64])
            except Exception:  # the parser promises not to raise; never let a line break the UI
                continue
            for e in events:
                changed |= fold(e)
        return changed

    def _understand(self, text: str) -> set[str]:
        """Feed one line of the current run's log to SGLang knowledge (joined records such as
        tracebacks complete when the next record starts, or at :meth:`flush_log`)."""
        changed: set[str] = set()
        try:
            events = self._parser.feed(text)
        except Exception:  # the parser promises not to raise; never let a line break the UI
            return changed
        for e in events:
            changed |= self._on_sglang(e)
        return changed

    def flush_log(self) -> set[str]:
        """The log went idle: complete the pending record (a traceback at the end of the log)."""
        changed: set[str] = set()
        if self._parser_obj is None:
            return changed
        for e in self._parser.flush():
            changed |= self._on_sglang(e)
        return changed | ({"header"} if changed else set())

    def _on_sglang(self, e: Any) -> set[str]:
        fold = self.fold
        boots = fold.boots
        n = len(boots)
        b = boots[-1]
        before = (b.failure, len(b.request_errors), b.serving, b.pending_error)
        fold.feed(e)
        if len(boots) > n:
            self._new_boot()  # the server was launched again into the same log
        b = boots[-1]
        changed = set() if before == (b.failure, len(b.request_errors), b.serving, b.pending_error) else {
            "header", "spec", "args"}  # the spec pane shows a failure, ServerArgs the flags that sized an OOM
        if b.serving and not self.ready_seen:
            self.ready_seen = True  # SGLang's ready line, batches served, or startup complete + a 200
            self.ready_at = self._when(e)
        return changed | self._on_sglang_view(e)

    def _on_sglang_view(self, e: Any) -> set[str]:
        """What the panes show of one event beyond the fold's claims (budget, spec, args):
        dispatched by the event's type (:data:`LOG_EVENTS`), no chain of isinstance tests."""
        handler = self._log_view.get(type(e), _UNSEEN)
        if handler is _UNSEEN:
            handler = self._log_handler(type(e))
        return handler(e) if handler is not None else set()

    def _log_handler(self, cls: type) -> Callable[[Any], set[str]] | None:
        """The handler of log event type ``cls`` bound to this state's slices (its entry in
        :data:`LOG_EVENTS`, found along its base classes), kept for the next event of it."""
        entry = next((LOG_EVENTS[k] for k in cls.__mro__ if k in LOG_EVENTS), None)
        bound = [h.__get__(self._slice_of[name]) for name, h in entry] if entry else []
        if not bound:
            handler = None
        elif len(bound) == 1:
            handler = bound[0]
        else:
            def handler(e: Any, _hs: tuple = tuple(bound)) -> set[str]:
                out: set[str] = set()
                for h in _hs:
                    out |= h(e)
                return out
        self._log_view[cls] = handler
        return handler

    def _view_decode(self, e: Any) -> set[str]:
        t = self._when(e)
        self.last_batch, self.batch_t = e, t
        self.recent_batches.append(e)
        alen = e.accept_len
        if alen is None:
            if not e.spec_enabled:
                self.spec_enabled = False
            return {"spec"}
        self.spec_enabled = True
        self.spec.append(t, alen, e.accept_rate, e.gen_throughput)
        self.spec_sum += alen
        self.spec_n += 1
        self._low_run = self._low_run + 1 if alen <= COLLAPSE_LEN else 0
        self.collapsed = self._low_run >= COLLAPSE_RUN
        return {"spec"}

    def _view_mamba_pool(self, e: Any) -> set[str]:
        if e.complete and self._gpu.budget_rank_ok(e.rank):
            self.mamba_pool_slots = e.max_mamba_cache_size  # the budget's rank's pool
        return set()

    def _view_ready(self, e: Any) -> set[str]:
        return {"header"}

    def _view_args(self, e: Any) -> set[str]:
        self.dumped_args = dict(e.args)
        self._compare_live()
        return {"args"}

    def _view_capped(self, e: Any) -> set[str]:
        if e.effective is None:
            return set()
        self.runtime_caps["max_running_requests"] = e.effective
        self.runtime_cap_events["max_running_requests"] = e
        if e.max_mamba_cache_size is not None:
            self.runtime_caps["max_mamba_cache_size"] = e.max_mamba_cache_size
            self.runtime_cap_events["max_mamba_cache_size"] = e
        self.mamba_slots_per_request = e.slots_per_request
        self._compare_live()
        return {"args"}

    def _view_ready_summary(self, e: Any) -> set[str]:
        if e.max_running_requests is None:
            return set()
        if "max_running_requests" not in self.runtime_caps:
            self.runtime_caps["max_running_requests"] = e.max_running_requests
            self.runtime_cap_events["max_running_requests"] = e
        self._compare_live()
        return {"args"}

    def _new_boot(self) -> None:
        """A new boot in the same log (a ``server_args=`` dump after an earlier one, or after a
        traceback): what the earlier boot said (its crash, readiness, budget, caps) is void."""
        self.ready_seen, self.ready_at = False, None
        self._gpu.new_boot()
        self.runtime_caps = {}
        self.recent_batches.clear()
        self.mamba_pool_slots = self.mamba_slots_per_request = None
        self._low_run, self.collapsed = 0, False

    def _on_server_info(self, ev: ServerInfo) -> set[str]:
        """The args and spec side of a ``/server_info`` answer (the server slice keeps it)."""
        if ev.data is None:
            return set()
        self._compare_live()
        if self.spec_enabled is None and "speculative_algorithm" in ev.data:
            self.spec_enabled = bool(ev.data.get("speculative_algorithm"))
        return set()

    def _on_Resolution(self, ev: Resolution) -> set[str]:
        self.resolution = ev.result
        rows = []
        resolved = not (ev.result.get("error") or ev.result.get("usage_error"))
        for name, f in (ev.result.get("fields") or {}).items():
            if "option" in f and not f["option"]:
                continue  # a ServerArgs field no command-line flag sets (internal state): not a flag
            writes = f.get("writes") or []
            last = writes[-1] if writes else None
            src = f.get("source", "default")
            changed_by = ""
            if last and src in ("derived", "overridden", "env") or (last and src != "default"):
                fn = last.get("declared_as") or last.get("function") or ""
                changed_by = f"{fn} {last.get('file', '')}:{last.get('line', '')}".strip()
            rows.append(ArgRow(
                field=name, flag=f.get("option") or "--" + name.replace("_", "-"),
                value=f.get("value"), default=f.get("default"), source=src,
                changed_by=changed_by if src in ("derived", "overridden") else "",
                writer_file=(last or {}).get("file"), writer_line=(last or {}).get("line"),
                resolved=resolved,
            ))
        self.rows = rows
        self._compare_live()
        return {"args", "spec"}  # the spec pane names a failed run's sizing flags with their values

    def _compare_live(self) -> None:
        """Mark rows where the live server disagrees with the resolution. The live value is, last
        one wins: the log's ``server_args=`` dump, ``/server_info``'s top-level fields, its
        ``internal_states[0]`` (the scheduler's own copy, with values computed inside the
        scheduler such as ``max_mamba_cache_size``), ``effective_max_running_requests_per_dp``
        (× :func:`dp_ranks`; SGLang 0.5.9+, sglang-observables §5.3), and the caps SGLang logged at
        start-up (``max_running_requests=N`` of the ready summary, ``max_running_requests is
        capped to N by the mamba state cache``)."""
        live = self.live_values()
        for row in self.rows:
            if row.field in live:
                row.live, row.live_from = live[row.field]
                # no resolution, no difference: the live value is shown as live, not against a guess
                row.disagrees = row.resolved and _norm(row.live) != _norm(row.value)
            else:
                row.live, row.live_from, row.disagrees = None, "", False

    def live_explanation(self, row: ArgRow) -> str | None:
        """Why the live server runs ``row`` with another value than the resolution, when SGLang
        set it at runtime (no ServerArgs writer did): the log line the value was read from and
        the SGLang source that prints it, or ``/server_info``'s scheduler field; None when the
        live value is not such a runtime value."""
        if not row.disagrees:
            return None
        e = self.runtime_cap_events.get(row.field)
        if row.live_from == "log" and e is not None and self.runtime_caps.get(row.field) == row.live:
            out = (f"{row.flag}: {row.value!r} as resolved ({row.source}), {row.live!r} live. SGLang applied "
                   f"{row.live!r} at runtime, after resolving the arguments (no ServerArgs code wrote it); "
                   f"the run's log says so, in a line SGLang's {e.SOURCE} prints:\n\n  {e.text.strip()}")
            if row.field == "max_running_requests" and self.mamba_pool_slots:
                per = f", {self.mamba_slots_per_request} slots per request" if self.mamba_slots_per_request else ""
                out += (f"\n\nThe Mamba pool has {self.mamba_pool_slots} slots (the log's 'Mamba Cache is "
                        f"allocated' line){per}: SGLang caps the running requests to what the pool can hold "
                        f"(max_mamba_cache_size // slots per request, in _resolve_max_num_reqs).")
            return out
        if row.live_from == "scheduler" and row.field == "max_running_requests":
            info = self.server_info or {}
            return (f"{row.flag}: {row.value!r} as resolved ({row.source}), {row.live!r} live: /server_info's "
                    f"internal_states[0].effective_max_running_requests_per_dp × {dp_ranks(info)} DP rank(s), the "
                    f"cap the scheduler applied at runtime (no ServerArgs code wrote it).")
        return None

    def live_values(self) -> dict[str, tuple[Any, str]]:
        """ServerArgs field → (value the live server reports, where it was read), merged as
        :meth:`_compare_live` describes (last one wins)."""
        live: dict[str, tuple[Any, str]] = {}
        for k, v in (self.dumped_args or {}).items():
            live[k] = (v, "log")
        info = self.server_info or {}
        for k, v in info.items():
            live[k] = (v, "/server_info")
        states = info.get("internal_states")
        sched = states[0] if isinstance(states, list) and states and isinstance(states[0], dict) else {}
        for k, v in sched.items():
            live[k] = (v, "scheduler")
        eff = _count(sched.get("effective_max_running_requests_per_dp"))
        if eff is not None:
            live["max_running_requests"] = (eff * dp_ranks(info), "scheduler")
        for k, v in self.runtime_caps.items():
            live[k] = (v, "log")
        return live


def _count(v: Any) -> int | None:
    """``v`` when it is a positive int (not a bool), else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def dp_ranks(info: dict) -> int:
    """How many schedulers share the server's requests, read off a ``/server_info`` answer:
    the scheduler's ``dp_size`` (else the top-level one) × its ``attn_dp_size`` (absent before
    0.5.23: 1). SGLang's own benchmarks count the server's running-request cap this way:
    ``effective_max_running_requests_per_dp * dp_size`` (0.5.11
    ``test/bench_one_batch_server_internal.py``) and ``* num_dp_ranks`` = ``dp_size *
    attn_dp_size``, "replicas times attention-DP groups" (0.5.23
    ``benchmark/one_batch_server.py``, ``srt/runtime_context.py:num_dp_ranks_of``)."""
    states = info.get("internal_states")
    sched = states[0] if isinstance(states, list) and states and isinstance(states[0], dict) else {}
    dp = _count(sched.get("dp_size")) or _count(info.get("dp_size")) or 1
    return dp * (_count(sched.get("attn_dp_size")) or 1)


def _norm(v: Any) -> Any:
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    return v


#: every event type the state folds in -> its handlers as (data source, handler), in order:
#: each handler is called with that slice of the state (``link`` the connection and node
#: facts, ``runs`` the node's run history and the relaunch phase, ``gpu`` the GPU readings,
#: ``server`` the live server's HTTP answers, ``ranks`` a run across nodes' ranks; ``state``: the rest, still on
#: :class:`ConsoleState` itself: the current run's log, the resolved ServerArgs) and returns
#: the panes to redraw
SLICES: dict[type, tuple[tuple[str, Callable[[Any, Any], set[str]]], ...]] = {
    Connection: (("link", LinkSlice.on_connection),),
    NodeFacts: (("link", LinkSlice.on_node_facts),),
    RunsListed: (("runs", RunsSlice.on_runs_listed),),
    Phase: (("runs", RunsSlice.on_phase),),
    LogLines: (("state", ConsoleState._on_LogLines),),
    GpuSnapshot: (("gpu", GpuSlice.on_snapshot),),
    ServerInfo: (("server", ServerSlice.on_info), ("link", LinkSlice.on_server_info),
                 ("state", ConsoleState._on_server_info)),
    MetricsSnapshot: (("server", ServerSlice.on_metrics),),
    Resolution: (("state", ConsoleState._on_Resolution),),
    RanksRead: (("ranks", RanksSlice.on_ranks),),
}

#: what the panes show of each event the run's log gives (:mod:`mambaconsole.sglang.events`)
#: beyond the run fold's claims: event type -> its handlers as (slice, handler), in order; a
#: subclass takes its base's entry (:meth:`ConsoleState._log_handler`)
LOG_EVENTS: dict[type, tuple[tuple[str, Callable[[Any, Any], set[str]]], ...]] = {
    E.DecodeBatch: (("state", ConsoleState._view_decode),),
    E.WeightsLoaded: (("gpu", GpuSlice.on_weights),),
    E.MambaCacheAllocated: (("gpu", GpuSlice.on_mamba), ("state", ConsoleState._view_mamba_pool)),
    E.KVCacheAllocated: (("gpu", GpuSlice.on_kv),),
    E.GraphCaptureEnd: (("gpu", GpuSlice.on_graphs),),
    E.ReadySummary: (("state", ConsoleState._view_ready_summary),),
    E.ServerReady: (("state", ConsoleState._view_ready),),
    E.ServerArgsDump: (("state", ConsoleState._view_args),),
    E.ConcurrencyCapped: (("state", ConsoleState._view_capped),),
    E.Traceback: (("gpu", GpuSlice.on_traceback),),
}
