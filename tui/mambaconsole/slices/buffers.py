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

    Lines added as texts (:meth:`add_texts`) get their severity and access flag
    (:func:`~mambaconsole.sglang.log_lines.classify`, one scan for them all) when first read:
    while a long log is read, most of its lines leave the buffer before any pane reads them,
    and those are never classified."""

    __slots__ = ("_unread",)
    _make = ShownLine._make

    def __init__(self, lines: Iterable[tuple] = (), maxlen: int | None = None) -> None:
        super().__init__(lines, maxlen)
        self._unread = 0  # the last records, stored as (offset, text): not classified yet

    def add_texts(self, offsets: list[int], texts: list[str]) -> None:
        """Append lines given as parallel lists of byte offsets and texts (only the last
        ``maxlen`` of them are stored: the others would leave at once)."""
        n = len(texts)
        cap = self._d.maxlen
        if cap is not None and n > cap:
            offsets, texts, n = offsets[n - cap:], texts[n - cap:], cap
        self._d.extend(zip(offsets, texts))
        self._unread = min(self._unread + n, len(self._d))

    def _settle(self) -> None:
        """Classify the lines added as texts and not read yet (the buffer's last records)."""
        k = self._unread
        if not k:
            return
        self._unread = 0
        d = self._d
        recs = list(itertools.islice(reversed(d), k))
        recs.reverse()
        for _ in range(k):
            d.pop()
        texts = [r[1] for r in recs]
        sevs, access = classify(texts)
        d.extend(zip([r[0] for r in recs], texts, sevs, access))

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
        self._unread = 0
        super().clear()

    def tail_raw(self, n: int) -> list[tuple]:
        self._settle()
        return super().tail_raw(n)


class SpecBuffer(TupleBuffer):
    """The last ``maxlen`` decode batches' :class:`SpecPoint` (see :class:`TupleBuffer`)."""

    __slots__ = ()
    _make = SpecPoint._make
