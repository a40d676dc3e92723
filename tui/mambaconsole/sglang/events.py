"""SGLang server log lines → typed events.

Usage::

    from mambaconsole.sglang.events import LogParser, parse_line, DecodeBatch

    parser = LogParser()
    for raw in lines:                     # str or bytes, with or without the trailing newline
        for ev in parser.feed(raw):       # completed events (see "Joining" below)
            ...
    for ev in parser.flush():             # call at end of input, or when the tail goes idle
        ...

    parse_line("[2026-10-01 12:34:56 TP0] Decode batch, #running-req: 8, ...")  # one line, no state

Every event is a frozen dataclass deriving from :class:`Event` and carries

- ``text``: the display text of the record (ANSI/control sequences stripped; the physical
  lines of a joined record separated by ``"\\n"``) — safe to put on a screen;
- ``message``: the logical message, envelope removed, wrapped lines joined;
- ``time``: the timestamp as printed (``"2026-10-01 12:34:56"`` or with ``".789"``), or None;
- ``rank``: the rank tag as printed (``"TP0"``, ``"DP1 TP1 EP1"``), None for the main process;
- ``line_no``: 1-based physical line number of the record's first line (0 for ``parse_line``).

Each event class names the SGLang versions and source that print it in ``VERSIONS`` and
``SOURCE`` (from ``shared/reference/sglang-observables.md``; "all" = 0.5.5–0.5.23 inspected).
Lines that match no format become :class:`Text` — never dropped, never an exception: no input
(random bytes, invalid UTF-8, huge lines, escape sequences, cut tracebacks) raises out of the
parser.

Envelope (all versions, ``srt/utils/common.py:configure_logger``):
``[%Y-%m-%d %H:%M:%S{.ms}{ rank tags}] message``; ``.ms`` with ``SGLANG_LOG_MS=1`` (0.5.9+);
rank tags in the 0.5.5 order ``DP TP EP PP`` or the 0.5.9+ order ``DP PP ATTN_CP MOE_DP TP EP``.
A supervisor's prefix before the envelope (``name | [..]``, an ISO timestamp) and a doubled
envelope are skipped. Some builds add ``LEVEL file.py:N:`` after the envelope; it is read into
``level``.

Joining (stateful :class:`LogParser` only):

- a traceback (``Traceback (most recent call last):`` — alone or after a header such as
  ``Scheduler hit an exception:`` — or a cut one that starts at a ``File "..."`` frame) is one
  :class:`Traceback` event up to its exception line (chained tracebacks included);
- a line without envelope that starts with whitespace continues the record before it
  (reporter- or logger-wrapped lines); so does an unindented line when the record before it is
  a known format that is still missing its last field, or was cut by a terminal at a long
  width (mid-word);
- an empty line ends the record before it.

A record that may still continue (plain text, a known format missing its last field, a
traceback) is returned when the next record starts; a complete known format on a clean
enveloped line (a decode batch with its ``#queue-req``, a uvicorn access line, ...) is
returned at once. :meth:`LogParser.flush` returns the pending record: call it at the end of
input or when the tail goes idle.

Speed: one regex for the envelope, then a dict lookup on the message's first four
characters picks the format's parser; decode/prefill lines are built inline. The ``key:
value`` fields of batch lines and the parts of uvicorn access lines are split on first access
(cached), so a flood costs little more than classifying it. :meth:`LogParser.feed_many`
takes a chunk of lines in one call (``bench/parse_throughput.py``).
"""

from __future__ import annotations

import ast
import re
import string
from dataclasses import dataclass, field, replace as _replace
from typing import Any, ClassVar, Iterable, Iterator

from mambaconsole.sglang.paste import unwrap_line
from mambaconsole.sglang.text import display_text

__all__ = [
    "Event", "Text", "PythonWarning", "DecodeBatch", "PrefillBatch", "BatchLine",
    "DistributedInit", "WeightsLoadBegin", "WeightsLoaded", "MambaCacheAllocated",
    "KVCacheAllocated", "MemoryPoolEnd", "GraphCaptureBegin", "GraphCaptureEnd",
    "GraphBatchSizes", "Progress", "ReadySummary", "ConcurrencyCapped", "ServerReady", "FollowerReady",
    "HttpServerUp", "AppStartupComplete", "HttpAccess", "ServerArgsDump", "Traceback", "Frame", "SigquitReceived",
    "ChildCrashed", "SchedulerDied", "KillProcessTree", "WatchdogTimeout", "HealthCheckFailed",
    "RetractRequests", "FlagDeprecated", "EndpointDeprecated", "SettingChanged", "Killed",
    "LogParser", "TorchOom", "torch_oom", "parse_line", "parse_lines", "parse_text", "rank_tags", "parse_py_repr",
    "EVENT_TYPES", "simple_run_pattern", "simple_event", "simple_complete", "DECODE_NUMBERS", "DECODE_LINE", "HOT_LINE",
    "logged_number",
]


# --------------------------------------------------------------------------------------
# events


class _cached:
    """Like functools.cached_property, without 3.11's per-access lock (events are never
    shared between threads while being filled)."""

    def __init__(self, fn):
        self.fn = fn
        self.name = fn.__name__
        self.__doc__ = fn.__doc__

    def __get__(self, obj, cls=None):
        if obj is None:
            return self
        v = self.fn(obj)
        obj.__dict__[self.name] = v
        return v


_DEFAULTS: dict[type, dict] = {}


def _mk(cls, kw: dict, **extra):
    """Fast constructor for the hot event types: same result as ``cls(**kw, **extra)``
    (every field set, defaults applied) without the frozen ``__init__``'s per-field
    ``object.__setattr__``. Only for internal use with complete keyword sets."""
    d = _DEFAULTS.get(cls)
    if d is None:
        import dataclasses

        d = {}
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                d[f.name] = f.default
        _DEFAULTS[cls] = d
    o = object.__new__(cls)
    od = o.__dict__
    od.update(d)
    od.update(kw)
    if extra:
        od.update(extra)
    return o


@dataclass(frozen=True, kw_only=True)
class Event:
    """Base of every log event. See the module docstring for the common fields."""

    text: str
    message: str
    time: str | None = None
    rank: str | None = None
    line_no: int = 0
    #: level when the line carries one (``WARNING model_config.py:1098: ...``), else None
    level: str | None = None

    KIND: ClassVar[str] = "event"
    VERSIONS: ClassVar[str] = "all"
    SOURCE: ClassVar[str] = ""

    @property
    def kind(self) -> str:
        """Short stable name of the event type (``"decode"``, ``"traceback"``, ...)."""
        return self.KIND

    @property
    def is_error(self) -> bool:
        return self.level in ("ERROR", "CRITICAL")


@dataclass(frozen=True, kw_only=True)
class Text(Event):
    """A line (or joined record) that matches no known format. Kept, never dropped."""

    KIND = "text"


@dataclass(frozen=True, kw_only=True)
class PythonWarning(Event):
    """``{file}:{line}: {Category}: {message}`` from Python's ``warnings`` (not SGLang's
    logger), with its continuation lines (``  warnings.warn(``). Noise for diagnosis."""

    category: str
    file: str
    lineno: int
    KIND = "python_warning"
    VERSIONS = "all (Python warnings module)"


def _num(v: str | None) -> float | None:
    """A logged number, or None: not a number, or not finite (``1e400`` overflows to inf,
    ``nan``): no log line of SGLang's prints such a value, so it says nothing. Public as
    :func:`logged_number`."""
    if v is None:
        return None
    try:
        x = float(v)
    except ValueError:
        try:
            x = float(v.strip().rstrip("%"))
        except ValueError:
            return None
    return x if x - x == 0.0 else None  # finite (inf - inf and nan - nan are nan)


#: a logged number as the events read it (:func:`_num`): for numbers read without an event
logged_number = _num


def _int(v: str | None) -> int | None:
    if v is None:
        return None
    try:
        return int(v)
    except ValueError:
        f = _num(v)
        return int(f) if f is not None and f == f and abs(f) != float("inf") else None


def _bool(v: str | None) -> bool | None:
    if v is None:
        return None
    v = v.strip()
    if v == "True":
        return True
    if v == "False":
        return False
    return None


_GRAPH_KEYS = ("cuda graph", "cpu graph", "npu graph", "musa graph", "xpu graph")


@dataclass(frozen=True, kw_only=True)
class BatchLine(Event):
    """Common part of :class:`DecodeBatch` and :class:`PrefillBatch`.

    ``body`` is the ``key: value, key: value`` text after ``Decode batch``/``Prefill batch``
    (and the optional `` [n]`` iteration tag). Fields are matched by name, never by
    position; :attr:`fields` maps SGLang's key (``"#running-req"``, ``"accept len"``,
    ``"gen throughput (token/s)"``) to the value text as printed.
    """

    body: str
    iteration: int | None = None
    #: True for a bare fragment without the ``Decode batch`` head (a quoted excerpt)
    fragment: bool = False

    @_cached
    def fields(self) -> dict[str, str]:
        """SGLang key → value text, in print order. Handles a trailing ``, `` or none,
        extra spaces, and the comma inside ``est uncap acc len: x [lo, hi]`` (0.5.18+)."""
        body = self.body
        if (body.count(",") == body.count(", ") and body.count(":") == body.count(": ")
                and "  " not in body):
            fast: dict[str, str] = {}
            for piece in body.split(", "):
                key, sep, value = piece.partition(": ")
                if sep:
                    fast[key] = value
                elif piece:
                    break
            else:
                return fast
        out: dict[str, str] = {}
        last = None
        for piece in self.body.split(","):
            key, sep, value = piece.partition(":")
            if not sep:
                # no colon: tail of a bracketed value such as "[1.90, 2.30]"; else a key
                # cut before its value (a fragment's end, "gen through"): dropped
                if last is not None and piece.strip() and "[" in out[last] and "]" not in out[last]:
                    out[last] = out[last] + "," + piece
                continue
            key = key.strip()
            if not key:
                continue
            last = key
            out[key] = value
        return {k: v.strip() for k, v in out.items()}

    def get(self, key: str) -> str | None:
        return self.fields.get(key)

    @property
    def graph_label(self) -> str | None:
        """``"cuda graph"`` (or cpu/npu/musa graph, by device) when printed."""
        for k in _GRAPH_KEYS:
            if k in self.fields:
                return k
        return None

    @property
    def graph(self) -> bool | None:
        """Whether this batch ran a captured graph (``cuda graph: True``)."""
        label = self.graph_label
        return _bool(self.fields.get(label)) if label else None

    @property
    def running(self) -> int | None:
        return _int(self.fields.get("#running-req"))

    @property
    def queue(self) -> int | None:
        return _int(self.fields.get("#queue-req"))

    @property
    def token_usage(self) -> float | None:
        """Plain ``token usage`` or, for hybrid pools, ``full token usage`` (0..1)."""
        f = self.fields
        return _num(f.get("token usage", f.get("full token usage")))

    @property
    def full_token_usage(self) -> float | None:
        return _num(self.fields.get("full token usage"))

    @property
    def swa_token_usage(self) -> float | None:
        return _num(self.fields.get("swa token usage"))

    @property
    def mamba_usage(self) -> float | None:
        """Mamba state slots in use / mamba pool size (0..1); hybrid SSM models only."""
        return _num(self.fields.get("mamba usage"))

    def as_dict(self) -> dict[str, Any]:
        """Every field with SGLang's key and the value converted (int, float, bool, or
        the text as printed when it is none of those)."""
        out: dict[str, Any] = {}
        for k, v in self.fields.items():
            b = _bool(v)
            if b is not None:
                out[k] = b
                continue
            try:
                out[k] = int(v)
                continue
            except ValueError:
                pass
            n = _num(v)
            out[k] = n if n is not None else v
        return out


@dataclass(frozen=True, kw_only=True)
class DecodeBatch(BatchLine):
    """``Decode batch[ [n]], #running-req: N, <usage>, [accept len: X, accept rate: X, ...]
    {cuda graph}: B, gen throughput (token/s): X, #queue-req: N[, ...]``.

    Layouts: 0.5.5 ends with a trailing ``, ``; 0.5.9+ does not. Usage block: ``#token``/
    ``token usage`` (plain), ``#full token``/``full token usage`` + ``#swa token``/
    ``swa token usage`` (SWA) and/or ``mamba num``/``mamba usage`` (hybrid SSM; 0.5.5 GDN
    only, 0.5.9+ any), ``#gpu token``/``#cpu token`` (HiSparse, 0.5.11+). Speculative:
    ``accept len``, ``accept rate`` (all; the meaning of accept rate changed in 0.5.11, see
    :mod:`mambaconsole.sglang.spec`), ``cap len``, ``block accept len``,
    ``est uncap acc len: X [lo, hi]`` (0.5.18+). PD decode: ``pre-allocated usage``,
    ``#prealloc-req``, ``#transfer-req``, ``#host-receive-req`` (0.5.23), ``#retracted-req``.
    Suffixes: MFU estimates (0.5.10+), ``fwd occupancy`` (0.5.11+), ``fwd+idle occupancy``
    (0.5.23).
    """

    KIND = "decode"
    SOURCE = ("srt/managers/scheduler_metrics_mixin.py:log_decode_stats (0.5.5-0.5.9); "
              "srt/observability/scheduler_metrics_mixin.py (0.5.10-0.5.12); "
              "srt/managers/scheduler_components/metrics_reporter.py (0.5.13+)")

    @property
    def token(self) -> int | None:
        f = self.fields
        return _int(f.get("#token", f.get("#full token")))

    @property
    def full_token(self) -> int | None:
        return _int(self.fields.get("#full token"))

    @property
    def swa_token(self) -> int | None:
        return _int(self.fields.get("#swa token"))

    @property
    def mamba_num(self) -> int | None:
        """Mamba state slots in use (pool size − free − evictable)."""
        return _int(self.fields.get("mamba num"))

    @property
    def accept_len(self) -> float | None:
        """Mean tokens emitted per request per verify step (bonus token included); None
        when speculative decoding is off (the field is not printed then)."""
        return _num(self.fields.get("accept len"))

    @property
    def accept_rate(self) -> float | None:
        """Accept rate as printed; its definition depends on the version (spec module)."""
        return _num(self.fields.get("accept rate"))

    @property
    def cap_len(self) -> float | None:
        return _num(self.fields.get("cap len"))

    @property
    def block_accept_len(self) -> float | None:
        return _num(self.fields.get("block accept len"))

    @property
    def est_uncap_accept_len(self) -> tuple[float | None, float | None, float | None] | None:
        """DSpark ``est uncap acc len: X [lo, hi]`` → (X, lo, hi) (0.5.18+)."""
        v = self.fields.get("est uncap acc len")
        if v is None:
            return None
        m = re.match(r"\s*([-\d.]+)\s*(?:\[\s*([-\d.]+)\s*,\s*([-\d.]+)\s*\])?", v)
        if not m:
            return (None, None, None)
        return (_num(m.group(1)), _num(m.group(2)), _num(m.group(3)))

    @property
    def spec_enabled(self) -> bool:
        return "accept len" in self.fields

    @property
    def gen_throughput(self) -> float | None:
        """Tokens/s generated since the previous decode line."""
        return _num(self.fields.get("gen throughput (token/s)"))

    @property
    def fwd_occupancy(self) -> float | None:
        """Percent (0..100), ``SGLANG_ENABLE_METRICS_DEVICE_TIMER=1`` (0.5.11+)."""
        return _num(self.fields.get("fwd occupancy"))


@dataclass(frozen=True, kw_only=True)
class PrefillBatch(BatchLine):
    """``Prefill batch[ [n]], #new-seq: N, #new-token: N, #cached-token: N, <usage>,
    #running-req: N, #queue-req: N, ...``.

    0.5.5 ends with ``#queue-req: N, ``; 0.5.9 adds ``input throughput`` then
    ``cuda graph``; 0.5.10+ ``cuda graph`` then ``input throughput``; 0.5.11+
    ``#pending-token``; 0.5.23 ``#replay-token``; PD prefill ``#prealloc-req`` (≤0.5.11) /
    ``#bootstrap-req`` (0.5.12+), ``#inflight-req``, ``#optimistic-req`` (0.5.18+).
    Prefill lines never update decode state.
    """

    KIND = "prefill"
    SOURCE = DecodeBatch.SOURCE.replace("decode", "prefill")

    @property
    def new_seq(self) -> int | None:
        return _int(self.fields.get("#new-seq"))

    @property
    def new_token(self) -> int | None:
        return _int(self.fields.get("#new-token"))

    @property
    def cached_token(self) -> int | None:
        return _int(self.fields.get("#cached-token"))

    @property
    def pending_token(self) -> int | None:
        return _int(self.fields.get("#pending-token"))

    @property
    def input_throughput(self) -> float | None:
        return _num(self.fields.get("input throughput (token/s)"))


@dataclass(frozen=True, kw_only=True)
class DistributedInit(Event):
    """``Init torch distributed ends. mem usage=X GB`` (0.5.5) / ``... ends. elapsed=X s,
    mem usage=X GB`` (0.5.9–0.5.20); ``Init parallel ends. elapsed=X s`` and
    ``Memory baseline taken. mem usage=X GB`` (0.5.23, ``srt/distributed/bootstrap.py``)."""

    elapsed_s: float | None = None
    mem_usage_gb: float | None = None
    KIND = "dist_init"
    SOURCE = "srt/model_executor/model_runner.py:init_torch_distributed"


@dataclass(frozen=True, kw_only=True)
class WeightsLoadBegin(Event):
    """``Load weight begin. avail mem=X GB`` (all)."""

    avail_gb: float | None = None
    KIND = "weights_begin"
    SOURCE = "srt/model_executor/model_runner.py:ModelRunner.load_model"


@dataclass(frozen=True, kw_only=True)
class WeightsLoaded(Event):
    """``Load weight end. [elapsed=X s, ]type=ARCH, [dtype=torch.D, ][quant=..., ]
    avail mem=X GB[, mem usage=X GB].`` — ``dtype`` 0.5.5–0.5.9, ``elapsed`` 0.5.9+,
    ``quant=`` 0.5.10+. ``mem_usage_gb`` = weights resident on this rank (GB as printed).
    Also ``Load weight end. Committed real weights after CUDA graph capture in X s ...``
    (0.5.20+, overlapped startup load; no memory fields)."""

    elapsed_s: float | None = None
    arch: str | None = None
    dtype: str | None = None
    quant: str | None = None
    avail_gb: float | None = None
    mem_usage_gb: float | None = None
    KIND = "weights_loaded"
    SOURCE = "srt/model_executor/model_runner.py:ModelRunner.load_model"


@dataclass(frozen=True, kw_only=True)
class MambaCacheAllocated(Event):
    """``Mamba Cache is allocated. [max_mamba_cache_size: N, ]conv_state size: XGB,
    ssm_state size: XGB [intermediate_ssm_state_cache size: XGB
    intermediate_conv_window_cache size: XGB ]`` (``srt/mem_cache/memory_pool.py:MambaPool``,
    all; early 2025 builds print no ``max_mamba_cache_size`` → ``max_mamba_cache_size`` None,
    meaning "not reported", never 0). A cut line (no sizes) has ``complete`` False and
    all sizes None."""

    max_mamba_cache_size: int | None = None
    conv_gb: float | None = None
    ssm_gb: float | None = None
    intermediate_ssm_gb: float | None = None
    intermediate_conv_gb: float | None = None
    complete: bool = True
    KIND = "mamba_cache"
    SOURCE = "srt/mem_cache/memory_pool.py:MambaPool.__init__"

    @property
    def intermediate_gb(self) -> float | None:
        """Speculative intermediate caches (ssm + conv window), None when not printed."""
        if self.intermediate_ssm_gb is None and self.intermediate_conv_gb is None:
            return None
        return round((self.intermediate_ssm_gb or 0.0) + (self.intermediate_conv_gb or 0.0), 6)

    @property
    def total_gb(self) -> float | None:
        if self.conv_gb is None and self.ssm_gb is None:
            return None
        return round((self.conv_gb or 0.0) + (self.ssm_gb or 0.0) + (self.intermediate_gb or 0.0), 6)


@dataclass(frozen=True, kw_only=True)
class KVCacheAllocated(Event):
    """``[label ]KV Cache is allocated. [dtype: D, ]#tokens: N, K size: X GB, V size: X GB``
    (MHA) or ``..., KV size: X GB`` (MLA). ``dtype:`` 0.5.13+; ``label`` ``Full``/``SWA``
    (hybrid SWA sub-pools, 0.5.18+); ``upper_bound`` for ``KV Cache VA upper bound.``
    (post-capture sizing, 0.5.18+: the real size follows); ``post_capture`` for
    ``Post-capture KV sizing: KV cache allocated. ... avail mem=X GB`` (0.5.18+)."""

    label: str = ""
    dtype: str | None = None
    tokens: int | None = None
    k_gb: float | None = None
    v_gb: float | None = None
    kv_gb: float | None = None
    upper_bound: bool = False
    post_capture: bool = False
    avail_gb: float | None = None
    KIND = "kv_cache"
    SOURCE = "srt/mem_cache/memory_pool.py:KVCache._finalize_allocation_log"

    @property
    def total_gb(self) -> float | None:
        if self.kv_gb is not None:
            return self.kv_gb
        if self.k_gb is None and self.v_gb is None:
            return None
        return round((self.k_gb or 0.0) + (self.v_gb or 0.0), 6)


@dataclass(frozen=True, kw_only=True)
class MemoryPoolEnd(Event):
    """``Memory pool end. avail mem=X GB`` (all): free GPU memory after the KV/Mamba pools."""

    avail_gb: float | None = None
    KIND = "memory_pool_end"
    SOURCE = "model_runner(_kv_cache_mixin).py:init_memory_pool; 0.5.18+ kv_cache_configurator.py"


@dataclass(frozen=True, kw_only=True)
class GraphCaptureBegin(Event):
    """Graph capture start, every wording:

    - ``Capture cuda graph begin. This can take up to several minutes. avail mem=X GB``
      (0.5.5–0.5.13; ``cpu``/``npu``/``musa graph`` by device; also ``piecewise CUDA graph``
      0.5.9–0.5.13 and ``draft``/``draft extend cuda graph``);
    - ``Capture {role} {phase} {CUDA graph} begin. backend=B, num_tokens_per_bs=N, bs=[..],
      avail mem=X GB`` (0.5.14–0.5.15; ``num_tokens_per_req`` 0.5.18–0.5.20; no ``bs`` at
      begin in 0.5.23); ``Capture {role} prefill CUDA graph begin. backend=B,
      num_tokens=[..], ...`` (0.5.14+).

    ``role`` is ``target``/``draft`` (None in the old wording unless ``draft``), ``phase``
    ``decode``/``verify``/``prefill``/``extend``/``piecewise`` (None = the old plain one)."""

    role: str | None = None
    phase: str | None = None
    backend: str | None = None
    batch_sizes: tuple[int, ...] | None = None
    avail_gb: float | None = None
    KIND = "graph_begin"
    SOURCE = "model_runner.py:init_device_graphs; 0.5.18+ model_runner_components/cuda_graph_setup.py"


@dataclass(frozen=True, kw_only=True)
class GraphCaptureEnd(Event):
    """``Capture cuda graph end. Time elapsed: X s. mem usage=X GB. avail mem=X GB.``
    (0.5.5–0.5.13) / ``Capture {role} {phase} CUDA graph end. [bs=[..], ]elapsed=X s,
    mem usage=X GB, avail mem=X GB.`` (0.5.14+; ``bs=`` 0.5.23). Old builds stop after
    ``Time elapsed``."""

    role: str | None = None
    phase: str | None = None
    elapsed_s: float | None = None
    mem_usage_gb: float | None = None
    avail_gb: float | None = None
    batch_sizes: tuple[int, ...] | None = None
    KIND = "graph_end"
    SOURCE = GraphCaptureBegin.SOURCE


@dataclass(frozen=True, kw_only=True)
class GraphBatchSizes(Event):
    """``Capture cuda graph bs [1, 2, 4, ...]`` (0.5.x builds of 2025 that print the list
    on its own line)."""

    batch_sizes: tuple[int, ...] = ()
    KIND = "graph_bs"
    VERSIONS = "2025 builds (between 0.5.5 and 0.5.9; not in the inspected set)"


@dataclass(frozen=True, kw_only=True)
class Progress(Event):
    """A tqdm progress bar's final state: ``LABEL: 100%|███| 21/21 [03:21<00:00, 9.59s/it]``
    (graph capture ``Capturing batches (bs=1 avail_mem=17.76 GB)``, weight shards,
    DeepGEMM warmup). ``elapsed_s`` from the ``[mm:ss<`` part."""

    label: str
    done: int | None = None
    total: int | None = None
    percent: float | None = None
    elapsed_s: float | None = None
    KIND = "progress"
    VERSIONS = "all (tqdm)"


@dataclass(frozen=True, kw_only=True)
class ReadySummary(Event):
    """``max_total_num_tokens=N, chunked_prefill_size=N, max_prefill_tokens=N,
    max_running_requests=N, context_len=N, available_gpu_mem=X GB`` (scheduler, TP rank 0
    only; ``available_cpu_mem`` on CPU; fields matched by name — 2024 builds lack some).
    ``max_running_requests`` here is the effective value (after SGLang's caps)."""

    max_total_num_tokens: int | None = None
    chunked_prefill_size: int | None = None
    max_prefill_tokens: int | None = None
    max_running_requests: int | None = None
    context_len: int | None = None
    available_gpu_mem_gb: float | None = None
    KIND = "ready_summary"
    SOURCE = "srt/managers/scheduler.py"


@dataclass(frozen=True, kw_only=True)
class ConcurrencyCapped(Event):
    """``max_running_requests is capped to N by the mamba state cache
    (max_mamba_cache_size=N, N state slots per request)[. To raise it: ...]`` (WARNING,
    ``mem_cache/kv_cache_configurator.py``, 0.5.18+; the short wording without the hint is
    also read)."""

    effective: int | None = None
    max_mamba_cache_size: int | None = None
    slots_per_request: int | None = None
    KIND = "concurrency_capped"
    VERSIONS = "0.5.18+"
    SOURCE = "srt/mem_cache/kv_cache_configurator.py"


#: the start of the ready line's message (srt/entrypoints/http_server.py ``_wait_and_warmup``; all versions)
READY_MESSAGE = "The server is fired up and ready to roll"


@dataclass(frozen=True, kw_only=True)
class ServerReady(Event):
    """``The server is fired up and ready to roll!`` (main process, after warm-up; all)."""

    KIND = "ready"
    SOURCE = "srt/entrypoints/http_server.py:_wait_and_warmup"


@dataclass(frozen=True, kw_only=True)
class FollowerReady(Event):
    """``Dummy health check server started in background thread at HOST:PORT``: a rank >= 1 of
    a run across nodes (``--node-rank`` >= 1) whose schedulers are ready (joined rank 0, model
    loaded, pools allocated) serves its stand-in ``/health``; it prints no ready line of its
    own (0.5.11 ``srt/entrypoints/engine.py:712-731``, ``srt/utils/common.py:2583``; 0.5.23
    ``engine.py:1234-1283``, ``common.py:3684``). ``address``: ``HOST:PORT`` as printed."""

    address: str | None = None
    KIND = "follower_ready"
    VERSIONS = "0.5.11-0.5.23"
    SOURCE = "srt/utils/common.py:launch_dummy_health_check_server"


@dataclass(frozen=True, kw_only=True)
class HttpServerUp(Event):
    """uvicorn's ``INFO:     Uvicorn running on http://H:P (Press CTRL+C to quit)``. HTTP is
    up; warm-up may still fail — this is not "ready"."""

    url: str | None = None
    port: int | None = None
    KIND = "http_up"
    VERSIONS = "all (uvicorn)"


@dataclass(frozen=True, kw_only=True)
class AppStartupComplete(Event):
    """uvicorn's ``INFO:     Application startup complete.``: the HTTP app's lifespan
    start-up ran (SGLang's warm-up runs after it, 0.5.x ``http_server.py``). Not "ready"
    alone; with a 200 on ``/generate`` or ``/health`` the server serves."""

    KIND = "app_startup"
    VERSIONS = "all (uvicorn)"


@dataclass(frozen=True, kw_only=True)
class HttpAccess(Event):
    """uvicorn access line ``INFO:     127.0.0.1:40418 - "GET /path HTTP/1.1" 404 Not Found``
    (polling endpoints writes one per request). The parts are read from ``message`` on
    first access; each is None when the line does not have it."""

    KIND = "http_access"
    VERSIONS = "all (uvicorn)"

    @_cached
    def _parts(self) -> tuple:
        m = _RE_ACCESS.match(self.message)
        return m.groups() if m else (None, None, None, None)

    @property
    def client(self) -> str | None:
        return self._parts[0]

    @property
    def method(self) -> str | None:
        return self._parts[1]

    @property
    def path(self) -> str | None:
        return self._parts[2]

    @property
    def status(self) -> int | None:
        return _int(self._parts[3])


@dataclass(frozen=True, kw_only=True)
class ServerArgsDump(Event):
    """``server_args=ServerArgs(model_path='...', ...)`` (dataclass repr, 0.5.5–0.5.18) or
    ``server_args={'model_path': '...', ...}`` (dict repr, 0.5.20+; 0.5.23 redacted).
    ``args`` is read without ``eval``: literals become Python values, nested objects such
    as ``CudaGraphConfig(...)`` are kept as their repr text. ``complete`` is False for a
    cut line (the fields read so far are kept)."""

    form: str = "dataclass"  # "dataclass" | "dict"
    args: dict[str, Any] = field(default_factory=dict)
    complete: bool = True
    KIND = "server_args"
    SOURCE = "srt/entrypoints/engine.py:_launch_subprocesses"


@dataclass(frozen=True, kw_only=True)
class Frame:
    """One traceback frame: ``File "{file}", line {line}, in {function}``, and ``code``: the
    source line Python printed under it (stripped; None when it printed none)."""

    file: str
    line: int | None
    function: str | None
    code: str | None = None


@dataclass(frozen=True, kw_only=True)
class Traceback(Event):
    """A Python traceback as one event.

    ``header`` is the text before ``Traceback (most recent call last):`` on its first line
    (``Scheduler hit an exception:``, ``Initialization failed. warmup error:``); ``origin``
    the process kind it names (``Scheduler``, ``DetokenizerManager``, ``TokenizerManager``,
    ``DataParallelController``) or None. ``exc_type``/``exc_message`` come from the last
    exception line (chained tracebacks: the final one); both None when the traceback is cut
    before it (``complete`` False) — no cause is guessed then. A standalone exception line
    (``ValueError: ...`` without frames) is a Traceback with no frames."""

    header: str | None = None
    origin: str | None = None
    frames: tuple[Frame, ...] = ()
    exc_type: str | None = None
    exc_message: str | None = None
    complete: bool = False
    KIND = "traceback"
    SOURCE = "scheduler.py:run_scheduler_process (Scheduler hit an exception) and Python"

    @property
    def oom(self) -> str | None:
        """``"torch"`` for a PyTorch CUDA OOM (``torch.OutOfMemoryError`` /
        ``torch.cuda.OutOfMemoryError`` / ``CUDA out of memory``), ``"sglang"`` for SGLang's
        own ``Not enough memory`` / mamba-cache memory errors, else None."""
        return oom_kind(self.exc_type, self.exc_message)

    @property
    def oom_numbers(self) -> "TorchOom | None":
        """The numbers of a PyTorch CUDA OOM message (:func:`torch_oom`), else None."""
        return torch_oom(self.exc_message) if self.oom == "torch" else None


@dataclass(frozen=True, kw_only=True)
class SigquitReceived(Event):
    """``Received sigquit from a child process. It usually means the child failed.``
    (``phase="launch"``) / ``SIGQUIT received. signum=None, frame=None. It usually means
    one child failed.`` (``phase="running"``). Main process, ERROR, all versions."""

    phase: str = "running"
    KIND = "sigquit"
    SOURCE = "entrypoints/engine.py (launch); managers/tokenizer_manager.py:SignalHandler (running)"


@dataclass(frozen=True, kw_only=True)
class ChildCrashed(Event):
    """``Subprocess scheduler_0 (pid=N) crashed with exit code C. Triggering SIGQUIT for
    cleanup...`` (``srt/utils/watchdog.py:SubprocessWatchdog``, 0.5.10+)."""

    name: str | None = None
    pid: int | None = None
    exit_code: int | None = None
    KIND = "child_crashed"
    VERSIONS = "0.5.10+"


@dataclass(frozen=True, kw_only=True)
class SchedulerDied(Event):
    """``Rank N scheduler is dead. Please check if there are relevant logs.`` (≤0.5.9) /
    ``Rank N scheduler died during initialization (exit code: C). ...`` (0.5.10+) /
    ``Initialization failed. Please see the error messages above.`` (all)."""

    rank_index: int | None = None
    exit_code: int | None = None
    KIND = "scheduler_died"


@dataclass(frozen=True, kw_only=True)
class KillProcessTree(Event):
    """``kill_process_tree called: parent_pid=N, include_parent=True, pid=N`` (0.5.13+)."""

    parent_pid: int | None = None
    pid: int | None = None
    KIND = "kill_tree"
    VERSIONS = "0.5.13+"


@dataclass(frozen=True, kw_only=True)
class WatchdogTimeout(Event):
    """``Watchdog timeout (self.watchdog_timeout=300)`` (0.5.5) / ``Scheduler watchdog
    timeout (self.watchdog_timeout=300, self.soft=False)`` (0.5.9+)."""

    timeout_s: float | None = None
    KIND = "watchdog"


@dataclass(frozen=True, kw_only=True)
class HealthCheckFailed(Event):
    """``Health check failed. Server couldn't get a response from detokenizer for last N
    seconds. ...`` (main, ERROR, all). The server keeps running."""

    seconds: int | None = None
    KIND = "health_failed"


@dataclass(frozen=True, kw_only=True)
class RetractRequests(Event):
    """``KV cache pool is full. Retract requests. #retracted_reqs: N, [#new_tokens_gained: N,
    [#mamba_num_gained: N, ]]#new_token_ratio: X -> X`` (INFO 0.5.5, WARNING 0.5.9+;
    ``#mamba_num_gained`` 0.5.11+)."""

    retracted: int | None = None
    new_tokens_gained: int | None = None
    mamba_num_gained: int | None = None
    KIND = "retract"


@dataclass(frozen=True, kw_only=True)
class FlagDeprecated(Event):
    """``'--old' is deprecated and will be removed in a future release. Use '--new'
    instead.`` (``DeprecatedAliasStoreAction``, 0.5.14–0.5.18, e.g.
    ``--mamba-scheduler-strategy`` → ``--mamba-radix-cache-strategy``; 0.5.23
    ``DeprecatedStoreTrueAction``, srt/arg_groups/argparse_actions.py:96, whose replacement is
    free text: ``'--disable-cuda-graph' ... Use '--cuda-graph-backend-{decode,prefill}=disabled'
    instead.``, or absent). ``new``: SGLang's replacement text as quoted, None when it names none."""

    old: str = ""
    new: str | None = None
    KIND = "flag_deprecated"
    VERSIONS = "0.5.14-0.5.18"
    SOURCE = "srt/arg_groups/argparse_actions.py:DeprecatedAliasStoreAction"


@dataclass(frozen=True, kw_only=True)
class EndpointDeprecated(Event):
    """``Endpoint '/get_server_info' is deprecated and will be removed in a future version.
    Please use '/server_info' instead.`` (0.5.9+, logged on every call)."""

    old: str = ""
    new: str | None = None
    KIND = "endpoint_deprecated"
    VERSIONS = "0.5.9+"


@dataclass(frozen=True, kw_only=True)
class SettingChanged(Event):
    """A line in which SGLang reports changing a setting itself, e.g. ``Hybrid GDN model
    detected, disable radix cache`` (2025 builds), ``Disabling overlap schedule since mamba
    no_buffer ...``, ``Disable prefill CUDA graph because cuda_graph_config resolved
    prefill.backend='disabled' ...``, ``Using hybrid linear attention backend for hybrid GDN
    models.``. ``setting`` is the ServerArgs field concerned and ``value`` the new value
    when the line says it."""

    setting: str = ""
    value: Any = None
    KIND = "setting_changed"


@dataclass(frozen=True, kw_only=True)
class Killed(Event):
    """A bare ``Killed`` line: the shell reporting that the server was SIGKILLed (OOM killer
    or SGLang's own ``kill_process_tree``)."""

    KIND = "killed"
    VERSIONS = "all (shell)"


EVENT_TYPES: tuple[type[Event], ...] = (
    Text, PythonWarning, DecodeBatch, PrefillBatch, DistributedInit, WeightsLoadBegin,
    WeightsLoaded, MambaCacheAllocated, KVCacheAllocated, MemoryPoolEnd, GraphCaptureBegin,
    GraphCaptureEnd, GraphBatchSizes, Progress, ReadySummary, ConcurrencyCapped, ServerReady, FollowerReady,
    HttpServerUp, AppStartupComplete, HttpAccess, ServerArgsDump, Traceback, SigquitReceived, ChildCrashed,
    SchedulerDied, KillProcessTree, WatchdogTimeout, HealthCheckFailed, RetractRequests,
    FlagDeprecated, EndpointDeprecated, SettingChanged, Killed,
)


# --------------------------------------------------------------------------------------
# helpers


_RANK_TAG_RE = re.compile(r"(DP|PP|ATTN_CP|MOE_DP|TP|EP|CP)(\d+)")


def rank_tags(rank: str | None) -> dict[str, int]:
    """``"DP1 TP1 EP1"`` → ``{"DP": 1, "TP": 1, "EP": 1}``; None/"" → {}."""
    if not rank:
        return {}
    return {k: int(v) for k, v in _RANK_TAG_RE.findall(rank)}


def oom_kind(exc_type: str | None, message: str | None) -> str | None:
    """Classify an exception as an out-of-memory: ``"torch"``, ``"sglang"`` or None."""
    t = exc_type or ""
    m = message or ""
    if t.endswith("OutOfMemoryError") or "CUDA out of memory" in m or "out of memory" in m.lower() and "CUDA" in m:
        return "torch"
    if (m.startswith("Not enough memory") or m.startswith("Not enough GPU memory")
            or "state cache is too small" in m or m.startswith("Loaded weights leave no GPU memory")):
        return "sglang"
    return None


# --- PyTorch's CUDA out-of-memory message ----------------------------------------------------

_SIZE = r"(\d+(?:\.\d+)?) (bytes|KiB|MiB|GiB)"
_SIZE_UNIT = {"bytes": 1 / (1 << 30), "KiB": 1 / (1 << 20), "MiB": 1 / (1 << 10), "GiB": 1.0}
_OOM_TRIED = re.compile(r"Tried to allocate " + _SIZE)
_OOM_GPU = re.compile(r"GPU (\d+) has a total capacity of " + _SIZE + r" of which " + _SIZE + r" is free")
_OOM_SELF = re.compile(r"this process has " + _SIZE + r" memory in use")
_OOM_PROCESS = re.compile(r"Process \d+ has " + _SIZE + r" memory in use")
_OOM_ALLOCATED = re.compile(r"Of the allocated memory " + _SIZE + r" is allocated by PyTorch,(?: with " + _SIZE
                            + r" allocated in private pools \(e\.g\., CUDA Graphs\),)? and " + _SIZE
                            + r" is reserved by PyTorch but unallocated")


def _gib(m: re.Match, i: int) -> float:
    return float(m.group(i)) * _SIZE_UNIT[m.group(i + 1)]


@dataclass(frozen=True)
class TorchOom:
    """The numbers in PyTorch's CUDA out-of-memory message, in GiB (PyTorch's ``format_size``
    prints bytes / KiB / MiB / GiB, all powers of 1024, two decimals; the message is built in
    ``c10/cuda/CUDACachingAllocator.cpp``, the same words since PyTorch 2.1): ``CUDA out of
    memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 95.08 GiB of which 1.27
    GiB is free. Including non-PyTorch memory, this process has 93.27 GiB memory in use. Of the
    allocated memory 92.83 GiB is allocated by PyTorch, and 5.54 MiB is reserved by PyTorch but
    unallocated.`` ``in_use_gib`` is what "this process has" in use (non-PyTorch memory
    included); where PyTorch cannot tell its own process (a container) it lists ``Process N
    has X memory in use`` instead, and ``in_use_gib`` is their sum. A number the message does
    not give (older PyTorch, a cut line) is None."""

    tried_gib: float
    gpu: int | None = None
    capacity_gib: float | None = None
    free_gib: float | None = None
    in_use_gib: float | None = None
    allocated_gib: float | None = None
    reserved_unallocated_gib: float | None = None
    #: of ``allocated_gib``, what sits in private pools (``with X allocated in private pools
    #: (e.g., CUDA Graphs)``, printed when not zero): CUDA graphs were captured; 0.0 when the
    #: allocated-memory sentence has no such clause, None when the message lacks the sentence
    graph_pools_gib: float | None = None

    @property
    def fragmentation(self) -> bool | None:
        """True when PyTorch's cache held at least the request but could not hand it out (what
        the message's ``expandable_segments`` advice is about); False when the cached,
        unallocated memory is smaller than the request (the advice does not apply: the
        memory is really in use); None when the message does not say."""
        if self.reserved_unallocated_gib is None:
            return None
        return self.reserved_unallocated_gib >= self.tried_gib

    def describe(self) -> str:
        """One line: ``asked 2.00 GiB on GPU 0 with 1.27 of 95.08 GiB free; this process had
        93.27 GiB in use (PyTorch 92.83 allocated + 5.54 MiB cached): not fragmentation``."""
        where = f" on GPU {self.gpu}" if self.gpu is not None else ""
        out = f"asked {_size(self.tried_gib)}{where}"
        if self.free_gib is not None and self.capacity_gib is not None:
            out += f" with {_size(self.free_gib)} of {_size(self.capacity_gib)} free"
        if self.in_use_gib is not None:
            out += f"; this process had {_size(self.in_use_gib)} in use"
            if self.allocated_gib is not None and self.reserved_unallocated_gib is not None:
                out += f" (PyTorch {_size(self.allocated_gib)} allocated + {_size(self.reserved_unallocated_gib)} cached)"
        frag = self.fragmentation
        if frag is True:
            out += ": PyTorch's cache held the request's size: fragmentation (expandable_segments may help)"
        elif frag is False:
            out += ": not fragmentation (less cached than asked): the memory is in use"
        return out

    def as_json(self) -> dict[str, Any]:
        return {"tried_gib": self.tried_gib, "gpu": self.gpu, "capacity_gib": self.capacity_gib,
                "free_gib": self.free_gib, "in_use_gib": self.in_use_gib, "allocated_gib": self.allocated_gib,
                "reserved_unallocated_gib": self.reserved_unallocated_gib, "graph_pools_gib": self.graph_pools_gib,
                "fragmentation": self.fragmentation}


def _size(gib: float) -> str:
    """GiB as PyTorch's message would print it (MiB below 1 GiB)."""
    return f"{gib:.2f} GiB" if gib >= 1 or gib == 0 else f"{gib * 1024:.2f} MiB"


def torch_oom(message: str | None) -> TorchOom | None:
    """The :class:`TorchOom` numbers of a PyTorch CUDA OOM message, or None when ``message``
    does not say ``Tried to allocate N``. Never raises."""
    if not message:
        return None
    m = _OOM_TRIED.search(message)
    if m is None:
        return None
    g = _OOM_GPU.search(message)
    a = _OOM_ALLOCATED.search(message)
    own = _OOM_SELF.search(message)
    listed = list(_OOM_PROCESS.finditer(message))
    return TorchOom(
        tried_gib=_gib(m, 1),
        gpu=int(g.group(1)) if g else None,
        capacity_gib=_gib(g, 2) if g else None,
        free_gib=_gib(g, 4) if g else None,
        in_use_gib=_gib(own, 1) if own else (sum(_gib(u, 1) for u in listed) if listed else None),
        allocated_gib=_gib(a, 1) if a else None,
        reserved_unallocated_gib=_gib(a, 5) if a else None,
        graph_pools_gib=_gib(a, 3) if a and a.group(3) else (0.0 if a else None),
    )

_GB = r"([-\d.]+)\s*GB"


def _f(m: re.Match | None, g: int | str = 1) -> float | None:
    if m is None:
        return None
    return _num(m.group(g))


def _i(m: re.Match | None, g: int | str = 1) -> int | None:
    if m is None:
        return None
    return _int(m.group(g))


def _ints(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    return tuple(int(x) for x in re.findall(r"-?\d+", text))


# --------------------------------------------------------------------------------------
# ServerArgs repr reader (no eval)


_NAME_RE = re.compile(r"\s*([A-Za-z_][A-Za-z_0-9]*)\s*=")


def _scan_value(s: str, i: int, stops: str) -> int:
    """Index just past the value starting at ``s[i]``: balanced brackets and quotes, up to
    the first top-level character in ``stops``."""
    depth = 0
    n = len(s)
    while i < n:
        c = s[i]
        if c in "'\"":
            q = c
            i += 1
            while i < n and s[i] != q:
                if s[i] == "\\":
                    i += 1
                i += 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return i
            depth -= 1
        elif depth == 0 and c in stops:
            return i
        i += 1
    return n


def _literal(text: str) -> Any:
    text = text.strip()
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return text


def parse_py_repr(text: str) -> tuple[str, dict[str, Any], bool]:
    """Read ``ServerArgs(a=1, b='x', ...)`` or ``{'a': 1, ...}`` without ``eval``.

    Returns ``(form, args, complete)``: form ``"dataclass"`` or ``"dict"``; values are
    Python literals where :func:`ast.literal_eval` accepts them, else the repr text
    (``CudaGraphConfig(...)``, ``device(type='cuda')``); ``complete`` False when the text is
    cut before its closing bracket. Never raises."""
    s = text.strip()
    args: dict[str, Any] = {}
    try:
        if s.startswith("{"):
            i, n = 1, len(s)
            while i < n:
                while i < n and s[i] in " ,\n":
                    i += 1
                if i >= n:
                    return "dict", args, False
                if s[i] == "}":
                    return "dict", args, True
                kend = _scan_value(s, i, ":")
                if kend >= n:
                    return "dict", args, False
                key = _literal(s[i:kend])
                vstart = kend + 1
                vend = _scan_value(s, vstart, ",}")
                if vend >= n:
                    return "dict", args, False
                args[str(key)] = _literal(s[vstart:vend])
                i = vend
            return "dict", args, False
        p = s.find("(")
        i, n = p + 1, len(s)
        while i < n:
            while i < n and s[i] in " ,\n":
                i += 1
            if i >= n:
                break
            if s[i] == ")":
                return "dataclass", args, True
            m = _NAME_RE.match(s, i)
            if not m:
                break
            vstart = m.end()
            vend = _scan_value(s, vstart, ",)")
            if vend >= n:
                break
            args[m.group(1)] = _literal(s[vstart:vend])
            i = vend
        return "dataclass", args, False
    except Exception:  # pragma: no cover - defensive: never raise out of the parser
        return ("dict" if s.startswith("{") else "dataclass"), args, False


# --------------------------------------------------------------------------------------
# message parsers: (message, common kwargs) -> Event | None


_RE_DIST_OLD = re.compile(r"Init torch distributed ends\.(?: elapsed=([-\d.]+) s,)? mem usage=" + _GB)
_RE_PARALLEL = re.compile(r"Init parallel ends\. elapsed=([-\d.]+) s")
_RE_BASELINE = re.compile(r"Memory baseline taken\. mem usage=" + _GB)
_RE_ELAPSED = re.compile(r"elapsed=([-\d.]+)\s*s")
_RE_TYPE = re.compile(r"type=([^,\s]+)")
_RE_DTYPE = re.compile(r"dtype=(?:torch\.)?([\w]+)")
_RE_QUANT = re.compile(r"quant=([^,]+)")
_RE_AVAIL = re.compile(r"avail(?:able)?[ _]mem=\s*" + _GB)
_RE_MEMUSE = re.compile(r"mem usage=\s*" + _GB)
_RE_MAMBA_SIZE = re.compile(r"max_mamba_cache_size:\s*(\d+)")
_RE_CONV = re.compile(r"conv_state size:\s*" + _GB)
_RE_SSM = re.compile(r"(?<!intermediate_)ssm_state size:\s*" + _GB)
_RE_ISSM = re.compile(r"intermediate_ssm_state_cache size:\s*" + _GB)
_RE_ICONV = re.compile(r"intermediate_conv_window_cache size:\s*" + _GB)
_RE_KV_HEAD = re.compile(r"(?:(\w+) )?KV Cache (is allocated|VA upper bound)\.")
_RE_KV_DTYPE = re.compile(r"dtype:\s*(?:torch\.)?(\w+)")
_RE_TOKENS = re.compile(r"#tokens:\s*(\d+)")
_RE_K = re.compile(r"(?<![\w])K size:\s*" + _GB)
_RE_V = re.compile(r"(?<![\w])V size:\s*" + _GB)
_RE_KVS = re.compile(r"KV size:\s*" + _GB)
_RE_CAPTURE = re.compile(
    r"Capture (?:(target|draft) )?(?:(decode|verify|prefill|extend|piecewise) )?"
    r"(?:(?:cuda|cpu|npu|musa|xpu) graph|(?:CUDA|CPU|NPU|MUSA|XPU) graph) (begin|end)\b"
)
_RE_CAPTURE_OLD_ROLE = re.compile(r"Capture (draft(?: extend)?) (?:cuda|cpu|npu|musa|xpu) graph")
_RE_BACKEND = re.compile(r"backend=([^,\s]+)")
_RE_BS = re.compile(r"\bbs=(\[[^\]]*\]?)")
_RE_NUMTOK = re.compile(r"num_tokens=(\[[^\]]*\]?)")
_RE_TIME_ELAPSED = re.compile(r"Time elapsed:\s*([-\d.]+)\s*s")
_RE_KEYVAL = re.compile(r"([a-z_]+)=\s*([-\w.]+)")
_RE_CAPPED = re.compile(
    r"max_running_requests is capped to (\d+) by the mamba state cache"
    # the spaces may be lost where a terminal or a person wrapped the line (joined as one record)
    r"(?:\s*\(max_mamba_cache_size=(\d+),\s*(\d+)\s*state\s*slots\s*per\s*request\))?"
)
_RE_UVICORN_UP = re.compile(r"Uvicorn running on (\S+)")
_RE_ACCESS = re.compile(r'INFO:\s+(\S+) - "(\w+) (\S+)[^"]*" (\d{3})')
_RE_CHILD = re.compile(r"Subprocess (\S+) \(pid=(\d+)\) crashed with exit code (-?\d+)")
_RE_RANK_DEAD = re.compile(r"Rank (\d+) scheduler (?:is dead|died during initialization)(?: \(exit code: (-?\d+)\))?")
_RE_KILLTREE = re.compile(r"kill_process_tree called: parent_pid=(\d+)(?:.*?\bpid=(\d+))?")
_RE_WATCHDOG = re.compile(r"watchdog_timeout=([-\d.]+)")
_RE_HEALTH = re.compile(r"for last (\d+) seconds")
_RE_RETRACT = re.compile(r"#retracted_reqs:\s*(\d+)")
_RE_GAINED = re.compile(r"#new_tokens_gained:\s*(\d+)")
_RE_MGAINED = re.compile(r"#mamba_num_gained:\s*(\d+)")
#: ``new`` is SGLang's whole quoted replacement text, which need not be one flag (0.5.23:
#: ``Use '--cuda-graph-backend-{decode,prefill}=disabled' instead.``)
_RE_DEPRECATED_FLAG = re.compile(r"'(--[\w-]+)' is deprecated(?:.*? Use '([^']+)' instead)?")
_RE_DEPRECATED_EP = re.compile(r"Endpoint '([^']+)' is deprecated(?:.*?use '([^']+)')?")
_RE_BATCH_HEAD = re.compile(r"(Decode|Prefill) batch(?: \[(\d+)\])?")
_RE_PROGRESS = re.compile(
    r"^(?P<label>.*?):?\s*(?P<pct>\d{1,3})%\|[^|]*\|\s*(?P<done>\d+)/(?P<total>\d+)"
    r"(?:\s*\[(?P<el>[\d:]+)<)?"
)
_RE_PYWARN = re.compile(r"^(.+?):(\d+): (\w*Warning): (.*)$")
_RE_LEVEL = re.compile(r"^(DEBUG|INFO|WARNING|ERROR|CRITICAL) (?:[\w.\-/]+:\d+: |- )?")
_RE_EXC = re.compile(
    r"^\s*(?:->\s*)?((?:[A-Za-z_][\w.]*)?(?:Error|Exception|Interrupt|Exit|Failure|Warning|Fault))(?::\s?(.*))?$",
    re.S,
)
_RE_FRAME = re.compile(r'^\s*File "([^"]*)"(?:, line (\d+))?(?:, in (.+))?')


def _hms(text: str | None) -> float | None:
    if not text:
        return None
    try:
        parts = [int(p) for p in text.split(":")]
    except ValueError:
        return None
    s = 0
    for p in parts:
        s = s * 60 + p
    return float(s)


def _p_batch(cls, head: str):
    n = len(head)
    new = object.__new__
    setdict = object.__setattr__

    def parse(msg: str, kw: dict) -> Event | None:
        if not msg.startswith(head):
            return None
        if msg[n:n + 2] == " [":
            m = _RE_BATCH_HEAD.match(msg)
            if m is None:
                return None
            return _mk(cls, kw, body=msg[m.end():], iteration=_int(m.group(2)))
        o = new(cls)
        # SGLang 0.4 (2024-25) wrote "Decode batch. #running-req: 1, ..." (a period)
        kw["body"] = msg[n:] if msg[n:n + 1] != "." else "," + msg[n + 1:]
        kw["iteration"] = None
        kw["fragment"] = False
        setdict(o, "__dict__", kw)  # adopts kw: the callers never reuse it
        return o
    return parse


_p_decode = _p_batch(DecodeBatch, "Decode batch")
_p_prefill = _p_batch(PrefillBatch, "Prefill batch")


def _p_load(msg: str, kw: dict) -> Event | None:
    if msg.startswith("Load weight begin"):
        return WeightsLoadBegin(avail_gb=_f(_RE_AVAIL.search(msg)), **kw)
    if msg.startswith("Load weight end"):
        t = _RE_TYPE.search(msg)
        d = _RE_DTYPE.search(msg)
        q = _RE_QUANT.search(msg)
        el = _RE_ELAPSED.search(msg)
        if el is None and "Committed real weights" in msg:
            el = re.search(r"capture in ([-\d.]+) s", msg)
        return WeightsLoaded(
            elapsed_s=_f(el), arch=t.group(1) if t else None, dtype=d.group(1) if d else None,
            quant=q.group(1).strip() if q else None, avail_gb=_f(_RE_AVAIL.search(msg)),
            mem_usage_gb=_f(_RE_MEMUSE.search(msg)), **kw)
    return None


def _p_init(msg: str, kw: dict) -> Event | None:
    if msg.startswith("Init torch distributed ends"):
        m = _RE_DIST_OLD.match(msg)
        return DistributedInit(elapsed_s=_f(m, 1), mem_usage_gb=_f(m, 2), **kw)
    if msg.startswith("Init parallel ends"):
        return DistributedInit(elapsed_s=_f(_RE_PARALLEL.match(msg)), **kw)
    if msg.startswith("Initialization failed. Please see"):
        return SchedulerDied(**kw)
    return None


def _p_mem(msg: str, kw: dict) -> Event | None:
    if msg.startswith("Memory pool end"):
        return MemoryPoolEnd(avail_gb=_f(_RE_AVAIL.search(msg)), **kw)
    if msg.startswith("Memory baseline taken"):
        return DistributedInit(mem_usage_gb=_f(_RE_BASELINE.match(msg), 1), **kw)
    return None


def _p_mamba(msg: str, kw: dict) -> Event | None:
    if msg.startswith("Mamba Cache is allocated."):
        conv = _f(_RE_CONV.search(msg))
        ssm = _f(_RE_SSM.search(msg))
        return MambaCacheAllocated(
            max_mamba_cache_size=_i(_RE_MAMBA_SIZE.search(msg)), conv_gb=conv, ssm_gb=ssm,
            intermediate_ssm_gb=_f(_RE_ISSM.search(msg)),
            intermediate_conv_gb=_f(_RE_ICONV.search(msg)),
            complete=conv is not None and ssm is not None, **kw)
    if msg.startswith("Mamba extra_buffer is disabled"):
        return SettingChanged(setting="mamba_scheduler_strategy", value="no_buffer", **kw)
    return None


def _p_kv(msg: str, kw: dict) -> Event | None:
    post = msg.startswith("Post-capture KV sizing:")
    if post:
        if "KV cache allocated" not in msg:
            return None
        head = None
    else:
        head = _RE_KV_HEAD.match(msg)
        if head is None:
            return None
    d = _RE_KV_DTYPE.search(msg)
    return KVCacheAllocated(
        label=(head.group(1) or "") if head else "", dtype=d.group(1) if d else None,
        tokens=_i(_RE_TOKENS.search(msg)), k_gb=_f(_RE_K.search(msg)),
        v_gb=_f(_RE_V.search(msg)), kv_gb=_f(_RE_KVS.search(msg)),
        upper_bound=bool(head and head.group(2) == "VA upper bound"), post_capture=post,
        avail_gb=_f(_RE_AVAIL.search(msg)), **kw)


def _p_capture(msg: str, kw: dict) -> Event | None:
    if msg.startswith("Capture cuda graph bs") or msg.startswith("Capture CUDA graph bs"):
        return GraphBatchSizes(batch_sizes=_ints(msg[msg.find("bs") + 2:]) or (), **kw)
    m = _RE_CAPTURE.match(msg)
    if m is None:
        return None
    role, phase, which = m.group(1), m.group(2), m.group(3)
    if role is None:
        old = _RE_CAPTURE_OLD_ROLE.match(msg)
        if old:
            role = "draft"
            phase = "extend" if "extend" in old.group(1) else phase
    if phase is None and msg.startswith("Capture piecewise"):
        phase = "piecewise"
    bs = _RE_BS.search(msg) or _RE_NUMTOK.search(msg)
    if which == "begin":
        b = _RE_BACKEND.search(msg)
        return GraphCaptureBegin(role=role, phase=phase, backend=b.group(1) if b else None,
                                 batch_sizes=_ints(bs.group(1)) if bs else None,
                                 avail_gb=_f(_RE_AVAIL.search(msg)), **kw)
    el = _RE_ELAPSED.search(msg) or _RE_TIME_ELAPSED.search(msg)
    return GraphCaptureEnd(role=role, phase=phase, elapsed_s=_f(el),
                           mem_usage_gb=_f(_RE_MEMUSE.search(msg)),
                           avail_gb=_f(_RE_AVAIL.search(msg)),
                           batch_sizes=_ints(bs.group(1)) if bs else None, **kw)


def _p_max(msg: str, kw: dict) -> Event | None:
    if msg.startswith("max_total_num_tokens="):
        vals = dict(_RE_KEYVAL.findall(msg))
        mem = vals.get("available_gpu_mem", vals.get("available_cpu_mem"))
        return ReadySummary(
            max_total_num_tokens=_int(vals.get("max_total_num_tokens")),
            chunked_prefill_size=_int(vals.get("chunked_prefill_size")),
            max_prefill_tokens=_int(vals.get("max_prefill_tokens")),
            max_running_requests=_int(vals.get("max_running_requests")),
            context_len=_int(vals.get("context_len")),
            available_gpu_mem_gb=_num(mem), **kw)
    if msg.startswith("max_running_requests is capped"):
        m = _RE_CAPPED.match(msg)
        if m:
            return ConcurrencyCapped(effective=_i(m, 1), max_mamba_cache_size=_i(m, 2),
                                     slots_per_request=_i(m, 3), **kw)
    return None


def _p_server_args(msg: str, kw: dict) -> Event | None:
    if not msg.startswith("server_args="):
        return None
    form, args, complete = parse_py_repr(msg[len("server_args="):])
    return ServerArgsDump(form=form, args=args, complete=complete, **kw)


def _p_the(msg: str, kw: dict) -> Event | None:
    if msg.startswith(READY_MESSAGE):
        return ServerReady(**kw)
    return None


def _p_info(msg: str, kw: dict) -> Event | None:
    if not msg.startswith("INFO:"):
        return None
    if ' - "' in msg:
        o = object.__new__(HttpAccess)
        object.__setattr__(o, "__dict__", kw)  # adopts kw
        return o
    if msg.endswith("Application startup complete.") and msg[5:].strip() == "Application startup complete.":
        return AppStartupComplete(**kw)
    m = _RE_UVICORN_UP.search(msg) if "Uvicorn running" in msg else None
    if m:
        url = m.group(1)
        pm = re.search(r":(\d+)/?$", url)
        return HttpServerUp(url=url, port=_i(pm), **kw)
    return None


_SIGQUIT_RUNNING = "SIGQUIT received"
_SIGQUIT_LAUNCH = "Received sigquit"


def _p_sigquit(msg: str, kw: dict) -> Event | None:
    if msg.startswith(_SIGQUIT_RUNNING):
        return SigquitReceived(phase="running", **kw)
    if msg.startswith(_SIGQUIT_LAUNCH):
        return SigquitReceived(phase="launch", **kw)
    return None


def _p_sub(msg: str, kw: dict) -> Event | None:
    m = _RE_CHILD.match(msg)
    if m:
        return ChildCrashed(name=m.group(1), pid=_i(m, 2), exit_code=_i(m, 3), **kw)
    return None


def _p_rank(msg: str, kw: dict) -> Event | None:
    m = _RE_RANK_DEAD.match(msg)
    if m:
        return SchedulerDied(rank_index=_i(m, 1), exit_code=_i(m, 2), **kw)
    return None


def _p_kill(msg: str, kw: dict) -> Event | None:
    m = _RE_KILLTREE.match(msg)
    if m:
        return KillProcessTree(parent_pid=_i(m, 1), pid=_i(m, 2), **kw)
    return None


def _p_watchdog(msg: str, kw: dict) -> Event | None:
    if msg.startswith("Watchdog timeout") or msg.startswith("Scheduler watchdog timeout"):
        return WatchdogTimeout(timeout_s=_f(_RE_WATCHDOG.search(msg)), **kw)
    return None


def _p_health(msg: str, kw: dict) -> Event | None:
    if msg.startswith("Health check failed"):
        return HealthCheckFailed(seconds=_i(_RE_HEALTH.search(msg)), **kw)
    return None


def _p_retract(msg: str, kw: dict) -> Event | None:
    if msg.startswith("KV cache pool is full. Retract"):
        return RetractRequests(retracted=_i(_RE_RETRACT.search(msg)),
                               new_tokens_gained=_i(_RE_GAINED.search(msg)),
                               mamba_num_gained=_i(_RE_MGAINED.search(msg)), **kw)
    return None


def _p_quote(msg: str, kw: dict) -> Event | None:
    m = _RE_DEPRECATED_FLAG.match(msg)
    if m:
        return FlagDeprecated(old=m.group(1), new=m.group(2), **kw)
    return None


def _p_endpoint(msg: str, kw: dict) -> Event | None:
    m = _RE_DEPRECATED_EP.match(msg)
    if m:
        return EndpointDeprecated(old=m.group(1), new=m.group(2), **kw)
    return None


def _p_hybrid(msg: str, kw: dict) -> Event | None:
    if msg.startswith("Hybrid GDN model detected, disable radix cache"):
        return SettingChanged(setting="disable_radix_cache", value=True, **kw)
    return None


_FOLLOWER_UP = "Dummy health check server started in background thread at "


def _p_dummy(msg: str, kw: dict) -> Event | None:
    if msg.startswith(_FOLLOWER_UP):
        return FollowerReady(address=msg[len(_FOLLOWER_UP):].strip() or None, **kw)
    return None


def _p_disable(msg: str, kw: dict) -> Event | None:
    if msg.startswith("Disabling overlap schedule"):
        return SettingChanged(setting="disable_overlap_schedule", value=True, **kw)
    if msg.startswith("Disabling radix cache"):
        return SettingChanged(setting="disable_radix_cache", value=True, **kw)
    if msg.startswith("Disable prefill CUDA graph"):
        return SettingChanged(setting="cuda_graph_config.prefill.backend", value="disabled", **kw)
    return None


def _p_using(msg: str, kw: dict) -> Event | None:
    if msg.startswith("Using hybrid linear attention backend"):
        return SettingChanged(setting="attention_backend", value="hybrid_linear_attn", **kw)
    return None


def _p_killed(msg: str, kw: dict) -> Event | None:
    if msg.strip() == "Killed":
        return Killed(**kw)
    return None


#: first four characters of the message → parsers to try in order
_DISPATCH: dict[str, Any] = {
    "Deco": _p_decode,
    "Pref": _p_prefill,
    "Load": _p_load,
    "Init": _p_init,
    "Memo": _p_mem,
    "Mamb": _p_mamba,
    "KV C": _p_kv,
    "Full": _p_kv,
    "SWA ": _p_kv,
    "Post": _p_kv,
    "Capt": _p_capture,
    "max_": _p_max,
    "serv": _p_server_args,
    "The ": _p_the,
    "INFO": _p_info,
    "SIGQ": _p_sigquit,
    "Rece": _p_sigquit,
    "Subp": _p_sub,
    "Rank": _p_rank,
    "kill": _p_kill,
    "Watc": _p_watchdog,
    "Sche": _p_watchdog,
    "Heal": _p_health,
    "KV c": _p_retract,
    "Endp": _p_endpoint,
    "Hybr": _p_hybrid,
    "Disa": _p_disable,
    "Dumm": _p_dummy,
    "Usin": _p_using,
    "Kill": _p_killed,
}
#: ``'--flag' is deprecated...``: every head a quoted flag name can start with
_DISPATCH.update(("'--" + c, _p_quote) for c in string.ascii_letters + string.digits + "_-")


def _classify(msg: str, kw: dict) -> Event:
    """The typed event for one logical message (envelope already removed). Never raises."""
    p = _DISPATCH.get(msg[:4])
    if p is not None:
        try:
            ev = p(msg, kw)
        except Exception:  # pragma: no cover - a parser bug must not lose the line
            ev = None
        if ev is not None:
            return ev
    # bare fragments of batch lines (quoted excerpts without the head, cut at both ends)
    if kw.get("time") is None and ": " in msg:
        cls = _fragment_class(msg)
        if cls is not None:
            return cls(body=msg, fragment=True, **kw)
    return _mk(Text, kw)


#: keys only a decode batch line prints (0.5.5-0.5.23 scheduler_metrics_mixin.py
#: log_decode_stats), only a prefill batch line prints (log_prefill_stats), and both
_DECODE_ONLY_KEYS = ("accept len", "accept rate", "gen throughput (token/s)", "#full token", "mamba num",
                     "cap len", "#token")
_PREFILL_ONLY_KEYS = ("#new-seq", "#new-token", "#cached-token", "#pending-token", "input throughput (token/s)")
_BATCH_KEYS = frozenset(_DECODE_ONLY_KEYS + _PREFILL_ONLY_KEYS + (
    "#running-req", "#queue-req", "token usage", "full token usage", "swa token usage", "mamba usage",
    "#swa token") + _GRAPH_KEYS)


def _fragment_class(msg: str) -> type | None:
    """DecodeBatch / PrefillBatch for a batch line's ``key: value, ...`` fields without its
    head (a quote, a ``grep -o``, a terminal cut at both ends), else None: at least two of
    SGLang's batch keys with a value, and most comma pieces are such pairs (so prose that
    names one key is not a batch line)."""
    pieces = [p.strip() for p in msg.split(",")]
    keys = []
    for p in pieces:
        k, sep, v = p.partition(": ")
        if sep and k in _BATCH_KEYS and v.strip():
            keys.append(k)
    if len(keys) < 2 or len(keys) * 2 < len([p for p in pieces if p]):
        return None
    if any(k in _DECODE_ONLY_KEYS for k in keys):
        return DecodeBatch
    if any(k in _PREFILL_ONLY_KEYS for k in keys):
        return PrefillBatch
    return None


# --------------------------------------------------------------------------------------
# envelope


_ENV_RE = re.compile(
    r"\[(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)((?: [A-Z_]+\d+)*)\] ?(.*)",
    re.S,
)


_ENV_CUT_RE = re.compile(r"\[(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)((?: [A-Z_]+\d+)*)(?: [A-Z_]*)?\s*$")


def _split_envelope(line: str) -> tuple[str | None, str | None, str]:
    """(time, rank, message) of one physical line; (None, None, line) without envelope."""
    m = _ENV_RE.match(line) if line[:1] == "[" else None
    if m is None:
        # a supervisor's prefix ("sglang-1  | ", an ISO timestamp) before the envelope
        j = line.find("[20", 0, 200)
        if j < 0:
            return None, None, line
        m = _ENV_RE.match(line, j) if j > 0 else None
        if m is None:
            # a line cut inside its envelope ("[2026-05-05 04:41:51 DP2 TP2 E"): the time and
            # the whole rank tags before the cut; a cut tag is dropped
            c = _ENV_CUT_RE.match(line, j)
            if c is not None:
                return c.group(1), c.group(2)[1:] or None, ""
            return None, None, line
    time, tags, msg = m.groups()
    rank = tags[1:] or None
    if msg[:3] == "[20":  # doubled envelope
        m2 = _ENV_RE.match(msg)
        if m2 is not None:
            rank = rank or (m2.group(2)[1:] or None)
            msg = m2.group(3)
    return time, rank, msg


_LEVEL_HEADS = frozenset(("DEBU", "INFO", "WARN", "ERRO", "CRIT"))


def _strip_level(msg: str) -> tuple[str | None, str]:
    m = _RE_LEVEL.match(msg)
    if m is None or msg.startswith("INFO:"):
        return None, msg
    return m.group(1), msg[m.end():]


def parse_line(line: str | bytes) -> Event:
    """The event for one physical line, without joining (no state). Never raises."""
    text = display_text(line)
    if text[:3] != "[20":
        text = unwrap_line(text)
    time, rank, msg = _split_envelope(text)
    level = None
    if msg[:4] in _LEVEL_HEADS and msg[4:5] != ":":
        level, msg = _strip_level(msg)
    kw = {"text": text, "message": msg, "time": time, "rank": rank, "level": level}
    if "Traceback (most recent call last)" in msg or _RE_EXC.match(msg) and time is None:
        return _finish_traceback(kw, [msg] if time is None else [], msg if time else None)
    return _classify(msg, kw)


# --------------------------------------------------------------------------------------
# traceback assembly


#: SGLang's process exception header (``Scheduler hit an exception:``,
#: ``DetokenizerManager hit an exception:``; scheduler.py / detokenizer_manager.py /
#: data_parallel_controller.py ``run_*_process``, all versions), also alone on its line
#: when a reporter paraphrased the traceback under it
_RE_HIT = re.compile(r"(\w+) hit an exception")
_RE_HIT_ALONE = re.compile(r"^\s*\w+ hit an exception:?\s*$")


def _finish_traceback(kw: dict, body: list[str], first_msg: str | None) -> Traceback:
    """Build a Traceback from the first line's message (when it had an envelope and a
    header) and the following physical lines."""
    header = origin = None
    if first_msg is not None:
        i = first_msg.find("Traceback (most recent call last)")
        if i >= 0:
            header = first_msg[:i].strip() or None
        else:
            header = first_msg.strip() or None
        if header:
            om = _RE_HIT.match(header)
            origin = om.group(1) if om else None
    frames: list[Frame] = []
    exc_type = exc_msg = None
    msg_lines: list[str] = []
    in_exc = False
    prev_frame = False  # the line before was a frame header: an indented line is its source line
    for raw in body:
        line = raw.rstrip()
        s = line.lstrip()
        if not s:
            continue
        if s.startswith("Traceback (most recent call last)") or s.startswith("During handling of") \
                or s.startswith("The above exception was"):
            in_exc = False
            continue
        fm = _RE_FRAME.match(line)
        if fm:
            frames.append(Frame(file=fm.group(1), line=_int(fm.group(2)),
                                function=(fm.group(3) or "").strip() or None))
            in_exc = False
            prev_frame = True
            continue
        if in_exc and line[:1] not in " \t":
            msg_lines.append(line)
            continue
        after_frame = prev_frame
        prev_frame = False
        if line[:1] in " \t" and not s.startswith("->") and (after_frame or not _RE_EXC.match(line)):
            if after_frame and frames and frames[-1].code is None:
                frames[-1] = _replace(frames[-1], code=s)
            continue  # source line / caret markers of a frame
        em = _RE_EXC.match(line)
        if em:
            exc_type = em.group(1)
            msg_lines = [em.group(2) or ""]
            in_exc = True
    if exc_type is not None:
        exc_msg = "\n".join(msg_lines).strip()
    kw = dict(kw)
    kw.setdefault("level", None)
    return Traceback(header=header, origin=origin, frames=tuple(frames), exc_type=exc_type,
                     exc_message=exc_msg, complete=exc_type is not None, **kw)


# --------------------------------------------------------------------------------------
# stateful parser


_MAX_RECORD_LINES = 2000
_WRAP_WIDTH = 100

# pending record kinds
_P_PLAIN = 0      # one logical message, may get continuation lines
_P_TB = 1         # traceback being collected
_P_TB_END = 2     # traceback after a blank line following its exception line
_P_TEXT = 3       # like _P_PLAIN, known to match no format while it stays one line


def _is_start(msg: str) -> bool:
    """Lines that always begin a record of their own (besides enveloped ones)."""
    c = msg[:1]
    if c == "T" and msg.startswith("Traceback (most recent call last)"):
        return True
    if c in " \t":
        return False
    if "%|" in msg and _RE_PROGRESS.match(msg):
        return True
    if ": " in msg and "Warning: " in msg and _RE_PYWARN.match(msg):
        return True
    if c == "[" and _ENV_RE.match(msg):
        return True
    return False


_new = object.__new__
_setattr = object.__setattr__
_MAYBE_INCOMPLETE = frozenset(("Deco", "Pref", "max_", "serv"))
#: a whole line on the hot path: the envelope (exact SGLang form, optional level), not
#: followed by a second envelope, then a message of printable ASCII only (no control
#: character, so nothing to strip) that does not end with ":" (a traceback head such as
#: "Scheduler hit an exception: Traceback (most recent call last):" takes the general
#: path), then the newline; ASCII digits and word characters only (``(?a)``). Groups: text
#: (the line without its newline), time, rank tags (None when none), level, message. Any
#: other line takes the general path, with the same result.
_HOT_RE = re.compile(
    r"(?a)(\[(\d\d\d\d-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)(?: ([A-Z_]+\d+(?: [A-Z_]+\d+)*))?\] "
    r"(?:(DEBUG|INFO|WARNING|ERROR|CRITICAL) (?:[\w.\-/]+:\d+: |- ))?(?!\[20)([ -~]*))(?<!:)\n?\Z"
)
#: a line :meth:`LogParser.feed_many` reads on its hot path (``match(text, pos, endpos)``: the
#: line at ``pos``, ``endpos`` just after its newline): such a line ends the pending record
HOT_LINE = _HOT_RE


def _complete(msg: str, kw: dict) -> Event | None:
    """The typed event of an enveloped message in a known format that has its last field
    (``kw`` may become its attributes); None for plain text or a known format still missing
    its last field (a wrapped rest may follow). The general path's twin of the inline
    classification in :meth:`LogParser.feed_many`."""
    head = msg[:4]
    p = _DISPATCH.get(head)
    if p is None:
        return None
    if head in _MAYBE_INCOMPLETE and _incomplete(msg):
        return None
    try:
        return p(msg, kw)
    except Exception:  # pragma: no cover - a parser bug must not lose the line
        return None


def _incomplete(msg: str) -> bool:
    """A known format that is still missing its last field (so a wrapped rest follows)."""
    h = msg[:4]
    if h == "Deco":
        return "#queue-req" not in msg
    if h == "Pref":
        return "#queue-req" not in msg
    if h == "max_" and msg.startswith("max_total_num_tokens="):
        return "context_len" not in msg
    if h == "max_" and msg.startswith("max_running_requests is capped"):
        return "per request" not in msg  # the cap warning's last field (kv_cache_configurator.py)
    if h == "serv" and msg.startswith("server_args="):
        return not msg.rstrip().endswith((")", "}"))
    return False


class LogParser:
    """Stateful reader of a server log: joins tracebacks and wrapped lines (module doc).

    ``feed(line)`` takes one physical line (str or bytes; a trailing newline is optional)
    and returns the records completed by it (0, 1 or 2 events); ``flush()`` returns the
    pending record. Physical line numbers start at 1. Never raises on any input.
    """

    __slots__ = ("_n", "_pend", "_pkind", "_plines", "_pmsg", "_pfirst", "_plast")

    def __init__(self) -> None:
        self._n = 0
        self._pend: dict | None = None     # kw of the pending record
        self._pkind = _P_PLAIN
        self._plines: list[str] | None = None  # physical lines when more than one / traceback
        self._pmsg = ""                    # logical message (joined)
        self._pfirst: str | None = None    # traceback: the first line's message (with header)
        self._plast = ""                   # last physical line (terminal-wrap check)

    # -- public -------------------------------------------------------------------------

    def feed(self, line: str | bytes) -> list[Event]:
        """Events completed by one physical line."""
        return self.feed_many((line,))

    def feed_many(self, lines: Iterable[str | bytes]) -> list[Event]:
        """Events completed by a sequence of physical lines (a chunk read from the log,
        e.g. ``f.readlines(65536)``); same result as calling :meth:`feed` for each."""
        out: list[Event] = []
        append = out.append
        extend = out.extend
        match = _HOT_RE.match
        dispatch = _DISPATCH.get
        new = _new
        setattr_ = _setattr
        text_cls = Text
        p_decode = _p_decode
        p_prefill = _p_prefill
        n = self._n
        pend = self._pend
        # the pending record is one enveloped line that matched no format
        ptext = pend is not None and self._pkind == _P_TEXT and self._plines is None
        for line in lines:
            try:
                # hot path: a clean enveloped line (printable ASCII, not a traceback head)
                try:
                    m = match(line)
                except TypeError:  # bytes (or not a string): the general path
                    m = None
                if m is None:
                    self._n = n
                    self._pend = pend
                    if ptext:
                        self._pkind = _P_TEXT
                        self._plines = None
                    extend(self._feed(line))
                    n = self._n
                    pend = self._pend
                    ptext = pend is not None and self._pkind == _P_TEXT and self._plines is None
                    continue
                text, time, rank, level, msg = m.groups()
                n += 1
                head = msg[:4]
                p = dispatch(head)
                if p is None:  # plain text
                    ev = None
                    kw = {"text": text, "message": msg, "time": time, "rank": rank,
                          "line_no": n, "level": level}
                elif p is p_decode and msg[:14] == "Decode batch, " and "#queue-req" in msg:
                    # the two most frequent formats, inline (same result as their parsers)
                    ev = new(DecodeBatch)
                    setattr_(ev, "__dict__", {
                        "text": text, "message": msg, "time": time, "rank": rank, "line_no": n,
                        "level": level, "body": msg[12:], "iteration": None, "fragment": False})
                elif p is p_prefill and msg[:15] == "Prefill batch, " and "#queue-req" in msg:
                    ev = new(PrefillBatch)
                    setattr_(ev, "__dict__", {
                        "text": text, "message": msg, "time": time, "rank": rank, "line_no": n,
                        "level": level, "body": msg[13:], "iteration": None, "fragment": False})
                else:
                    kw = {"text": text, "message": msg, "time": time, "rank": rank,
                          "line_no": n, "level": level}
                    ev = p(msg, kw)
                    if ev is None:
                        p = None  # matched no format: plain text
                    elif head in _MAYBE_INCOMPLETE and _incomplete(msg):
                        ev = None
                        kw = {"text": text, "message": msg, "time": time,
                              "rank": rank, "line_no": n, "level": level}
                if pend is not None:
                    if ptext:
                        t = new(text_cls)
                        setattr_(t, "__dict__", pend)
                        append(t)
                    else:
                        self._n = n
                        self._pend = pend
                        extend(self.flush())
                if ev is not None:
                    append(ev)
                    pend = None
                    ptext = False
                    continue
                # plain text, or a record that may continue: pending (one line: message
                # and last line are pend's; _pkind is set when the loop leaves)
                pend = kw
                ptext = p is None
                if not ptext:
                    self._pkind = _P_PLAIN
                    self._plines = None
            except Exception:  # pragma: no cover - last resort: keep the line as text
                self._n = n
                self._pend = pend
                if ptext:
                    self._pkind = _P_TEXT
                    self._plines = None
                extend(self.flush())
                t = display_text(line) if isinstance(line, (str, bytes)) else repr(line)
                append(Text(text=t, message=t, line_no=self._n))
                n = self._n
                pend = None
                ptext = False
        self._n = n
        self._pend = pend
        if ptext:
            self._pkind = _P_TEXT
            self._plines = None
        return out

    def _feed(self, line: str | bytes) -> list[Event]:
        try:
            if type(line) is str:
                if line[-1:] == "\n":
                    line = line[:-1]
                text = line if line.isprintable() else display_text(line)
            else:
                text = display_text(line)
            if text[:3] != "[20":
                text = unwrap_line(text)  # pasted: fences, line numbers, container/Ray prefixes
            self._n += 1
            m = _ENV_RE.match(text) if text[:1] == "[" else None
            if m is not None:
                time, tags, msg = m.groups()
                rank = tags[1:] or None
                if msg[:3] == "[20":
                    time, rank, msg = _split_envelope(text)
            elif "[20" in text[:200]:
                time, rank, msg = _split_envelope(text)
            else:
                time = rank = None
                msg = text
            if time is not None:
                level = None
                if msg[:4] in _LEVEL_HEADS and msg[4:5] != ":":
                    level, msg = _strip_level(msg)
                pend = self._pend
                if pend is None:
                    out = []
                elif self._plines is None and pend["time"] is not None:  # the hot path
                    out = [_classify(pend["message"], pend)]
                else:
                    out = [self._finish()]
                if msg[-1:] == ":" and (msg.endswith("(most recent call last):") or _RE_HIT_ALONE.match(msg)):
                    self._start(text, time, rank, msg, level)
                    return out
                ev = _complete(msg, {"text": text, "message": msg, "time": time, "rank": rank,
                                     "line_no": self._n, "level": level})
                if ev is not None:  # a complete known format: nothing can continue it
                    out.append(ev)
                    self._pend = None
                    self._plines = None
                    return out
                self._pend = {"text": text, "message": msg, "time": time, "rank": rank,
                              "line_no": self._n, "level": level}
                self._pmsg = msg
                self._plast = text
                self._pkind = _P_PLAIN
                self._plines = None
                return out
            return self._feed_bare(text, msg)
        except Exception:  # pragma: no cover - last resort: keep the line as text
            out = self.flush()
            t = display_text(line) if isinstance(line, (str, bytes)) else repr(line)
            out.append(Text(text=t, message=t, line_no=self._n))
            return out

    def advance(self, n: int) -> list[Event]:
        """``n`` physical lines were read past the parser (:mod:`mambaconsole.sglang.block_fold`:
        lines of :func:`simple_run_pattern`, each a record of its own that nothing continues):
        returns the pending record, which the first of them ends (as :meth:`flush`), and counts
        the lines, so the next line's ``line_no`` follows them."""
        out = self.flush()
        self._n += n
        return out

    @property
    def lines_read(self) -> int:
        """Physical lines read so far (the last one's ``line_no``)."""
        return self._n

    def peek(self) -> Event | None:
        """The pending record as it would be flushed now, without consuming it (a live tail
        can show the last line before the next one arrives); None when nothing is pending."""
        if self._pend is None:
            return None
        saved = self._pend
        self._pend = dict(saved)
        try:
            return self._finish()
        except Exception:  # pragma: no cover
            return None
        finally:
            self._pend = saved

    def flush(self) -> list[Event]:
        """The pending record as an event (empty list when none)."""
        if self._pend is None:
            return []
        if self._plines is None and self._pkind == _P_TEXT:
            ev = _new(Text)
            _setattr(ev, "__dict__", self._pend)
            self._pend = None
            return [ev]
        try:
            ev = self._finish()
        except Exception:  # pragma: no cover
            ev = Text(text="\n".join(self._lines()), message=self._pmsg,
                      line_no=self._pend.get("line_no", 0))
        self._pend = None
        self._plines = None
        return [ev]

    # -- internals ----------------------------------------------------------------------

    def _lines(self) -> list[str]:
        """The pending record's physical lines (materialized on first need: a one-line
        record keeps its message and text in the pending kw only)."""
        if self._plines is None:
            pend = self._pend
            if pend is None:
                self._plines = []
            else:
                self._plines = [pend["text"]]
                self._pmsg = pend["message"]
                self._plast = pend["text"]
        return self._plines

    def _finish(self) -> Event:
        kw = self._pend
        assert kw is not None
        lines = self._lines()
        if len(lines) > 1:
            kw["text"] = "\n".join(lines)
        kw["message"] = self._pmsg
        if self._pkind == _P_TB or self._pkind == _P_TB_END:
            body = lines[1:] if self._pfirst is not None else lines
            return _finish_traceback(kw, body, self._pfirst)
        msg = self._pmsg
        if kw["time"] is None:
            c = msg[:1]
            if c == "K" and msg.strip() == "Killed":
                return Killed(**kw)
            if "%|" in msg:
                pm = _RE_PROGRESS.match(msg)
                if pm:
                    return Progress(label=pm.group("label").strip(), done=_int(pm.group("done")),
                                    total=_int(pm.group("total")), percent=_num(pm.group("pct")),
                                    elapsed_s=_hms(pm.group("el")), **kw)
            if "Warning: " in msg:
                wm = _RE_PYWARN.match(lines[0])
                if wm:
                    kw["level"] = "WARNING"
                    return PythonWarning(category=wm.group(3), file=wm.group(1),
                                         lineno=int(wm.group(2)), **kw)
        return _classify(msg, kw)

    def _start(self, text: str, time, rank, msg, level) -> None:
        self._pend = {"text": text, "message": msg, "time": time, "rank": rank,
                      "line_no": self._n, "level": level}
        self._plines = None
        self._pmsg = msg
        self._plast = text
        self._pkind = _P_PLAIN
        self._pfirst = None
        if _RE_HIT_ALONE.match(msg):  # "DetokenizerManager hit an exception:" over a paraphrase
            self._pkind = _P_TB
            self._pfirst = msg
            self._plines = [text]
        elif time is not None:
            if msg.endswith("(most recent call last):") and "Traceback (most recent call last)" in msg:
                self._pkind = _P_TB
                self._pfirst = msg
                self._plines = [text]
        else:
            s = msg.lstrip()
            if s.startswith("Traceback (most recent call last)") or s.startswith('File "') or (
                    s[:1] not in ("", " ") and "Warning: " not in msg and _RE_EXC.match(msg)):
                self._pkind = _P_TB
                self._plines = [text]

    def _feed_bare(self, text: str, msg: str) -> list[Event]:
        """A line without envelope: continuation, traceback body, or a record of its own."""
        pend = self._pend
        if pend is None:
            if not msg.strip():
                return [Text(text=text, message=msg, line_no=self._n)]
            self._start(text, None, None, msg, None)
            return []
        kind = self._pkind
        lines = self._lines()
        if kind == _P_TB:
            if len(lines) < _MAX_RECORD_LINES:
                s = msg.lstrip()
                if not s:
                    if self._tb_has_exc():
                        self._pkind = _P_TB_END
                    lines.append(text)
                    return []
                if not _is_start(msg) or s.startswith("Traceback"):
                    lines.append(text)
                    return []
        elif kind == _P_TB_END:
            s = msg.lstrip()
            if s.startswith("During handling") or s.startswith("The above exception") \
                    or s.startswith("Traceback"):
                self._pkind = _P_TB
                lines.append(text)
                return []
            if not s:
                lines.append(text)
                return []
            # the traceback ended at the blank line: trailing blanks belong to nobody
            blanks = 0
            while lines and not lines[-1].strip():
                lines.pop()
                blanks += 1
            out = self.flush()
            for k in range(blanks):
                out.append(Text(text="", message="", line_no=self._n - blanks + k))
            self._start(text, None, None, msg, None)
            return out
        elif msg and len(lines) < _MAX_RECORD_LINES:
            c = msg[0]
            if c == " " or c == "\t":
                s = msg.lstrip()
                is_frame = s.startswith('File "') and _RE_FRAME.match(msg) is not None
                is_exc = (s[:1].isupper() or s[:2] == "->") and _RE_EXC.match(msg) is not None
                if not is_frame and not is_exc:
                    lines.append(text)
                    self._pmsg = self._pmsg.rstrip() + " " + msg.strip()
                    self._plast = text
                    return []
            elif not _is_start(msg) and not _RE_EXC.match(msg) and (
                    _incomplete(self._pmsg)
                    or (len(self._plast) >= _WRAP_WIDTH and self._plast[-1:].isalnum())):
                lines.append(text)
                self._pmsg = self._pmsg + msg
                self._plast = text
                return []
        out = self.flush()
        if not msg.strip():
            out.append(Text(text=text, message=msg, line_no=self._n))
            return out
        self._start(text, None, None, msg, None)
        return out

    def _tb_has_exc(self) -> bool:
        lines = self._lines()
        for i in range(len(lines) - 1, -1, -1):
            line = lines[i]
            if _RE_EXC.match(line) and (line[:1] not in " \t" or not _RE_FRAME.match(lines[i - 1] if i else "")):
                return True
        return False


# --------------------------------------------------------------------------------------
# runs of simple lines (the block fold)


def _trie(words: Iterable[str]) -> str:
    """A regex that matches exactly the given literal words (a prefix tree: one branch per
    first character, so a miss costs one character test, not one per word)."""
    words = sorted(set(words))
    if not words:
        return "(?!)"
    optional = "" in words
    groups: dict[str, list[str]] = {}
    for w in words:
        if w:
            groups.setdefault(w[0], []).append(w[1:])
    alts = [re.escape(c) + ("" if tails == [""] else _trie(tails)) for c, tails in groups.items()]
    body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
    return "(?:" + body + ")?" if optional else body


#: message heads whose parser claims only messages with one of these starts (any other
#: message with that head is plain text): the one frequent such head in a serving log is
#: ``Receive: obj=GenerateReqInput(...)`` (the request trace) beside ``Received sigquit``
_CLAIMS = {"Rece": (_SIGQUIT_LAUNCH,)}
_LEVEL_PART = r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) (?:[\w.\-/]+:\d+: |- )"


def simple_run_pattern(ranks: Iterable[str] = (), serving_paths: bool = True, versioned: bool = True) -> re.Pattern:
    """A compiled pattern whose ``match(text, pos)`` spans the run of *simple* lines at
    ``pos`` (each with its ``\\n``; empty when the line at ``pos`` is not one): lines that
    :meth:`LogParser.feed_many` reads on its hot path (``_HOT_RE``: SGLang's exact envelope,
    printable ASCII, not ending with ``:``) into one record of its own:

    - a decode or prefill batch (``Decode batch, ...``, no level): complete with its
      ``#queue-req``; without it, a record the next line ends when it is enveloped;
    - a uvicorn access line (``INFO:  ... - "...``, no level);
    - plain text: a message (after an optional level, as ``_HOT_RE`` reads it) whose first four
      characters no parser of ``_DISPATCH`` claims (or that :data:`_CLAIMS` shows its parser
      does not claim).

    Only the rank tags in ``ranks`` (exactly as printed) or none: a line with another tag ends
    the run; so does, without ``serving_paths``, an access line naming ``/generate`` or
    ``/health`` (one that may show the server serving: the run fold reads those one by one);
    so does, without ``versioned`` (the fold has no SGLang version yet), a plain-text line
    whose message names ``sglang`` in any case (it may name the version: the run fold reads
    those one by one, ``run_fold._version_in``; only plain text can).
    A plain-text line becomes a record when the next line starts (a bare line may continue
    it), so may a batch line without ``#queue-req``; the others are complete at once
    (:func:`simple_complete`)."""
    heads = [k for k in _DISPATCH if k not in _CLAIMS]
    claims = [c for cs in _CLAIMS.values() for c in cs]
    tags = sorted(set(ranks), key=lambda r: (-len(r), r))
    env = (r"\[\d\d\d\d-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?"
           + ("(?: (?:" + "|".join(re.escape(t) for t in tags) + "))?" if tags else "") + r"\] ")
    access = r"INFO:(?=[ -~]*? - \")" + ("" if serving_paths else r"(?![ -~]*?/(?:generate|health))")
    tail = r"[ -~]*+(?<!:)\n"  # printable ASCII, not ending with ":"
    # the same, without "sglang" in any case: printable ASCII but "s" and "S", or an "s" or "S"
    # that does not start it
    plain_tail = tail if versioned else (
        r"[ -RT-rt-~]*+(?:[sS](?![gG][lL][aA][nN][gG])[ -RT-rt-~]*+)*+(?<!:)\n")
    line = (env + r"(?:(?:(?:Decode|Prefill) batch, |" + access + ")" + tail + "|"
            # _HOT_RE takes the level unless the message after it starts with a second envelope
            + r"(?>(?:" + _LEVEL_PART + r"(?!\[20))?)(?!\[20)(?!" + _trie(heads) + ")"
            + "".join("(?!" + re.escape(c) + ")" for c in claims) + plain_tail + ")")
    return re.compile(r"(?a)(?:" + line + r")*+")


def simple_complete(line: str) -> bool:
    """Whether a line of a simple run (:func:`simple_run_pattern`) is a record that nothing
    after it continues: a batch line with its ``#queue-req``, an access line (plain text and
    a batch line still missing its last field may get a wrapped rest)."""
    i = line.find("] ") + 2
    if line.startswith(("Decode batch, ", "Prefill batch, "), i):
        return "#queue-req" in line
    return line.startswith("INFO:", i)


_V = r"[^ ,:\n]++"  # a value without space, comma or colon
_NUM = r"\d+(?:\.\d+)?"
#: a decode batch line's segments in SGLang's order (shared/reference/sglang-observables.md
#: §2.2-2.3, 0.5.5-0.5.23 ``srt/managers/scheduler_metrics_mixin.py`` ... 0.5.13+
#: ``srt/managers/scheduler_components/metrics_reporter.py``): running; the usage block
#: (plain, HiSparse, full [+ SWA]); mamba; speculative (not DSpark's estimate, whose value
#: holds a comma); PD decode; waiting images; graph, throughput, queue; MFU; occupancy;
#: 0.5.5's trailing ", ". Values without space, comma or colon: each field is one piece of
#: :attr:`BatchLine.fields`' split, so the groups are the values it gives.
_DECODE_SEGMENTS = (
    r", \#running-req: (\d+)"
    r"(?:, \#token: V, token usage: V|, \#gpu token: V, gpu token usage: V, \#cpu token: V, cpu token usage: V"
    r"|, \#full token: V, full token usage: V(?:, \#swa token: V, swa token usage: V)?)"
    r"(?:, mamba num: (\d+), mamba usage: (NUM))?"
    r"(?:, accept len: (NUM), accept rate: (NUM)(?:, cap len: V)?(?:, block accept len: V)?)?"
    r"(?:, pre-allocated usage: V, \#prealloc-req: V, \#transfer-req: V(?:, \#host-receive-req: V)?,"
    r" \#retracted-req: V)?"
    r"(?:, waiting-image-req: V)?"
    r"(?:, (?:cuda|cpu|npu|musa|xpu) graph: V)?, gen throughput \(token/s\): (V), \#queue-req: V"
    r"(?:, est\. decode TFLOPS/s \(per GPU\): V, est\. read BW \(GB/s per GPU\): V,"
    r" est\. write BW \(GB/s per GPU\): V)?"
    r"(?:, fwd occupancy: V(?:, fwd\+idle occupancy: V)?)?(?:, )?(?=\n)"
).replace(")?", ")?+").replace("NUM", _NUM).replace("V", _V)

#: a decode batch line of a simple run (searched from the "\n" before it): group 1 its
#: timestamp (the event's ``time``); then ``#running-req``, ``mamba num``, ``mamba usage``,
#: ``accept len``, ``accept rate``, ``gen throughput (token/s)`` (``""`` when absent; the last
#: as printed, :func:`logged_number` reads it) when the line has SGLang's segments
#: (:data:`_DECODE_SEGMENTS`); else group 8, its text after ``Decode batch`` (read such a line
#: as an event)
DECODE_NUMBERS = re.compile(r"(?a)\n\[(.{19}(?:\.\d+)?+)[^\]\n]*+\] Decode batch(?:" + _DECODE_SEGMENTS
                            + r"|([^\n]*))")
#: a decode batch line of a simple run (searched from the "\n" before it)
DECODE_LINE = re.compile(r"\n\[.{19}[^\]\n]*+\] Decode batch")


def simple_event(text: str, line_no: int) -> Event:
    """The event of a batch or access line of a simple run, as :meth:`LogParser.feed_many`
    makes it when an enveloped line follows (``text`` without its newline)."""
    m = _HOT_RE.match(text)
    if m is None:
        raise ValueError("not a line of a simple run: " + text[:80])
    text, time, rank, level, msg = m.groups()
    kw = {"text": text, "message": msg, "time": time, "rank": rank, "line_no": line_no, "level": level}
    if msg[:14] == "Decode batch, ":
        return _mk(DecodeBatch, kw, body=msg[12:], iteration=None, fragment=False)
    if msg[:15] == "Prefill batch, ":
        return _mk(PrefillBatch, kw, body=msg[13:], iteration=None, fragment=False)
    ev = _p_info(msg, kw) if msg[:5] == "INFO:" else None
    if ev is None:
        raise ValueError("not a batch or access line of a simple run: " + text[:80])
    return ev


def parse_lines(lines: Iterable[str | bytes]) -> Iterator[Event]:
    """All events of a sequence of physical lines (joins, then flushes at the end)."""
    p = LogParser()
    for line in lines:
        yield from p.feed(line)
    yield from p.flush()


def parse_text(text: str | bytes) -> list[Event]:
    """All events of a whole log text (``\\n``-separated; ``\\r`` inside a line is kept for
    :func:`~mambaconsole.sglang.text.display_text` to resolve)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return list(parse_lines(lines))
