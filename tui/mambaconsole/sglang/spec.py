"""Speculative decoding acceptance: what ``accept len`` / ``accept rate`` mean per version.

From the decode batch line (``srt/managers/scheduler_metrics_mixin.py`` … 0.5.13+
``scheduler_components/metrics_reporter.py``), per log window with
``accept_tokens += correct_drafts + bs`` and ``forward_ct += bs`` per verify step:

- ``accept len`` = accept_tokens / forward_ct: mean tokens emitted per request per verify
  step, **bonus token included** (all versions). 1.00 means every draft was rejected.
- ``accept rate``:
  - 0.5.5: accept_tokens / (forward_ct × (num_steps + 1)) — bonus included;
  - 0.5.9–0.5.10: accept_tokens / (forward_ct × num_draft_tokens) — bonus included
    (:data:`WITH_BONUS`);
  - 0.5.11+: (accept_tokens − forward_ct) / (forward_ct × (num_draft_tokens − 1)) — accepted
    drafts / proposed drafts (:data:`DRAFTS_ONLY`); 0.5.20+ counts correct drafts separately.

Worked example (4 draft tokens, accept len 2.80): 0.70 in 0.5.5–0.5.10, 0.60 in 0.5.11+.
The console shows the rate as printed and says which meaning it has; to compare versions it
recomputes from accept len (:func:`drafts_only_rate`). Speculation off is "off", never 0.
"""

from __future__ import annotations

from collections import deque

from collections.abc import Iterable
from dataclasses import dataclass

from mambaconsole.sglang.versions import Version, parse_version

__all__ = [
    "WITH_BONUS", "DRAFTS_ONLY", "UNKNOWN", "accept_rate_meaning", "drafts_only_rate",
    "with_bonus_rate", "SpecStats", "spec_stats", "COLLAPSE_ACCEPT_LEN", "COLLAPSE_BATCHES",
    "format_accept",
]

WITH_BONUS = "with_bonus"      #: accepted tokens incl. the bonus token / draft tokens (≤0.5.10)
DRAFTS_ONLY = "drafts_only"    #: accepted drafts / proposed drafts (0.5.11+)
UNKNOWN = "unknown"            #: version unknown: shown as printed, meaning not asserted

#: accept length at or below this is "all drafts rejected"
COLLAPSE_ACCEPT_LEN = 1.005
#: consecutive most-recent spec decode batches at 1.00 that make a collapse
COLLAPSE_BATCHES = 3


def accept_rate_meaning(version: str | Version | None) -> str:
    """:data:`WITH_BONUS` for 0.5.10 and older, :data:`DRAFTS_ONLY` for 0.5.11 and newer,
    :data:`UNKNOWN` when the version is unknown."""
    v = parse_version(version) if isinstance(version, str) or version is None else version
    if v is None:
        return UNKNOWN
    return DRAFTS_ONLY if v >= (0, 5, 11) else WITH_BONUS


def drafts_only_rate(accept_len: float | None, num_draft_tokens: int | None) -> float | None:
    """Accepted drafts / proposed drafts = (accept_len − 1) / (num_draft_tokens − 1), the
    0.5.11+ meaning, computed from accept len (any version). None when not computable."""
    if accept_len is None or not num_draft_tokens or num_draft_tokens <= 1:
        return None
    return (accept_len - 1.0) / (num_draft_tokens - 1)


def with_bonus_rate(accept_len: float | None, num_draft_tokens: int | None) -> float | None:
    """accept_len / num_draft_tokens, the 0.5.9–0.5.10 meaning. None when not computable."""
    if accept_len is None or not num_draft_tokens:
        return None
    return accept_len / num_draft_tokens


@dataclass(frozen=True)
class SpecStats:
    """Acceptance over a run's decode batches.

    ``enabled``: True when a decode line carries ``accept len``; False when decode lines
    exist without it (speculation off) or the config says off; None when unknown.
    ``batches``: decode lines with ``accept len``. ``mean_accept_len``: their mean (tokens
    per request per verify step), None when none. ``collapsed``: the last
    :data:`COLLAPSE_BATCHES` of them all sit at 1.00 (every draft rejected).
    ``rate_meaning``: :data:`WITH_BONUS` / :data:`DRAFTS_ONLY` / :data:`UNKNOWN` — the
    meaning of the printed ``accept rate`` for this version."""

    enabled: bool | None
    batches: int
    mean_accept_len: float | None
    last_accept_len: float | None
    last_accept_rate: float | None
    collapsed: bool
    rate_meaning: str

    def as_json(self) -> dict:
        return {"enabled": self.enabled, "batches": self.batches,
                "mean_accept_len": None if self.mean_accept_len is None else round(self.mean_accept_len, 4),
                "collapsed": self.collapsed}


class SpecTally:
    """The running tally behind :class:`SpecStats`: fed one decode batch at a time (the run
    fold keeps one per boot), constant memory whatever the number of lines."""

    __slots__ = ("n", "total", "last_len", "last_rate", "seen_decode", "tail")

    def __init__(self) -> None:
        self.n = 0
        self.total = 0.0
        self.last_len: float | None = None
        self.last_rate: float | None = None
        self.seen_decode = False
        self.tail: deque[float] = deque(maxlen=COLLAPSE_BATCHES)

    def add(self, d) -> None:
        """One :class:`~.events.DecodeBatch` (log order)."""
        a = d.accept_len
        self.add_values(a, d.accept_rate if a is not None else None)

    def add_values(self, accept_len: float | None, accept_rate: float | None) -> None:
        """One decode batch given by its ``accept len`` and ``accept rate`` as printed (None
        when the line has none; log order)."""
        self.seen_decode = True
        if accept_len is None:
            return
        self.n += 1
        self.total += accept_len
        self.last_len = accept_len
        self.last_rate = accept_rate
        self.tail.append(accept_len)

    def stats(self, version: str | Version | None = None, configured: bool | None = None) -> SpecStats:
        """:class:`SpecStats` so far; ``configured`` is what the configuration says
        (speculative_algorithm set or not, a draft model loaded), used when no decode line
        decides."""
        if self.n:
            enabled: bool | None = True
        elif self.seen_decode:
            enabled = False
        else:
            enabled = configured
        tail = self.tail
        collapsed = len(tail) == COLLAPSE_BATCHES and all(x <= COLLAPSE_ACCEPT_LEN for x in tail)
        return SpecStats(
            enabled=enabled, batches=self.n, mean_accept_len=(self.total / self.n) if self.n else None,
            last_accept_len=self.last_len, last_accept_rate=self.last_rate,
            collapsed=collapsed, rate_meaning=accept_rate_meaning(version))


def spec_stats(decodes: Iterable, version: str | Version | None = None,
               configured: bool | None = None) -> SpecStats:
    """:class:`SpecStats` of decode batch events (:class:`~.events.DecodeBatch`, in log
    order). ``configured`` is what the ServerArgs say (speculative_algorithm set or not),
    used when no decode line decides."""
    t = SpecTally()
    for d in decodes:
        t.add(d)
    return t.stats(version, configured)


def format_accept(accept_len: float | None, enabled: bool | None) -> str:
    """Display text: ``"off"`` when speculation is off, ``"n/a"`` when unknown, else the
    value with two decimals (as SGLang prints it)."""
    if enabled is False:
        return "off"
    if accept_len is None:
        return "n/a"
    return f"{accept_len:.2f}"
