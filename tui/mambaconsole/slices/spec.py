"""The ``spec`` slice: what the current run's decode batch lines say (``Decode batch, ...``:
0.5.9-0.5.12 ``scheduler_metrics_mixin.py``, 0.5.13-0.5.23
``srt/managers/scheduler_components/metrics_reporter.py`` ``report_decode_stats``; parsed into
:class:`~mambaconsole.sglang.events.DecodeBatch`, shared/reference sglang-observables.md §2): speculative decoding's accept length per
batch and its collapse alarm, and the inputs of the Mamba slot estimate
(:mod:`mambaconsole.sglang.capacity`: the last decode lines, the pool size the ``Mamba Cache is
allocated`` line printed, the slots per request of the cap warning). Times on the console's
clock (``when_time(event.time)``: a replayed line's own timestamp, else now)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from functools import reduce
from operator import add
from typing import TYPE_CHECKING, Any

from mambaconsole.sglang.events import logged_number
from mambaconsole.sglang.spec import COLLAPSE_ACCEPT_LEN, COLLAPSE_BATCHES
from mambaconsole.slices.buffers import SpecBuffer

if TYPE_CHECKING:
    from mambaconsole.sglang.block_fold import DecodeRun
    from mambaconsole.slices.gpu import GpuSlice
    from mambaconsole.state_events import ServerInfo

#: speculative points kept (one per decode batch line)
SPEC_KEEP = 600
#: decode lines kept for the Mamba slot estimate (sglang.capacity.HELD_WINDOW)
RECENT_BATCHES = 16
# the collapse alarm is SGLang knowledge's: accept length at 1.00 for the last
# COLLAPSE_RUN speculative decode lines
COLLAPSE_LEN = COLLAPSE_ACCEPT_LEN
COLLAPSE_RUN = COLLAPSE_BATCHES
#: runs read in bulk kept at most before their lines become events (bounds the text they pin
#: when the points need an old run: speculative lines, then none)
PENDING_RUNS = 512


class SpecSlice:
    """Decode batches: speculative numbers and Mamba capacity inputs. ``when_time(t,
    dating=None)`` dates a log line by its envelope timestamp ``t`` (an event's ``time``;
    ``dating``: the ``(shift, now)`` its lines were read with, for a run read in bulk); ``gpu``
    says which rank's memory lines count (the pool size is that rank's).

    A run of history's decode lines read in bulk (:meth:`on_decode_run`) adds its numbers at
    once (the mean, the collapse run, on/off) and keeps the run itself: its last lines become
    events (:attr:`points`, :attr:`last_batch`, :attr:`batch_t`, :attr:`recent_batches`) when
    something reads those, or before a line comes one at a time: the same fields as line by
    line (``tests/test_bulk_state.py``), without an event per line of a long history."""

    def __init__(self, when_time: Callable[..., float], gpu: GpuSlice) -> None:
        self._when_time = when_time
        self._gpu = gpu
        self._points = SpecBuffer(maxlen=SPEC_KEEP)
        #: speculative decoding is on (the batch lines or /server_info say so); None: not known yet
        self.enabled: bool | None = None
        #: sum and count of every accept length seen (the mean over the whole run)
        self.accept_sum = 0.0
        self.accept_n = 0
        #: the accept length sat at COLLAPSE_LEN for the last COLLAPSE_RUN batches
        self.collapsed = False
        self._low_run = 0
        self._last_batch: Any = None
        self._batch_t: float | None = None
        self._recent: deque[Any] = deque(maxlen=RECENT_BATCHES)
        #: Mamba pool slots (``max_mamba_cache_size`` of the ``Mamba Cache is allocated`` line)
        self.mamba_pool_slots: int | None = None
        #: Mamba slots one request holds (the cap warning's second line)
        self.mamba_slots_per_request: int | None = None
        #: runs read in bulk whose lines are not events yet: (run, dating, decode lines,
        #: speculative ones, boot), oldest first, only those the kept fields may still need
        self._pending: deque[tuple[DecodeRun, Any, int, int, int]] = deque()
        self._pend_dec = self._pend_spec = 0
        self._boot = 0  # counts boots and runs (recent_batches is a boot's)
        self._last_of: Any = None  # the pending run whose last line is the last batch already

    # --------------------------------------------------------------- kept fields
    @property
    def points(self) -> SpecBuffer:
        """One SpecPoint per speculative decode batch, the last SPEC_KEEP."""
        if self._pending:
            self._settle()
        return self._points

    @property
    def last_batch(self) -> Any:
        """The last decode batch line (sglang.events.DecodeBatch)."""
        if self._pending:
            self._settle_last()
        return self._last_batch

    @property
    def batch_t(self) -> float | None:
        """When the last decode batch line came (console clock)."""
        if self._pending:
            self._settle_last()
        return self._batch_t

    @property
    def recent_batches(self) -> deque[Any]:
        """The last RECENT_BATCHES decode lines of the boot (sglang.capacity's window)."""
        if self._pending:
            self._settle()
        return self._recent

    # --------------------------------------------------------------- events
    def on_decode(self, e: Any) -> set[str]:
        if self._pending:
            self._settle()
        alen = e.accept_len
        self._numbers(alen, e.spec_enabled)
        self._kept(e, self._when_time(e.time), alen, True)
        return {"spec"}

    def _numbers(self, alen: float | None, spec_enabled: bool) -> None:
        """A decode line's accept length (None: not printed) into the run's numbers."""
        if alen is None:
            if not spec_enabled:
                self.enabled = False
            return
        self.enabled = True
        self.accept_sum += alen
        self.accept_n += 1
        self._low_run = self._low_run + 1 if alen <= COLLAPSE_LEN else 0
        self.collapsed = self._low_run >= COLLAPSE_RUN

    def _kept(self, e: Any, t: float, alen: float | None, this_boot: bool) -> None:
        """A decode line (dated ``t``) into the kept fields; ``this_boot``: of the current boot."""
        self._last_batch, self._batch_t = e, t
        if this_boot:
            self._recent.append(e)
        if alen is not None:
            self._points.append(t, alen, e.accept_rate, e.gen_throughput)

    def on_decode_run(self, run: DecodeRun, dating: Any) -> set[str]:
        """The decode lines of a run read in bulk (history, :class:`~mambaconsole.sglang.
        block_fold.DecodeRun`), dated by ``dating``: what :meth:`on_decode` makes of each, line
        by line; their events only when the kept fields are read (:meth:`_settle`)."""
        rows = run.rows
        if not rows:
            return set()
        values = run.accepts
        if values is None:  # a line of another shape: its numbers from its event
            for e in run.events():
                if self._pending:
                    self._settle()
                alen = e.accept_len
                self._numbers(alen, e.spec_enabled)
                self._kept(e, self._when_time(e.time, dating), alen, True)
            return {"spec"}
        # SGLang's segments: "accept len" is printed (group 5) exactly when speculation is on
        self.enabled = bool(rows[-1][4])
        n_spec = len(values)
        if n_spec:
            self.accept_sum = reduce(add, values, self.accept_sum)  # in log order, as line by line
            self.accept_n += n_spec
            if values[-1] > COLLAPSE_LEN:  # (mostly) the last line is above: no low run
                self._low_run = 0
            else:  # the lines at COLLAPSE_LEN or below at the end, after the run's earlier ones
                i = n_spec - 1
                while i >= 0 and values[i] <= COLLAPSE_LEN:
                    i -= 1
                self._low_run = n_spec - 1 - i + (self._low_run if i < 0 else 0)
            self.collapsed = self._low_run >= COLLAPSE_RUN
        pend = self._pending
        n_dec = len(rows)
        pend.append((run, dating, n_dec, n_spec, self._boot))
        self._pend_dec += n_dec
        self._pend_spec += n_spec
        # the oldest run goes once the later ones (each with a decode line: the last batch) cover
        # what it gave: the points (none, or SPEC_KEEP after it), the recent batches (an earlier
        # boot's, or RECENT_BATCHES after it)
        while len(pend) > 1:
            _, _, n_dec, n_spec, boot = pend[0]
            rest_dec, rest_spec = self._pend_dec - n_dec, self._pend_spec - n_spec
            if (not n_spec or rest_spec >= SPEC_KEEP) and (boot != self._boot or rest_dec >= RECENT_BATCHES):
                pend.popleft()
                self._pend_dec, self._pend_spec = rest_dec, rest_spec
            else:
                break
        if len(pend) > PENDING_RUNS:
            self._settle()
        return {"spec"}

    def _settle_last(self) -> None:
        """Only the last decode line of the runs read in bulk as an event (the last batch and
        its time: the header and the spec pane read them often)."""
        entry = self._pending[-1]
        if self._last_of is not entry:
            run, dating, n_dec, _, _ = entry
            e = run.events(n_dec - 1)[-1]
            self._last_batch, self._batch_t = e, self._when_time(e.time, dating)
            self._last_of = entry

    def _settle(self) -> None:
        """The runs read in bulk (:meth:`on_decode_run`) into the kept fields: the points from
        their rows (timestamp, accept len, accept rate, gen throughput: what
        :meth:`on_decode` reads off each event), and as events only the lines the recent
        batches and the last batch keep (a flood's frame reads the points: an event per decode
        line there cost ~9 ms of a 50 ms frame)."""
        pend, self._pending = self._pending, deque()
        self._pend_dec = self._pend_spec = 0
        append, when_time = self._points.append, self._when_time
        for run, dating, n_dec, n_spec, boot in pend:
            if n_spec:
                for t, _r, _n, _u, alen, rate, tput, _o in run.rows:
                    if alen:
                        append(when_time(t, dating), float(alen), float(rate), logged_number(tput))
        # the last batch, and the boot's recent batches: only the newest lines become events
        # (boots only grow along the pending runs: the boot's own runs are the newest)
        run, dating, n_dec, _s, boot = pend[-1]
        if boot != self._boot:  # an earlier boot's run: the last batch alone
            e = run.events(n_dec - 1)[-1]
            self._last_batch, self._batch_t = e, self._when_time(e.time, dating)
            return
        newest: list[tuple[list[Any], Any]] = []  # (events, dating), the newest run first
        want = RECENT_BATCHES
        for run, dating, n_dec, _s, boot in reversed(pend):
            if boot != self._boot or want <= 0:
                break
            events = run.events(max(0, n_dec - want))
            newest.append((events, dating))
            want -= len(events)
        for events, _dating in reversed(newest):
            self._recent.extend(events)
        events, dating = newest[0]
        self._last_batch, self._batch_t = events[-1], self._when_time(events[-1].time, dating)

    def on_mamba_pool(self, e: Any) -> set[str]:
        """``Mamba Cache is allocated`` (``MambaCacheAllocated``): the pool of the budget's rank."""
        if e.complete and self._gpu.budget_rank_ok(e.rank):
            self.mamba_pool_slots = e.max_mamba_cache_size
        return set()

    def on_capped(self, e: Any) -> set[str]:
        """The Mamba cap warning (``ConcurrencyCapped``): slots per request, when it capped."""
        if e.effective is not None:
            self.mamba_slots_per_request = e.slots_per_request
        return set()

    def on_server_info(self, ev: ServerInfo) -> set[str]:
        """``/server_info``'s ``speculative_algorithm``, until a batch line said."""
        if ev.data is not None and self.enabled is None and "speculative_algorithm" in ev.data:
            self.enabled = bool(ev.data.get("speculative_algorithm"))
        return set()

    def new_boot(self) -> None:
        """A new boot: its capacity and collapse run are its own (the points stay: one run)."""
        self._boot += 1
        self._recent.clear()
        self.mamba_pool_slots = self.mamba_slots_per_request = None
        self._low_run, self.collapsed = 0, False

    def new_run(self) -> None:
        self.new_boot()
        self._pending.clear()
        self._pend_dec = self._pend_spec = 0
        self._points.clear()
        self.accept_sum, self.accept_n = 0.0, 0
        self.enabled = None
        self._last_batch = self._batch_t = None

    # --------------------------------------------------------------- selectors
    def mean_accept(self) -> float | None:
        """The mean accept length over every speculative batch of the run; None before one."""
        return self.accept_sum / self.accept_n if self.accept_n else None
