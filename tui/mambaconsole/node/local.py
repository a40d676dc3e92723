"""``LocalNode``: the node is this machine (``HOST`` = ``local``, and the demo)."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncIterator, Mapping

from mambaconsole.node.base import (Command, CommandResult, CommandTimeout, Node, NodeError, exchange_stream,
                                    line_batches)

#: the StreamReader buffer limit of the subprocess pipes, in bytes
STREAM_LIMIT = 16 * 1024 * 1024


async def _spawn(cmd: Command, env: Mapping[str, str] | None, cwd: str | None, stdin,
                 stderr=asyncio.subprocess.PIPE) -> asyncio.subprocess.Process:
    full_env = None
    if env:
        full_env = dict(os.environ)
        full_env.update(env)
    kw = dict(stdin=stdin, stdout=asyncio.subprocess.PIPE, stderr=stderr,
              env=full_env, cwd=cwd, start_new_session=True, limit=STREAM_LIMIT)
    if isinstance(cmd, str):
        return await asyncio.create_subprocess_shell(cmd, **kw)
    return await asyncio.create_subprocess_exec(*cmd, **kw)


async def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        with contextlib.suppress(Exception):
            await proc.wait()


class LocalNode(Node):
    """Commands run as asyncio subprocesses of this process (argv lists: no shell)."""

    def __init__(self, name: str = "local") -> None:
        self.name = name
        self._procs: set[asyncio.subprocess.Process] = set()

    async def run(self, cmd, *, input=None, timeout=60.0, env=None, cwd=None) -> CommandResult:
        proc = await _spawn(cmd, env, cwd, asyncio.subprocess.PIPE)
        self._procs.add(proc)
        try:
            out, err = await asyncio.wait_for(proc.communicate(input), timeout)
        except asyncio.TimeoutError:
            await _kill(proc)
            raise CommandTimeout(f"{self.name}: command timed out after {timeout:g} s") from None
        except BaseException:  # cancelled (a worker replaced, the app closing): no orphan, no open pipes
            await _kill(proc)
            raise
        finally:
            self._procs.discard(proc)
        return CommandResult(proc.returncode, out, err)

    async def stream_line_batches(self, cmd, *, input=None, env=None) -> AsyncIterator[list[bytes]]:
        proc = await _spawn(cmd, env, None, asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
                            asyncio.subprocess.DEVNULL)
        self._procs.add(proc)
        try:
            if input is not None:
                proc.stdin.write(input)
                await proc.stdin.drain()
                proc.stdin.close()
            assert proc.stdout is not None
            async for lines in line_batches(proc.stdout.read):
                yield lines
        finally:
            self._procs.discard(proc)
            await _kill(proc)

    async def forward_port(self, remote_port: int, remote_host: str = "127.0.0.1") -> int:
        return remote_port

    async def exchange_unix(self, path: str, data: bytes, *, timeout: float | None = 60.0,
                            limit: int = 64 << 20) -> bytes:
        try:
            reader, writer = await asyncio.open_unix_connection(path, limit=STREAM_LIMIT)
        except OSError as exc:
            raise NodeError(f"{self.name}: cannot connect to {path}: {exc}") from None
        return await exchange_stream(reader, writer, data, self.name, path, timeout, limit)

    async def close(self) -> None:
        for proc in list(self._procs):
            await _kill(proc)
        self._procs.clear()
