"""The ``log`` slice: the shown run's log as the log pane shows it (the last ``LOG_KEEP`` lines,
each with its severity and whether it is a poll's access line, :mod:`mambaconsole.sglang.log_lines`,
worked out when a pane first reads them) and where its reader is in the file on the node (byte
offsets, the file's size, a skipped middle, pages read back). Fed by
:class:`~mambaconsole.state.LogLines` (a batch's lines as parallel lists, no object per line);
the current run's lines go on, each byte once, to the ``fold`` slice (one call per batch)."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable
from itertools import repeat
from operator import add
from typing import TYPE_CHECKING, Any

from mambaconsole.sglang.log_lines import classify, first_error
from mambaconsole.sglang.text import envelope_seconds
from mambaconsole.slices.buffers import LineBuffer

if TYPE_CHECKING:
    from mambaconsole.slices.fold import FoldSlice
    from mambaconsole.slices.runs import RunsSlice
    from mambaconsole.state_events import LogLines

#: lines kept in memory for the log pane, whatever the log size
LOG_KEEP = 5000
#: a live server's log that has not grown for this many seconds is flagged "log silent"
LOG_SILENT_S = 300.0
#: bytes of the node's log not yet read past which the header says the console is behind
BEHIND_BYTES = 1 << 20


class LogSlice:
    """The shown log. ``runs`` names the current run (only its lines are understood, and its
    header facts noted); ``fold`` understands them."""

    def __init__(self, clock: Callable[[], float], runs: RunsSlice, fold: FoldSlice, *,
                 log_keep: int = LOG_KEEP, log_silent_s: float = LOG_SILENT_S) -> None:
        self.clock = clock
        self._runs = runs
        self._fold = fold
        self.log_silent_s = log_silent_s
        self._log_keep = log_keep
        #: the kept lines, oldest first
        self.log = LineBuffer(maxlen=log_keep)
        self.log_run_id: str | None = None  # whose log the log pane shows
        self.log_total = 0  # lines appended since the pane started over
        self.log_dropped = 0  # lines the bounded buffer let go
        self.first_error_offset: int | None = None
        self.log_offset = 0  # next byte to read of the shown run's log
        self.log_generation = 0  # bumped whenever the log pane must start over
        self.log_size: int | None = None  # the shown log's size on the node, last we heard (bytes)
        self.log_open_size: int | None = None  # its size when the reader (re)opened it
        self.log_skipped: tuple[int, int] | None = None  # (offset, end): the middle not read
        self._time_shift: float | None = None  # envelope time (as UTC) + this = console clock
        self._line_t: float | None = None  # when the current run's log last gave a line
        # the next byte of the current run's log SGLang knowledge has not folded in yet: folding
        # is once per (run, byte offset), whatever log the pane re-reads (the run picker)
        self._understood = 0

    def new_run(self) -> None:
        """Another current run: the pane starts over on its log, from byte 0."""
        self.show_log_of(None)
        self._line_t = None
        self._understood = 0

    def show_log_of(self, run_id: str | None) -> None:
        """The log pane switches to ``run_id``'s log (run picker): start empty, from byte 0."""
        self.log.clear()
        self.log_total = 0
        self.log_dropped = 0
        self.first_error_offset = None
        self.log_offset = 0
        self.log_run_id = run_id
        self.log_generation += 1
        self._reset_reader()

    def _reset_reader(self) -> None:
        """What the reader of the shown log said (sizes, the skipped middle, its clock)."""
        if self.log.maxlen != self._log_keep:  # paging back grew it
            self.log = LineBuffer(maxlen=self._log_keep)
        self.log_size = self.log_open_size = self.log_skipped = self._time_shift = None

    def log_since(self, total: int, *, raw: bool = False) -> list[Any]:
        """The kept lines appended after :attr:`log_total` was ``total`` (oldest first), as
        :class:`ShownLine` or (``raw``) plain ``(offset, text, severity, access)`` tuples;
        costs the lines returned, not the lines kept."""
        n = min(self.log_total - total, len(self.log))
        return self.log.tail_raw(n) if raw else self.log.tail(n)

    def on_lines(self, ev: LogLines) -> set[str]:
        if self.log_run_id is None:
            self.log_run_id = ev.run_id
        if ev.run_id != self.log_run_id:
            return set()
        if ev.earlier is not None:
            return self._earlier(ev)
        changed = {"log"}
        run = self._runs.run
        following_current = run is not None and ev.run_id == run.run_id
        if ev.opened_size is not None:
            self.log_open_size, self._time_shift = ev.opened_size, ev.time_shift
        if ev.size is not None:
            self.log_size = ev.size
        if ev.reset:
            self.log_offset = 0  # truncated or rotated: the file's offsets start over
            self.log_skipped = None
            if following_current:
                self._understood = 0
                self._runs.notice = ("the run's log was truncated or replaced on the node: read again from its start "
                               "(what it held before is gone from the file)")
        offsets, texts, understand = self._new_lines(ev, following_current)
        # lines the file held when it was opened are history: their own timestamps, not now
        history = bool(offsets) and self.log_open_size is not None and offsets[0] < self.log_open_size \
            and self._time_shift is not None
        if offsets:
            self._line_t = self.clock()
            if history:
                self._line_t = self._last_line_time(texts) or self._line_t
            if following_current:
                self._runs.note_data(self._line_t, history=history)
            log = self.log
            if log.maxlen is not None:
                self.log_dropped += max(0, len(log) + len(offsets) - log.maxlen)
            log.add_texts(offsets, texts)  # classified when a pane reads them (most never are)
            self.log_total += len(offsets)
            if self.first_error_offset is None:
                i = first_error(texts)
                if i is not None:
                    self.first_error_offset = offsets[i]
        if understand and following_current:
            changed |= self._fold.understand_many(understand, self._time_shift if history else None)
        if ev.skipped is not None:
            a, b = ev.skipped
            if b > self.log_offset:
                self.log_skipped = (max(a, self.log_offset), b)
                self.log_offset = b
                if following_current:
                    # the head's last record completes here (the tail starts with other lines)
                    changed |= self._fold.flush()
                    self._understood = max(self._understood, b)
        return changed

    def _new_lines(self, ev: LogLines, following_current: bool) -> tuple[list[int], list[str], list[str]]:
        """The lines of ``ev`` not seen yet, as ``(offsets, texts, to_understand)``, moving
        :attr:`log_offset` past them: a line starting before it was seen (a reconnect resumes
        from an offset; never repeat a line); ``to_understand``: the texts of the current run's
        lines SGLang knowledge has not folded in yet (each byte once, whatever log the pane
        re-reads), moving ``_understood`` past them. Consecutive lines (what the tail gives: a
        batch that says so, :meth:`LogLines.consecutive`, or whose offsets show it) are cut
        where those offsets fall (:func:`bisect.bisect_left`); other batches are read line by
        line (:meth:`_new_lines_each`), with the same result on consecutive lines."""
        offsets, texts, nbytes = ev.columns()
        n = len(offsets)
        if not n:
            return [], [], []
        if not ev.consecutive():
            ends = list(map(add, offsets, nbytes))  # each line's newline
            if offsets[1:] != list(map(add, ends[:-1], repeat(1, n - 1))):
                return self._new_lines_each(offsets, texts, nbytes, following_current)
        end = offsets[-1] + nbytes[-1] + 1  # past the last line's newline
        if self.log_offset > offsets[0]:
            i = bisect_left(offsets, self.log_offset)
            offsets, texts = offsets[i:], texts[i:]
            if not offsets:
                return [], [], []
        self.log_offset = end
        understand: list[str] = []
        if following_current:
            u = bisect_left(offsets, self._understood) if self._understood > offsets[0] else 0
            if u < len(offsets):
                understand = texts[u:] if u else texts
                self._understood = self.log_offset
        return offsets, texts, understand

    def _new_lines_each(self, offsets: list[int], texts: list[str], nbytes: list[int],
                        following_current: bool) -> tuple[list[int], list[str], list[str]]:
        """:meth:`_new_lines` for any batch, one line at a time."""
        kept_o: list[int] = []
        kept_t: list[str] = []
        understand: list[str] = []
        for off, text, n in zip(offsets, texts, nbytes):
            if off < self.log_offset:
                continue  # already seen (reconnect resumes from an offset): never repeat a line
            self.log_offset = off + n + 1
            if following_current and off >= self._understood:
                understand.append(text)  # never folded twice: the pane may re-read the log from 0
                self._understood = self.log_offset
            kept_o.append(off)
            kept_t.append(text)
        return kept_o, kept_t, understand

    def page_back_range(self, nbytes: int = 1 << 20) -> tuple[int, int, bool] | None:
        """The bytes to read for the log pane's next page back, ``(offset, end, aligned)``
        (``aligned``: ``offset`` is a line start), at most ``nbytes``: the end of the skipped
        middle while the head's lines are still kept, else before the first kept line (lines
        the bounded buffer let go, then the middle, then the head). None: the log's start is
        already kept."""
        if not self.log:
            return None
        first = self.log.raw(0)[0]
        skip = self.log_skipped
        if skip is not None and first < skip[0]:
            lo, end = max(skip[0], skip[1] - nbytes), skip[1]
        else:
            lo, end = max(0, first - nbytes), first
        if end <= 0 or lo >= end:
            return None
        return lo, end, lo == 0 or (skip is not None and lo == skip[0])

    def _earlier(self, ev: LogLines) -> set[str]:
        """A page read back (:meth:`page_back_range`): its lines go in their place among the
        kept ones, for the log pane only (SGLang knowledge already has what the head and the
        tail said; the server's counters cover the middle); the buffer grows by the page."""
        lo, end = ev.earlier
        kept = list(self.log.tail_raw(len(self.log)))
        have = {r[0] for r in kept if lo <= r[0] < end}
        lines = [ln for ln in ev.lines if ln.offset not in have]
        if self.log_skipped is not None and lo < self.log_skipped[1] and end >= self.log_skipped[1]:
            a = self.log_skipped[0]
            self.log_skipped = (a, lo) if lo > a else None
        if not lines:
            return {"log"}
        texts = [ln.text for ln in lines]
        recs = list(zip((ln.offset for ln in lines), texts, *classify(texts)))
        merged = sorted(kept + recs, key=lambda r: r[0])  # two sorted runs: one merge
        self.log = LineBuffer(merged, maxlen=(self.log.maxlen or LOG_KEEP) + len(recs))
        err = next((r[0] for r in recs if r[2] == "error"), None)
        if err is not None and (self.first_error_offset is None or err < self.first_error_offset):
            self.first_error_offset = err
        self.log_total += len(recs)
        self.log_generation += 1  # the pane starts over, with the page in place
        return {"log"}

    def _last_line_time(self, texts: list[str]) -> float | None:
        """This console's clock time of the last of ``texts`` that carries an envelope time."""
        for t in reversed(texts[-64:]):
            if t.startswith("["):
                v = envelope_seconds(t[1:24])  # "[2026-10-01 12:34:56.789 TP0] ..." (ms optional)
                if v is not None:
                    return v + self._time_shift
        return None

    def reading_left(self) -> int | None:
        """Bytes of the log's history still to read (the console is catching up with what the
        file held when it was opened; a skipped middle not counted), else None."""
        if self.log_open_size is None or self.log_offset >= self.log_open_size:
            return None
        return self.log_open_size - self.log_offset

    def behind_bytes(self) -> int | None:
        """Bytes the node's log holds that this console has not read yet, once the first read
        is done and that exceeds :data:`BEHIND_BYTES`; else None."""
        if self.log_size is None or self.reading_left() is not None:
            return None
        left = self.log_size - self.log_offset
        return left if left > BEHIND_BYTES else None

    def log_is_stale(self) -> bool:
        """The shown log is not the current run's, or its file is older than the run."""
        r = self._runs.run
        if r is None:
            return False
        if self.log_run_id is not None and self.log_run_id != r.run_id:
            return True
        return r.log_mtime is not None and r.started is not None and r.log_mtime < r.started - 1

    def log_silent_for(self) -> float | None:
        """Seconds the current run's log has not grown while its process is alive, once that
        exceeds ``log_silent_s``; else None. Known from the node's log mtime at the last run
        poll and from lines received since."""
        r = self._runs.run
        if r is None or r.state not in ("running", "adopted", "starting", "ready") or r.log_idle_s is None \
                or self._runs.listed_at is None:
            return None
        last = self._runs.listed_at - r.log_idle_s
        if self._line_t is not None and self.log_run_id == r.run_id:
            last = max(last, self._line_t)
        silent = self.clock() - last
        return silent if silent > self.log_silent_s else None
