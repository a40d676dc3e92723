"""Helpers shared by the node commands (doctor, launch, runs, stop)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import TypeVar

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
