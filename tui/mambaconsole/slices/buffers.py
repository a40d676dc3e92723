"""Bounded record buffers for records that arrive by the thousand per second: the shown log's
lines (:class:`LineBuffer` of :class:`ShownLine`) and the decode batches' speculative numbers
(:class:`SpecBuffer` of :class:`SpecPoint`). Used by the ``log`` and ``spec`` slices and by the
log pane's own view."""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NamedTuple

from mambaconsole.sglang.log_lines import classify


class SpecPoint(NamedTuple):
    """One decode batch's speculative numbers (kept in a :class:`TupleBuffer`)."""

    t: float  # console clock, Unix seconds
    accept_len: float  # tokens per request per verify step
    accept_rate: float | None
    throughput: float | None  # gen throughput, token/s


class ShownLine(NamedTuple):
    """One kept line of the shown log, as :class:`LineBuffer` hands it out."""

    offset: int  # byte offset of the line in the run's log
    text: str
    severity: str  # severity(text)
    access: bool = False  # an HTTP access line of a poll (is_poll_access)


class TupleBuffer:
    """A bounded deque of records (a NamedTuple type of atoms: numbers, strings, None), oldest
    first, for records that arrive by the thousand per second (log lines, decode batches).

    Stored as plain tuples, which the garbage collector stops tracking after their first
    collection: as tracked objects (NamedTuple or dataclass instances) a flood would promote
    thousands per second to the oldest generation and lengthen every full collection (each
    one a dropped frame). Records are built on access; iterate or index like a deque."""

    __slots__ = ("_d",)
    _make: Callable[[Iterable[Any]], Any] = tuple

    def __init__(self, lines: Iterable[tuple] = (), maxlen: int | None = None) -> None:
        self._d: deque[tuple] = deque((tuple(ln) for ln in lines), maxlen=maxlen)

    @property
    def maxlen(self) -> int | None:
        return self._d.maxlen

    def __len__(self) -> int:
        return len(self._d)

    def __bool__(self) -> bool:
        return bool(self._d)

    def __iter__(self) -> Iterator[Any]:
        return map(type(self)._make, self._d)

    def __reversed__(self) -> Iterator[Any]:
        return map(type(self)._make, reversed(self._d))

    def __getitem__(self, i: int) -> Any:
        return type(self)._make(self._d[i])

    def raw(self, i: int) -> tuple:
        """Record ``i`` as the stored plain tuple."""
        return self._d[i]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self._d)} records, maxlen={self._d.maxlen})"

    def append(self, *fields: Any) -> None:
        """Append one record, given as its fields."""
        self._d.append(fields)

    def extend(self, records: Iterable[tuple]) -> None:
        """Append records (the NamedTuple or plain tuples)."""
        self._d.extend(tuple(r) if type(r) is not tuple else r for r in records)

    def clear(self) -> None:
        self._d.clear()

    def tail(self, n: int) -> list[Any]:
        """The last ``n`` records, oldest first (costs ``n``, not the records kept)."""
        return list(map(type(self)._make, self.tail_raw(n)))

    def tail_raw(self, n: int) -> list[tuple]:
        """:meth:`tail` as the stored plain tuples (field order of the record type)."""
        if n <= 0:
            return []
        out = list(itertools.islice(reversed(self._d), n))
        out.reverse()
        return out


class LineBuffer(TupleBuffer):
    """The last ``maxlen`` lines of a log as :class:`ShownLine` (see :class:`TupleBuffer`).

    Lines added as texts (:meth:`add_texts`) are kept as the lists they came in (no record
    per line; the lists that fall wholly out of the last ``maxlen`` lines are let go at once)
    and become records, with their severity and access flag (:func:`~mambaconsole.sglang.
    log_lines.classify`, one scan for them all), when the buffer is first read: while a long
    log is read, most of its lines leave the buffer before any pane reads them, and those are
    never made records nor classified."""

    __slots__ = ("_cols", "_ncols")
    _make = ShownLine._make

    def __init__(self, lines: Iterable[tuple] = (), maxlen: int | None = None) -> None:
        super().__init__(lines, maxlen)
        #: lines added as texts and not read yet, after the records of ``_d``: ``(offsets,
        #: texts)`` lists as :meth:`add_texts` got them (kept, not copied), oldest first
        self._cols: deque[tuple[list[int], list[str]]] = deque()
        self._ncols = 0  # lines in _cols

    def add_texts(self, offsets: list[int], texts: list[str]) -> None:
        """Append lines given as parallel lists of byte offsets and texts (kept as they are
        until the buffer is read: the caller never changes them afterwards)."""
        n = len(texts)
        if not n:
            return
        cols = self._cols
        cols.append((offsets, texts))
        self._ncols += n
        cap = self._d.maxlen
        if cap is not None:
            while self._ncols - len(cols[0][1]) >= cap:  # the oldest lists leave the buffer whole
                self._ncols -= len(cols.popleft()[1])

    def _settle(self) -> None:
        """The lines added as texts and not read yet, as records (the last ``maxlen`` of them,
        classified in one scan)."""
        if not self._ncols:
            return
        cols, self._cols = self._cols, deque()
        k, self._ncols = self._ncols, 0
        cap = self._d.maxlen
        offsets = list(itertools.chain.from_iterable(o for o, _ in cols))
        texts = list(itertools.chain.from_iterable(t for _, t in cols))
        if cap is not None and k > cap:
            offsets, texts = offsets[k - cap:], texts[k - cap:]
        sevs, access = classify(texts)
        self._d.extend(zip(offsets, texts, sevs, access))

    def __len__(self) -> int:
        n = len(self._d) + self._ncols
        cap = self._d.maxlen
        return n if cap is None else min(n, cap)

    def __bool__(self) -> bool:
        return bool(self._d) or self._ncols > 0

    def __iter__(self) -> Iterator[Any]:
        self._settle()
        return super().__iter__()

    def __reversed__(self) -> Iterator[Any]:
        self._settle()
        return super().__reversed__()

    def __getitem__(self, i: int) -> Any:
        self._settle()
        return super().__getitem__(i)

    def raw(self, i: int) -> tuple:
        self._settle()
        return super().raw(i)

    def append(self, *fields: Any) -> None:
        self._settle()
        super().append(*fields)

    def extend(self, records: Iterable[tuple]) -> None:
        self._settle()
        super().extend(records)

    def clear(self) -> None:
        self._cols.clear()
        self._ncols = 0
        super().clear()

    def tail_raw(self, n: int) -> list[tuple]:
        self._settle()
        return super().tail_raw(n)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self)} records, maxlen={self._d.maxlen})"


class SpecBuffer(TupleBuffer):
    """The last ``maxlen`` decode batches' :class:`SpecPoint` (see :class:`TupleBuffer`)."""

    __slots__ = ()
    _make = SpecPoint._make
