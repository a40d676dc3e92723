"""``mambaconsole runs HOST [--json]``: the runs recorded on the node, oldest first.

Table columns: run id, started (this machine's local time), state (``running``,
``exited CODE``, ``adopted``, ``gone``, ``lost``, ``starting``: the node's record, not the
log's verdict, which the console's history adds) and the argv as one line of bash
(:func:`~mambaconsole.sglang.text.shell_line`: an element with a newline or an escape is
written ``$'...'``). A server started by
hand (``sglang.launch_server`` / ``sglang serve`` / ``mambaconsole.sim``) by this user in a
pane of the store's tmux session (``--session``, default ``sglang``) is recorded as an adopted
run first (then a console can stop it); any other server of this user only with ``--adopt``
(the user's request), and is listed after the table as "your server, not adopted" until then;
``--no-adopt`` adopts nothing. A server of another user is listed after the table as "other
user's server (uid/name), not adopted" and is never adopted or stopped.

A rank of a run across nodes (``mambaconsole launch HOST HOST...``) shows ``rank I/N`` after
its state; below the table, for the newest such run and those with a live rank on this node
(:data:`GROUPS_SHOWN` at most), one line each with
the ranks' fates read from every node (``run across nodes ID (a, b): rank 1 dead (exit 137,
SIGKILL) while rank 0 waits at distributed init``; a node that cannot be reached is named).

``--json``: a JSON list of objects with the keys ``run_id``, ``state``, ``exit_code``,
``signal``, ``pid``, ``started``, ``ended`` (unix seconds, node clock), ``adopted``, ``argv``,
``session``, ``window``, ``pane``, ``log_path``, ``run_dir``, ``log_lost_bytes`` and
``log_error`` (output the log could not take: a full disk; absent before this version), ``group`` (a rank
of a run across nodes: ``id``, ``rank``, ``nnodes``, ``nodes``, ``runs``; else null) and, for the last
groups, ``group_fates`` (the one line above); then one object per other
user's server with ``run_id`` null, ``state`` ``"other_user"``, ``adopted`` false, ``pid``,
``uid``, ``user``, ``started`` and ``argv``; then one per server of this user left alone, the
same with ``state`` ``"not_adopted"`` and ``tmux_session``.
"""

from __future__ import annotations

import argparse
import json
import shutil

from mambaconsole.commands._common import add_host, run_async, when
from mambaconsole.node import connect
from mambaconsole.node.runs import DEFAULT_SESSION, RunStore
from mambaconsole.sglang.text import shell_line

HELP = "list the server runs recorded on the node (and adopt one started by hand)"
JSON_KEYS = ("run_id", "state", "exit_code", "signal", "pid", "started", "ended", "adopted", "argv",
             "session", "window", "pane", "log_path", "run_dir", "log_lost_bytes", "log_error", "group")
#: runs across nodes whose ranks' fates ``runs`` reads from their nodes (the newest)
GROUPS_SHOWN = 3


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_host(parser)
    parser.add_argument("--json", action="store_true", help="print a JSON list")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--no-adopt", action="store_true", help="do not record servers started by hand")
    group.add_argument("--adopt", action="store_true",
                       help="record every server of yours started by hand as an adopted run (a console can then "
                            "stop it); by default only those in the tmux session --session")
    parser.add_argument("--session", default=DEFAULT_SESSION,
                        help=f"the store's tmux session: servers started by hand there are adopted (default {DEFAULT_SESSION})")


def table(runs) -> str:
    width = shutil.get_terminal_size((160, 24)).columns
    rows = [("RUN ID", "STARTED", "STATE", "ARGV")]
    for r in runs:
        state = r.state_text
        if r.group is not None:
            state += f", rank {r.group.get('rank')}/{r.group.get('nnodes')}"
        rows.append((r.run_id, when(r.started or r.record.get("created")), state, shell_line(r.argv)))
    w = [max(len(row[i]) for row in rows) for i in range(3)]
    out = []
    for row in rows:
        line = f"{row[0]:<{w[0]}}  {row[1]:<{w[1]}}  {row[2]:<{w[2]}}  {row[3]}"
        out.append(line if len(line) <= width else line[: width - 1] + "…")
    return "\n".join(out)


async def _main(args) -> int:
    others: list[dict] = []
    left: list[dict] = []
    async with await connect(args.host) as node:
        if args.no_adopt:
            runs = await RunStore(node).list(adopt=False)
        else:
            runs, others, left = await RunStore(node).list_with_others(
                adopt=True if args.adopt else "session", session=args.session)
        fates = await group_fates(args.host, node, runs)
    if args.json:
        rows = [{k: r.record.get(k) for k in JSON_KEYS} | {"state": r.state, "argv": r.argv}
                | ({"group_fates": fates[r.group.get("id")]} if r.group and r.group.get("id") in fates else {})
                for r in runs]
        rows += [{k: None for k in JSON_KEYS} | {"state": "other_user", "adopted": False, "pid": o.get("pid"),
                                                 "uid": o.get("uid"), "user": o.get("user"),
                                                 "started": o.get("started"), "argv": o.get("argv") or []}
                 for o in others]
        rows += [{k: None for k in JSON_KEYS} | {"state": "not_adopted", "adopted": False, "pid": o.get("pid"),
                                                 "uid": o.get("uid"), "user": o.get("user"),
                                                 "started": o.get("started"), "argv": o.get("argv") or [],
                                                 "tmux_session": o.get("tmux_session")}
                 for o in left]
        print(json.dumps(rows, indent=1))
        return 0
    if not runs:
        print(f"no runs on {args.host} (start one: mambaconsole launch {args.host} -- ARGS)")
    else:
        print(table(runs))
    for line in fates.values():
        print(line)
    for o in others:
        print(f"other user's server ({o.get('uid')}/{o.get('user') or '?'}), not adopted: pid {o.get('pid')}, "
              f"started {when(o.get('started'))}: {shell_line(o.get('argv') or [])}")
    for o in left:
        where = f"tmux session {o['tmux_session']}" if o.get("tmux_session") else "not in tmux"
        print(f"your server, not adopted ({where}; runs {args.host} --adopt adopts it): pid {o.get('pid')}, "
              f"started {when(o.get('started'))}: {shell_line(o.get('argv') or [])}")
    return 0


async def group_fates(host: str, node, runs) -> dict[str, str]:
    """group id -> ``run across nodes ID (NODES): FATES`` for the newest run across nodes among
    ``runs`` and those whose rank on this node is alive, :data:`GROUPS_SHOWN` at most (each
    read from all its nodes)."""
    from mambaconsole.node import connect as connect_node
    from mambaconsole.node import run_group
    from mambaconsole.sglang.multinode import fates_line

    seen: dict[str, object] = {}
    for r in reversed(runs):
        g = r.group
        if g is None or not g.get("id") or g["id"] in seen or len(seen) >= GROUPS_SHOWN:
            continue
        if seen and not r.alive:  # beyond the newest, only runs with a live rank here: no slow
            continue              # connects to the nodes of runs long over
        seen[g["id"]] = r
    out: dict[str, str] = {}
    store = RunStore(node)
    for gid, r in seen.items():
        group = run_group.Group(r.group, (host, node, store, r))  # type: ignore[attr-defined]
        try:
            await group.open(connect_node)
            views = await run_group.views(group.members)
        finally:
            await group.close()
        out[gid] = f"run across nodes {gid} ({', '.join(m.host for m in group.members)}): {fates_line(views)}"
    return dict(reversed(list(out.items())))


def run(args: argparse.Namespace) -> int:
    return run_async(_main(args))
