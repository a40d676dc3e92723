"""The one backoff policy: how long to wait before trying again, for every retry and every
slowed-down poll in the console (node reconnects, SSH connects, restarted streams, polls that
fail or answer nothing new).

A :class:`Backoff` is capped exponential growth: the wait before attempt ``n`` (1-based) is
``initial * 2 ** (n - 1)`` seconds, never more than ``cap``. No jitter: one console talks to a
node, so there is no herd to spread, and a fixed schedule is what the header can promise
("next try in 4 s"). Attempt 0 (or less: nothing has failed) waits nothing.

The policies in use, named where they are used:

- :data:`RECONNECT` (0.5 s → 10 s): reconnecting a lost link
  (:class:`mambaconsole.node.supervisor.Supervisor`, :class:`mambaconsole.node.ssh.SSHNode`);
- :data:`STREAM` (1 s → 30 s): re-opening a stream that broke (GPU samples, the log tail) and a
  log agent that ended without sending anything;
- :meth:`Backoff.poll`: a poll every ``interval`` seconds, slowed while it fails (from twice the
  interval) or while it answers nothing new (up to a few intervals): the session's runs listing
  and ``/metrics`` (:mod:`mambaconsole.session.session`), its ranks watch, the fleet screen.

No I/O, no asyncio: callers count their attempts and sleep themselves.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Backoff:
    """Wait ``initial`` seconds before the first retry, doubling each time, at most ``cap``."""

    initial: float
    cap: float

    def __post_init__(self) -> None:
        if not (self.initial > 0 and self.cap >= self.initial):
            raise ValueError(f"backoff needs 0 < initial <= cap (got {self.initial}, {self.cap})")

    def delay(self, attempt: int) -> float:
        """Seconds to wait before attempt number ``attempt`` (1-based; 0: no wait)."""
        if attempt <= 0:
            return 0.0
        # doubling stops at the cap (no float overflow however long a node stays away)
        wait = self.initial
        for _ in range(attempt - 1):
            wait *= 2
            if wait >= self.cap:
                return self.cap
        return min(wait, self.cap)

    def schedule(self, attempts: int) -> list[float]:
        """The waits before attempts 1..``attempts`` (what a test or a header can show)."""
        return [self.delay(n) for n in range(1, attempts + 1)]

    @staticmethod
    def poll(interval: float, *, idle_factor: int = 1, failing_cap: float | None = None) -> "PollPolicy":
        """A poll every ``interval`` seconds (see :class:`PollPolicy`)."""
        return PollPolicy(interval, idle_factor, failing_cap if failing_cap is not None else FAILING_CAP)


#: reconnecting a lost link to a node (seconds)
RECONNECT = Backoff(0.5, 10.0)
#: re-opening a broken stream from the node (GPU samples, log tail), seconds
STREAM = Backoff(1.0, 30.0)
#: the longest wait between two tries of a failing poll, seconds
FAILING_CAP = 30.0


@dataclass(frozen=True)
class PollPolicy:
    """When a poll runs next: every ``interval`` seconds; after ``idle`` answers in a row that
    changed nothing, ``interval * 2 ** idle`` but at most ``idle_factor`` intervals (1: never
    slowed); after ``fails`` failures in a row, from ``2 * interval`` doubling up to
    ``failing_cap`` (a failure outranks idleness)."""

    interval: float
    idle_factor: int = 1
    failing_cap: float = FAILING_CAP

    def next_in(self, *, fails: int = 0, idle: int = 0) -> float:
        if fails > 0:
            return Backoff(2 * self.interval, max(self.failing_cap, 2 * self.interval)).delay(fails)
        return Backoff(self.interval, self.interval * max(1, self.idle_factor)).delay(idle + 1)
