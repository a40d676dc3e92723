"""The ``server`` slice: the live server's HTTP answers, ``/server_info`` (0.5.9+; 0.5.5's
``/get_server_info``; :class:`~mambaconsole.state.ServerInfo`, the decoded JSON object SGLang's
``srt/entrypoints/http_server.py`` returns, shape in shared/reference sglang-observables.md
§5.2) and ``/metrics``
(:class:`~mambaconsole.state.MetricsSnapshot`, Prometheus text read by
:mod:`mambaconsole.sglang.metrics`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mambaconsole.state_events import MetricsSnapshot, ServerInfo


class ServerSlice:
    """The server's answers. ``note_data(t)`` is told each time the server answered."""

    def __init__(self, clock: Callable[[], float], note_data: Callable[[float], None]) -> None:
        self.clock = clock
        self._note_data = note_data
        #: the last ``/server_info`` object; None before one (or since a new run)
        self.server_info: dict | None = None
        #: why the last poll got no answer; None when it answered
        self.server_info_error: str | None = None
        #: metric name -> value (first sample) of the last ``/metrics`` poll
        self.metrics: dict = {}
        #: the server's counters since it started (MetricsSnapshot.totals)
        self.metric_totals: dict = {}
        #: when /metrics last answered (console clock)
        self.metrics_t: float | None = None
        #: sglang.latency.Latency of the last /metrics poll (TTFT/ITL p50/p99)
        self.latency: Any = None

    def on_info(self, ev: ServerInfo) -> set[str]:
        if ev.data is None:
            self.server_info_error = ev.error
            return set()
        self._note_data(self.clock())  # the server answered (header: data age)
        if ev.data == self.server_info and self.server_info_error is None:
            return set()  # the same answer again: nothing to redraw
        self.server_info, self.server_info_error = ev.data, None
        return {"args", "spec"}

    def on_metrics(self, ev: MetricsSnapshot) -> set[str]:
        if ev.error is not None:
            return set()
        self.metrics_t = t = self.clock()
        self._note_data(t)  # the server answered (header: data age)
        changed = set()
        if ev.latency != self.latency:
            self.latency = ev.latency
            changed.add("spec")
        if ev.values != self.metrics:
            self.metrics = dict(ev.values)
            changed.add("spec")
        if ev.totals != self.metric_totals:
            self.metric_totals = dict(ev.totals)
            changed.add("spec")
        return changed

    def new_run(self) -> None:
        """Another run: the previous server's answers are not this one's."""
        self.server_info = None
        self.metrics, self.metric_totals = {}, {}
        self.metrics_t = self.latency = None
