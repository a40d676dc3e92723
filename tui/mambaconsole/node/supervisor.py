"""Keeps the link to a node alive and resumes log streams across drops (:class:`Supervisor`).

The supervisor owns the node's connection state for the console: a watchdog notices when the
SSH connection is gone (the server closed it, the network dropped, keepalives went unanswered),
marks the link down from that moment, and reconnects with capped exponential backoff
(:data:`mambaconsole.backoff.RECONNECT`: 0.5 s, doubling, at most 10 s between attempts)
until it is back. Nothing on the node depends on the connection: the server keeps running in
its tmux window and keeps writing its run log.

:meth:`Supervisor.follow_log` follows a run's log through the node agent
(``agent/node_agent.py --run ID --offset N``) by **byte offset**: every line comes with the
offset of its first byte and the agent only sends complete lines, so after a drop the stream
resumes at the end of the last line received; no line is lost or repeated.

Readers (the console's header) only read :attr:`Supervisor.status` or iterate
:meth:`Supervisor.watch`. No Textual here.

::

    link = Supervisor(node)
    await link.start()
    async for batch in link.follow_log(run_id="20261130-101500-ab12"):
        for line in batch.lines: ...          # mambaconsole.node.agent.LogLine
    await link.close()
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from mambaconsole.backoff import RECONNECT, Backoff
from mambaconsole.errors import ConsoleError
from mambaconsole.state_events import Connection
from mambaconsole.units import fmt_duration
from mambaconsole.node.agent import LineBatch, agent_record_batches, log_batch
from mambaconsole.node.base import Node, NodeError

#: how often the watchdog looks at the connection while it is up, seconds
CHECK_S = 0.5


@dataclass(frozen=True)
class FollowBatch:
    """What :meth:`Supervisor.follow_log` yields: consecutive complete ``lines`` (a
    :class:`~mambaconsole.node.agent.LineBatch`: each line's byte offset, text and length), and ``end``, the offset just past the last byte received. ``reset`` is
    ``"truncated"`` or ``"rotated"`` when the file started over (the lines then restart at 0);
    ``run`` the run's status record when it changed (see node_agent.py ``run`` records);
    ``resumed`` is True for the first batch after a reconnect. ``size``: the file's size in
    bytes when the agent last looked (``size - end`` is how far behind the node the reader is);
    ``opened``: the agent's ``log_open`` record when it (re)opened the file in this batch
    (size, start offset, node clock, UTC offset); ``skipped``: ``(offset, end)``, the byte range
    the agent did not send (the middle of a long log, see ``follow_log``'s ``tail_bytes``)."""

    lines: LineBatch = field(default_factory=LineBatch)
    end: int = 0
    reset: str | None = None
    run: dict | None = field(default=None)
    resumed: bool = False
    size: int | None = None
    opened: dict | None = None
    skipped: tuple[int, int] | None = None


class Supervisor:
    """Owns the connection to ``node``; see the module docstring. ``backoff``: the wait between
    reconnect attempts; ``clock`` gives unix seconds."""

    def __init__(self, node: Node, *, backoff: Backoff = RECONNECT,
                 check_s: float = CHECK_S, clock: Callable[[], float] = time.time) -> None:
        self.node = node
        self.backoff = backoff
        self.check_s = check_s
        self.clock = clock
        self.status = Connection(True, clock())
        self.reconnects = 0  # how many times the link came back
        self._watchers: set[asyncio.Queue] = set()
        self._task: asyncio.Task | None = None
        self._wake = asyncio.Event()
        self._up = asyncio.Event()
        self._up.set()
        self._opened = asyncio.Event()  # the first connection attempt has ended
        self._closed = False

    # ----------------------------------------------------------------- status
    @property
    def up(self) -> bool:
        return self.status.up

    def _set(self, status: Connection) -> None:
        self.status = status
        if status.up:
            self._up.set()
        else:
            self._up.clear()
        for q in list(self._watchers):
            q.put_nowait(status)

    async def watch(self) -> AsyncIterator[Connection]:
        """The current status, then every change, until the supervisor closes."""
        q: asyncio.Queue = asyncio.Queue()
        self._watchers.add(q)
        try:
            yield self.status
            while True:
                st = await q.get()
                if st is None:
                    return
                yield st
        finally:
            self._watchers.discard(q)

    def _connected(self) -> bool:
        conn = getattr(self.node, "connected", None)
        return True if conn is None else bool(conn)

    def check(self, detail: str = "") -> None:
        """Something failed talking to the node: look at the connection now (a failed command
        alone does not mark the link down; a closed connection does)."""
        if self.status.up and not self._connected():
            self._down(detail or "connection lost")
        self._wake.set()

    def _down(self, detail: str) -> None:
        if self.status.up:
            self._set(Connection(False, self.clock(), detail.splitlines()[0] if detail else "connection lost"))

    # ----------------------------------------------------------------- lifecycle
    async def start(self) -> "Supervisor":
        """Start the watchdog (idempotent). The link is taken as up until it is seen down."""
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name=f"supervisor {self.node.name}")
        return self

    async def wait_up(self, timeout: float | None = None) -> bool:
        """Wait until the link is up (at most ``timeout`` seconds); returns whether it is."""
        if self.status.up:
            return True
        waiter = asyncio.ensure_future(self._up.wait())
        try:
            await asyncio.wait({waiter}, timeout=timeout)
        finally:
            waiter.cancel()
        return self.status.up

    async def wait_opened(self, timeout: float) -> bool:
        """Wait until the watchdog's first connection attempt has ended (the connection opened,
        or it failed; at once for a node that was already connected or has no connection), at
        most ``timeout`` seconds; returns whether it has. The attempt itself goes on past
        ``timeout`` (the node's commands share it)."""
        waiter = asyncio.ensure_future(self._opened.wait())
        try:
            await asyncio.wait({waiter}, timeout=timeout)
        finally:
            waiter.cancel()
        return self._opened.is_set()

    def require_up(self, what: str = "act") -> None:
        """Raise ConsoleError (one line) while the link is down: never act on stale data."""
        if not self.status.up:
            lost = max(0.0, self.clock() - self.status.since)
            raise ConsoleError(f"{self.node.name}: connection lost {fmt_duration(lost)} ago; refusing to {what} "
                               "until the console has reconnected and re-read the node")

    async def _run(self) -> None:
        if not self._connected():
            await self._first_connect()
        self._opened.set()
        while not self._closed:
            if self.status.up:
                if not self._connected():
                    self._down("connection lost")
                    continue
                self._wake.clear()
                await self._nap(self.check_s)
                continue
            await self._reconnect_once()

    async def _first_connect(self) -> None:
        """A node not connected yet is not a lost link: connect it (the commands waiting for
        the connection share this attempt) and mark the link down only when that fails. (Seen
        as "lost" first, the link came "back" at once and the console re-read the runs it
        was reading: a second listing, and a killed first one, at every start.)"""
        connect = getattr(self.node, "connect", None)
        if connect is None:
            return
        try:
            try:
                await connect(backoff=False)
            except TypeError:
                await connect()
        except NodeError as exc:
            self._down(str(exc))
        except Exception as exc:  # noqa: BLE001 - anything else is a failed attempt too
            self._down(f"{type(exc).__name__}: {exc}")

    async def _reconnect_once(self) -> None:
        st = self.status
        connect = getattr(self.node, "connect", None)
        try:
            if connect is not None:
                try:
                    await connect(backoff=False)
                except TypeError:
                    await connect()
            ok = self._connected()
            detail = st.detail
        except NodeError as exc:
            ok, detail = False, str(exc)
        except Exception as exc:  # noqa: BLE001 - anything else is a failed attempt too
            ok, detail = False, f"{type(exc).__name__}: {exc}"
        if ok:
            self.reconnects += 1
            self._set(Connection(True, self.clock()))
            return
        attempts = st.attempts + 1
        delay = self.backoff.delay(attempts)
        self._set(Connection(False, st.since, (detail or st.detail).splitlines()[0] if (detail or st.detail) else "",
                             attempts, self.clock() + delay))
        self._wake.clear()
        await self._nap(delay)
        self._set(Connection(False, st.since, self.status.detail, attempts, None))

    async def _nap(self, seconds: float) -> None:
        """Sleep ``seconds`` or until woken by :meth:`check`. (asyncio.wait, not wait_for: on
        Python < 3.12 wait_for can swallow a cancellation that races its timeout.)"""
        waiter = asyncio.ensure_future(self._wake.wait())
        try:
            await asyncio.wait({waiter}, timeout=seconds)
        finally:
            waiter.cancel()

    async def close(self) -> None:
        self._closed = True
        self._wake.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(BaseException):
                await self._task
        for q in list(self._watchers):
            q.put_nowait(None)

    # ----------------------------------------------------------------- streams
    async def follow_log(self, *, run_id: str | None = None, path: str | None = None, offset: int = 0,
                         home: str | None = None, python: str = "python3",
                         max_line: int | None = None, tail_bytes: int = 0, head_bytes: int | None = None,
                         head_until: str | None = None,
                         first: AsyncIterator[list[dict]] | None = None) -> AsyncIterator[FollowBatch]:
        """Follow a run's log (``run_id``, through its status.json) or a file (``path``) from
        byte ``offset``, across connection drops, until the iterator is closed.

        ``tail_bytes`` > 0 and ``offset`` 0: a long file is read from its head (up to the end
        of the first line holding ``head_until``, at most ``head_bytes``) and its last
        ``tail_bytes``; the batch after the head says what was skipped (``FollowBatch.skipped``).
        A resume after a drop reads on from where it stopped, skipping nothing.

        A drop ends the agent on the node; once the link is back the agent is started again at
        the offset just past the last complete line received. Raises NodeError only for a
        failure that is not a lost connection while the link is up (the agent cannot start:
        its python is missing), after ``3`` tries in a row. An agent that ends while the link
        stays up is started again after :attr:`backoff`'s first wait, and after longer ones
        (the same policy as reconnects) while the restarts bring nothing.

        ``first``: the record batches of an agent already started for this log with these
        options (the first look's, :func:`mambaconsole.node.agent.first_look`), read before
        starting one; it is closed like the agents started here.
        """
        if not run_id and not path:
            raise ValueError("follow_log needs run_id or path")
        pos = offset
        size: int | None = None
        resumed = False
        failures = 0
        restarts = 0  # agent restarts in a row that brought nothing
        if self._closed and first is not None:
            await first.aclose()
        while not self._closed:
            if not self.status.up and first is None:
                await self.wait_up()
                resumed = True
            got_any = False
            if first is not None:
                agent, first = first, None
            else:
                agent = agent_record_batches(self.node, python=python, follow=path, run_id=run_id, home=home,
                                             offset=pos, interval=0.0, gpu="none", max_line=max_line,
                                             tail_bytes=tail_bytes if pos == 0 else 0, head_bytes=head_bytes,
                                             head_until=head_until)
            try:
                async for recs in agent:
                    lines = LineBatch()
                    reset = None
                    run = opened = None
                    for rec in recs:
                        t = rec.get("type")
                        if t == "log":
                            lines.extend(log_batch(rec))
                            pos = int(rec["end"])
                            size = rec.get("size")
                        elif t == "log_skip":
                            # the head first, then the skip: the tail's lines follow it
                            yield FollowBatch(lines, pos, reset, run, resumed, size, opened,
                                              (int(rec["offset"]), int(rec["end"])))
                            lines, reset, run, opened, resumed = LineBatch(), None, None, None, False
                            pos = int(rec["end"])
                        elif t == "log_open":
                            opened = rec
                            size = rec.get("size")
                        elif t == "log_reset":
                            if lines:  # lines of the old file first, then the reset
                                yield FollowBatch(lines, pos, None, None, resumed, size, opened)
                                lines, resumed, opened = LineBatch(), False, None
                            pos = 0
                            reset = rec.get("reason") or "truncated"
                        elif t == "run":
                            run = rec
                    got_any = True
                    failures = 0
                    if lines or reset or run is not None or opened is not None:
                        yield FollowBatch(lines, pos, reset, run, resumed, size, opened)
                        resumed = False
            except NodeError as exc:
                self.check(str(exc))
                if self.status.up:
                    failures = 0 if got_any else failures + 1
                    if failures >= 3:
                        raise
            finally:
                await agent.aclose()  # stop the agent now, whatever ended the loop (no dangling stream)
            # the agent ended: the connection went, or the agent died; go again from `pos`
            self.check()
            resumed = True
            restarts = 1 if got_any else restarts + 1
            if self.status.up:
                await asyncio.sleep(self.backoff.delay(restarts))
