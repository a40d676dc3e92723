"""The ``gpu`` slice: the node's GPU readings (:class:`~mambaconsole.state.GpuSnapshot`, MiB as
NVML / ``nvidia-smi`` report them), their history, each run's peak, and the current boot's
memory budget as SGLang logged it (GB as SGLang prints them: ``... size: 13.50GB``, SGLang's
"GB" being 2**30 bytes, i.e. GiB): ``Load weight end ... mem usage=`` and ``Capture cuda graph
end ... mem usage=`` (``model_runner.py``), ``KV Cache is allocated`` (``memory_pool.py``) and
``Mamba Cache is allocated``, as :mod:`mambaconsole.sglang.events` parses them for 0.5.5-0.5.23
(shared/reference sglang-observables.md §3 gives each line's versions)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mambaconsole.state_events import GpuSnapshot, RunInfo

#: GPU used-memory samples kept per GPU for the history sparkline
GPU_HISTORY = 120
#: a GPU reading older than this many seconds (console clock), or than 2.5 sample intervals
#: when those are longer, is shown with its age (:meth:`GpuSlice.stale_age`)
GPU_STALE_S = 5.0
#: the run states in which a sample counts toward the current run's peak
_ALIVE = frozenset({"starting", "running", "ready", "adopted"})


class GpuSlice:
    """GPU readings and the logged memory budget. ``current_run`` gives the run the console
    follows (its peak is counted while it is alive)."""

    def __init__(self, clock: Callable[[], float], current_run: Callable[[], RunInfo | None],
                 on_simulated: Callable[[], None]) -> None:
        self.clock = clock
        self._current_run = current_run
        self._on_simulated = on_simulated
        #: the last sample (None before the first)
        self.snapshot: GpuSnapshot | None = None
        #: seconds between the GPU stream's samples (the app's poll_s)
        self.interval_s = 2.0
        #: GPU index -> its last GPU_HISTORY used-memory samples (MiB), oldest first
        self.history: dict[int, deque[float]] = {}
        #: run id -> the highest used memory of one GPU (MiB) seen while that run was current
        #: and alive (see RunInfo.peak_mem_mib)
        self.peak_mib: dict[str, float] = {}
        #: the current boot's memory budget, item -> GB (SGLang's GB = GiB): ``weights``,
        #: ``kv``, ``mamba conv``, ``mamba ssm``, ``mamba spec``, ``graphs``; one rank's
        self.budget_gb: dict[str, float] = {}
        self._budget_rank: str | None = None

    # --------------------------------------------------------------- events
    def on_snapshot(self, ev: GpuSnapshot) -> set[str]:
        """Every sample goes into the history and the current run's peak; the pane is redrawn
        only when the readings or processes differ from the previous sample."""
        prev, self.snapshot = self.snapshot, ev
        if ev.simulated:
            self._on_simulated()
        hist = self.history
        for g in ev.gpus:
            h = hist.get(g.index)
            if h is None:
                h = hist[g.index] = deque(maxlen=GPU_HISTORY)
            h.append(g.used_mib)
        r = self._current_run()
        top = ev.max_used_mib()
        # a reading of 0 MiB (a run sampled before it allocated anything) is no peak: "-", not 0.0 GiB
        if r is not None and top and r.state in _ALIVE and top > self.peak_mib.get(r.run_id, -1.0):
            self.peak_mib[r.run_id] = top
        return {"gpu"} if ev != prev else set()

    def budget_rank_ok(self, rank: str | None) -> bool:
        """Memory lines are per rank: the budget shows one rank (the main process, or the first
        rank seen), never a mix."""
        if rank is None:
            return True
        if self._budget_rank is None:
            self._budget_rank = rank
        return rank == self._budget_rank

    def on_weights(self, e: Any) -> set[str]:
        """``Load weight end ... mem usage=N GB`` (:class:`~mambaconsole.sglang.events.WeightsLoaded`)."""
        if e.mem_usage_gb is not None and self.budget_rank_ok(e.rank):
            self.budget_gb["weights"] = e.mem_usage_gb
            return {"gpu"}
        return set()

    def on_mamba(self, e: Any) -> set[str]:
        """``Mamba Cache is allocated`` (:class:`~mambaconsole.sglang.events.MambaCacheAllocated`)."""
        if e.complete and self.budget_rank_ok(e.rank):
            for key, v in (("mamba conv", e.conv_gb), ("mamba ssm", e.ssm_gb), ("mamba spec", e.intermediate_gb)):
                if v:
                    self.budget_gb[key] = self.budget_gb.get(key, 0.0) + v
            return {"gpu"}
        return set()

    def on_kv(self, e: Any) -> set[str]:
        """``KV Cache is allocated`` (:class:`~mambaconsole.sglang.events.KVCacheAllocated`)."""
        if not e.upper_bound and e.total_gb and self.budget_rank_ok(e.rank):
            self.budget_gb["kv"] = self.budget_gb.get("kv", 0.0) + e.total_gb
            return {"gpu"}
        return set()

    def on_graphs(self, e: Any) -> set[str]:
        """``Capture cuda graph end ... mem usage=N GB`` (:class:`~mambaconsole.sglang.events.GraphCaptureEnd`)."""
        if e.mem_usage_gb and self.budget_rank_ok(e.rank):
            self.budget_gb["graphs"] = self.budget_gb.get("graphs", 0.0) + e.mem_usage_gb
            return {"gpu"}
        return set()

    def on_traceback(self, e: Any) -> set[str]:
        """The GPU pane shows an OOM's numbers once it ended the run."""
        return {"gpu"} if e.oom else set()

    def new_boot(self) -> None:
        """A new boot (or run): its budget is its own."""
        self.budget_gb, self._budget_rank = {}, None

    new_run = new_boot  # readings, history and peaks are the node's, not the run's

    # --------------------------------------------------------------- selectors
    def age(self) -> float | None:
        """Seconds since the shown reading arrived (console clock); None before the first or
        when its arrival time is not known."""
        if self.snapshot is None or self.snapshot.t is None:
            return None
        return max(0.0, self.clock() - self.snapshot.t)

    def stale_age(self) -> float | None:
        """The reading's age (seconds) once it is older than GPU_STALE_S and 2.5 sample
        intervals (``interval_s``): the node sent no newer one (link down, a slow node, the
        agent restarting); None while it is fresh."""
        age = self.age()
        return age if age is not None and age > max(GPU_STALE_S, 2.5 * self.interval_s) else None

    def peak_of(self, run: RunInfo) -> float | None:
        """``run``'s peak GPU memory (MiB): the larger of what its record holds and what this
        console saw."""
        seen = self.peak_mib.get(run.run_id)
        vals = [v for v in (run.peak_mem_mib, seen) if v is not None]
        return max(vals) if vals else None
