"""Console side of the node agent (``agent/node_agent.py``): start it, read its JSON records.

The record shapes (``hello``, ``gpu``, ``no_gpu``, ``log``, ``log_reset``, ``log_wait``, ``run``,
``error``) are documented in ``mambaconsole/agent/node_agent.py``.

::

    async for rec in agent_records(node, run_id="20261130-101500-ab12", interval=1.0):
        if rec["type"] == "log":
            for line in log_lines(rec): ...

Errors: :class:`~mambaconsole.node.base.NodeError` when the node cannot be reached or the agent
cannot start (its python is missing); a malformed line becomes an ``error`` record.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from itertools import accumulate, compress, count, repeat
from operator import add, not_
from pathlib import Path
from typing import NamedTuple

from mambaconsole.node.base import Node, NodeError

AGENT_FILE = Path(__file__).resolve().parent.parent / "agent" / "node_agent.py"


def agent_source() -> bytes:
    return AGENT_FILE.read_bytes()


def agent_argv(*, python: str = "python3", follow: str | None = None, run_id: str | None = None,
               home: str | None = None, offset: int = 0, interval: float = 1.0, gpu: str = "auto",
               sim_file: str | None = None, max_line: int | None = None, once: bool = False,
               tail_bytes: int = 0, head_bytes: int | None = None, head_until: str | None = None) -> list[str]:
    """The argv that runs the agent on the node (its source goes on stdin). ``tail_bytes``
    (> 0): a file opened from offset 0 is read from its head (up to the first line holding
    ``head_until``, at most ``head_bytes``) and its last ``tail_bytes``, the middle skipped
    (``log_skip`` records; see ``agent/node_agent.py``)."""
    argv = [python, "-u", "-", "--interval", repr(float(interval)), "--gpu", gpu]
    if follow:
        argv += ["--follow", follow]
    if run_id:
        argv += ["--run", run_id]
    if home:
        argv += ["--home", home]
    if offset:
        argv += ["--offset", str(int(offset))]
    if sim_file:
        argv += ["--sim-file", sim_file]
    if max_line:
        argv += ["--max-line", str(int(max_line))]
    if tail_bytes and tail_bytes > 0:
        argv += ["--tail-bytes", str(int(tail_bytes))]
        if head_bytes:
            argv += ["--head-bytes", str(int(head_bytes))]
        if head_until:
            argv += ["--head-until", head_until]
    if once:
        argv.append("--once")
    return argv


async def agent_records(node: Node, **kw) -> AsyncIterator[dict]:
    """Run the agent on ``node`` and yield its records (dicts) as they arrive, until the
    iterator is closed (that stops the agent). ``kw``: see :func:`agent_argv`."""
    batches = agent_record_batches(node, **kw)
    try:
        async for batch in batches:
            for rec in batch:
                yield rec
    finally:
        await batches.aclose()


def _records(lines: list[bytes]) -> list[dict]:
    out = []
    for line in lines:
        try:
            rec = json.loads(line)
        except ValueError:
            rec = {"type": "error", "message": "agent sent a line that is not JSON: %r" % line[:200]}
        out.append(rec)
    return out


async def _hello_first(node: Node, python: str, batches: AsyncIterator[list[dict]],
                       before: list[dict] | None = None) -> AsyncIterator[list[dict]]:
    """``before`` (records already read), then ``batches``, checking that the agent's first
    record is its ``hello``; closes ``batches`` when done."""
    first = True
    try:
        pending = [before] if before else []
        while True:
            if pending:
                out = pending.pop()
            else:
                try:
                    out = await batches.__anext__()
                except StopAsyncIteration:
                    break
            if first and out:
                first = False
                if out[0].get("type") != "hello":
                    raise NodeError(f"{node.name}: the agent did not start: {out[0].get('message', out[0])}")
            yield out
    finally:
        await batches.aclose()
    if first:
        raise NodeError(f"{node.name}: the agent exited at once (is {python} on the node?)")


async def _record_stream(node: Node, argv: list[str], source: bytes) -> AsyncIterator[list[dict]]:
    stream = node.stream_line_batches(argv, input=source)
    try:
        async for lines in stream:
            yield _records(lines)
    finally:
        await stream.aclose()


async def agent_record_batches(node: Node, **kw) -> AsyncIterator[list[dict]]:
    """Like :func:`agent_records`, one list per chunk that arrived (fast path)."""
    batches = _hello_first(node, kw.get("python", "python3"), _record_stream(node, agent_argv(**kw), agent_source()))
    try:
        async for out in batches:
            yield out
    finally:
        await batches.aclose()


def first_look_source() -> bytes:
    """The program of :func:`first_look`: ``agent/first_look.py`` after the two sources it runs
    (``runs_agent.py``, ``node_agent.py``) as Python string literals."""
    folder = AGENT_FILE.parent
    runs, agent = ((folder / name).read_text(encoding="utf-8") for name in ("runs_agent.py", "node_agent.py"))
    return (f"RUNS_AGENT = {runs!r}\nNODE_AGENT = {agent!r}\n".encode("utf-8")
            + (folder / "first_look.py").read_bytes())


async def _gpu_sample_split(batches: AsyncIterator[list[dict]], on_gpu: Callable[[dict | None], None]
                            ) -> AsyncIterator[list[dict]]:
    """``batches`` without the first look's ``gpu_sample`` record, whose ``record`` goes to
    ``on_gpu`` as it arrives; ``on_gpu(None)`` when the stream ends or is closed without one."""
    waiting = True
    try:
        async for recs in batches:
            if waiting:
                for i, rec in enumerate(recs):
                    if rec.get("type") == "gpu_sample":
                        waiting = False
                        recs = recs[:i] + recs[i + 1:]
                        on_gpu(rec.get("record") if isinstance(rec.get("record"), dict) else None)
                        break
                if not recs:
                    continue
            yield recs
    finally:
        if waiting:
            on_gpu(None)
        await batches.aclose()


async def first_look(node: Node, list_request: dict, *, on_gpu: Callable[[dict | None], None] | None = None,
                     gpu_python: str | None = None, gpu_choice: str = "auto", gpu_sim_file: str | None = None,
                     **kw) -> tuple[dict, AsyncIterator[list[dict]] | None]:
    """The node's runs and the current run's log in ONE remote command (``agent/first_look.py``):
    ``(answer, batches)``, ``answer`` the run store's answer to ``list`` with ``list_request``
    (``{"ok": true, "result": {"runs": [...], "current": id or None, ...}}`` or ``{"ok": false,
    "error": str}``; see ``agent/runs_agent.py``), ``batches`` the node agent's record batches
    following the current run's log (as :func:`agent_record_batches` with ``run_id`` the
    current run and ``kw``'s options), or None when there is no current run. The caller closes
    ``batches`` (that stops the agent on the node). Raises NodeError when the node cannot be
    reached or the program does not answer.

    ``on_gpu``: the same command takes one GPU sample with ``gpu_python`` (default: ``kw``'s
    python; backend ``gpu_choice``, ``gpu_sim_file``: the node agent ``--once``), beside the log:
    ``on_gpu`` gets its record (``gpu``, ``no_gpu`` or ``error``, shapes in
    ``agent/node_agent.py``) when it arrives, which may be while ``batches`` is read, or ``None``
    once none can come (that agent did not answer, no current run, the stream ended or was
    closed first). Its batches never hold that record."""
    python = kw.get("python", "python3")
    ask = ({"python": gpu_python or python, "gpu": gpu_choice, "sim_file": gpu_sim_file}
           if on_gpu is not None else None)
    argv = [python, "-u", "-", json.dumps(list_request), json.dumps(ask), *agent_argv(**kw)[3:]]
    stream = _record_stream(node, argv, first_look_source())
    if on_gpu is not None:
        stream = _gpu_sample_split(stream, on_gpu)
    try:
        while True:
            try:
                out = await stream.__anext__()
            except StopAsyncIteration:
                raise NodeError(f"{node.name}: the run store agent exited at once (is {python} on the node?)") from None
            if out:
                break
        answer, rest = out[0], out[1:]
        if answer.get("type") != "runs":
            raise NodeError(f"{node.name}: run store agent failed: {answer.get('message', answer)}")
        result = answer.get("result")
        if not answer.get("ok") or not isinstance(result, dict) or not result.get("current"):
            await stream.aclose()
            return answer, None
    except BaseException:
        await stream.aclose()
        raise
    return answer, _hello_first(node, python, stream, rest)


async def agent_once(node: Node, *, python: str = "python3", gpu: str = "auto", sim_file: str | None = None,
                     timeout: float = 60.0) -> tuple[dict, dict]:
    """(hello, first GPU record: ``gpu``, ``no_gpu`` or ``error``) from one short agent run."""
    res = await node.run(agent_argv(python=python, gpu=gpu, sim_file=sim_file, once=True),
                         input=agent_source(), timeout=timeout)
    recs = []
    for line in res.stdout.splitlines():
        try:
            recs.append(json.loads(line))
        except ValueError:
            continue
    if len(recs) < 2 or recs[0].get("type") != "hello":
        detail = (res.err.strip().splitlines() or [f"exit status {res.exit_status}"])[-1]
        raise NodeError(f"{node.name}: the agent failed with {python}: {detail}")
    return recs[0], recs[1]


class LogLine(NamedTuple):
    """One line of a followed log, made once per line (the console's state takes it as is):
    ``offset`` (byte offset of its first byte), ``text`` (for display: UTF-8 with invalid bytes
    replaced; only the first max-line bytes when ``truncated``), ``nbytes`` (its full length in
    bytes, without the newline); ``escaped`` only for a line holding invalid UTF-8: the agent's
    ``surrogateescape`` text, from which :attr:`raw` gives back the exact bytes."""

    offset: int
    text: str
    nbytes: int
    truncated: bool = False
    escaped: str | None = None

    @property
    def raw(self) -> bytes:
        """The line's bytes (its first max-line bytes when ``truncated``)."""
        return (self.escaped if self.escaped is not None else self.text).encode("utf-8", "surrogateescape")

    @property
    def length(self) -> int:
        """Its full length in bytes (as :attr:`nbytes`)."""
        return self.nbytes


class LineBatch:
    """Consecutive lines of a followed log as parallel lists, not one object per line (a
    catch-up reads hundreds of thousands of lines; the state takes the lists as they are):
    ``offsets[i]`` the byte offset of line ``i``'s first byte, ``texts[i]`` its text for
    display (UTF-8, invalid bytes replaced; only the first max-line bytes of a truncated line),
    ``nbytes[i]`` its full length in bytes without the newline. The rare lines that need more
    are listed by index: ``escaped`` (``{i: the agent's surrogateescape text}``, from which
    :attr:`LogLine.raw` gives back the exact bytes of a line holding invalid UTF-8) and
    ``truncated`` (indexes of lines longer than the agent's ``--max-line``).

    ``consecutive``: each line starts just past the previous one's newline (``offsets[i + 1] ==
    offsets[i] + nbytes[i] + 1``), as in the file: true of :func:`log_batch`'s batches, of
    their slices, and of a batch extended with the lines that follow it; a reader may then
    cut the batch by offset without checking each line (``LogSlice._new_lines``).

    A sequence of :class:`LogLine` (``batch[i]``, iteration: made on access). A slice is a
    LineBatch that shares the lists (the console's intake hands a long batch out in pieces: a
    copy of the rest at each piece would cost the square of its length); its ``offsets``,
    ``texts`` and ``nbytes`` are copies of its part (the whole batch's: the lists themselves)."""

    __slots__ = ("_offsets", "_texts", "_nbytes", "_escaped", "_truncated", "_lo", "_hi", "consecutive")

    def __init__(self, offsets: list[int] | None = None, texts: list[str] | None = None,
                 nbytes: list[int] | None = None, escaped: dict[int, str] | None = None,
                 truncated: frozenset[int] | set[int] = frozenset(), consecutive: bool = False) -> None:
        self.consecutive = consecutive or not offsets
        self._offsets: list[int] = offsets if offsets is not None else []
        self._texts: list[str] = texts if texts is not None else []
        self._nbytes: list[int] = nbytes if nbytes is not None else []
        self._escaped: dict[int, str] = escaped or {}  # by index in the lists
        self._truncated = frozenset(truncated)
        self._lo, self._hi = 0, len(self._offsets)

    def _part(self, lst: list) -> list:
        return lst if self._lo == 0 and self._hi == len(lst) else lst[self._lo:self._hi]

    @property
    def offsets(self) -> list[int]:
        return self._part(self._offsets)

    @property
    def texts(self) -> list[str]:
        return self._part(self._texts)

    @property
    def nbytes(self) -> list[int]:
        return self._part(self._nbytes)

    @property
    def escaped(self) -> dict[int, str]:
        lo, hi = self._lo, self._hi
        return {k - lo: v for k, v in self._escaped.items() if lo <= k < hi}

    @property
    def truncated(self) -> frozenset[int]:
        lo, hi = self._lo, self._hi
        return frozenset(k - lo for k in self._truncated if lo <= k < hi)

    def __len__(self) -> int:
        return self._hi - self._lo

    def _line(self, i: int) -> LogLine:
        j = self._lo + i
        return LogLine(self._offsets[j], self._texts[j], self._nbytes[j], j in self._truncated, self._escaped.get(j))

    def __getitem__(self, i):
        if isinstance(i, slice):
            start, stop, step = i.indices(len(self))
            if step != 1:
                raise ValueError("a LineBatch slice has no step")
            part = LineBatch.__new__(LineBatch)
            part._offsets, part._texts, part._nbytes = self._offsets, self._texts, self._nbytes
            part._escaped, part._truncated = self._escaped, self._truncated
            part._lo, part._hi = self._lo + start, self._lo + max(start, stop)
            part.consecutive = self.consecutive
            return part
        return self._line(range(len(self))[i])

    def __iter__(self):
        return map(self._line, range(len(self)))

    def __repr__(self) -> str:
        return f"LineBatch({len(self)} lines)"

    def extend(self, other: LineBatch) -> None:
        """Append the lines of ``other`` (the next ones in the file)."""
        if self._lo != 0 or self._hi != len(self._offsets):  # a part: its own lists first
            self._escaped, self._truncated = self.escaped, self.truncated
            self._offsets, self._texts, self._nbytes = self.offsets, self.texts, self.nbytes
            self._lo, self._hi = 0, len(self._offsets)
        n = self._hi
        if len(other):
            if n:  # the lines that follow: consecutive if both are and other starts past the newline
                self.consecutive = self.consecutive and other.consecutive and \
                    other._offsets[other._lo] == self._offsets[n - 1] + self._nbytes[n - 1] + 1
            else:
                self.consecutive = other.consecutive
        if other._escaped:
            self._escaped = {**self._escaped, **{k + n: v for k, v in other.escaped.items()}}
        if other._truncated:
            self._truncated = self._truncated | {k + n for k in other.truncated}
        self._offsets += other.offsets
        self._texts += other.texts
        self._nbytes += other.nbytes
        self._hi = len(self._offsets)


def log_batch(rec: dict) -> LineBatch:
    """The lines of one ``log`` record (shape in ``agent/node_agent.py``) with their byte
    offsets, as a :class:`LineBatch`: the texts neither encoded nor copied, an ASCII line's
    length its length in characters (lists built at C speed); only a line with other
    characters is measured in UTF-8 bytes, and one holding invalid UTF-8 (the agent's
    surrogates) is shown with U+FFFD and listed in ``escaped``."""
    texts: list[str] = list(rec.get("lines") or ())
    truncated = bool(rec.get("truncated"))
    if truncated:
        texts = texts[:1] or [""]
    nbytes = list(map(len, texts))
    escaped: dict[int, str] = {}
    for i in compress(count(), map(not_, map(str.isascii, texts))):
        t = texts[i]
        try:
            nbytes[i] = len(t.encode("utf-8"))
        except UnicodeEncodeError:
            raw = t.encode("utf-8", "surrogateescape")
            nbytes[i] = len(raw)
            texts[i] = raw.decode("utf-8", "replace")
            escaped[i] = t
    if truncated and rec.get("length") is not None:
        nbytes[0] = int(rec["length"])
    return LineBatch(_offsets(int(rec["offset"]), nbytes), texts, nbytes, escaped, {0} if truncated else (),
                     consecutive=True)


def _offsets(off: int, nbytes: list[int]) -> list[int]:
    """The byte offset of each line from the first's (``off``) and each line's length (one
    newline after each)."""
    if not nbytes:
        return []
    return list(accumulate(map(add, nbytes, repeat(1, len(nbytes) - 1)), initial=off))


def log_lines(rec: dict) -> list[LogLine]:
    """The lines of one ``log`` record as :class:`LogLine` objects (:func:`log_batch`, one
    object per line)."""
    return list(log_batch(rec))


async def read_lines(node: Node, path: str, start: int, end: int, *, aligned: bool = True,
                     timeout: float = 60.0) -> list[LogLine]:
    """The whole lines of the file ``path`` on ``node`` in bytes ``[start, end)`` (``end`` a line
    start or the file's end), each with its byte offset: paging back into a log. ``aligned``
    False: ``start`` may fall inside a line, whose rest is left out. A byte-range read on the
    node (``tail -c +N | head -c M``: ``tail`` seeks in a regular file), never the whole file.
    Raises NodeError when the file cannot be read."""
    if end <= start:
        return []
    res = await node.run(["sh", "-c", 'tail -c +"$2" -- "$1" | head -c "$3"', "sh", path, str(start + 1),
                          str(end - start)], timeout=timeout)
    if not res.ok:
        detail = (res.err.strip().splitlines() or [f"exit status {res.exit_status}"])[-1]
        raise NodeError(f"{node.name}: cannot read {path}: {detail}")
    data = res.stdout
    off = start
    if not aligned:
        nl = data.find(b"\n")
        if nl < 0:
            return []
        off += nl + 1
        data = data[nl + 1:]
    if data.endswith(b"\n"):
        data = data[:-1]
    if not data:
        return []
    return log_lines({"offset": off, "lines": data.decode("utf-8", "surrogateescape").split("\n")})
