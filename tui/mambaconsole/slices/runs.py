"""The ``runs`` slice: the node's run history (:class:`~mambaconsole.state.RunsListed`, read from
``$MAMBACONSOLE_HOME/runs/`` by the node layer), the run the console follows, the relaunch phase
(:class:`~mambaconsole.state.Phase`) and the header's facts about the followed run (its notice,
when its server last gave data)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mambaconsole.state_events import Phase, RunInfo, RunsListed


class RunsSlice:
    """Runs and the current one. ``on_new_run`` is called when the node's current run becomes
    another (every slice forgets what the previous run said), before :attr:`run` changes."""

    def __init__(self, clock: Callable[[], float], on_new_run: Callable[[], None]) -> None:
        self.clock = clock
        self._on_new_run = on_new_run
        #: the node's runs, oldest first
        self.runs: list[RunInfo] = []
        #: the run the console follows (the node's current run); None before the first listing
        self.run: RunInfo | None = None
        #: this user's servers the run store left alone (RunsListed.not_adopted): the header names them
        self.not_adopted: tuple[dict, ...] = ()
        #: the relaunch phase shown in the header; None: no relaunch in progress
        self.phase: Phase | None = None
        #: when the run list was last read (console clock)
        self.listed_at: float | None = None
        #: one line for the header (the run changed under us, its log was replaced, ...)
        self.notice: str | None = None
        #: when the current run's server last gave data (a log line, /server_info, /metrics):
        #: the header's "data N s ago", which ages once the server stops
        self.last_data: float | None = None

    def on_runs_listed(self, ev: RunsListed) -> set[str]:
        self.runs = list(ev.runs)
        self.not_adopted = ev.not_adopted
        self.listed_at = self.clock()
        cur = next((r for r in ev.runs if r.run_id == ev.current), None)
        changed = {"runs"}
        if cur is not None:
            if self.run is None or self.run.run_id != cur.run_id:
                self._on_new_run()
                self.last_data = None  # the previous run's server's data is not this one's
                changed |= {"log", "spec", "gpu", "args"}
            elif (self.run.state, self.run.exit_code) != (cur.state, cur.exit_code):
                changed |= {"spec", "args"}  # its end can make a traceback the failure (spec pane, sizing flags)
            self.run = cur
        return changed

    def on_phase(self, ev: Phase) -> set[str]:
        self.phase = ev if ev.text else None
        return set()

    def note_data(self, t: float, *, history: bool = False) -> None:
        """The current run's server gave data at ``t`` (console clock); ``history``: a line
        replayed from the log's past, which never moves the time back."""
        if self.last_data is None or not history:
            self.last_data = t
        else:
            self.last_data = max(self.last_data, t)

    # --------------------------------------------------------------- selectors
    def ended(self) -> bool:
        """The current run's process is gone (its state or a known exit code says so)."""
        r = self.run
        return r is not None and (r.state in ("exited", "dead") or r.exit_code is not None)

    def uptime(self) -> float | None:
        """Seconds the current run ran (until its end, or now)."""
        r = self.run
        if r is None or r.started is None:
            return None
        end = r.ended if r.ended is not None else self.clock()
        return max(0.0, end - r.started)

    def server_pids(self) -> set[int]:
        """The current run's server process ids (its GPU processes are marked)."""
        r = self.run
        if r is None:
            return set()
        s = set(r.pids)
        if r.pid:
            s.add(r.pid)
        return s
