"""``mambaconsole launch HOST [--python P] [--module M] [--session S] [--port N] -- SGLANG_ARGS...``

Starts ``P -m M SGLANG_ARGS`` as a new run in its own tmux window on the node (see
:mod:`mambaconsole.node.runs`) and prints the run id. Takes the node's relaunch lock while it
starts the run: when another console holds it, exits 1 with one line naming the holder.

``--break-stale``: the lock is stale when its holder's session (the SSH connection's sshd
process, or the local console) is gone and it is older than the bound (900 s, as in the
console); then, and only then, it is broken (moved to ``relaunch.lock.broken``) and taken —
the flag is the confirmation the console asks for. A lock whose holder still runs, or that
is younger than the bound, is never broken: exit 1 naming the holder.
"""

from __future__ import annotations

import argparse
import json
import sys

from mambaconsole.commands._common import add_host, run_async
from mambaconsole.errors import ConsoleError, UsageError
from mambaconsole.node import connect
from mambaconsole.node.runs import DEFAULT_MODULE, DEFAULT_SESSION, LockHeld, RunStore

HELP = "start an SGLang server run in tmux on the node and print its run id"
#: every word after ``--`` goes to args.sglang_args verbatim (see cli.py)
REST = "sglang_args"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_host(parser)
    parser.add_argument("--python", default="python3", help="the node's python that runs the server (default python3)")
    parser.add_argument("--module", default=DEFAULT_MODULE, help=f"module run with -m (default {DEFAULT_MODULE})")
    parser.add_argument("--session", default=DEFAULT_SESSION, help=f"tmux session (default {DEFAULT_SESSION})")
    parser.add_argument("--port", type=int, help="server port: appended as --port N unless the args have it")
    parser.add_argument("--env", action="append", default=[], metavar="K=V", help="extra environment (repeatable)")
    parser.add_argument("--cwd", help="working directory of the server on the node")
    parser.add_argument("--json", action="store_true", help="print the run record as JSON")
    parser.add_argument("--break-stale", action="store_true",
                        help="break the relaunch lock if it is stale (its holder's session is gone and it is "
                             "older than 15 min); a live holder's lock is never broken")
    parser.add_argument("sglang_args", nargs="*", metavar="-- SGLANG_ARGS", help="the server's arguments, after --")


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


def parse_env(items: list[str]) -> dict[str, str]:
    env = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise UsageError(f"--env wants NAME=VALUE, got {item!r}")
        env[key] = value
    return env


async def _main(args) -> int:
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
            run = await store.start(argv, env=env, cwd=args.cwd, session=args.session)
        finally:
            await store.release_lock(lock)
    if args.json:
        print(json.dumps(run.record, sort_keys=True))
    else:
        print(run.run_id)
    if run.state == "exited" and run.exit_code:
        detail = run.record.get("error") or f"see its log: {run.log_path}"
        raise ConsoleError(f"run {run.run_id} exited at once with code {run.exit_code}: {detail}")
    return 0


def run(args: argparse.Namespace) -> int:
    return run_async(_main(args))
