"""Helpers shared by the node commands (doctor, launch, runs, stop, resolve, plan)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TypeVar

from mambaconsole.errors import UsageError

T = TypeVar("T")


def run_async(coro: Awaitable[T]) -> T:
    """Run a command's coroutine; Ctrl-C ends it without a traceback (the CLI returns 130)."""
    return asyncio.run(coro)  # type: ignore[arg-type]


def add_host(parser) -> None:
    parser.add_argument("host", metavar="HOST", help="ssh alias, user@host[:port], or 'local'")


def when(ts: float | None) -> str:
    """Unix seconds as ``YYYY-mm-dd HH:MM:SS`` in this machine's local time ('-' when unknown)."""
    if not ts:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(float(ts)))


def parse_env(items: list[str]) -> dict[str, str]:
    """``--env NAME=VALUE`` options (repeatable) as a dict; UsageError for anything else."""
    env = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.isidentifier():
            raise UsageError(f"--env wants NAME=VALUE, got {item!r}")
        env[key] = value
    return env


def python_hint(exc: Exception, python: str, host: str) -> Exception:
    """``exc``, or where the node's ``python`` cannot import sglang (it is not the server's
    python) a :class:`~mambaconsole.resolve.ResolveError` that says which to give instead."""
    from mambaconsole.resolve import ResolveError

    if "cannot import sglang" not in str(exc):
        return exc
    return ResolveError(f"{exc} (with {python} on {host}: give the server's python, --python PATH; "
                        f"`mambaconsole doctor {host} --python PATH` checks one)")
