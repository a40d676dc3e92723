"""The simulated server's part in a run across nodes (``--nnodes N --node-rank I
--dist-init-addr HOST:PORT``), as :mod:`mambaconsole.sglang.multinode` describes real SGLang's
(its module doc cites the sources and the real output in ``tests/data/multinode/``).

Rank 0 listens at ``--dist-init-addr`` and waits, printing nothing, until the other ``N-1``
ranks connected (torch's TCPStore: ``torch.distributed.DistStoreError: Timed out after S
seconds waiting for clients. K/N clients joined.`` after ``--dist-timeout``, default torch's
30 minutes); a rank >= 1 connects to it, retrying while nobody listens (``torch.distributed.
DistNetworkError: The client socket has timed out after Sms while trying to connect to (HOST,
PORT).`` after the timeout). Once all joined, each rank keeps its connection: a closed one is
a dead peer. The wire between the simulated ranks is the simulator's own (one line ``rank I``
from a rank >= 1, ``go`` from rank 0 once all joined), not torch's store protocol: nothing
but the simulated ranks talks to it.
"""

from __future__ import annotations

import socket
import threading
import time

from mambaconsole.sim.frames import _SCHED_0_5_11, _SCHED_0_5_23, _S

#: torch's default process-group timeout (``default_pg_timeout``, 30 minutes), seconds
DEFAULT_TIMEOUT_S = 1800.0

#: torch 2.13's rendezvous frames below SGLang's ``init_process_group`` call (the real log)
_TORCH = [
    ("torch/distributed/c10d_logger.py", 83, "wrapper", "return func(*args, **kwargs)"),
    ("torch/distributed/c10d_logger.py", 97, "wrapper", "func_return = func(*args, **kwargs)"),
    ("torch/distributed/distributed_c10d.py", 1892, "init_process_group", "store, rank, world_size = next(rendezvous_iterator)"),
    ("torch/distributed/rendezvous.py", 232, "_tcp_rendezvous_handler", "store = _create_c10d_store("),
    ("torch/distributed/rendezvous.py", 199, "_create_c10d_store", "return TCPStore("),
]
#: SGLang's frames from the scheduler to ``torch.distributed.init_process_group``
_DIST = {
    "0.5.23": [
        _SCHED_0_5_23[0],
        (f"{_S}/srt/managers/scheduler.py", 536, "__init__", "bootstrap.init_parallel_runtime("),
        (f"{_S}/srt/distributed/bootstrap.py", 152, "init_parallel_runtime", "_init_parallel_groups("),
        (f"{_S}/srt/distributed/bootstrap.py", 322, "_init_parallel_groups", "init_distributed_environment("),
        (f"{_S}/srt/distributed/parallel_state.py", 2517, "init_distributed_environment", "torch.distributed.init_process_group("),
    ],
    "0.5.11": _SCHED_0_5_11[:6] + [
        (f"{_S}/srt/model_executor/model_runner.py", 481, "__init__", "pre_model_load_memory = self.init_torch_distributed()"),
        (f"{_S}/srt/model_executor/model_runner.py", 1167, "init_torch_distributed", "init_distributed_environment("),
        (f"{_S}/srt/distributed/parallel_state.py", 1717, "init_distributed_environment", "torch.distributed.init_process_group("),
    ],
}


def dist_frames(version: str) -> list[tuple[str, int, str, str]]:
    """Frames from ``run_scheduler_process`` to torch's ``TCPStore(...)``."""
    return list(_DIST["0.5.11" if version == "0.5.11" else "0.5.23"]) + list(_TORCH)


class DistTimeout(Exception):
    """The group did not form in time: ``exc_line`` is the exception line torch prints;
    ``c10d_lines`` the lines its C++ logs before it (a rank >= 1's connect failures)."""

    def __init__(self, exc_line: str, c10d_lines: list[str] | None = None) -> None:
        super().__init__(exc_line)
        self.exc_line = exc_line
        self.c10d_lines = c10d_lines or []


def parse_addr(addr: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[V6]:PORT`` too) as (host, port); ValueError otherwise."""
    host, sep, port = addr.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--dist-init-addr {addr!r} is not HOST:PORT")
    return host.strip("[]") or "127.0.0.1", int(port)


def _c10d_stamp() -> str:
    """glog's ``E1201 17:48:14.176211436`` (level, month, day, time with nanoseconds)."""
    now = time.time()
    return time.strftime("%m%d %H:%M:%S", time.localtime(now)) + f".{int(now % 1 * 1e9):09d}"


class Rendezvous:
    """This rank's membership in the group; ``join`` blocks until the group formed (or
    raises DistTimeout, or returns False when ``stop`` was set). ``peer_gone``: set once a
    connection of the formed group closed; ``gone_peer`` names it (``HOST:PORT``)."""

    def __init__(self, *, nnodes: int, node_rank: int, addr: str, timeout_s: float, stop: threading.Event) -> None:
        self.nnodes, self.node_rank = nnodes, node_rank
        self.host, self.port = parse_addr(addr)
        self.timeout_s = timeout_s
        self.stop = stop
        self.peer_gone = threading.Event()
        self.gone_peer: str | None = None
        self._socks: list[socket.socket] = []
        self._server: socket.socket | None = None

    def listen(self) -> None:
        """Rank 0: bind the store's address now (before the begin line), so that peers can connect."""
        if self.node_rank == 0:
            srv = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
            srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            srv.bind((self.host, self.port))
            srv.listen(64)
            srv.settimeout(0.2)
            self._server = srv

    def join(self) -> bool:
        start = time.monotonic()
        if self.node_rank == 0:
            joined: dict[int, socket.socket] = {}
            while len(joined) < self.nnodes - 1:
                if self.stop.is_set():
                    return False
                if time.monotonic() - start > self.timeout_s:
                    raise DistTimeout(f"torch.distributed.DistStoreError: Timed out after {int(self.timeout_s) + 1} "
                                      f"seconds waiting for clients. {len(joined) + 1}/{self.nnodes} clients joined.")
                try:
                    conn, _ = self._server.accept()  # type: ignore[union-attr]
                except (TimeoutError, socket.timeout):
                    continue
                conn.settimeout(5)
                try:
                    line = conn.makefile("rb").readline().decode().split()
                    rank = int(line[1])
                except (OSError, ValueError, IndexError):
                    conn.close()
                    continue
                joined[rank] = conn
            for conn in joined.values():
                conn.sendall(b"go\n")
            self._socks = list(joined.values())
        else:
            sock = None
            while sock is None:
                if self.stop.is_set():
                    return False
                if time.monotonic() - start > self.timeout_s:
                    ms = int(self.timeout_s * 1000)
                    where = f"({self.host}, {self.port})"
                    msg = f"The client socket has timed out after {ms}ms while trying to connect to {where}."
                    raise DistTimeout(f"torch.distributed.DistNetworkError: {msg}",
                                      [f"[E{_c10d_stamp()} socket.cpp:1028] [c10d] {msg}",
                                       f"[E{_c10d_stamp()} TCPStore.cpp:328] [c10d] TCP client failed to "
                                       f"connect/validate to host {self.host}:{self.port} - timed out (try=1, "
                                       f"timeout={ms}ms): {msg}"])
                try:
                    sock = socket.create_connection((self.host, self.port), timeout=1)
                except OSError:
                    self.stop.wait(0.2)
            sock.sendall(f"rank {self.node_rank}\n".encode())
            sock.settimeout(0.2)
            buf = b""
            while b"\n" not in buf:  # the others are still joining: every rank waits for all
                if self.stop.is_set():
                    return False
                try:
                    data = sock.recv(64)
                except (TimeoutError, socket.timeout):
                    continue
                except OSError:
                    data = b""
                if not data:
                    raise DistTimeout("torch.distributed.DistNetworkError: rank 0's store closed the connection")
                buf += data
            self._socks = [sock]
        for s in self._socks:
            threading.Thread(target=self._watch, args=(s,), daemon=True, name="sim-dist-peer").start()
        return True

    def _watch(self, sock: socket.socket) -> None:
        try:
            peer = sock.getpeername()
            name = f"{peer[0]}:{peer[1]}"
        except OSError:
            name = "?"
        sock.settimeout(None)
        try:
            while sock.recv(64):
                pass
        except OSError:
            pass
        if self.gone_peer is None:
            self.gone_peer = name
        self.peer_gone.set()

    def close(self) -> None:
        for s in self._socks + ([self._server] if self._server else []):
            try:
                s.close()
            except OSError:
                pass
