"""``mambaconsole stop HOST [RUN_ID]``: stop a run's server (SIGINT, then SIGTERM, then SIGKILL).

Without RUN_ID: the one live run on the node (an error when there are none or several).
Only the pid recorded for the run is signalled, after checking /proc/PID/cmdline and its start
time (see :meth:`mambaconsole.node.runs.RunStore.stop`). Prints the run's final state.

A rank of a run across nodes (``mambaconsole launch HOST HOST...``) stops the whole run: every
node the run names is reached by the name it was launched with, the relaunch lock is taken on
each (all or none), and the ranks stop in rank order, rank 0 first
(:func:`mambaconsole.node.run_group.stop`); one line per rank, then the ranks' fates.
"""

from __future__ import annotations

import argparse
import json

from mambaconsole.commands._common import add_host, run_async
from mambaconsole.errors import ConsoleError
from mambaconsole.node import connect
from mambaconsole.node.runs import RunStore

HELP = "stop a server run on the node: SIGINT, then SIGTERM, then SIGKILL"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_host(parser)
    parser.add_argument("run_id", nargs="?", help="the run (default: the only live one)")
    parser.add_argument("--int-timeout", type=float, default=30.0, help="seconds to wait after SIGINT (30)")
    parser.add_argument("--term-timeout", type=float, default=10.0, help="seconds to wait after SIGTERM (10)")
    parser.add_argument("--kill-timeout", type=float, default=5.0, help="seconds to wait after SIGKILL (5)")
    parser.add_argument("--json", action="store_true", help="print the run record as JSON")


async def _main(args) -> int:
    async with await connect(args.host) as node:
        store = RunStore(node)
        run_id = args.run_id
        if not run_id:
            live = [r for r in await store.list(adopt=False) if r.alive]
            if len(live) != 1:
                names = ", ".join(r.run_id for r in live) or "none"
                raise ConsoleError(f"{args.host}: name the run to stop; live runs: {names}")
            run_id = live[0].run_id
        run = await store.get(run_id)
        if run.group is not None:
            return await _stop_group(args, node, store, run)
        run = await store.stop(run_id, int_s=args.int_timeout, term_s=args.term_timeout, kill_s=args.kill_timeout)
    if args.json:
        print(json.dumps(run.record, sort_keys=True))
    else:
        sent = ", ".join(run.record.get("signals_sent") or []) or "no signal (it had ended)"
        print(f"{run.run_id}: {run.state_text} (sent {sent})")
    if run.alive:
        raise ConsoleError(f"run {run.run_id} (pid {run.pid}) is still alive after SIGKILL")
    return 0


async def _stop_group(args, node, store: RunStore, run) -> int:
    from mambaconsole.node import connect as connect_node
    from mambaconsole.node import run_group
    from mambaconsole.sglang.multinode import fates_line

    group = run_group.Group(run.group, (args.host, node, store, run))
    try:
        await group.open(connect_node)
        members = group.members
        await run_group.stop(members, int_s=args.int_timeout, term_s=args.term_timeout, kill_s=args.kill_timeout)
        views = await run_group.views(members)
    finally:
        await group.close()
    if args.json:
        print(json.dumps({"group": group.id, "ranks": [m.run.record if m.run else None for m in members]},
                         sort_keys=True))
    else:
        for m in members:
            if m.run is None:
                print(f"rank {m.rank}  {m.host}  no run")
                continue
            sent = ", ".join(m.run.record.get("signals_sent") or []) or "no signal (it had ended)"
            print(f"rank {m.rank}  {m.host}  {m.run.run_id}: {m.run.state_text} (sent {sent})")
        print(f"run across nodes {group.id}: {fates_line(views)}")
    alive = [m for m in members if m.run is not None and m.run.alive]
    if alive:
        raise ConsoleError("still alive after SIGKILL: " + ", ".join(f"rank {m.rank} on {m.host} (pid {m.run.pid})"
                                                                    for m in alive))
    return 0


def run(args: argparse.Namespace) -> int:
    return run_async(_main(args))
