"""The run fold: one incremental reducer over a server log's typed events that holds
everything the log says about a run. The live console (:class:`mambaconsole.state.ConsoleState`
keeps one per run and feeds it as lines arrive), ``inspect`` (streams a file through it, line
by line, in bounded memory), the run history and ``report`` (:func:`mambaconsole.sglang.summary.
summarize`) all run this fold: one rule per claim.

Usage::

    fold = RunFold()
    for ev in events:              # mambaconsole.sglang.events, in log order
        fold.feed(ev)
    fold.outcome, fold.failure, fold.last.memory, fold.spec(), fold.capacity_samples()

What it holds: the boots (server starts) with, for the last one, the phase reached, the
outcome, the failure and its root cause, the per-rank memory budget (GB as SGLang prints it,
2**30 bytes), the draft model's weights, the speculative tally, the decode samples for the
Mamba capacity (the last :data:`DECODES_KEEP` of the last boot; an earlier boot keeps none),
the access lines answered. Memory is bounded by the number of
boots, ranks and tracebacks, not by the number of lines.

Rules (each from the reference's startup order, §3.1, and crash chain, §4.4):

- A **boot** starts at a ``server_args=`` dump, or at a startup line (distributed init /
  weight load) for a rank that already loaded weights in the current boot, or at any startup
  line after the current boot ended (failure, ``Killed``). Per-boot fields describe the last
  boot.
- **Memory budget per rank** (GB as SGLang prints it): weights = ``Load weight end ... mem
  usage``; KV = sum of the ``KV Cache is allocated`` pools (``Full``+``SWA``; a ``VA upper
  bound`` line is replaced by the post-capture size when it follows); Mamba conv / ssm /
  intermediate from ``Mamba Cache is allocated``; graphs = sum of capture ``mem usage``; free
  after load / after pools / after graphs. A rank without a line has None for it — values are
  never copied from another rank.
- **Concurrency**: effective from the cap warning (0.5.18+) or the ``max_total_num_tokens=``
  summary's ``max_running_requests``; requested from the ``server_args=`` dump; slots per
  request as SGLang printed them.
- **Outcome** of the last boot: ``oom`` (a PyTorch OOM or SGLang's "Not enough memory"
  family), ``arg_error`` (an exception before any weight loading — for an excerpt without
  startup lines: a ``ValueError``/``AssertionError`` or an argparse ``error:`` not raised in
  a forward pass), ``crashed`` (any other exception, a scheduler death, a child crash, a
  SIGQUIT), ``exited`` (``Killed`` / ``kill_process_tree`` without a shown exception),
  ``ready`` (``The server is fired up``, a decode/prefill batch served, or uvicorn's
  ``Application startup complete.`` with a 200 on ``/generate``, ``/health`` or
  ``/health_generate``), ``starting`` (startup lines only), ``unknown``.
  A cut traceback (no exception line) gives ``crashed`` with exception None: no cause is
  guessed.
- **Request errors**: SGLang logs tracebacks it survives (an HTTP handler's exception, a
  failed request). After ``The server is fired up``, a traceback that is not a process's
  ``<Process> hit an exception`` is a request error (finding ``request_error``) unless crash
  lines (SIGQUIT, child crash, ``kill_process_tree``, ``Killed``) follow it before any batch
  line; and any traceback, even a scheduler's, that decode/prefill batch lines follow without
  crash lines in between did not end the server: a request error too, not the outcome.
- **Queueing**: while the last decode line shows a queue on a hybrid Mamba model, finding
  ``queueing`` names the limit (:mod:`mambaconsole.sglang.capacity` verdict) and, at the
  admission cap, the Mamba slots left idle by the cap's reservation.
- **Failure phase**: ``runtime`` once the boot served (ready line, batches) or for a
  scheduler exception after HTTP came up; else what the traceback's frames show (serving
  loop: ``runtime``; weight loading: ``load``; scheduler / worker / pool / graph set-up:
  ``startup``); else from the lines before it: ``args`` (before weight loading), ``load``
  (weights loading), ``startup`` (after weights, before serving; warm-up; or HTTP answered
  503s but never served), ``runtime`` for an excerpt with only a PyTorch OOM that shows
  CUDA-graph private pools (capture was done); None when the excerpt does not tell.
- **Root cause**: the failure is the first traceback of the boot, except that an exception
  SGLang's own processes raised (a ``<Process> hit an exception`` header, a frame in
  SGLang's code) replaces a bare exception line before it (a test harness's
  ``TimeoutError``).
- **Draft model**: a rank's second ``Load weight end`` in a boot is the speculative draft
  model's (a draft class name, ``...MTP``/``...NextN``/``Eagle``/``...DraftModel``, or a
  class other than the target's); its weights never replace the target's and it turns
  speculation on. A second load of the target's own class begins a new boot. After the
  scheduler's set-up line (``max_total_num_tokens=``) without a draft model, speculation
  is off unless the ServerArgs or decode lines say otherwise.
- **Mamba pool** not printed: the size the decode lines' ``mamba num``/``mamba usage``
  pairs determine (:func:`mambaconsole.sglang.capacity.pool_from_usage`).
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import reduce
from operator import add, itemgetter
from typing import Any

from mambaconsole.sglang import events as E
from mambaconsole.sglang.capacity import Sample
from mambaconsole.sglang.spec import SpecStats, SpecTally

__all__ = [
    "RunFold", "RankMemory", "Failure", "Boot", "rank_sort_key", "OUTCOMES", "DECODES_KEEP", "is_draft_arch",
    "failure_is_final", "failure_line", "failure_line_of", "failure_outcome", "decode_numbers", "decode_rows",
    "answered", "served",
]

_DECODE = E.DecodeBatch
_TEXT = E.Text
_PREFILL = E.PrefillBatch
_ACCESS = E.HttpAccess

#: decode lines a boot keeps for the last-decode view and the Mamba capacity (its held-slot
#: window is 16); the speculative tally and the peak running count cover every line
DECODES_KEEP = 256
#: distinct (mamba num, mamba usage) pairs kept for the pool-size inference
USAGE_PAIRS_KEEP = 4096

OUTCOMES = ("ready", "starting", "oom", "arg_error", "crashed", "exited", "unknown")

_ARGPARSE_ERR = re.compile(r"^(?:usage: .*|[\w./ -]+: error: .+)$")
_MAIN = "main"
#: the start of the Mamba pool line (0.5.x ``Mamba Cache is allocated. ...``); a rank-tagged
#: text line that is a proper prefix of it is that line cut off (a tmux capture mid-write)
_MAMBA_LINE = "Mamba Cache is allocated."


def rank_sort_key(rank: str | None) -> tuple:
    """Order ranks by their numeric tags (DP, PP, ..., TP, EP); the main process (None) last."""
    if rank is None:
        return (1,)
    tags = E.rank_tags(rank)
    order = ("DP", "PP", "ATTN_CP", "MOE_DP", "TP", "EP", "CP")
    return (0,) + tuple(tags.get(k, -1) for k in order) + (rank,)


@dataclass
class RankMemory:
    """One rank's startup memory lines (GB as printed; None = line not seen)."""

    rank: str | None
    weights: float | None = None
    #: the speculative draft model's weights (its own ``Load weight end``), never the target's
    draft_weights: float | None = None
    kv_cache: float | None = None
    kv_tokens: int | None = None
    mamba_conv: float | None = None
    mamba_ssm: float | None = None
    mamba_intermediate: float | None = None
    mamba_slots: int | None = None
    mamba_line_cut: bool = False
    #: the target model's class and weights dtype as ``Load weight end`` printed them
    #: (``type=``, ``dtype=torch.X`` without ``torch.``)
    arch: str | None = None
    dtype: str | None = None
    cuda_graph: float | None = None
    avail_after_load: float | None = None
    avail_after_pool: float | None = None
    avail_before_graph: float | None = None
    avail_after_graph: float | None = None
    graph_batch_sizes: tuple[int, ...] | None = None
    _kv_upper: bool = False

    @property
    def mamba_total(self) -> float | None:
        parts = [self.mamba_conv, self.mamba_ssm, self.mamba_intermediate]
        if all(p is None for p in parts):
            return None
        return round(sum(p for p in parts if p is not None), 6)

    def detail(self) -> dict[str, Any]:
        """Every value of this rank: the memory_gb keys plus KV tokens, Mamba slots, free
        memory after the pools / before and after graph capture, graph batch sizes."""
        d = self.as_json()
        d.update({"draft_weights": self.draft_weights, "kv_tokens": self.kv_tokens, "mamba_slots": self.mamba_slots,
                  "avail_after_pool": self.avail_after_pool, "avail_before_graph": self.avail_before_graph,
                  "avail_after_graph": self.avail_after_graph,
                  "graph_batch_sizes": list(self.graph_batch_sizes) if self.graph_batch_sizes else None})
        return d

    def as_json(self) -> dict[str, Any]:
        return {"weights": self.weights, "kv_cache": self.kv_cache, "mamba_conv": self.mamba_conv,
                "mamba_ssm": self.mamba_ssm, "mamba_intermediate": self.mamba_intermediate,
                "mamba_total": self.mamba_total, "cuda_graph": self.cuda_graph,
                "avail_after_load": self.avail_after_load}


@dataclass(frozen=True)
class Failure:
    """What ended a boot. ``phase``: args/load/startup/runtime or None; ``exception`` the
    exception type as printed (``torch.OutOfMemoryError``) or None when not shown; ``oom`` (in
    the JSON) PyTorch's OOM numbers in GiB (:meth:`E.TorchOom.as_json`) or None."""

    phase: str | None
    exception: str | None
    message: str | None
    rank: str | None
    event: E.Event | None = None

    @property
    def oom(self) -> E.TorchOom | None:
        """The numbers of a PyTorch CUDA OOM that ended the boot (:class:`E.TorchOom`), else None."""
        return self.event.oom_numbers if isinstance(self.event, E.Traceback) else None

    @property
    def where(self) -> str | None:
        """Where SGLang raised it: ``sglang/<path>.py:LINE in FUNCTION`` of the innermost
        traceback frame in SGLang's own package (the path from its ``sglang/`` folder on), or
        None when the log shows no such frame."""
        frames = self.event.frames if isinstance(self.event, E.Traceback) else ()
        for fr in reversed(frames):
            i = fr.file.replace("\\", "/").rfind("/sglang/")
            if i >= 0 or fr.file.startswith("sglang/"):
                rel = fr.file[i + 1:] if i >= 0 else fr.file
                return f"{rel}:{fr.line}" + (f" in {fr.function}" if fr.function else "")
        return None

    def as_json(self) -> dict[str, Any]:
        oom = self.oom
        return {"phase": self.phase, "exception": self.exception, "message": self.message, "rank": self.rank,
                "where": self.where, "oom": oom.as_json() if oom is not None else None}


@dataclass
class Boot:
    """One server start within a log."""

    #: events folded into this boot; ranks they carried
    n_events: int = 0
    rank_tags: set = field(default_factory=set)
    #: a startup line (distributed init, weights, pools, graphs, the ready summary) was seen
    saw_startup: bool = False
    sigquit: bool = False
    kill_tree: bool = False
    #: the ready line's time as printed
    ready_time: str | None = None
    memory: dict[str | None, RankMemory] = field(default_factory=dict)
    server_args: dict[str, Any] | None = None
    summary: E.ReadySummary | None = None
    capped: E.ConcurrencyCapped | None = None
    decodes: deque = field(default_factory=lambda: deque(maxlen=DECODES_KEEP))
    spec: SpecTally = field(default_factory=SpecTally)
    peak_running: int | None = None
    usage_pairs: set = field(default_factory=set)
    ready: bool = False
    http_up: bool = False
    #: uvicorn's "Application startup complete." seen
    app_started: bool = False
    #: an access line answered 200 on /generate, /health or /health_generate
    http_served: bool = False
    #: an access line of any status: the HTTP server was up and answering
    http_answered: bool = False
    #: a decode or prefill batch line: the server served requests
    served: bool = False
    #: ranks whose draft model (speculative decoding) loaded: rank -> its weights GB
    draft_weights: dict = field(default_factory=dict)
    #: ranks with a second ``Load weight begin`` in this boot whose end line is still to come
    second_load: set = field(default_factory=set)
    weights_started: bool = False
    weights_loaded: bool = False
    failure: Failure | None = None
    ended: bool = False
    killed: bool = False
    settings: list[E.SettingChanged] = field(default_factory=list)
    deprecated_flags: list[E.FlagDeprecated] = field(default_factory=list)
    request_errors: list[E.Traceback] = field(default_factory=list)
    pending_error: E.Traceback | None = None  # a request error no batch line followed yet
    crash_lines: bool = False  # SIGQUIT / child crash / kill lines seen (the failure is final)

    @property
    def serving(self) -> bool:
        """The server served: SGLang's ready line, a decode or prefill batch, or uvicorn's
        "Application startup complete." with a 200 on ``/generate`` or ``/health``."""
        return self.ready or self.served or (self.app_started and self.http_served)

    def usage_samples(self) -> list[Sample]:
        """The distinct ``mamba num``/``mamba usage`` pairs of the decode lines as samples
        (:func:`mambaconsole.sglang.capacity.pool_from_usage`)."""
        return [Sample(running=None, mamba_num=n, mamba_usage=u) for n, u in self.usage_pairs]

    def rank(self, rank: str | None) -> RankMemory:
        m = self.memory.get(rank)
        if m is None:
            m = self.memory[rank] = RankMemory(rank)
        return m

    @property
    def ranks(self) -> list[str]:
        return sorted(self.rank_tags, key=rank_sort_key)

    @property
    def primary(self) -> RankMemory | None:
        """The lowest rank that reported any memory line (the main process last)."""
        keys = sorted(self.memory, key=rank_sort_key)
        return self.memory[keys[0]] if keys else None


#: paths whose 200 answer shows the server serving (``http_server.py``: /generate runs a
#: request through the scheduler; /health and /health_generate answer 200 only once it serves)
_READY_PATHS = frozenset(("/generate", "/health", "/health_generate"))

#: SGLang's draft-model classes (speculative decoding), by the names its model registry uses:
#: ``...ForCausalLMMTP``, ``...NextN``, ``...Eagle``/``Eagle3...``, ``...DraftModel``
#: (0.5.23 ``srt/models/*.py`` ``EntryClass``; the same suffixes since 0.5.5)
_DRAFT_ARCH = re.compile(r"(?:MTP|NextN|DraftModel)$|Eagle|Medusa|DFlash")


def is_draft_arch(arch: str | None) -> bool:
    """Whether a ``Load weight end`` ``type=`` names a speculative draft model class."""
    return bool(arch) and _DRAFT_ARCH.search(arch) is not None


def _restarts(b: Boot, ev: E.Event, loaded_ranks: set) -> bool:
    """A startup line that begins a new server start in a boot that has not ended: a rank's
    distributed init after it loaded weights; a second ``Load weight end`` of the target's
    own class (a draft model's class, or a second load SGLang started right after the
    first without a distributed init, is the speculative draft model of this boot)."""
    if ev.rank not in loaded_ranks:
        return False
    if isinstance(ev, E.DistributedInit):
        # 0.5.23 prints "Memory baseline taken" for every model runner, the draft's too
        return not ev.message.startswith("Memory baseline")
    if isinstance(ev, E.WeightsLoadBegin):
        return False  # decided by its end line
    if isinstance(ev, E.WeightsLoaded):
        if is_draft_arch(ev.arch):
            return False
        target = b.memory.get(ev.rank)
        target_arch = target.arch if target else None
        if ev.arch is not None and target_arch is not None:
            return ev.arch == target_arch
        return ev.rank not in b.second_load
    return False


def _raised_by_sglang(ev: E.Event | None) -> bool:
    """An exception SGLang's own processes raised: a ``<Process> hit an exception`` header or
    a frame in SGLang's code; not a bare exception line (a test harness's ``TimeoutError``)."""
    if not isinstance(ev, E.Traceback):
        return ev is not None
    return ev.origin is not None or any("sglang" in f.file for f in ev.frames)


def _is_startup(ev: E.Event) -> bool:
    return isinstance(ev, (E.DistributedInit, E.WeightsLoadBegin, E.WeightsLoaded))


def _phase_without_context(tb: E.Traceback) -> str | None:
    # raised inside argument resolution (0.5.11 server_args.py:_handle_mamba_radix_cache,
    # 0.5.23 arg_groups/mamba_hook.py): an argument error, whatever the function is called
    if tb.frames and re.search(r"sglang/srt/(server_args\.py|arg_groups/)", tb.frames[-1].file):
        return "args"
    text = " ".join(f"{f.file} {f.function or ''}" for f in tb.frames)
    if re.search(r"forward|event_loop|run_batch|process_batch|/layers/|cuda_graph_runner|sample|"
                 r"sanity_check|radix_cache", text):
        return "runtime"
    if re.search(r"server_args|arg_groups|prepare_server_args|argparse", text):
        return "args"
    if tb.oom:
        return "load"
    if tb.exc_type in ("ValueError", "AssertionError") and not tb.origin:
        return "args"
    return None


#: what a traceback's frames show SGLang was doing (function names and files of 0.5.5-0.5.23):
#: serving (the scheduler's event loop and batch processing), loading weights (ModelRunner.
#: load_model, the model loaders), setting up (Scheduler.__init__, the TP worker and model
#: runner set-up, memory pools, CUDA graph capture). Checked in this order: a serving frame
#: anywhere wins, then weight loading, then set-up.
_FRAMES_SERVING = re.compile(r"event_loop|run_batch|process_batch|process_input_requests|handle_generate_request|"
                             r"get_next_batch_to_run|get_new_batch_prefill|update_running_batch")
_FRAMES_LOAD = re.compile(r"load_model|load_weights|model_loader/|weight_utils|download_weights")
_FRAMES_SETUP = re.compile(r"init_model_worker|init_tp_model_worker|TpModelWorker|init_memory_pool|init_cache|"
                           r"capture|init_device_graphs|init_cuda_graphs|alloc_memory|MambaPool|"
                           r"memory_pool\.py|scheduler\.py __init__|model_runner\.py (?:__init__|initialize)")


def _frames_phase(tb: E.Traceback) -> str | None:
    """The phase the frames show (module rule above), or None when they show none."""
    if not tb.frames:
        return None
    text = " ".join(f"{f.file} {f.function or ''}" for f in tb.frames)
    named = " ".join(f"{f.file.rsplit('/', 1)[-1]} {f.function or ''}" for f in tb.frames)
    if _FRAMES_SERVING.search(text):
        return "runtime"
    if _FRAMES_LOAD.search(text):
        return "load"
    if _FRAMES_SETUP.search(text) or _FRAMES_SETUP.search(named):
        return "startup"
    return None


def _failure_phase(boot: Boot, ev: E.Event) -> str | None:
    started = boot.weights_started or boot.weights_loaded or boot.saw_startup
    if boot.serving:
        return "runtime"  # batches were served (or SGLang said it was ready) before it
    tb = ev if isinstance(ev, E.Traceback) else None
    if tb is not None and not (tb.frames and re.search(r"sglang/srt/(server_args\.py|arg_groups/)", tb.frames[-1].file)):
        fp = _frames_phase(tb)  # the frames say it, even after HTTP came up (Scheduler.__init__: startup)
        if fp is not None:
            return fp
    if boot.http_up and tb is not None and tb.origin == "Scheduler":
        return "runtime"
    oom = tb.oom_numbers if tb is not None else None
    if oom is not None and oom.graph_pools_gib and started:
        return "startup"  # CUDA graph pools exist: capture was done, not yet serving (warm-up)
    if not started:
        if tb is not None:
            if boot.server_args is not None or boot.deprecated_flags:
                return "args" if not tb.oom else "load"
            if boot.http_answered:
                return "startup"  # HTTP answered (503s) but never served: start-up did not finish
            if oom is not None and oom.graph_pools_gib:
                return "runtime"  # CUDA graph pools exist: capture, the end of start-up, was done
            return _phase_without_context(tb)
        return "startup" if boot.http_answered else None
    if not boot.weights_loaded:
        return "load"
    return "startup"


def served(b: Boot) -> None:
    """A decode/prefill batch line: the server went on serving. A pending request error
    stays one; a traceback failure without crash lines since did not end the server."""
    b.pending_error = None
    f = b.failure
    if f is not None and not b.crash_lines and isinstance(f.event, E.Traceback):
        b.request_errors.append(f.event)
        b.failure = None
        b.ended = False


def _crash_lines(b: Boot) -> None:
    """SGLang's crash lines: a request error no batch line followed is what ended the server."""
    b.crash_lines = True
    ev = b.pending_error
    if ev is not None and b.failure is None:
        b.request_errors.remove(ev)
        b.failure = Failure(phase="runtime", exception=ev.exc_type, message=ev.exc_message, rank=ev.rank, event=ev)
    b.pending_error = None


def decode_numbers(b: Boot, running: int | None, mamba_num: int | None, mamba_usage: float | None,
                   accept_len: float | None, accept_rate: float | None) -> None:
    """A decode batch line's numbers into its boot (log order): the speculative tally, the
    peak running count, the distinct (``mamba num``, ``mamba usage``) pairs (the first
    :data:`USAGE_PAIRS_KEEP`). ``accept_rate`` is read only with ``accept_len``."""
    b.spec.add_values(accept_len, accept_rate)
    if running is not None and (b.peak_running is None or running > b.peak_running):
        b.peak_running = running
    if mamba_num and mamba_usage is not None and len(b.usage_pairs) < USAGE_PAIRS_KEEP:
        b.usage_pairs.add((mamba_num, mamba_usage))


def decode_rows(b: Boot, rows: list[tuple[str, ...]]) -> list[float]:
    """:func:`decode_numbers` of many decode lines at once, in log order (the block fold): each
    row the groups of :data:`~mambaconsole.sglang.events.DECODE_NUMBERS` (the timestamp, then
    the text of ``#running-req``, ``mamba num``, ``mamba usage``, ``accept len``, ``accept
    rate`` as plain decimal numbers, ``""`` when absent, ...). The same result, line for line.
    Returns the accept lengths printed, in log order."""
    _, running, nums, usages, lens, rates, _, _ = zip(*rows)
    spec = b.spec
    spec.seen_decode = True
    values = list(map(float, filter(None, lens)))
    if values:
        spec.n += len(values)
        spec.total = reduce(add, values, spec.total)  # in log order, as one line at a time
        spec.last_len = values[-1]
        spec.last_rate = float(next(filter(None, reversed(rates))))  # printed with accept len
        spec.tail.extend(values[-3:])
    top = max(map(int, running))
    if b.peak_running is None or top > b.peak_running:
        b.peak_running = top
    pairs = b.usage_pairs
    if len(pairs) < USAGE_PAIRS_KEEP and any(nums):  # with mamba num and mamba usage, printed together
        new = list(filter(itemgetter(0), zip(map(int, filter(None, nums)), map(float, filter(None, usages)))))
        if len(pairs) + len(new) <= USAGE_PAIRS_KEEP:
            pairs.update(new)
        else:
            for p in new:
                if len(pairs) < USAGE_PAIRS_KEEP:
                    pairs.add(p)
    return values


def answered(b: Boot, ev: E.HttpAccess) -> None:
    """An access line: the HTTP server answered; a 200 on a serving path (:data:`_READY_PATHS`)
    shows it served."""
    b.http_answered = True
    if not b.http_served and ev.status == 200 and (ev.path or "").split("?")[0] in _READY_PATHS:
        b.http_served = True


def _text_rules(b: Boot, ev: E.Text) -> None:
    """What a plain text line says: a Mamba pool line cut before its fields, an argparse error."""
    msg = ev.message
    if ev.rank and msg[:8] == _MAMBA_LINE[:8] and _MAMBA_LINE.startswith(msg.rstrip()):
        b.rank(ev.rank).mamba_line_cut = True  # "Mamba Cache is alloca": cut before its fields
    elif ev.time is None and _ARGPARSE_ERR.match(msg) and ": error: " in msg:
        if b.failure is None:
            b.failure = Failure(phase="args", exception="argparse", message=msg.split(": error: ", 1)[1],
                                rank=None, event=ev)
        b.ended = True


_STARTUP_TYPES = (E.DistributedInit, E.WeightsLoadBegin, E.WeightsLoaded, E.KVCacheAllocated,
                  E.MambaCacheAllocated, E.MemoryPoolEnd, E.GraphCaptureBegin, E.GraphCaptureEnd, E.ReadySummary)



#: boots a fold keeps: the last ones; a crash loop writing into one log starts a boot every few
#: hundred lines, and only the last boot is read (the count of all of them: ``RunFold.n_boots``)
KEEP_BOOTS = 8


class RunFold:
    """The fold (module doc). ``feed(ev)`` folds one event in; the attributes and methods
    below read the result at any time (the fold stays open for more events)."""

    def __init__(self) -> None:
        #: the last :data:`KEEP_BOOTS` boots, oldest first (``boots[-1]``: the current one)
        self.boots: list[Boot] = [Boot()]
        #: boots in the log so far, those no longer kept included
        self.n_boots = 1
        self.loaded_ranks: set[str | None] = set()
        #: every rank tag any boot's lines carried
        self.ranks: set[str] = set()
        #: an SGLang version the log itself names (the first)
        self.version: str | None = None
        #: events folded; events in SGLang's envelope or a known format (not plain text)
        self.n_events = 0
        self.n_sglang = 0

    @property
    def last(self) -> Boot:
        return self.boots[-1]

    def _new_boot(self) -> Boot:
        # only the last boot's decode lines and usage pairs are read (capacity, last decode):
        # an earlier boot lets them go, so a log of many boots holds one boot's worth
        prev = self.boots[-1]
        prev.decodes.clear()
        prev.usage_pairs.clear()
        b = Boot()
        self.boots.append(b)
        self.n_boots += 1
        if len(self.boots) > KEEP_BOOTS:
            del self.boots[0]
        self.loaded_ranks = set()
        return b

    @staticmethod
    def _decode(b: Boot, ev: E.DecodeBatch) -> None:
        b.decodes.append(ev)
        a = ev.accept_len
        decode_numbers(b, ev.running, ev.mamba_num, ev.mamba_usage, a, ev.accept_rate if a is not None else None)

    def feed_all(self, events: Iterable[E.Event]) -> "RunFold":
        for ev in events:
            self.feed(ev)
        return self

    def feed(self, ev: E.Event) -> None:
        """Fold one event in (log order)."""
        self.n_events += 1
        t = type(ev)
        if t is _DECODE or t is _PREFILL:  # the flood: served, nothing else to decide
            self.n_sglang += 1
            b = self.boots[-1]
            b.n_events += 1
            r = ev.rank
            if r:
                b.rank_tags.add(r)
                self.ranks.add(r)
            if b.pending_error is not None or b.failure is not None:
                served(b)
            b.served = True
            if t is _DECODE:
                self._decode(b, ev)  # type: ignore[arg-type]
            return
        if t is _TEXT:  # plain text (debug lines, request traces): no boot boundary, no startup line
            if ev.time is not None:
                self.n_sglang += 1
            if self.version is None:
                self.version = _version_in(ev)
            b = self.boots[-1]
            b.n_events += 1
            r = ev.rank
            if r:
                b.rank_tags.add(r)
                self.ranks.add(r)
            _text_rules(b, ev)
            return
        if t is _ACCESS:  # the other flood (polls): HTTP answered; a 200 on a serving path once
            self.n_sglang += 1
            b = self.boots[-1]
            b.n_events += 1
            answered(b, ev)  # type: ignore[arg-type]
            return
        if ev.time is not None or (t is not E.Text and t is not E.PythonWarning):
            self.n_sglang += 1
        if self.version is None and (t is E.Text or t is E.PythonWarning):
            self.version = _version_in(ev)
        b = self.last
        # boot boundaries
        if isinstance(ev, E.ServerArgsDump):
            if b.n_events and (b.weights_started or b.weights_loaded or b.ended or b.server_args is not None):
                b = self._new_boot()
        elif _is_startup(ev) and (b.ended or _restarts(b, ev, self.loaded_ranks)):
            b = self._new_boot()
        b.n_events += 1
        if ev.rank:
            b.rank_tags.add(ev.rank)
            self.ranks.add(ev.rank)
        if isinstance(ev, _STARTUP_TYPES):
            b.saw_startup = True
        t = type(ev)
        if t is E.DecodeBatch or t is E.PrefillBatch:
            served(b)
            b.served = True
            if t is E.DecodeBatch:
                self._decode(b, ev)
            return
        if t is E.ServerArgsDump:
            b.server_args = ev.args  # type: ignore[attr-defined]
        elif t is E.WeightsLoadBegin:
            b.weights_started = True
            if ev.rank in self.loaded_ranks:
                b.second_load.add(ev.rank)
        elif t is E.DistributedInit and not ev.message.startswith("Memory baseline"):
            b.second_load.discard(ev.rank)
        elif t is E.WeightsLoaded:
            b.weights_loaded = True
            if ev.rank in self.loaded_ranks:
                # the same rank's second load in this boot: the draft model (_restarts
                # split the boot when it was the target again)
                b.draft_weights[ev.rank] = ev.mem_usage_gb  # type: ignore[attr-defined]
                b.rank(ev.rank).draft_weights = ev.mem_usage_gb  # type: ignore[attr-defined]
                b.second_load.discard(ev.rank)
                return
            self.loaded_ranks.add(ev.rank)
            r = b.rank(ev.rank)
            r.arch = ev.arch  # type: ignore[attr-defined]
            r.dtype = ev.dtype  # type: ignore[attr-defined]
            r.weights = ev.mem_usage_gb  # type: ignore[attr-defined]
            r.avail_after_load = ev.avail_gb  # type: ignore[attr-defined]
        elif t is E.KVCacheAllocated:
            r = b.rank(ev.rank)
            kv = ev.total_gb  # type: ignore[attr-defined]
            if ev.upper_bound:  # type: ignore[attr-defined]
                r._kv_upper = True
                r.kv_cache, r.kv_tokens = kv, ev.tokens  # type: ignore[attr-defined]
            elif ev.post_capture or r._kv_upper:  # type: ignore[attr-defined]
                r._kv_upper = False
                r.kv_cache, r.kv_tokens = kv, ev.tokens  # type: ignore[attr-defined]
            else:
                r.kv_cache = kv if r.kv_cache is None or kv is None else round(r.kv_cache + kv, 6)
                r.kv_tokens = ev.tokens if r.kv_tokens is None else r.kv_tokens  # type: ignore[attr-defined]
        elif t is E.MambaCacheAllocated:
            r = b.rank(ev.rank)
            if not ev.complete:  # type: ignore[attr-defined]
                r.mamba_line_cut = True
            else:
                r.mamba_conv = ev.conv_gb  # type: ignore[attr-defined]
                r.mamba_ssm = ev.ssm_gb  # type: ignore[attr-defined]
                r.mamba_intermediate = ev.intermediate_gb  # type: ignore[attr-defined]
                r.mamba_slots = ev.max_mamba_cache_size  # type: ignore[attr-defined]
        elif t is E.MemoryPoolEnd:
            b.rank(ev.rank).avail_after_pool = ev.avail_gb  # type: ignore[attr-defined]
        elif t is E.GraphCaptureBegin:
            r = b.rank(ev.rank)
            if r.avail_before_graph is None:
                r.avail_before_graph = ev.avail_gb  # type: ignore[attr-defined]
            if ev.batch_sizes:  # type: ignore[attr-defined]
                r.graph_batch_sizes = ev.batch_sizes  # type: ignore[attr-defined]
        elif t is E.GraphBatchSizes:
            b.rank(ev.rank).graph_batch_sizes = ev.batch_sizes  # type: ignore[attr-defined]
        elif t is E.GraphCaptureEnd:
            r = b.rank(ev.rank)
            if ev.mem_usage_gb is not None:  # type: ignore[attr-defined]
                r.cuda_graph = round((r.cuda_graph or 0.0) + ev.mem_usage_gb, 6)  # type: ignore[attr-defined]
            r.avail_after_graph = ev.avail_gb  # type: ignore[attr-defined]
            if ev.batch_sizes:  # type: ignore[attr-defined]
                r.graph_batch_sizes = ev.batch_sizes  # type: ignore[attr-defined]
        elif t is E.ReadySummary:
            b.summary = ev  # type: ignore[assignment]
        elif t is E.ConcurrencyCapped:
            b.capped = ev  # type: ignore[assignment]
        elif t is E.ServerReady or t is E.FollowerReady:  # a rank >= 1 prints no ready line of its own
            b.ready = True
            b.ready_time = b.ready_time or ev.time
        elif t is E.HttpServerUp:
            b.http_up = True
        elif t is E.AppStartupComplete:
            b.app_started = True
        elif t is E.HttpAccess:
            answered(b, ev)  # type: ignore[arg-type]
        elif t is E.SettingChanged:
            b.settings.append(ev)  # type: ignore[arg-type]
        elif t is E.FlagDeprecated:
            b.deprecated_flags.append(ev)  # type: ignore[arg-type]
        elif t is E.Traceback and ev.exc_type == "KeyboardInterrupt":  # type: ignore[attr-defined]
            b.killed = True  # Ctrl-C (SIGINT, a console's stop): the server was stopped, not failed
            b.ended = True
        elif t is E.Traceback and b.serving and ev.origin is None and b.failure is None:  # type: ignore[attr-defined]
            b.request_errors.append(ev)  # type: ignore[arg-type]
            b.pending_error = ev  # type: ignore[assignment]
        elif t is E.Traceback:
            f = b.failure
            if f is None or (f.exception is None and ev.exc_type) or (  # type: ignore[attr-defined]
                    not _raised_by_sglang(f.event) and _raised_by_sglang(ev)):
                b.failure = Failure(phase=_failure_phase(b, ev), exception=ev.exc_type,  # type: ignore[attr-defined]
                                    message=ev.exc_message, rank=ev.rank, event=ev)  # type: ignore[attr-defined]
            b.ended = True
        elif t in (E.ChildCrashed, E.SchedulerDied, E.WatchdogTimeout):
            _crash_lines(b)
            if b.failure is None:
                b.failure = Failure(phase=_failure_phase(b, ev), exception=None, message=ev.message, rank=ev.rank, event=ev)
            b.ended = True
        elif t in (E.SigquitReceived, E.KillProcessTree):
            _crash_lines(b)
            b.sigquit = b.sigquit or t is E.SigquitReceived
            b.kill_tree = b.kill_tree or t is E.KillProcessTree
            b.ended = True
        elif t is E.Killed:
            _crash_lines(b)
            b.killed = True
            b.ended = True


    # ------------------------------------------------------------------ reading

    @property
    def outcome(self) -> str:
        """The last boot's outcome (one of :data:`OUTCOMES`)."""
        return _outcome(self.last)

    @property
    def failure(self) -> Failure | None:
        """What ended the last boot, None when nothing did (yet)."""
        return self.last.failure

    def spec_configured(self) -> bool | None:
        """Whether the last boot's configuration says speculative decoding is on: its
        ServerArgs dump, a draft model's load, or the scheduler's finished set-up without one."""
        last = self.last
        sa = last.server_args or {}
        configured = None
        if "speculative_algorithm" in sa:
            configured = sa.get("speculative_algorithm") is not None
        if last.draft_weights:
            configured = True  # a draft model loaded
        elif configured is None and last.summary is not None and last.memory and not last.second_load:
            # the scheduler finished its set-up (its max_total_num_tokens= line comes after the
            # draft worker's, scheduler.py init_model_worker) and no draft model loaded
            configured = False
        return configured

    def spec(self, version: str | None = None) -> SpecStats:
        """The last boot's :class:`~mambaconsole.sglang.spec.SpecStats` (``version`` for the
        meaning of the accept rate; default the version the log names)."""
        return self.last.spec.stats(version=version or self.version, configured=self.spec_configured())

    def sorted_ranks(self) -> list[str]:
        return sorted(self.ranks, key=rank_sort_key)


_VERSION_IN_TEXT = re.compile(r"\bsglang(?:==|:v|:|/v| v| version:? v?)(\d+\.\d+\.\d+(?:\.post\d+)?)\b", re.I)


def _version_in(e: E.Event) -> str | None:
    """An SGLang version named in a log line itself (``sglang==0.5.13.post1``, an image tag
    ``lmsysorg/sglang:v0.5.19``, ``sglang version: 0.5.9``); None when it names none."""
    # the pattern's literal, case-folded, first (a substring test: most lines name no sglang;
    # an ASCII message case-folds as it lower-cases, which is cheaper)
    t = type(e)
    if t is not E.Text and t is not E.PythonWarning:
        return None
    msg = e.message
    if "sglang" in (msg.lower() if msg.isascii() else msg.casefold()):
        m = _VERSION_IN_TEXT.search(msg)
        if m:
            return m.group(1)
    return None


def failure_outcome(f: Failure) -> str:
    """The outcome a failure gives: ``oom`` (a PyTorch OOM or SGLang's "Not enough memory"
    family), ``arg_error`` (phase ``args``), else ``crashed``."""
    ev = f.event
    if isinstance(ev, E.Traceback) and ev.oom:
        return "oom"
    if f.phase == "args":
        return "arg_error"
    return "crashed"


def _outcome(b: Boot) -> str:
    f = b.failure
    if f is not None:
        return failure_outcome(f)
    if b.killed or b.kill_tree:
        return "exited"
    if b.sigquit:
        return "crashed"
    if b.serving:
        return "ready"
    if b.weights_started or b.weights_loaded or b.memory or b.summary is not None or b.http_up \
            or b.saw_startup:
        return "starting"
    return "unknown"



def failure_is_final(b: Boot) -> bool:
    """The boot's failure is SGLang's crash evidence on its own (the process need not be seen
    gone): a ``<Process> hit an exception`` traceback, crash lines after it (SIGQUIT, a child
    crash, ``kill_process_tree``, ``Killed``), a scheduler death or watchdog line, an argparse
    error. A bare traceback without them may be one SGLang logs and survives."""
    f = b.failure
    if f is None:
        return False
    ev = f.event
    return b.crash_lines or not isinstance(ev, E.Traceback) or ev.origin is not None


def failure_line_of(ev: E.Event) -> str:
    """One line for a traceback or crash line: ``origin: ExcType: message`` (a cut traceback
    says so), else the line's message."""
    if not isinstance(ev, E.Traceback):
        return ev.message
    if ev.exc_type or ev.exc_message:
        line = f"{ev.exc_type or ''}: {ev.exc_message or ''}".strip(": ")
        return f"{ev.origin}: {line}" if ev.origin else line
    return f"{ev.origin + ': ' if ev.origin else ''}traceback cut before its exception line"


def failure_line(f: Failure) -> str:
    """:func:`failure_line_of` the failure's event; its exception and message without one."""
    if f.event is not None:
        return failure_line_of(f.event)
    return f"{f.exception or ''}: {f.message or ''}".strip(": ")
