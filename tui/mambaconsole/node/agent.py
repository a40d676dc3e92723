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
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from mambaconsole.node.base import Node, NodeError

AGENT_FILE = Path(__file__).resolve().parent.parent / "agent" / "node_agent.py"


def agent_source() -> bytes:
    return AGENT_FILE.read_bytes()


def agent_argv(*, python: str = "python3", follow: str | None = None, run_id: str | None = None,
               home: str | None = None, offset: int = 0, interval: float = 1.0, gpu: str = "auto",
               sim_file: str | None = None, max_line: int | None = None, once: bool = False) -> list[str]:
    """The argv that runs the agent on the node (its source goes on stdin)."""
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


async def agent_record_batches(node: Node, **kw) -> AsyncIterator[list[dict]]:
    """Like :func:`agent_records`, one list per chunk that arrived (fast path)."""
    first = True
    stream = node.stream_line_batches(agent_argv(**kw), input=agent_source())
    try:
        async for lines in stream:
            out = []
            for line in lines:
                try:
                    rec = json.loads(line)
                except ValueError:
                    rec = {"type": "error", "message": "agent sent a line that is not JSON: %r" % line[:200]}
                out.append(rec)
            if first and out:
                first = False
                if out[0].get("type") != "hello":
                    raise NodeError(f"{node.name}: the agent did not start: {out[0].get('message', out[0])}")
            yield out
    finally:
        await stream.aclose()
    if first:
        raise NodeError(f"{node.name}: the agent exited at once (is {kw.get('python', 'python3')} on the node?)")


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


@dataclass(frozen=True)
class LogLine:
    """One line of a followed log: ``offset`` (byte offset of its first byte), ``raw`` (its
    bytes without the newline; only the first max-line bytes when ``truncated``), ``length``
    (its full length in bytes)."""

    offset: int
    raw: bytes
    length: int
    truncated: bool = False

    @property
    def text(self) -> str:
        """For display: UTF-8 with invalid bytes replaced."""
        return self.raw.decode("utf-8", "replace")


def log_lines(rec: dict) -> list[LogLine]:
    """The lines of one ``log`` record, each with its byte offset."""
    texts: Sequence[str] = rec.get("lines") or []
    off = rec["offset"]
    if rec.get("truncated"):
        raw = texts[0].encode("utf-8", "surrogateescape") if texts else b""
        return [LogLine(off, raw, int(rec.get("length", len(raw))), True)]
    out = []
    for t in texts:
        raw = t.encode("utf-8", "surrogateescape")
        out.append(LogLine(off, raw, len(raw)))
        off += len(raw) + 1
    return out
