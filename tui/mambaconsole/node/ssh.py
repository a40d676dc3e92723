"""``SSHNode``: a node reached over SSH with asyncssh.

``HOST`` is an alias or host name looked up in ``~/.ssh/config`` (``Host``, ``HostName``,
``Port``, ``User``, ``IdentityFile``, ``UserKnownHostsFile``, ``ConnectTimeout``,
``ServerAliveInterval`` ... as asyncssh reads them), optionally written ``user@host:port``
(user and port given there win over the config). Authentication uses the keys from the
config or the default ``~/.ssh/id_*`` keys and the ssh agent (``SSH_AUTH_SOCK``).

Host keys are always verified against known_hosts (``UserKnownHostsFile`` from the config,
else ``~/.ssh/known_hosts``): an unknown, changed or ``@revoked`` key, or a known_hosts file
that does not exist, is refused with a one-line :class:`HostKeyError` naming the file, the
server key's SHA256 fingerprint and what to do. Other failures
raise :class:`~mambaconsole.node.base.NodeError` with one line: unreachable host, authentication
failure, connection timeout, connection lost.

One SSH connection carries everything (commands, streams, port forwards); keepalives every
15 s (or ``ServerAliveInterval``), and a connection that was lost is re-opened (with backoff)
on the next command.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import secrets
import shlex
import socket
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import asyncssh

from mambaconsole.backoff import RECONNECT
from mambaconsole.node.base import (READ_CHUNK, Command, CommandResult, CommandTimeout, Node, NodeError, command_line,
                                     exchange_stream, line_batches)

#: seconds for the TCP connection plus SSH handshake and login, unless ConnectTimeout says otherwise
CONNECT_TIMEOUT = 15.0
#: keepalive interval (seconds) and count, unless the ssh config sets ServerAlive*
KEEPALIVE_INTERVAL = 15.0
KEEPALIVE_COUNT = 4
#: bytes read from a stream per call in stream_lines()
#: the start of the line that gives a command's remote pid (then the command's nonce, a space, the pid)
PID_MARK = "mambaconsole-pid:"
#: the environment variable that carries a command's nonce on the node (checked before a kill)
CHANNEL_VAR = "MAMBACONSOLE_CHANNEL"
#: stderr bytes a login shell may print before the pid line (more: the pid is not known)
PID_SEARCH_BYTES = 64 * 1024


def _preferred_ciphers() -> list[str]:
    from asyncssh.encryption import get_default_encryption_algs

    algs = list(get_default_encryption_algs())
    first = [a for a in (b"aes128-gcm@openssh.com", b"aes256-gcm@openssh.com") if a in algs]
    return [a.decode("ascii") for a in first + [a for a in algs if a not in first]]


_PREFERRED_CIPHERS = _preferred_ciphers()


class HostKeyError(NodeError):
    """The server's host key is not in known_hosts, or differs from the key recorded there."""


class AuthError(NodeError):
    """The server refused every key (or the agent had none it accepted)."""


def parse_host(host: str) -> tuple[str, str | None, int | None]:
    """Split ``[user@]host[:port]`` into (host, user, port); ``[v6addr]:port`` works too.

    Raises NodeError for an empty host or a port that is not a number in 1..65535."""
    user = None
    rest = host
    if "@" in rest:
        user, rest = rest.rsplit("@", 1)
    port: int | None = None
    m = re.fullmatch(r"\[([^\]]+)\](?::(\d+))?", rest)
    if m:
        rest, p = m.group(1), m.group(2)
        port = int(p) if p else None
    elif rest.count(":") == 1:
        rest, p = rest.split(":")
        if not p.isdigit():
            raise NodeError(f"{host}: port must be a number, got {p!r}")
        port = int(p)
    if not rest or (user is not None and not user):
        raise NodeError(f"{host!r}: expected an ssh alias, host, user@host or user@host:port")
    if port is not None and not 0 < port < 65536:
        raise NodeError(f"{host}: port {port} is out of range 1-65535")
    return rest, user, port


class _Client(asyncssh.SSHClient):
    """Remembers the host key the server offered (for the fingerprint in errors)."""

    def __init__(self) -> None:
        self.offered_key: asyncssh.SSHKey | None = None

    def validate_host_public_key(self, host, addr, port, key) -> bool:
        self.offered_key = key
        return False  # trust comes from known_hosts only


def _fingerprint(key: asyncssh.SSHKey | None) -> str:
    if key is None:
        return "unknown"
    return f"{key.get_algorithm()} {key.get_fingerprint('sha256')}"


def _known_host_label(host: str, port: int) -> str:
    return host if port == 22 else f"[{host}]:{port}"


class SSHNode(Node):
    """A node over one asyncssh connection. Use :meth:`connect` (or :func:`connect_node`)
    before the first command to get connection errors early; commands connect lazily too."""

    def __init__(self, host: str, *, connect_timeout: float | None = None) -> None:
        self.name = host
        self._host, self._user, self._port = parse_host(host)
        self._connect_timeout = connect_timeout
        self._conn: asyncssh.SSHClientConnection | None = None
        self._lock = asyncio.Lock()
        self._listeners: list[asyncssh.SSHListener] = []
        #: running processes -> (their remote pid (process group), their nonce), killed on close()
        self._procs: dict[asyncssh.SSHClientProcess, tuple[int | None, str]] = {}
        self._failures = 0
        self._closed = False
        #: where the connection really goes (after ~/.ssh/config): set by connect()
        self.hostname: str | None = None
        self.port: int | None = None
        self.username: str | None = None

    # -- connection ---------------------------------------------------------------------

    async def _options(self) -> asyncssh.SSHClientConnectionOptions:
        kw: dict = {}
        if self._user:
            kw["username"] = self._user
        if self._port:
            kw["port"] = self._port
        try:
            opts = await asyncssh.SSHClientConnectionOptions.construct(config=(), host=self._host, **kw)
            extra: dict = {}
            if not opts.keepalive_interval:
                extra.update(keepalive_interval=KEEPALIVE_INTERVAL, keepalive_count_max=KEEPALIVE_COUNT)
            if self._connect_timeout is not None or opts.connect_timeout is None:
                extra["connect_timeout"] = self._connect_timeout or CONNECT_TIMEOUT
            if not opts.config.get("Ciphers"):
                # AES-GCM first (AES-NI through cryptography: ~30% faster than asyncssh's
                # default ChaCha20 for log streams); every default cipher stays allowed
                extra["encryption_algs"] = _PREFERRED_CIPHERS
            if opts.known_hosts is None:  # "UserKnownHostsFile none": verification is never off
                extra["known_hosts"] = str(Path("~/.ssh/known_hosts").expanduser())
            if extra:
                opts = await asyncssh.SSHClientConnectionOptions.construct(opts, config=(), host=self._host, **kw, **extra)
        except (asyncssh.Error, OSError, ValueError) as exc:
            raise NodeError(f"{self.name}: ssh configuration: {exc}") from None
        return opts

    def _known_hosts_files(self, opts) -> list[str]:
        files = opts.known_hosts
        if isinstance(files, (str, Path)):
            return [str(files)]
        if files:
            return [str(Path(f).expanduser()) for f in files if isinstance(f, (str, Path))]
        return [str(Path("~/.ssh/known_hosts").expanduser())]

    @property
    def connected(self) -> bool:
        """Whether the SSH connection is open right now (False before connect() and after a
        drop; the next command re-opens it)."""
        return self._conn is not None and not self._conn.is_closed()

    async def connect(self, *, backoff: bool = True) -> "SSHNode":
        """Open the connection now. Raises HostKeyError, AuthError or NodeError (one line).
        ``backoff=False``: no wait after earlier failures (the caller paces its attempts, as
        :class:`mambaconsole.node.supervisor.Supervisor` does)."""
        async with self._lock:
            await self._connect_locked(backoff=backoff)
        return self

    async def _connect_locked(self, backoff: bool = True) -> asyncssh.SSHClientConnection:
        if self._closed:
            raise NodeError(f"{self.name}: node connection is closed")
        if self._conn is not None and not self._conn.is_closed():
            return self._conn
        if self._failures and backoff:  # reconnect after a lost connection: back off a little
            await asyncio.sleep(RECONNECT.delay(self._failures))
        opts = await self._options()
        self.hostname, self.port, self.username = opts.host, opts.port, opts.username
        where = f"{self.name} ({opts.username}@{opts.host} port {opts.port})"
        clients: list[_Client] = []

        def factory() -> _Client:
            clients.append(_Client())
            return clients[-1]

        files = self._known_hosts_files(opts)
        if not any(os.path.exists(f) for f in files):
            # asyncssh would say "No such file or directory": say which file and what to do
            self._failures += 1
            fp = _fingerprint(await self._server_key(opts))
            shown = " or ".join(files)
            raise HostKeyError(
                f"{where}: host key not verified: {shown} does not exist (server key {fp}); check the fingerprint, "
                f"then add it: ssh-keyscan -p {opts.port} {opts.host} >> {files[0]}")
        try:
            conn = await asyncssh.connect(self._host, options=opts, client_factory=factory)
        except asyncssh.HostKeyNotVerifiable:
            offered = clients[-1].offered_key if clients else None
            if offered is None:  # refused before it was offered to us (a revoked key): ask for it
                offered = await self._server_key(opts)
            raise self._host_key_error(opts, where, offered) from None
        except asyncssh.PermissionDenied as exc:
            self._failures += 1
            raise AuthError(
                f"{where}: authentication failed ({exc.reason}); the server accepted none of the "
                "keys from the ssh config, ~/.ssh/id_* or the agent") from None
        except asyncio.TimeoutError:
            self._failures += 1
            raise NodeError(f"{where}: connection timed out after {opts.connect_timeout:g} s") from None
        except socket.gaierror as exc:
            self._failures += 1
            raise NodeError(f"{where}: cannot resolve host name: {exc.strerror or exc}") from None
        except OSError as exc:
            self._failures += 1
            reason = os.strerror(exc.errno) if exc.errno else str(exc)
            raise NodeError(f"{where}: cannot connect: {reason}") from None
        except asyncssh.DisconnectError as exc:
            self._failures += 1
            raise NodeError(f"{where}: ssh: {exc.reason}") from None
        except (asyncssh.Error, ValueError) as exc:
            self._failures += 1
            raise NodeError(f"{where}: ssh: {exc}") from None
        self._failures = 0
        self._conn = conn
        return conn

    async def _server_key(self, opts) -> asyncssh.SSHKey | None:
        """The host key the server offers (no login), for the fingerprint in an error; None
        when it cannot be had."""
        try:
            return await asyncio.wait_for(asyncssh.get_server_host_key(opts.host, opts.port),
                                          opts.connect_timeout or CONNECT_TIMEOUT)
        except (asyncssh.Error, OSError, asyncio.TimeoutError, ValueError):
            return None

    def _host_key_error(self, opts, where: str, key) -> HostKeyError:
        files = self._known_hosts_files(opts)
        label = _known_host_label(opts.host, opts.port)
        known_any = False
        revoked: list = []
        try:
            kh = asyncssh.read_known_hosts([f for f in files if os.path.exists(f)]) if any(os.path.exists(f) for f in files) else None
            if kh is not None:
                port = opts.port if opts.port != 22 else None
                m1 = kh.match(opts.host_key_alias or self._host, "", port)
                m2 = kh.match(opts.host, opts.host, port)
                known_any = bool(m1[0] or m2[0])
                revoked = list(m1[2]) + list(m2[2])
        except (ValueError, OSError):
            pass
        fp = _fingerprint(key)
        shown = " or ".join(files)
        if key is not None and any(r.public_data == key.public_data for r in revoked):
            return HostKeyError(
                f"{where}: HOST KEY REVOKED: the server's key {fp} is marked @revoked for {label} in {shown}; "
                f"refusing to connect (whoever revoked it knows the node's new key: add that one, never this)")
        if known_any:
            return HostKeyError(
                f"{where}: HOST KEY CHANGED: the server's key {fp} does not match the key for {label} "
                f"in {shown}; refusing to connect (if the change is expected, remove the old entry: "
                f"ssh-keygen -R '{label}' -f {files[0]})")
        return HostKeyError(
            f"{where}: host key not verified: {label} is not in {shown} (server key {fp}); "
            f"check the fingerprint, then add it: ssh-keyscan -p {opts.port} {opts.host} >> {files[0]}")

    async def _connection(self) -> asyncssh.SSHClientConnection:
        conn = self._conn
        if conn is not None and not conn.is_closed():
            return conn
        async with self._lock:
            return await self._connect_locked()

    def _lost(self, exc: BaseException) -> NodeError:
        self._failures += 1
        self._conn = None
        return NodeError(f"{self.name}: connection lost: {getattr(exc, 'reason', None) or exc}")

    # -- Node interface -----------------------------------------------------------------

    @staticmethod
    def _text(cmd: Command, env: Mapping[str, str] | None, cwd: str | None, nonce: str) -> str:
        """The remote shell text. First one line on stderr, ``\\n<PID_MARK><nonce> <pid>``: the
        session's pid (sshd made it a process-group leader: how a timed-out or abandoned
        command is killed, since OpenSSH ignores signal requests), marked with this command's
        random nonce so that nothing a login shell prints (a ``.bashrc`` echo, a ``setlocale``
        warning) can pass for it. Then, in ``cwd``, ``exec env MAMBACONSOLE_CHANNEL=<nonce>``
        the argv (quoted; a shell text runs under ``sh -c``): the process keeps the pid and
        carries the nonce in its environment, which :meth:`_kill_remote` checks before it
        signals anything."""
        body = command_line(["sh", "-c", cmd] if isinstance(cmd, str) else cmd, env)
        if body.startswith("env "):
            body = body[4:]
        body = f"exec env {CHANNEL_VAR}={nonce} {body}"
        if cwd:
            body = f"cd {shlex.quote(cwd)} && {body}"
        return f"printf '\\n%s %s\\n' {PID_MARK}{nonce} \"$$\" >&2; {body}"

    @staticmethod
    async def _remote_pid(proc, nonce: str) -> tuple[int | None, bytes]:
        """(the pid from this command's marked line, the stderr bytes before it). None when
        the line does not come within PID_SEARCH_BYTES (the command then is never signalled)."""
        mark = f"{PID_MARK}{nonce} ".encode()
        before = b""
        while len(before) < PID_SEARCH_BYTES:
            line = await proc.stderr.readline()
            if not line:
                return None, before
            if line.startswith(mark):
                try:
                    pid = int(line[len(mark):].strip())
                except ValueError:
                    return None, before
                # the empty line printf put first (so the mark starts a line) is ours, not the node's
                if before.endswith(b"\n"):
                    before = before[:-1]
                return (pid if pid > 1 else None), before
            before += line
        return None, before

    async def _kill_remote(self, proc, pid: int | None, nonce: str | None = None) -> None:
        """Kill what ``proc`` runs on the node (its whole process group) and close the channel.
        Only a pid this console recorded from its own marked line, and only while that process
        still carries this command's nonce in its environment (/proc/PID/environ): never a
        process the console did not start."""
        try:
            if proc.exit_status is None and proc.exit_signal is None and pid and pid > 1 and nonce \
                    and self._conn is not None and not self._conn.is_closed():
                check = f"tr '\\0' '\\n' < /proc/{pid}/environ 2>/dev/null | grep -qx {CHANNEL_VAR}={nonce}"
                await asyncio.wait_for(self._conn.run(
                    f"{check} && {{ kill -KILL -- -{pid} 2>/dev/null || kill -KILL {pid} 2>/dev/null; }}; true"), 10)
        except (asyncssh.Error, OSError, asyncio.TimeoutError):
            pass
        finally:
            proc.close()

    async def run(self, cmd, *, input=None, timeout=60.0, env=None, cwd=None) -> CommandResult:
        conn = await self._connection()
        nonce = secrets.token_hex(8)
        text = self._text(cmd, env, cwd, nonce)
        try:
            proc = await conn.create_process(text, encoding=None)
        except (asyncssh.Error, OSError) as exc:
            raise self._lost(exc) from None
        self._procs[proc] = (None, nonce)
        pid: list[int | None] = [None]

        async def work():
            try:
                if input:
                    proc.stdin.write(input)
                proc.stdin.write_eof()
            except OSError:  # BrokenPipeError: it ended without reading its input
                pass
            pid[0], before = await self._remote_pid(proc, nonce)
            self._procs[proc] = (pid[0], nonce)
            out, err = await asyncio.gather(proc.stdout.read(), proc.stderr.read())
            await proc.wait()
            return out, before + (err or b"")

        try:
            out, err = await asyncio.wait_for(work(), timeout)
        except asyncio.TimeoutError:
            await self._kill_remote(proc, pid[0], nonce)
            raise CommandTimeout(f"{self.name}: command timed out after {timeout:g} s") from None
        except (asyncssh.DisconnectError, asyncssh.ConnectionLost, OSError) as exc:
            raise self._lost(exc) from None
        except asyncio.CancelledError:  # a worker replaced, the console closing: nothing left running
            await self._kill_remote(proc, pid[0], nonce)
            raise
        finally:
            self._procs.pop(proc, None)
        return CommandResult(proc.returncode, out or b"", err or b"")

    async def stream_line_batches(self, cmd, *, input=None, env=None) -> AsyncIterator[list[bytes]]:
        """Like :meth:`stream_lines`, but yields the lines that arrived together as one list
        (fast path for high line rates: one await per chunk instead of per line)."""
        conn = await self._connection()
        nonce = secrets.token_hex(8)
        try:
            proc = await conn.create_process(self._text(cmd, env, None, nonce), encoding=None)
        except (asyncssh.Error, OSError) as exc:
            raise self._lost(exc) from None
        self._procs[proc] = (None, nonce)
        pid = None
        drain = None
        try:
            if input is not None:
                proc.stdin.write(input)
            proc.stdin.write_eof()
            try:
                pid, _ = await self._remote_pid(proc, nonce)
                self._procs[proc] = (pid, nonce)
            except (asyncssh.DisconnectError, asyncssh.ConnectionLost, OSError) as exc:
                raise self._lost(exc) from None

            async def discard_stderr():
                with contextlib.suppress(Exception):
                    while await proc.stderr.read(READ_CHUNK):
                        pass

            drain = asyncio.ensure_future(discard_stderr())

            async def read(n: int) -> bytes:
                try:
                    return await proc.stdout.read(n)
                except (asyncssh.DisconnectError, asyncssh.ConnectionLost, OSError) as exc:
                    raise self._lost(exc) from None

            async for lines in line_batches(read):
                yield lines
        finally:
            self._procs.pop(proc, None)
            if drain is not None:
                drain.cancel()
            await self._kill_remote(proc, pid, nonce)

    async def exchange_unix(self, path: str, data: bytes, *, timeout: float | None = 60.0,
                            limit: int = 64 << 20) -> bytes:
        conn = await self._connection()
        try:
            reader, writer = await asyncio.wait_for(conn.open_unix_connection(path, encoding=None), timeout)
        except asyncio.TimeoutError:
            raise CommandTimeout(f"{self.name}: no channel to {path} within {timeout:g} s") from None
        except (asyncssh.Error, OSError) as exc:
            raise NodeError(f"{self.name}: cannot reach {path}: {exc}") from None
        try:
            return await exchange_stream(reader, writer, data, self.name, path, timeout, limit)
        except (asyncssh.Error, OSError) as exc:
            raise NodeError(f"{self.name}: {path}: {exc}") from None

    async def forward_port(self, remote_port: int, remote_host: str = "127.0.0.1") -> int:
        conn = await self._connection()
        try:
            listener = await conn.forward_local_port("127.0.0.1", 0, remote_host, remote_port)
        except (asyncssh.Error, OSError) as exc:
            raise NodeError(f"{self.name}: cannot forward port {remote_port}: {exc}") from None
        self._listeners.append(listener)
        return listener.get_port()

    async def close(self) -> None:
        self._closed = True
        # closing the connection would not end them on the node (no pty): kill them first
        procs, self._procs = dict(self._procs), {}
        for proc, (pid, nonce) in procs.items():
            with contextlib.suppress(Exception):
                await self._kill_remote(proc, pid, nonce)
        for listener in self._listeners:
            listener.close()
        self._listeners.clear()
        if self._conn is not None:
            self._conn.close()
            with contextlib.suppress(Exception):
                await self._conn.wait_closed()
            self._conn = None
