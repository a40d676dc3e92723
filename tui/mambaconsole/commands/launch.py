"""``mambaconsole launch HOST [HOST...] [--python P] [--module M] [--session S] [--port N] -- SGLANG_ARGS...``

With two HOSTs or more: one SGLang run across those nodes (rank ``i`` on the ``i``-th HOST):
the same ``SGLANG_ARGS`` on every node with ``--nnodes N`` (added when absent; refused when it
disagrees) and ``--node-rank i`` added; or one argv per node, ``-- ARGS0 -- ARGS1 ...``, each
with its own ``--node-rank``, which must then be the same run (the same ``--nnodes``, every
rank once, one ``--dist-init-addr``, nothing else different:
:func:`mambaconsole.sglang.multinode.check_ranks`). The relaunch lock is taken on every node
first (all or none: a node that refuses releases the others' and nothing starts), then the
ranks start in rank order (:mod:`mambaconsole.node.run_group`); prints one line per rank
(``rank I  HOST  RUN_ID``), ``--json`` ``{"group": ID, "ranks": [run record, ...]}``; exit 1
when a rank ends within ``--check-s``, with the ranks' fates in one line.

Starts ``P -m M SGLANG_ARGS`` as a new run in its own tmux window on the node (see
:mod:`mambaconsole.node.runs`) and prints the run id. Takes the node's relaunch lock while it
starts the run: when another console holds it, exits 1 with one line naming the holder; when a
server of the run store is live, exits 1 naming that run (of any number of launches at once,
exactly one starts a server). Then watches the server ``--check-s`` seconds (default 2): one
that ends within them (exit code not 0, or lost) makes launch exit 1.

``--break-stale``: the lock is stale when its holder's session (the SSH connection's sshd
process, or the local console) is gone and it is older than the bound (900 s, as in the
console), or the lock file is empty or unreadable (at once); then, and only then, it is broken (moved to ``relaunch.lock.broken``) and taken —
the flag is the confirmation the console asks for. A lock whose holder still runs, or that
is younger than the bound, is never broken: exit 1 naming the holder.
"""

from __future__ import annotations

import argparse
import json
import sys

from mambaconsole.commands._common import add_host, parse_env, run_async
from mambaconsole.errors import ConsoleError, UsageError
from mambaconsole.node import connect
from mambaconsole.node.runs import DEFAULT_MODULE, DEFAULT_SESSION, LockHeld, RunStore

HELP = "start an SGLang server run in tmux on the node and print its run id"
#: every word after ``--`` goes to args.sglang_args verbatim (see cli.py)
REST = "sglang_args"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_host(parser)
    parser.add_argument("more_hosts", nargs="*", metavar="HOST",
                        help="more nodes: one run across all the HOSTs given, rank i on the i-th (--node-rank is "
                             "added per node)")
    parser.add_argument("--python", default="python3", help="the node's python that runs the server (default python3)")
    parser.add_argument("--module", default=DEFAULT_MODULE, help=f"module run with -m (default {DEFAULT_MODULE})")
    parser.add_argument("--session", default=DEFAULT_SESSION, help=f"tmux session (default {DEFAULT_SESSION})")
    parser.add_argument("--port", type=port_number, help="server port: appended as --port N unless the args have it")
    parser.add_argument("--env", action="append", default=[], metavar="K=V", help="extra environment (repeatable)")
    parser.add_argument("--cwd", help="working directory of the server on the node")
    parser.add_argument("--json", action="store_true", help="print the run record as JSON")
    parser.add_argument("--break-stale", action="store_true",
                        help="break the relaunch lock if it is stale (its holder's session is gone and it is "
                             "older than 15 min); a live holder's lock is never broken")
    parser.add_argument("--check-s", type=float, default=CHECK_S, metavar="S",
                        help=f"seconds to watch the new server before exiting 0: one that dies within them "
                             f"makes launch exit 1 (default {CHECK_S:g})")
    parser.add_argument("sglang_args", nargs="*", metavar="-- SGLANG_ARGS", help="the server's arguments, after --")


#: seconds launch watches a new server: one that dies within them is a failed launch
CHECK_S = 2.0


def port_number(text: str) -> int:
    """argparse type: a TCP port, 1-65535."""
    try:
        port = int(text, 10)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 < port < 65536:
        raise argparse.ArgumentTypeError(f"port {text} is out of range 1-65535")
    return port


def server_argv(python: str, module: str, args: list[str], port: int | None) -> list[str]:
    """``[python, -m, module, *args]`` (+ ``--port N``); raises UsageError on a port conflict."""
    if args and args[0] == "--":
        args = args[1:]
    argv = [python, "-m", module, *args]
    if port is not None:
        given = [a.split("=", 1)[1] for a in args if a.startswith("--port=")]
        given += [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--port"]
        if not given:
            argv += ["--port", str(port)]
        elif any(g != str(port) for g in given):
            raise UsageError(f"--port {port} conflicts with --port {given[0]} in the server arguments")
    return argv


async def _main(args) -> int:
    if args.more_hosts:
        return await _main_group(args)
    argv = server_argv(args.python, args.module, list(args.sglang_args), args.port)
    env = parse_env(args.env)
    async with await connect(args.host) as node:
        store = RunStore(node)
        try:
            lock = await store.acquire_lock()
        except LockHeld as held:
            if not held.breakable:
                raise
            if not args.break_stale:
                raise ConsoleError(f"{held} (mambaconsole launch --break-stale breaks it)") from None
            # the very lock the node reported stale; the node checks it is still stale
            lock = await store.acquire_lock(break_stale=held.lock)
            print(f"mambaconsole: launch: broke the stale relaunch lock of {held.lock.get('holder', 'unknown')} "
                  f"(pid {held.lock.get('pid')}); it is kept in {held.lock.get('path', 'relaunch.lock')}.broken",
                  file=sys.stderr)
        try:
            run = await store.start(argv, env=env, cwd=args.cwd, session=args.session, lock=lock)
        finally:
            await store.release_lock(lock)
        run = await _watch(store, run, args.check_s)
    if args.json:
        print(json.dumps(run.record, sort_keys=True))
    else:
        print(run.run_id)
    if run.state == "exited" and run.exit_code:
        detail = run.record.get("error") or f"see its log: {run.log_path}"
        raise ConsoleError(f"run {run.run_id} exited at once with code {run.exit_code}: {detail}")
    if run.state in ("lost", "gone"):
        raise ConsoleError(f"run {run.run_id} ended at once ({run.state_text}): see its log: {run.log_path}")
    return 0


def rank_argvs(hosts: list[str], rest: list[str]) -> list[list[str]]:
    """The SGLang args of each node from what followed ``--``: one argv for all (ranks added by
    the hosts' order) or one per node separated by ``--`` (checked). Raises MultiNodeError or
    UsageError."""
    from mambaconsole.sglang.multinode import assign_ranks, check_ranks

    if rest and rest[0] == "--":
        rest = rest[1:]
    parts: list[list[str]] = [[]]
    for a in rest:
        if a == "--":
            parts.append([])
        else:
            parts[-1].append(a)
    if len(parts) == 1:
        return assign_ranks(parts[0], hosts)
    if len(parts) != len(hosts):
        raise UsageError(f"give one argv for every node, or one per node separated by --: got {len(parts)} argvs "
                         f"for {len(hosts)} nodes")
    check_ranks(parts, hosts)
    return parts


async def _main_group(args) -> int:
    from mambaconsole.node import run_group
    from mambaconsole.sglang.multinode import fates_line

    hosts = [args.host, *args.more_hosts]
    if args.break_stale:
        raise UsageError("--break-stale takes one HOST: break a stale lock on its node first "
                         "(mambaconsole launch NODE --break-stale ... is refused while ranks are given)")
    argvs = [server_argv(args.python, args.module, a, args.port) for a in rank_argvs(hosts, list(args.sglang_args))]
    env = parse_env(args.env)
    nodes = []
    try:
        members = []
        for i, h in enumerate(hosts):
            node = await connect(h)
            nodes.append(node)
            members.append(run_group.Member(i, h, RunStore(node)))
        gid = await run_group.launch(members, argvs, env=env, cwd=args.cwd, session=args.session)
        await _watch_group(members, args.check_s)
        views = await run_group.views(members)
    finally:
        for node in nodes:
            await node.close()
    if args.json:
        print(json.dumps({"group": gid, "ranks": [m.run.record for m in members]}, sort_keys=True))
    else:
        for m in members:
            print(f"rank {m.rank}  {m.host}  {m.run.run_id}")
    if any(_ended(m.run) for m in members):
        raise ConsoleError(f"run across nodes {gid}: {fates_line(views)}")
    return 0


def _ended(run) -> bool:
    """The run ended badly: exited with a code other than 0, or lost / gone."""
    return run.state in ("lost", "gone") or (run.state == "exited" and run.exit_code != 0)


async def _watch_group(members, seconds: float) -> None:
    """Watch every rank ``seconds`` (each ``member.run`` kept fresh), or until one ended."""
    import asyncio
    import time

    deadline = time.monotonic() + max(0.0, seconds)
    while time.monotonic() < deadline and not any(_ended(m.run) for m in members):
        await asyncio.sleep(0.2)
        for m in members:
            m.run = await m.store.get(m.run.run_id)


async def _watch(store: RunStore, run, seconds: float):
    """The run after ``seconds`` of watching, or as soon as it ended (exited, lost)."""
    import asyncio
    import time

    deadline = time.monotonic() + max(0.0, seconds)
    while run.state in ("starting", "running", "exiting") and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
        run = await store.get(run.run_id)
    return run


def run(args: argparse.Namespace) -> int:
    return run_async(_main(args))
