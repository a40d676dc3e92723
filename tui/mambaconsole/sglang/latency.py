"""Time to first token and inter-token latency, p50/p99 over the last minute, from SGLang's
``/metrics`` histograms. Pure: no I/O; the caller passes each scrape with its time.

Histograms (reference §5.5; tokenizer side, all versions; defined in
``srt/metrics/collector.py`` 0.5.5–0.5.9, ``srt/observability/metrics_collector.py`` 0.5.10+,
class ``TokenizerMetricsCollector``): ``sglang:time_to_first_token_seconds`` and
``sglang:inter_token_latency_seconds``, cumulative ``_bucket{le=...}`` counts in seconds, with
labels ``model_name`` (+ ``engine_type`` 0.5.23, ``is_streaming``, ``priority``). Series that
differ only in labels other than ``le`` are added together.

A quantile is estimated as Prometheus' ``histogram_quantile`` does: linear interpolation inside
the bucket that holds the rank, the first bucket starting at 0, a rank in the ``+Inf`` bucket
answered with the highest finite bound. "Over the last minute" is the difference between the
newest scrape and the newest one at least ``window_s`` older (or the oldest kept, then the
window is shorter and says so); a single scrape gives the quantiles since the server started.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from mambaconsole.sglang.metrics import MetricsSnapshot

__all__ = ["Histogram", "histogram", "quantile", "LatencyWindow", "Latency", "TTFT", "ITL", "fmt_seconds"]

TTFT = "sglang:time_to_first_token_seconds"
ITL = "sglang:inter_token_latency_seconds"


@dataclass(frozen=True)
class Histogram:
    """Cumulative buckets ``((upper bound s, count), ...)`` sorted by bound, ``+Inf`` last."""

    buckets: tuple[tuple[float, float], ...]

    @property
    def count(self) -> float:
        return self.buckets[-1][1] if self.buckets else 0.0

    def minus(self, older: "Histogram") -> "Histogram":
        """The observations made since ``older`` (same bounds); a counter that went down (the
        server restarted) gives this histogram unchanged."""
        old = dict(older.buckets)
        if any(old.get(le, 0.0) > c for le, c in self.buckets):
            return self
        return Histogram(tuple((le, c - old.get(le, 0.0)) for le, c in self.buckets))


def histogram(snapshot: MetricsSnapshot, name: str) -> Histogram | None:
    """The histogram ``name`` (without ``_bucket``) of one scrape, series summed; None when the
    server does not export it."""
    rows = snapshot.samples.get(name + "_bucket")
    if not rows:
        return None
    sums: dict[float, float] = {}
    for labels, value in rows:
        le = labels.get("le")
        if le is None or math.isnan(value):
            continue
        try:
            bound = float(le)
        except ValueError:
            continue
        sums[bound] = sums.get(bound, 0.0) + value
    if not sums:
        return None
    return Histogram(tuple(sorted(sums.items())))


def quantile(q: float, hist: Histogram | None) -> float | None:
    """The ``q`` quantile (0..1) in seconds, Prometheus' ``histogram_quantile``; None with no
    observations."""
    if hist is None or not hist.buckets or hist.count <= 0:
        return None
    rank = q * hist.count
    finite = [b for b, _ in hist.buckets if not math.isinf(b)]
    prev_bound, prev_count = 0.0, 0.0
    for i, (bound, count) in enumerate(hist.buckets):
        if count >= rank:
            if math.isinf(bound):
                return finite[-1] if finite else None
            if i == 0 and bound <= 0:
                return bound
            if count <= prev_count:
                return bound
            return prev_bound + (bound - prev_bound) * ((rank - prev_count) / (count - prev_count))
        prev_bound, prev_count = bound, count
    return finite[-1] if finite else None


@dataclass(frozen=True)
class Latency:
    """p50/p99 of TTFT and ITL in seconds (None: no request in the window, or not exported:
    see ``exported``); ``window_s``: the span the numbers cover (None: since the server
    started, one scrape only); ``requests``: TTFT observations in the window."""

    ttft_p50: float | None = None
    ttft_p99: float | None = None
    itl_p50: float | None = None
    itl_p99: float | None = None
    window_s: float | None = None
    requests: float | None = None
    exported: tuple[str, ...] = ()

    def text(self) -> str:
        """Two lines, ``TTFT p50 350 ms  p99 594 ms  (last 60 s)`` and ``ITL  p50 18 ms  p99
        40 ms`` (a second or more in seconds); "" when the server exports neither histogram;
        one line saying so when no request finished in the window."""
        if not self.exported:
            return ""
        span = "since start" if self.window_s is None else f"last {self.window_s:.0f} s"
        if all(v is None for v in (self.ttft_p50, self.itl_p50)):
            return f"TTFT/ITL: no request in the {span}"
        lines = []
        if TTFT in self.exported:
            lines.append(f"TTFT p50 {fmt_seconds(self.ttft_p50)}  p99 {fmt_seconds(self.ttft_p99)}  ({span})")
        if ITL in self.exported:
            lines.append(f"ITL  p50 {fmt_seconds(self.itl_p50)}  p99 {fmt_seconds(self.itl_p99)}"
                         + ("" if TTFT in self.exported else f"  ({span})"))
        return "\n".join(lines)


def fmt_seconds(v: float | None) -> str:
    """``350 ms`` under a second, ``21.3 s`` under 100 s, ``250 s`` above; ``-`` for None."""
    if v is None:
        return "-"
    if v < 1:
        return f"{v * 1000:.0f} ms"
    return f"{v:.1f} s" if v < 100 else f"{v:.0f} s"


class LatencyWindow:
    """Keeps the histograms of the scrapes of the last ``window_s`` (+ one older) and answers
    :meth:`latency`. ``add(t, snapshot)``: ``t`` in seconds (any monotonic clock)."""

    def __init__(self, window_s: float = 60.0) -> None:
        self.window_s = window_s
        self._scrapes: deque[tuple[float, dict[str, Histogram]]] = deque()

    def add(self, t: float, snapshot: MetricsSnapshot) -> None:
        hists = {name: h for name in (TTFT, ITL) if (h := histogram(snapshot, name)) is not None}
        if self._scrapes:
            last = self._scrapes[-1][1]
            # a count that went down is a counter reset (Prometheus' rule): another server (a
            # relaunch on the same port) started; nothing before it belongs to its window
            if any(name in last and h.count < last[name].count for name, h in hists.items()):
                self._scrapes.clear()
        self._scrapes.append((t, hists))
        # keep one scrape at least window_s old as the baseline
        while len(self._scrapes) > 2 and self._scrapes[1][0] <= t - self.window_s:
            self._scrapes.popleft()

    def latency(self) -> Latency:
        if not self._scrapes:
            return Latency()
        t_new, new = self._scrapes[-1]
        window: float | None = None
        base: dict[str, Histogram] = {}
        if len(self._scrapes) > 1:
            t_old, base = self._scrapes[0]
            window = t_new - t_old
        cur = {name: (h.minus(base[name]) if name in base else h) for name, h in new.items()}
        ttft, itl = cur.get(TTFT), cur.get(ITL)
        return Latency(ttft_p50=quantile(0.5, ttft), ttft_p99=quantile(0.99, ttft),
                       itl_p50=quantile(0.5, itl), itl_p99=quantile(0.99, itl),
                       window_s=window, requests=ttft.count if ttft else None,
                       exported=tuple(sorted(new)))
