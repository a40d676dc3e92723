"""The log lines the tail received and the console has not folded in yet (no Textual here).

Keys first: the app folds a flood in slices (:data:`SLICE_S` of work, then the key presses that
arrived meanwhile are handled before the next slice), so no batch, however large, holds a key
back; and when the console falls behind the node, the worker stops reading (:meth:`room`) once
:data:`BACKLOG` lines wait here: the node's agent then blocks on the SSH channel's flow
control and the header says how far behind the node's log the console is (its size vs the
offset read), instead of the console's memory growing with the backlog.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import deque

from mambaconsole.state import LogLines

#: lines folded per piece (a piece is one ``ConsoleState.apply``)
CHUNK = 128
#: lines folded per piece of the log's history (:meth:`LogIntake.take` with ``history``): each
#: piece costs the fold a fixed part (a block read, runs cut at its ends), so history, read as
#: fast as the console can, goes in larger pieces. On the log_throughput bench's 300k-line
#: mix (2 cores, in process): 7.6 µs/line at 128, 4.6 at 512, 4.2 at 2048; the slowest piece
#: of 512 lines of a crash loop's or request errors' tracebacks took 4-6 ms, inside a slice
#: (``ui/app.py`` ``LOG_SLICE_S``)
HISTORY_CHUNK = 512
#: lines waiting at most before the worker stops reading from the node
BACKLOG = 20_000


class LogIntake:
    """A FIFO of :class:`LogLines` handed out in pieces of at most ``chunk`` lines."""

    def __init__(self, chunk: int = CHUNK, backlog: int = BACKLOG, history_chunk: int = HISTORY_CHUNK) -> None:
        self.chunk = chunk
        self.history_chunk = history_chunk
        self.backlog = backlog
        self._q: deque[LogLines] = deque()
        self.lines = 0  # lines waiting
        self._room = asyncio.Event()
        self._room.set()

    @property
    def pending(self) -> bool:
        return bool(self._q)

    def put(self, ev: LogLines) -> bool:
        """Queue ``ev``; True when the queue was empty (the app must be told once)."""
        was_empty = not self._q
        self._q.append(ev)
        self.lines += len(ev.lines)
        if self.lines >= self.backlog:
            self._room.clear()
        return was_empty

    async def room(self) -> None:
        """Wait while :data:`BACKLOG` lines or more are waiting."""
        if not self._room.is_set():
            await self._room.wait()

    def take(self, history: bool = False) -> LogLines | None:
        """The next piece: the first batch, or its first ``chunk`` lines (``history``: the log's
        history is being read, ``history_chunk`` lines); what it says about the file's opening
        comes with its first piece, a skipped range with its last."""
        if not self._q:
            return None
        ev = self._q[0]
        chunk = self.history_chunk if history else self.chunk
        if len(ev.lines) <= chunk:
            self._q.popleft()
            piece = ev
        else:
            piece = dataclasses.replace(ev, lines=ev.lines[:chunk], skipped=None)
            self._q[0] = dataclasses.replace(ev, lines=ev.lines[chunk:], reset=False, opened_size=None)
        self.lines -= len(piece.lines)
        if self.lines < self.backlog:
            self._room.set()
        return piece
