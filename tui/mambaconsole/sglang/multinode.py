"""One SGLang run across nodes: the ranks' argvs checked against each other, and the ranks'
fates read together. Pure code (no I/O).

A multi-node run is the same server command on every node except ``--node-rank``:
``--nnodes N --node-rank I --dist-init-addr HOST:PORT`` (SGLang 0.5.11
``srt/server_args.py:5144-5153``, ``--nccl-init-addr`` an older alias; 0.5.23
``srt/arg_groups/fields/parallel.py:36``). What each node does, as SGLang's code and its real
output show it (the output: ``tests/data/multinode/``, SGLang 0.5.23 on this CPU machine, two
ranks with ``--tp 2 --nnodes 2``, torch 2.13 gloo):

- Every node's schedulers join one ``torch.distributed`` group at ``tcp://DIST_INIT_ADDR``
  between ``Init parallel begin.`` and ``Init parallel ends. elapsed=X s`` (0.5.23
  ``srt/distributed/bootstrap.py:115`` and ``:190``; 0.5.11 ``Init torch distributed begin.``
  / ``Init torch distributed ends. elapsed=X s, mem usage=X GB``,
  ``srt/model_executor/model_runner.py:1103`` and ``:1236``). Rank 0 hosts the store at that
  address and waits there, **printing nothing**, until every rank joined (seen: 60 s and more
  with its peer not started). A rank whose rank 0 is not listening prints torch's c10d lines:
  ``[E... socket.cpp:1028] [c10d] The client socket has timed out after 30000ms while trying
  to connect to (HOST, PORT).`` and ``[W... TCPStore.cpp:340] [c10d] TCP client failed to
  connect/validate to host HOST:PORT - retrying (...)``.
- Rank 0 alone runs the tokenizer and the HTTP server; a rank >= 1 serves only a
  stand-in ``/health`` (``Dummy health check server started in background thread at HOST:PORT``;
  0.5.23 ``srt/entrypoints/engine.py:1234-1283``, ``srt/utils/common.py:3624``; 0.5.11
  ``srt/entrypoints/engine.py:712-731``, ``srt/utils/common.py:2524``) and blocks on its
  schedulers.
- A peer that dies after the group formed: with gloo (CPU) rank 0's scheduler raises at its
  next collective ``RuntimeError: [.../gloo/transport/tcp/pair.cc:553] Connection closed by
  peer [ADDR]:PORT. This is typically caused by a remote worker crashing. ...``, then the
  SIGQUIT chain ends rank 0 too (seen). With NCCL (GPUs) rank 0 stays in the collective until
  the NCCL watchdog's timeout: a dead rank does not stop rank 0 (sgl-project/sglang#3099,
  #12450); its log then shows no batch lines.

Terms: **rank** here is the node rank (``--node-rank``), not a TP rank; rank ``i`` runs on the
``i``-th node given.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mambaconsole.errors import ConsoleError
from mambaconsole.sglang import argv_diff
from mambaconsole.sglang.argv import LaunchCommand

__all__ = [
    "MultiNodeError", "RankArgs", "rank_args", "is_multinode", "assign_ranks", "check_ranks",
    "RankView", "LogPhase", "log_phase", "rank_fate", "fates_line",
]

#: the ServerArgs fields that tie ranks into one run
NNODES, NODE_RANK, DIST_INIT_ADDR = "nnodes", "node_rank", "dist_init_addr"


class MultiNodeError(ConsoleError):
    """The ranks' argvs do not make one run (one line naming the nodes and the difference)."""


@dataclass(frozen=True)
class RankArgs:
    """What one rank's SGLang args say of the run: ``nnodes`` and ``node_rank`` (None when not
    given; SGLang's defaults are 1 and 0), ``dist_init_addr`` (``HOST:PORT`` as given)."""

    nnodes: int | None
    node_rank: int | None
    dist_init_addr: str | None


def _int_field(cmd: LaunchCommand, name: str, where: str) -> int | None:
    v = cmd.get(name)
    if v is None:
        return None
    try:
        return int(str(v), 10)
    except ValueError:
        raise MultiNodeError(f"{where}: --{name.replace('_', '-')} {v!r} is not a whole number") from None


def rank_args(sglang_args: Sequence[str], where: str = "the args") -> RankArgs:
    """The multi-node fields of ``sglang_args`` (the args after the launcher, or a whole
    launch command); raises MultiNodeError for a value that is not a number."""
    cmd = argv_diff.command(list(sglang_args))
    addr = cmd.get(DIST_INIT_ADDR)
    return RankArgs(_int_field(cmd, NNODES, where), _int_field(cmd, NODE_RANK, where),
                    addr if isinstance(addr, str) else None)


def is_multinode(sglang_args: Sequence[str]) -> bool:
    """The args ask for more than one node (``--nnodes`` > 1)."""
    try:
        n = rank_args(sglang_args).nnodes
    except MultiNodeError:
        return False
    return n is not None and n > 1


def assign_ranks(sglang_args: Sequence[str], nodes: Sequence[str]) -> list[list[str]]:
    """One argv per node for one run across ``nodes`` (in rank order): ``sglang_args`` with
    ``--nnodes len(nodes)`` (added when absent) and ``--node-rank I`` for the ``I``-th node.
    Refuses (MultiNodeError) args that set ``--node-rank`` themselves (the nodes' order gives
    the ranks), an ``--nnodes`` that disagrees with the nodes given, fewer than two nodes, the
    same node twice, or no ``--dist-init-addr`` (rank 0's ``HOST:PORT``, which every node must
    reach: without it each node would wait at its own address)."""
    nodes = list(nodes)
    if len(nodes) < 2:
        raise MultiNodeError("a run across nodes needs two nodes or more")
    twice = sorted({n for n in nodes if nodes.count(n) > 1})
    if twice:
        raise MultiNodeError(f"node {twice[0]} is given twice: one rank per node")
    ra = rank_args(sglang_args)
    if ra.node_rank is not None:
        raise MultiNodeError(f"--node-rank {ra.node_rank} is in the args, but the ranks come from the order of the "
                             f"nodes (rank 0 on {nodes[0]}, rank 1 on {nodes[1]}, ...): leave it out, or give one "
                             "argv per node")
    if ra.nnodes is not None and ra.nnodes != len(nodes):
        raise MultiNodeError(f"--nnodes {ra.nnodes} disagrees with the {len(nodes)} nodes given "
                             f"({', '.join(nodes)})")
    cmd = argv_diff.command(list(sglang_args))
    if ra.nnodes is None:
        cmd = cmd.set(NNODES, len(nodes))
    out = [argv_diff.arg_tokens(cmd.set(NODE_RANK, i)) for i in range(len(nodes))]
    check_ranks(out, nodes)
    return out


def check_ranks(argvs: Sequence[Sequence[str]], nodes: Sequence[str]) -> list[RankArgs]:
    """Check that ``argvs`` (the SGLang args of each node, ``nodes[i]`` names the node of
    ``argvs[i]``) make one run: the same ``--nnodes`` everywhere, equal to the number of nodes;
    every rank ``0..N-1`` exactly once; a ``--dist-init-addr``, the same everywhere; and
    nothing else different (options compared by the ServerArgs field they set, so ``--tp 2``
    and ``--tp-size 2`` agree). Returns each node's :class:`RankArgs`; raises MultiNodeError
    naming the first problem."""
    if len(argvs) != len(nodes):
        raise ValueError("one node name per argv")
    ras = [rank_args(a, f"node {n}") for a, n in zip(argvs, nodes)]
    said = {n: ra.nnodes for n, ra in zip(nodes, ras)}
    if len(set(said.values())) > 1:
        parts = ", ".join(f"{n} says {v if v is not None else 'nothing (1)'}" for n, v in said.items())
        raise MultiNodeError(f"--nnodes disagrees between the nodes: {parts}")
    nnodes = ras[0].nnodes
    if nnodes is None or nnodes < 2:
        raise MultiNodeError(f"--nnodes is {nnodes if nnodes is not None else 'not given (1)'}: not a run across "
                             "nodes")
    by_rank: dict[int, list[str]] = {}
    for n, ra in zip(nodes, ras):
        if ra.node_rank is None:
            raise MultiNodeError(f"node {n}: no --node-rank (each node needs its own, 0 to {nnodes - 1})")
        if not 0 <= ra.node_rank < nnodes:
            raise MultiNodeError(f"node {n}: --node-rank {ra.node_rank} is outside 0 to {nnodes - 1} "
                                 f"(--nnodes {nnodes})")
        by_rank.setdefault(ra.node_rank, []).append(n)
    for r, ns in sorted(by_rank.items()):
        if len(ns) > 1:
            raise MultiNodeError(f"rank {r} is given twice: nodes {' and '.join(ns)}")
    missing = [r for r in range(nnodes) if r not in by_rank]
    if missing:
        raise MultiNodeError(f"rank {missing[0]} is missing: --nnodes {nnodes}, but no node of {', '.join(nodes)} "
                             f"has --node-rank {missing[0]}")
    addrs = {n: ra.dist_init_addr for n, ra in zip(nodes, ras)}
    if any(a is None for a in addrs.values()):
        n = next(n for n, a in addrs.items() if a is None)
        raise MultiNodeError(f"node {n}: no --dist-init-addr (rank 0's HOST:PORT, the same on every node)")
    if len(set(addrs.values())) > 1:
        raise MultiNodeError("--dist-init-addr differs between the nodes: "
                             + ", ".join(f"{n} {a}" for n, a in addrs.items()))
    base = _without_rank(argvs[0])
    for a, n in zip(argvs[1:], nodes[1:]):
        changes = argv_diff.diff(base, _without_rank(a))
        if changes:
            raise MultiNodeError(f"node {n}'s args differ from node {nodes[0]}'s in more than --node-rank: "
                                 f"{argv_diff.diff_text(base, _without_rank(a))}")
    return ras


def _without_rank(sglang_args: Sequence[str]) -> list[str]:
    return argv_diff.arg_tokens(argv_diff.command(list(sglang_args)).remove(NODE_RANK))


# ---------------------------------------------------------------------------- fates

#: the line each version prints as a rank starts joining the group (module doc)
_DIST_BEGIN = ("Init parallel begin.", "Init torch distributed begin.")
#: and once it joined
_DIST_END = ("Init parallel ends.", "Init torch distributed ends.")
#: torch c10d's client lines while rank 0's store does not answer (torch 2.13, seen)
_C10D_CONNECT = re.compile(r"\[c10d\] (?:The client socket has timed out after \d+ms while trying to connect to "
                           r"\(([^)]*)\)|TCP client failed to connect/validate to host (\S+))")
#: a rank >= 1 joined and serves its stand-in ``/health`` (0.5.23 srt/utils/common.py:3684)
_FOLLOWER_UP = "Dummy health check server started in background thread at"
#: gloo's error when a peer's connection closed (torch 2.13 third_party/gloo/.../pair.cc, seen)
_PEER_CLOSED = re.compile(r"Connection closed by peer \[([^\]]*)\]:(\d+)")


@dataclass(frozen=True)
class LogPhase:
    """Where one rank's log (its last boot) stands, from its lines alone.

    ``outcome``: the run fold's (``ready``, ``starting``, ``crashed``, ...); ``dist_wait``: it
    printed the distributed-init begin line and not yet its end (it waits for its peers, or,
    for a rank >= 1, for rank 0's store); ``connect_to``: the store address torch's c10d client
    failed to reach (``HOST, PORT`` as printed), if it said so; ``peer_closed``: a peer's
    address (``HOST:PORT``) gloo named as closed; ``failure``: the fold's one-line failure;
    ``follower_up``: a rank >= 1 that joined and started its stand-in ``/health``."""

    outcome: str
    dist_wait: bool = False
    connect_to: str | None = None
    peer_closed: str | None = None
    failure: str | None = None
    follower_up: bool = False


def log_phase(lines: Iterable[str]) -> LogPhase:
    """The :class:`LogPhase` of a rank's log lines (in order; the tail of a long log is
    enough once it holds the last boot's start)."""
    from mambaconsole.sglang import events as E
    from mambaconsole.sglang.run_fold import RunFold, failure_line

    fold = RunFold()
    dist_wait = follower = False
    connect_to = peer = None
    for ev in E.parse_lines(lines):
        fold.feed(ev)
        msg = ev.message if isinstance(ev.message, str) else ""
        if isinstance(ev, E.ServerArgsDump):
            dist_wait, follower, connect_to, peer = False, False, None, None  # a new boot
        if msg.startswith(_FOLLOWER_UP):
            follower = True
        if msg.startswith(_DIST_BEGIN):
            dist_wait = True
        elif isinstance(ev, E.DistributedInit) and msg.startswith(_DIST_END):
            dist_wait, connect_to = False, None
        m = _C10D_CONNECT.search(ev.text)
        if m and dist_wait:
            connect_to = m.group(1) or m.group(2)
        m = _PEER_CLOSED.search(ev.text)
        if m:
            peer = f"{m.group(1)}:{m.group(2)}"
    outcome = fold.outcome
    failure = failure_line(fold.failure) if fold.failure is not None else None
    if outcome not in ("starting", "unknown"):
        dist_wait = False
    return LogPhase(outcome, dist_wait, connect_to, peer, failure, follower and fold.failure is None)


@dataclass(frozen=True)
class RankView:
    """One rank as the console sees it: ``node`` (the host name it was launched on), ``run_id``
    and the run store's ``state`` (``running``, ``exited``, ``lost``, ...; None: the node has
    no record of the run, or could not be reached: ``error`` says which), ``exit_code``
    (128+N for signal N), ``signal`` (its name), ``stopped`` (a console stopped it), ``alive``
    (its process runs), ``phase`` (its log's :class:`LogPhase`, None when unread)."""

    rank: int
    node: str
    run_id: str | None
    state: str | None
    alive: bool = False
    exit_code: int | None = None
    signal: str | None = None
    stopped: bool = False
    phase: LogPhase | None = None
    error: str | None = None


def rank_fate(v: RankView) -> str:
    """``rank 1 dead (exit 137, SIGKILL)``, ``rank 0 waits at distributed init``, ``rank 0
    ready``, ``rank 1 cannot reach rank 0's store at 10.0.0.1, 29500``, ``rank 1 unknown
    (node-b: connection refused)``, ...: what the evidence says, nothing more."""
    head = f"rank {v.rank}"
    if v.state is None:
        return f"{head} unknown ({v.node}: {v.error or 'no record of the run'})"
    p = v.phase
    if not v.alive:
        if v.state in ("starting",):
            return f"{head} starting"
        if v.stopped:
            return f"{head} stopped" + (f" (exit {v.exit_code})" if v.exit_code is not None else "")
        if v.state == "exited" and v.exit_code == 0:
            return f"{head} exited 0"
        code = [f"exit {v.exit_code}"] if v.exit_code is not None else []
        code += [v.signal] if v.signal else []
        why = ""
        if p is not None and p.peer_closed:
            why = f": its peer {p.peer_closed} closed the connection"
        elif p is not None and p.failure:
            why = f": {p.failure}"
        gone = "dead" if v.state in ("exited", "exiting") else v.state  # lost / gone: no exit recorded
        return f"{head} {gone}" + (f" ({', '.join(code)})" if code else "") + why
    if p is None:
        return f"{head} {v.state}"
    if p.dist_wait:
        if p.connect_to:
            return f"{head} cannot reach rank 0's store at {p.connect_to} (distributed init)"
        return f"{head} waits at distributed init"
    if p.follower_up:
        return f"{head} joined (its stand-in /health up)"
    if p.outcome == "ready":
        return f"{head} ready"
    if p.outcome in ("crashed", "oom", "arg_error", "exited"):
        return f"{head} {p.outcome} but alive" + (f": {p.failure}" if p.failure else "")
    return f"{head} {p.outcome}"


def fates_line(views: Sequence[RankView]) -> str:
    """The ranks' fates in one line, the ones that went wrong first: ``rank 1 dead (exit 137,
    SIGKILL) while rank 0 waits at distributed init``; ranks that agree are joined with
    ``;``. Empty for no ranks."""
    views = sorted(views, key=lambda v: v.rank)
    bad = [v for v in views if v.state is None or (not v.alive and v.state not in ("starting",)
                                                   and not v.stopped and v.exit_code != 0)]
    good = [v for v in views if v not in bad]
    if bad and good:
        dead = [v for v in bad if v.state is not None]

        def fate(v: RankView) -> str:
            # every step of a TP group needs all its ranks: a live rank whose log says ready
            # completes no step without the dead one (gloo raises, NCCL hangs: module doc)
            if dead and v.alive and v.phase is not None and v.phase.outcome == "ready" and not v.phase.peer_closed:
                return rank_fate(v) + " by its log (no step completes without " + \
                    " and ".join(f"rank {d.rank}" for d in dead) + ")"
            return rank_fate(v)

        return "; ".join(rank_fate(v) for v in bad) + " while " + "; ".join(fate(v) for v in good)
    return "; ".join(rank_fate(v) for v in views)


def log_says(server_args: dict | None, phase: LogPhase) -> dict | None:
    """What one rank's log says of its place in a run across nodes (``inspect``): None when
    its ServerArgs dump does not show ``nnodes`` > 1. ``{"nnodes", "node_rank",
    "dist_init_addr", "says"}``; ``says`` is only what the log shows (whether the process
    still runs, a log does not tell)."""
    if not isinstance(server_args, dict):
        return None
    try:
        nnodes = int(server_args.get("nnodes") or 1)
        rank = int(server_args.get("node_rank") or 0)
    except (TypeError, ValueError):
        return None
    if nnodes <= 1:
        return None
    addr = server_args.get("dist_init_addr")
    p = phase
    if p.dist_wait and p.connect_to:
        says = (f"the log stops at distributed init: torch could not reach rank 0's store at {p.connect_to} "
                "(it retries until --dist-timeout)")
    elif p.dist_wait:
        says = ("the log stops at distributed init: waiting for the other ranks to join (SGLang prints nothing "
                "while it waits; whether the process still runs, the log does not say)")
    elif p.peer_closed:
        says = f"ended when its peer {p.peer_closed} closed the connection (gloo): another rank died first"
    elif p.failure and ("DistStoreError" in p.failure or "DistNetworkError" in p.failure):
        says = f"the ranks never formed a group: {p.failure}"
    elif p.follower_up:
        says = "joined rank 0 (its stand-in /health started; a rank >= 1 serves nothing else)"
    elif p.outcome == "ready":
        says = "every rank joined; serving"
    else:
        says = f"outcome {p.outcome}" + (f": {p.failure}" if p.failure else "")
    return {"nnodes": nnodes, "node_rank": rank, "dist_init_addr": addr, "says": says}
