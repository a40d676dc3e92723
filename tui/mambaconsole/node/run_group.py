"""One SGLang run across nodes (:mod:`mambaconsole.sglang.multinode`): its ranks started and
stopped in rank order under the relaunch lock of every node, and read together.

Each rank is an ordinary run in its node's run store (:class:`~mambaconsole.node.runs.RunStore`)
whose ``group.json`` names the run across nodes: ``{"id", "rank", "nnodes", "nodes", "runs"}``,
``nodes`` the host names as the launching console named them (rank order), ``runs`` each rank's
run id. Any console that reaches one rank reaches the others through those names.

- **All or none**: :func:`acquire_locks` takes the relaunch lock on every node in rank order;
  when one node refuses (another console holds it, it cannot be reached), the locks already
  taken are released and :class:`LockRefused` names the node that refused and why.
- **Rank order**: :func:`launch` starts rank 0 first (it hosts the group's store at
  ``--dist-init-addr``), then 1, 2, ...; a rank that cannot be started stops the ranks already
  started (rank order) and nothing is left running. :func:`stop` stops rank 0 first (it holds
  the API server: no request reaches the ranks after it), then the others.
- **Together**: :func:`views` reads every rank's record and the tail of its log into
  :class:`~mambaconsole.sglang.multinode.RankView` (``fates_line`` puts them in one line).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from mambaconsole.errors import ConsoleError
from mambaconsole.node.base import Node, NodeError
from mambaconsole.node.runs import DEFAULT_SESSION, LockHeld, Run, RunError, RunStore
from mambaconsole.sglang.multinode import RankView, log_phase

#: bytes of each rank's log read for its phase (the last boot's start is near its head)
TAIL_BYTES = 256 * 1024


class LockRefused(ConsoleError):
    """A node of the run refused its relaunch lock; ``node`` names it, ``released`` the nodes
    whose locks were taken and released again, ``cause`` the refusal (LockHeld, NodeError, ...)."""

    def __init__(self, node: str, cause: Exception, released: Sequence[str]) -> None:
        self.node, self.cause, self.released = node, cause, list(released)
        back = (f"released the locks taken on {', '.join(released)}" if released else "no lock was taken")
        text = str(cause)
        if text.startswith(f"{node}: "):
            text = text[len(node) + 2:]
        super().__init__(f"node {node} refused the relaunch lock ({text}); {back}; nothing was started or stopped")


@dataclass
class Member:
    """One rank: its ``rank``, the ``host`` name, the connected ``store`` on that node and,
    once known, its ``run``."""

    rank: int
    host: str
    store: RunStore
    run: Run | None = None
    lock: dict | None = field(default=None, repr=False)


def new_group_id() -> str:
    """``mn-YYYYmmdd-HHMMSS-xxxx`` (UTC, then 4 random hex digits)."""
    return "mn-" + time.strftime("%Y%m%d-%H%M%S", time.gmtime()) + "-" + os.urandom(2).hex()


async def acquire_locks(members: Sequence[Member], acquire: Callable | None = None) -> None:
    """Take the relaunch lock of every member's node, in rank order, into ``member.lock``; all
    or none: raises LockRefused (after releasing those taken) when a node refuses.
    ``acquire(member)`` takes one (default ``member.store.acquire_lock()``)."""
    taken: list[Member] = []
    for m in members:
        try:
            m.lock = await (acquire(m) if acquire is not None else m.store.acquire_lock())
        except (LockHeld, NodeError, RunError) as exc:
            await release_locks(taken)
            raise LockRefused(m.host, exc, [t.host for t in taken]) from None
        taken.append(m)


async def release_locks(members: Sequence[Member]) -> None:
    """Release the locks ``members`` hold, in reverse rank order; a node that cannot be reached
    keeps its lock until its holder's session ends (then it is stale)."""
    for m in reversed(members):
        if m.lock is not None:
            with contextlib.suppress(NodeError, RunError):
                await m.store.release_lock(m.lock)
            m.lock = None


def group_record(group_id: str, members: Sequence[Member], rank: int) -> dict:
    return {"id": group_id, "rank": rank, "nnodes": len(members), "nodes": [m.host for m in members],
            "runs": [m.run.run_id if m.run is not None else None for m in members]}


async def launch(members: Sequence[Member], argvs: Sequence[Sequence[str]], *, env: Mapping[str, str] | None = None,
                 cwd: str | None = None, session: str = DEFAULT_SESSION, group_id: str | None = None,
                 acquire: Callable | None = None) -> str:
    """Start ``argvs[i]`` (whole server argvs, already checked) on ``members[i]``, in rank
    order, under every node's relaunch lock; returns the group id. Raises LockRefused (nothing
    started), ConsoleError naming a node where a server is live (nothing started), or a start's
    error after stopping the ranks already started."""
    gid = group_id or new_group_id()
    await acquire_locks(members, acquire)
    try:
        for m in members:  # under every lock: a node with a live server refuses before any rank starts
            live = [r for r in await m.store.list(adopt=False) if r.alive or r.state == "starting"]
            if live:
                r = live[-1]
                raise ConsoleError(f"{m.host}: a server is already live there: run {r.run_id} ({r.state}, pid "
                                   f"{r.pid or 'not yet known'}); stop it first (mambaconsole stop {m.host} "
                                   f"{r.run_id}); nothing was started")
        for m, argv in zip(members, argvs):
            try:
                m.run = await m.store.start(argv, env=env, cwd=cwd, session=session, lock=m.lock,
                                            group=group_record(gid, members, m.rank))
            except (NodeError, RunError) as exc:
                started = [x for x in members if x.run is not None]
                for x in started:
                    with contextlib.suppress(NodeError, RunError):
                        await x.store.stop(x.run.run_id, int_s=10, term_s=5, kill_s=5)  # type: ignore[union-attr]
                what = f"stopped rank{'s' if len(started) > 1 else ''} " + ", ".join(
                    f"{x.rank} ({x.host})" for x in started) if started else "no rank had started"
                raise ConsoleError(f"rank {m.rank} could not be started on {m.host}: {exc}; {what}") from None
        for m in members:  # every rank now knows the others' run ids
            with contextlib.suppress(NodeError, RunError):
                m.run = await m.store.set_group(m.run.run_id, group_record(gid, members, m.rank))  # type: ignore[union-attr]
    finally:
        await release_locks(members)
    return gid


async def stop(members: Sequence[Member], *, int_s: float = 30.0, term_s: float = 10.0, kill_s: float = 5.0,
               acquire: Callable | None = None) -> list[Run | None]:
    """Stop every rank that has a run, rank 0 first, under every node's relaunch lock (all or
    none: LockRefused stops nothing). Returns each rank's run after its stop (None: no run)."""
    await acquire_locks(members, acquire)
    out: list[Run | None] = []
    try:
        for m in members:
            if m.run is None:
                out.append(None)
                continue
            m.run = await m.store.stop(m.run.run_id, int_s=int_s, term_s=term_s, kill_s=kill_s)
            out.append(m.run)
    finally:
        await release_locks(members)
    return out


async def view(m: Member) -> RankView:
    """One rank's :class:`RankView`: its record (re-read) and the phase of its log's tail."""
    if m.run is None:
        why = getattr(m.store, "why", None)  # a node that could not be reached (_Unreachable)
        return RankView(m.rank, m.host, None, None, error=why or "no run recorded for this rank")
    try:
        run = await m.store.get(m.run.run_id)
        text = await m.store.tail(run.run_id, TAIL_BYTES)
    except (NodeError, RunError) as exc:
        return RankView(m.rank, m.host, m.run.run_id, None, error=str(exc).removeprefix(f"{m.host}: "))
    m.run = run
    return RankView(m.rank, m.host, run.run_id, run.state, alive=run.alive, exit_code=run.exit_code,
                    signal=run.record.get("signal"), stopped=isinstance(run.record.get("stopped"), dict),
                    phase=log_phase(text.splitlines()))


async def views(members: Sequence[Member]) -> list[RankView]:
    return [await view(m) for m in members]


class Group:
    """The ranks of a run across nodes, reached from one of its runs: ``open`` connects to
    every other node the group names (``connect(host)`` gives a connected Node) and closes
    them on exit. ``members`` in rank order; a node that cannot be reached is a member
    without a store (``unreachable[host]`` says why)."""

    def __init__(self, record: Mapping, here: tuple[str, Node, RunStore, Run]) -> None:
        self.record = dict(record)
        self.here = here
        self.members: list[Member] = []
        self.unreachable: dict[str, str] = {}
        self._nodes: list[Node] = []

    @property
    def id(self) -> str:
        return str(self.record.get("id"))

    async def open(self, connect: Callable) -> "Group":
        host, node, store, run = self.here
        nodes = [str(n) for n in self.record.get("nodes") or []]
        runs = list(self.record.get("runs") or [None] * len(nodes))
        my_rank = int(self.record.get("rank", 0))
        for i, name in enumerate(nodes):
            rid = runs[i] if i < len(runs) else None
            if i == my_rank:
                self.members.append(Member(i, host, store, run))
                continue
            try:
                other = await connect(name)
            except (NodeError, ConsoleError, OSError) as exc:
                why = str(exc).removeprefix(f"{name}: ")
                self.unreachable[name] = why
                self.members.append(Member(i, name, _Unreachable(name, why)))  # type: ignore[arg-type]
                continue
            self._nodes.append(other)
            st = RunStore(other, python=store.python)
            r = None
            if rid:
                with contextlib.suppress(NodeError, RunError):
                    r = await st.get(rid)
            self.members.append(Member(i, name, st, r))
        return self

    async def close(self) -> None:
        for n in self._nodes:
            with contextlib.suppress(Exception):
                await n.close()

    async def __aenter__(self) -> "Group":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()


class _Unreachable:
    """The store of a node that could not be reached: every request fails with why."""

    def __init__(self, host: str, why: str) -> None:
        self.host, self.why, self.python = host, why, "python3"

    def __getattr__(self, name: str):
        async def fail(*a, **kw):
            raise NodeError(f"{self.host}: {self.why}")
        return fail


class GroupWatch:
    """For a console on one node: the run across nodes its current run belongs to, read from
    every node. :meth:`read` (re)opens the group when the run changed and returns each rank's
    view; connections to the other nodes are kept until the run changes or :meth:`close`.
    ``connect(host)`` gives a connected Node."""

    def __init__(self, host: str, node: Node, store: RunStore, connect: Callable) -> None:
        self.host, self.node, self.store, self.connect = host, node, store, connect
        self.run_id: str | None = None
        self.group: Group | None = None

    async def read(self, run_id: str | None) -> tuple[str | None, list[RankView]]:
        """``(group id, views)`` for the run ``run_id`` of this node; ``(None, [])`` when it is
        not a rank of a run across nodes (or there is no run). A run is asked for its group
        once (one request to this node); only a group's ranks are read again on each call,
        and when one of them could not be read the group is opened again (new connections)
        on the next call."""
        if run_id != self.run_id:
            await self.close()
            self.run_id = run_id
            if run_id is None:
                return None, []
            run = await self.store.get(run_id)
            if run.group is not None:
                self.group = await Group(run.group, (self.host, self.node, self.store, run)).open(self.connect)
        if self.group is None:
            return None, []
        gid, got = self.group.id, await views(self.group.members)
        if any(v.state is None for v in got):
            # a node could not be read (or reached): connect afresh on the next read
            await self.close()
            self.run_id = None
        return gid, got

    def member(self, rank: int) -> Member | None:
        if self.group is None:
            return None
        return next((m for m in self.group.members if m.rank == rank), None)

    async def close(self) -> None:
        if self.group is not None:
            g, self.group = self.group, None
            await g.close()
