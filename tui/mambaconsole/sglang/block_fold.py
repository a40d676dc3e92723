"""The run fold over a log's text a block at a time (``inspect`` of a large file): the same
result as feeding every line through :class:`~mambaconsole.sglang.events.LogParser` into
:class:`~mambaconsole.sglang.run_fold.RunFold`, at a fraction of the cost.

Usage::

    folder = BlockFold()
    for block in blocks:          # str: whole lines, each ending with "\\n" (the last may not)
        folder.feed(block)
    fold = folder.close()         # the RunFold, as fold_lines(lines) leaves it

The console reads a run's history through one bound to its own parser and fold
(``BlockFold(parser, fold, on_events=..., on_run=...)``: the general path's events go to
``on_events``, a parser call's at a time, to be folded and shown, each run read in bulk to
``on_run`` as a :class:`DecodeRun`; :meth:`BlockFold.settle` before the fold's decodes are
read or its line path feeds the fold). Its lines come joined behind a newline
(:meth:`BlockFold.feed_lines`: the first line is read with the others).

How: most lines of a long log are *simple* (:func:`~mambaconsole.sglang.events.
simple_run_pattern`: decode and prefill batches, uvicorn access lines, plain debug lines and
request traces in SGLang's exact envelope, rank tags the boot already has): each is a record
of its own, and what the fold takes from a run of them does not depend on their order, except
the decode lines' numbers among themselves. One regex match spans such a run; the fold then
takes the run as a whole: the line and event counts, the served flag
(:func:`~mambaconsole.sglang.run_fold.served`), the decode lines' numbers in order
(:data:`~mambaconsole.sglang.events.DECODE_NUMBERS`, one search over the run;
:func:`~mambaconsole.sglang.run_fold.decode_rows`), and events only for the decode lines the
boot keeps (the last :data:`~mambaconsole.sglang.run_fold.DECODES_KEEP`, made when something
reads them). Any other line (a traceback, a startup line, a new rank tag, a level before a
batch line, ANSI colours, CRLF, non-ASCII text), a plain-text line naming "sglang" (any case:
it may name the SGLang version) while the fold has none, and, until one showed the server
serving, an access line naming a serving path take the general path: the parser, then the
fold, event by event. A run's last line that a bare line may continue (plain text, a batch
line without ``#queue-req``) goes with them, unless the line after it is one the parser reads
as enveloped (:data:`~mambaconsole.sglang.events.HOT_LINE`: it ends the pending record).
``tests/test_block_fold.py`` checks the two paths leave the same fold on real logs and
generated mixes.

Speed (a 10 MiB slice of ``bench/inspect_big.py``'s log, instructions counted by callgrind):
2.2x a plain ``re`` search over each line (the benchmark's baseline), against 5.7x through
the parser line by line; in time (``bench/inspect_big.py``, 1 GiB, a busy 2-core machine)
2.3x, CPU time 2.2x. About half of it is
the two regexes (the run's match, the decode lines' numbers), the rest the parser's lines
(tracebacks). (Measured before the run's match looked for "sglang" itself.)
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Callable
from typing import NamedTuple
from operator import itemgetter

from mambaconsole.sglang import events as E
from mambaconsole.sglang.run_fold import (
    DECODES_KEEP,
    Boot,
    RunFold,
    decode_rows,
    served,
)

__all__ = ["BlockFold", "DecodeRun", "decode_events"]

_DECODE = E.DecodeBatch
_NUMBERS = E.DECODE_NUMBERS
#: a prefill / access line of a simple run (searched from the "\n" before it)
_PREFILL_LINE = re.compile(r"\n\[[^\]\n]*\] Prefill batch, ")
_ACCESS_LINE = re.compile(r"\n\[[^\]\n]*\] INFO:")
#: a decode or prefill line of a simple run (searched from the "\n" before it)
_SERVED_LINE = re.compile(r"\n\[[^\]\n]*\] (?:Decode|Prefill) batch, ")
#: a line the parser reads as enveloped on its hot path (``LogParser.feed_many``): it ends the
#: pending record, so the plain-text or batch line before it is a record of its own
_ENVELOPED = E.HOT_LINE.match
#: a decode line's row: its text when it has not SGLang's segments (DECODE_NUMBERS group 8)
_OTHER_SHAPE = itemgetter(7)
#: characters of block text that runs of not-yet-made decode events may hold at most
PINNED_CHARS = 8 << 20
#: lines at most handed to the parser in one call (a run found meanwhile is matched with the
#: pattern of the rank tags known before them; a new tag or boot makes it match again)
GENERAL_BATCH = 64


class BlockFold:
    """A :class:`~mambaconsole.sglang.events.LogParser` and a :class:`RunFold` fed whole
    blocks of text (module doc)."""

    def __init__(self, parser: E.LogParser | None = None, fold: RunFold | None = None, *,
                 on_events: Callable[[list[E.Event]], None] | None = None,
                 on_run: Callable[[Boot, DecodeRun], None] | None = None) -> None:
        #: the parser and the fold it feeds (given: a live console's, which its line path feeds too)
        self.parser = parser if parser is not None else E.LogParser()
        self.fold = fold if fold is not None else RunFold()
        #: folds the events of the general path, a parser call's at a time, in log order
        #: (default the fold's ``feed`` of each; a console's fold slice also shows them)
        self._feed_events = on_events if on_events is not None else self._fold_all
        #: called with the boot and each run read in bulk once the fold took it (its decode
        #: lines' numbers for those that show them without events: the console's panes)
        self._on_run = on_run
        #: runs read in bulk whose decode lines the boot may keep, not yet events (their
        #: events are made when something reads or adds to the boot's decodes: a decode line
        #: of the general path, the end): (block text, start, end, first line number, decodes)
        self._runs: deque[tuple[str, int, int, int, int]] = deque()
        self._kept = 0  # decode lines in _runs
        self._patterns: dict[tuple[frozenset, bool, bool], re.Pattern] = {}
        #: the simple-run pattern in use and what it was made for: the boot, its rank tags'
        #: count (a boot's tags only grow), its http_served, whether the fold has a version
        self._pattern: re.Pattern | None = None
        self._pattern_of: tuple[Boot | None, int, bool, bool] = (None, -1, False, False)
        #: lines read in bulk (not through the parser), for the tests and benchmarks
        self.bulk_lines = 0

    def _fold_all(self, events: list[E.Event]) -> None:
        feed = self.fold.feed
        for ev in events:
            feed(ev)

    # ------------------------------------------------------------------ input

    def feed(self, block: str) -> None:
        """Whole lines (each ending with ``\\n``; a last line without one is read as one)."""
        if not block:
            return
        # the patterns that find lines in a run search from the "\n" before each line: the
        # block's first line is read on its own, behind one (not a copy of the whole block)
        first = block.find("\n") + 1 or len(block)
        self._scan("\n" + block[:first], 1)
        if first < len(block):
            self._scan(block, first)
        self._unpin()

    def feed_lines(self, text: str) -> None:
        """Whole lines behind a ``"\\n"`` (``text[0]``, not a line: a caller that joins the
        lines itself puts it there, so no line is read on its own)."""
        if len(text) > 1:
            self._scan(text, 1)
            self._unpin()

    def _unpin(self) -> None:
        held = {id(r[0]): len(r[0]) for r in self._runs}
        if sum(held.values()) > PINNED_CHARS:
            self._make_kept()

    def _run_pattern(self) -> re.Pattern:
        """The simple-run pattern of the current boot (its rank tags, whether it served over
        HTTP) and fold (whether it has an SGLang version), made once per distinct key."""
        fold = self.fold
        b = fold.boots[-1]
        versioned = fold.version is not None
        key = (frozenset(b.rank_tags), b.http_served, versioned)
        run = self._patterns.get(key)
        if run is None:
            run = self._patterns[key] = E.simple_run_pattern(*key)
        self._pattern, self._pattern_of = run, (b, len(b.rank_tags), b.http_served, versioned)
        return run

    def _scan(self, text: str, pos: int) -> None:
        """The lines of ``text`` from ``pos`` (just after a "\\n") to its end."""
        end = len(text)
        boots = self.fold.boots
        run = self._pattern
        lines: list[str] = []  # lines for the general path, in log order, not yet read
        fold = self.fold
        while pos < end:
            b = boots[-1]
            pb, pn, ps, pv = self._pattern_of
            if b is not pb or len(b.rank_tags) != pn or b.http_served is not ps \
                    or (fold.version is not None) is not pv:
                run = self._run_pattern()
            # (after a run's last line that a bare line may continue: the general path from here)
            e = pos if lines else run.match(text, pos).end()
            if e == pos:  # not a simple line: it and the next ones that are not, the general path
                while True:
                    nl = text.find("\n", pos)
                    if nl < 0:
                        nl = end
                    lines.append(text[pos:nl])
                    pos = nl + 1
                    if pos >= end or len(lines) >= GENERAL_BATCH:
                        e = pos
                        break
                    if text[pos] != "[":
                        continue  # a bare line is never simple
                    c = text[text.find("\n", pos) - 1]  # a simple line ends printable, not with ":"
                    if not " " <= c <= "~" or c == ":":
                        continue
                    e = run.match(text, pos).end()
                    if e > pos:
                        break
                self._general(lines)
                lines = []
                b = boots[-1]
                if e == pos or b is not pb or len(b.rank_tags) != pn or b.http_served is not ps \
                        or (fold.version is not None) is not pv:
                    continue  # what the parser read changed the pattern (a rank tag, a boot): again
            last = text.rfind("\n", pos - 1, e - 1) + 1  # the run's last line
            tail = text[last:e - 1]
            if E.simple_complete(tail) or (
                    e < end and _ENVELOPED(text, e, text.find("\n", e) + 1 or end)):
                self._run(text, pos, e)  # (an enveloped line after it ends it, as in the run)
            else:  # a bare line after it may continue it: the general path, with the lines after it
                if last > pos:
                    self._run(text, pos, last)
                lines.append(tail)
            pos = e
        if lines:
            self._general(lines)

    def close(self) -> RunFold:
        """The end of the input: the pending record, the kept decode lines; the fold."""
        self._general_events(self.parser.flush())
        self._make_kept()
        return self.fold

    # ------------------------------------------------------------------ paths

    def _general(self, lines: list[str]) -> None:
        self._general_events(self.parser.feed_many(lines))

    def _general_events(self, events: list[E.Event]) -> None:
        """Events of the general path (log order), folded at once: the boot's kept decode
        lines first when one is a decode line (they come before it); a new boot among them
        lets the earlier boot's go (it clears that boot's decodes)."""
        if not events:
            return
        if self._runs and _DECODE in map(type, events):
            self._make_kept()  # the decodes the boot keeps, in log order
        fold = self.fold
        n = fold.n_boots
        self._feed_events(events)
        if fold.n_boots != n:  # a new boot: the earlier one let its decode lines go
            self._runs.clear()
            self._kept = 0

    def _run(self, text: str, s: int, e: int) -> None:
        """The simple lines ``text[s:e]``; a plain-text one (or a batch line without
        ``#queue-req``) last only where a simple or an enveloped (:data:`~mambaconsole.sglang.
        events.HOT_LINE`) line follows, which ends the record it might continue."""
        fold = self.fold
        k = text.count("\n", s, e)
        parser = self.parser
        line0 = parser.lines_read + 1
        ended = parser.advance(k)  # the record before the run ends at it
        if ended:
            self._general_events(ended)
        self.bulk_lines += k
        b = fold.boots[-1]
        fold.n_events += k
        fold.n_sglang += k  # every simple line is enveloped
        b.n_events += k
        rows = _NUMBERS.findall(text, s - 1, e)
        accepts = None
        if rows:
            if any(map(_OTHER_SHAPE, rows)):  # a line of another shape: each line as an event, in order
                self._make_kept()
                for ev in decode_events(text, s, e, line0):
                    RunFold._decode(b, ev)
            else:
                accepts = decode_rows(b, rows)
                runs = self._runs
                runs.append((text, s, e, line0, len(rows)))
                self._kept += len(rows)
                while self._kept - runs[0][4] >= DECODES_KEEP:  # a run whose decodes are all pushed out
                    self._kept -= runs.popleft()[4]
            if b.pending_error is not None or b.failure is not None:
                served(b)
            b.served = True
        elif (not b.served or b.pending_error is not None or b.failure is not None) \
                and _PREFILL_LINE.search(text, s - 1, e):
            served(b)
            b.served = True
        if not b.http_answered and _ACCESS_LINE.search(text, s - 1, e) is not None:
            b.http_answered = True  # (a serving path's line is not simple while none served)
        if self._on_run is not None:
            self._on_run(b, DecodeRun(text, s, e, line0, rows, accepts))

    @property
    def pending(self) -> bool:
        """Decode lines the boot keeps are not events in its ``decodes`` yet (:meth:`settle`)."""
        return bool(self._runs)

    def settle(self) -> None:
        """The boot's kept decode lines as events now: before anything reads the fold's
        ``decodes`` or feeds it otherwise than through this fold (a live console's line path)."""
        self._make_kept()

    def _make_kept(self) -> None:
        """The decode lines the boot keeps (the last :data:`DECODES_KEEP` of the runs read in
        bulk) as events, into its decodes, in log order."""
        runs = self._runs
        if not runs:
            return
        decodes = self.fold.boots[-1].decodes
        skip = max(0, self._kept - DECODES_KEEP)
        for text, s, e, line0, n in runs:
            if skip >= n:
                skip -= n
                continue
            decodes.extend(decode_events(text, s, e, line0, skip))
            skip = 0
        runs.clear()
        self._kept = 0


def decode_events(text: str, s: int, e: int, line0: int, skip: int = 0) -> list[E.Event]:
    """The decode lines of the simple run ``text[s:e]`` (whole lines, ``text[s - 1]`` the
    ``"\\n"`` before the first; ``line0`` its line number) as events, the first ``skip`` left out."""
    out = []
    count = text.count
    find = text.find
    prev, line = s, line0
    for i, m in enumerate(E.DECODE_LINE.finditer(text, s - 1, e)):
        if i < skip:
            continue
        at = m.start() + 1
        line += count("\n", prev, at)
        prev = at
        out.append(E.simple_event(text[at:find("\n", at)], line))
    return out


class DecodeRun(NamedTuple):
    """A run of simple lines the block fold read in bulk: ``text[s:e]`` (whole lines; ``line0``
    the first one's line number), ``rows`` its decode lines' numbers in log order
    (:data:`~mambaconsole.sglang.events.DECODE_NUMBERS` groups, ``""`` when absent; group 8
    the text of a line of another shape); ``accepts`` the accept lengths they print, in log
    order (None when a line has another shape: read its events)."""

    text: str
    s: int
    e: int
    line0: int
    rows: list[tuple[str, ...]]
    accepts: list[float] | None = None

    def events(self, skip: int = 0) -> list[E.Event]:
        """Its decode lines as events (:func:`decode_events`), the first ``skip`` left out."""
        return decode_events(self.text, self.s, self.e, self.line0, skip)

    def served_line(self) -> E.Event:
        """Its first decode or prefill line as an event (the line that showed the server
        serving, when it was not yet); ValueError when it has none."""
        m = _SERVED_LINE.search(self.text, self.s - 1, self.e)
        if m is None:
            raise ValueError("no batch line in the run")
        at = m.start() + 1
        text = self.text
        return E.simple_event(text[at:text.find("\n", at)], self.line0 + text.count("\n", self.s, at))
