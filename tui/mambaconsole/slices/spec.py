"""The ``spec`` slice: what the current run's decode batch lines say (``Decode batch, ...``:
0.5.9-0.5.12 ``scheduler_metrics_mixin.py``, 0.5.13-0.5.23
``srt/managers/scheduler_components/metrics_reporter.py`` ``report_decode_stats``; parsed into
:class:`~mambaconsole.sglang.events.DecodeBatch`, shared/reference sglang-observables.md §2): speculative decoding's accept length per
batch and its collapse alarm, and the inputs of the Mamba slot estimate
(:mod:`mambaconsole.sglang.capacity`: the last decode lines, the pool size the ``Mamba Cache is
allocated`` line printed, the slots per request of the cap warning). Times on the console's
clock (``when(event)``: a replayed line's own timestamp, else now)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mambaconsole.sglang.spec import COLLAPSE_ACCEPT_LEN, COLLAPSE_BATCHES
from mambaconsole.slices.buffers import SpecBuffer

if TYPE_CHECKING:
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


class SpecSlice:
    """Decode batches: speculative numbers and Mamba capacity inputs. ``when(e)`` dates a log
    event; ``gpu`` says which rank's memory lines count (the pool size is that rank's)."""

    def __init__(self, when: Callable[[Any], float], gpu: GpuSlice) -> None:
        self._when = when
        self._gpu = gpu
        #: one SpecPoint per speculative decode batch, the last SPEC_KEEP
        self.points = SpecBuffer(maxlen=SPEC_KEEP)
        #: speculative decoding is on (the batch lines or /server_info say so); None: not known yet
        self.enabled: bool | None = None
        #: sum and count of every accept length seen (the mean over the whole run)
        self.accept_sum = 0.0
        self.accept_n = 0
        #: the accept length sat at COLLAPSE_LEN for the last COLLAPSE_RUN batches
        self.collapsed = False
        self._low_run = 0
        #: the last decode batch line (sglang.events.DecodeBatch) and when it came (console clock)
        self.last_batch: Any = None
        self.batch_t: float | None = None
        #: the last RECENT_BATCHES decode lines (sglang.capacity's window)
        self.recent_batches: deque[Any] = deque(maxlen=RECENT_BATCHES)
        #: Mamba pool slots (``max_mamba_cache_size`` of the ``Mamba Cache is allocated`` line)
        self.mamba_pool_slots: int | None = None
        #: Mamba slots one request holds (the cap warning's second line)
        self.mamba_slots_per_request: int | None = None

    # --------------------------------------------------------------- events
    def on_decode(self, e: Any) -> set[str]:
        t = self._when(e)
        self.last_batch, self.batch_t = e, t
        self.recent_batches.append(e)
        alen = e.accept_len
        if alen is None:
            if not e.spec_enabled:
                self.enabled = False
            return {"spec"}
        self.enabled = True
        self.points.append(t, alen, e.accept_rate, e.gen_throughput)
        self.accept_sum += alen
        self.accept_n += 1
        self._low_run = self._low_run + 1 if alen <= COLLAPSE_LEN else 0
        self.collapsed = self._low_run >= COLLAPSE_RUN
        return {"spec"}

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
        self.recent_batches.clear()
        self.mamba_pool_slots = self.mamba_slots_per_request = None
        self._low_run, self.collapsed = 0, False

    def new_run(self) -> None:
        self.new_boot()
        self.points.clear()
        self.accept_sum, self.accept_n = 0.0, 0
        self.enabled = None
        self.last_batch = self.batch_t = None

    # --------------------------------------------------------------- selectors
    def mean_accept(self) -> float | None:
        """The mean accept length over every speculative batch of the run; None before one."""
        return self.accept_sum / self.accept_n if self.accept_n else None
