"""The typed events :class:`~mambaconsole.state.ConsoleState` is fed: what the workers read
from the node (runs, GPU, facts), the run's log (line batches), the server's HTTP endpoints
and the resolver. Frozen dataclasses (``LogLines``, ``RunInfo`` and ``GpuSnapshot`` are
built in bulk); the slices (:mod:`mambaconsole.slices`) take them, ``state`` re-exports them.

Units: GPU memory in MiB as NVML / ``nvidia-smi`` report it; times are Unix seconds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
    ``lines``: the node layer's :class:`mambaconsole.node.agent.LineBatch` (parallel lists, no
    object per line: what the log tail gives), or a sequence of :class:`LogLine` or of any
    object with its ``offset``, ``text`` and ``nbytes``; :meth:`columns` reads either.
    ``reset``: the file was truncated or rotated; ``lines`` restart at offset 0.
    ``size``: the file's size on the node when the batch was sent (bytes; ``size`` minus the
    offset read so far is how far behind the node the console is). ``opened_size``: the reader
    (re)opened the file when its whole lines ended there (bytes; a last line without its
    newline yet, such as a progress bar, is not counted): lines before it are history, read with their own
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

    def consecutive(self) -> bool:
        """The lines follow each other in the file (a :class:`~mambaconsole.node.agent.LineBatch`
        that says so): each starts just past the previous one's newline."""
        return getattr(self.lines, "consecutive", False) is True

    def columns(self) -> tuple[list[int], list[str], list[int]]:
        """``(offsets, texts, nbytes)``: each line's byte offset, text and length in bytes
        without its newline (a ``LogLine`` without ``nbytes``: its text's UTF-8 length), as
        parallel lists; a ``LineBatch``'s own lists (not copied: read them, never change them)."""
        lines = self.lines
        offsets = getattr(lines, "offsets", None)
        if offsets is not None:
            return offsets, lines.texts, lines.nbytes  # type: ignore[attr-defined]
        texts = [ln.text for ln in lines]
        return ([ln.offset for ln in lines], texts,
                [ln.nbytes if ln.nbytes is not None else len(t.encode("utf-8", "surrogateescape"))
                 for ln, t in zip(lines, texts)])


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
    """The link to the node, as the node layer's supervisor (:mod:`mambaconsole.node.supervisor`)
    reports it: ``up`` since ``since`` (Unix seconds, this machine's clock); while down,
    ``detail`` says why (one line), ``attempts`` counts failed reconnects since it went down and
    ``retry_at`` is when the next starts (Unix seconds; None while one is under way)."""

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
