"""The one interface every way of reaching a node offers (:class:`Node`).

Implementations: :class:`mambaconsole.node.local.LocalNode` (asyncio subprocesses on this
machine; ``HOST`` = ``local``) and ``mambaconsole.node.ssh.SSHNode`` (asyncssh).

Commands are given as an argv list and are run **without a local shell**; an SSH node's
remote shell receives them joined with :func:`shlex.join`, so every element arrives as one
literal argv element. A ``str`` command is passed to the node's shell as is: use it only
for fixed text written in this package, never for values a person typed.
"""

from __future__ import annotations

import abc
import contextlib
import shlex
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass

from mambaconsole.errors import ConsoleError

Command = Sequence[str] | str


class NodeError(ConsoleError):
    """Reaching or using the node failed: unreachable host, auth, host key, timeout."""


class CommandTimeout(NodeError):
    """A command on the node ran past its timeout (it has been killed)."""


@dataclass(frozen=True)
class CommandResult:
    """The outcome of one command on the node.

    ``exit_status`` is the process exit status (negative signal number locally, 128+N
    style as the remote shell reports it over SSH, ``None`` when unknown); ``stdout`` and
    ``stderr`` are the raw bytes the command wrote.
    """

    exit_status: int | None
    stdout: bytes
    stderr: bytes

    @property
    def ok(self) -> bool:
        return self.exit_status == 0

    @property
    def out(self) -> str:
        """stdout decoded as UTF-8 (invalid bytes replaced)."""
        return self.stdout.decode("utf-8", "replace")

    @property
    def err(self) -> str:
        return self.stderr.decode("utf-8", "replace")


def in_folder(cmd: Sequence[str], cwd: str | None) -> list[str]:
    """``cmd`` run in the node's folder ``cwd`` (unchanged when ``cwd`` is empty): through
    ``sh -c 'cd -- "$1" && shift && exec "$@"'``, so the folder and every argv element stay one
    literal argument each, never shell text. A missing folder fails the command (sh says so)."""
    if not cwd:
        return list(cmd)
    return ["sh", "-c", 'cd -- "$1" && shift && exec "$@"', "sh", cwd, *cmd]


def command_line(cmd: Command, env: Mapping[str, str] | None = None) -> str:
    """The shell text for ``cmd``: argv elements quoted with :func:`shlex.quote`.

    ``env`` becomes an ``env K=V ...`` prefix (each assignment quoted as one word).
    """
    text = cmd if isinstance(cmd, str) else shlex.join(cmd)
    if env:
        for key in env:
            if not key.isidentifier():
                raise ValueError(f"not an environment variable name: {key!r}")
        text = "env " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " " + text
    return text


#: bytes asked for per read by :func:`line_batches`
READ_CHUNK = 256 * 1024


async def line_batches(read: Callable[[int], Awaitable[bytes]]) -> AsyncIterator[list[bytes]]:
    """Split a byte stream into lists of complete lines (without their ``\\n``), one list per
    ``read(READ_CHUNK)`` that completed at least one line; a last line without ``\\n`` comes at
    the end. No line length limit."""
    rest = b""
    while True:
        chunk = await read(READ_CHUNK)
        if not chunk:
            break
        lines = (rest + chunk).split(b"\n") if rest else chunk.split(b"\n")
        rest = lines.pop()
        if lines:
            yield lines
    if rest:
        yield [rest]


async def exchange_stream(reader, writer, data: bytes, name: str, path: str, timeout: float | None,
                          limit: int) -> bytes:
    """Send ``data`` on an opened stream pair, close the sending half, read to EOF (at most
    ``limit`` bytes); the shared body of :meth:`Node.exchange_unix`."""
    import asyncio

    async def talk() -> bytes:
        writer.write(data)
        writer.write_eof()
        chunks, size = [], 0
        while True:
            chunk = await reader.read(READ_CHUNK)
            if not chunk:
                return b"".join(chunks)
            size += len(chunk)
            if size > limit:
                raise NodeError(f"{name}: {path} answered more than {limit} bytes")
            chunks.append(chunk)

    try:
        return await asyncio.wait_for(talk(), timeout)
    except asyncio.TimeoutError:
        raise CommandTimeout(f"{name}: no answer from {path} within {timeout:g} s") from None
    finally:
        writer.close()


class Node(abc.ABC):
    """A machine the console works on. Async; use as ``async with`` to close it.

    ``name`` is what the user called it (``local``, an ssh alias, ``user@host:port``).
    """

    name: str

    @abc.abstractmethod
    async def run(
        self,
        cmd: Command,
        *,
        input: bytes | None = None,
        timeout: float | None = 60.0,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> CommandResult:
        """Run ``cmd`` to completion; ``input`` is sent on its stdin, then stdin is closed.

        ``timeout`` is in seconds (``None``: no limit). Raises :class:`CommandTimeout` when
        it runs past it (the command is killed), :class:`NodeError` when the node is gone.
        """

    async def stream_lines(
        self,
        cmd: Command,
        *,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
    ) -> AsyncIterator[bytes]:
        """Start a long-running ``cmd`` and yield each line of its stdout (bytes, without
        the trailing newline) as it arrives. Closing the iterator (``aclose()`` or leaving an
        ``async for``) stops the command. stderr is discarded."""
        async with contextlib.aclosing(self.stream_line_batches(cmd, input=input, env=env)) as batches:
            async for batch in batches:
                for line in batch:
                    yield line

    @abc.abstractmethod
    def stream_line_batches(
        self,
        cmd: Command,
        *,
        input: bytes | None = None,
        env: Mapping[str, str] | None = None,
    ) -> AsyncIterator[list[bytes]]:
        """Like :meth:`stream_lines`, but yields the lines that arrived together as one list
        (one await per chunk instead of per line: for high line rates such as the agent's).
        Implementations split chunks with :func:`line_batches`."""

    async def exchange_unix(self, path: str, data: bytes, *, timeout: float | None = 60.0,
                            limit: int = 64 << 20) -> bytes:
        """Connect to the UNIX socket ``path`` on the node, send ``data``, close the sending
        half and return what it answers until it closes (at most ``limit`` bytes). No process
        is started on the node (SSH: one ``direct-streamlocal`` channel on the open connection,
        OpenSSH's ``AllowStreamLocalForwarding``, on by default). Raises :class:`NodeError` when
        the socket cannot be reached or the node refuses such channels (callers fall back to a
        command), :class:`CommandTimeout` past ``timeout`` seconds."""
        raise NodeError(f"{self.name}: no UNIX socket channel to the node")

    @abc.abstractmethod
    async def forward_port(self, remote_port: int, remote_host: str = "127.0.0.1") -> int:
        """Make ``remote_host:remote_port`` as seen from the node reachable on this machine;
        returns the local port on 127.0.0.1 (for a local node: ``remote_port`` itself)."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Close connections and stop forwards and streams started through this node."""

    async def __aenter__(self) -> "Node":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()
