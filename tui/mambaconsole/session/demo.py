"""``mambaconsole --demo``'s node: the simulated SGLang server, no GPU and no SSH (headless; the
console on it is :func:`mambaconsole.ui.app.run`).

Starts the seed scenario's first failing command (``extra_buffer`` with default caps, which
OOMs while allocating the Mamba cache) as a run in tmux, with the simulated SGLang
(``python -m mambaconsole.sim``), reached through ``LocalNode``.

Each demo lives in its own folder ``<user cache dir>/mambaconsole/demo/<pid>-<random>/``
(``platformdirs.user_cache_dir``): its own ``MAMBACONSOLE_HOME`` (runs, relaunch lock), tmux
server (``TMUX_TMPDIR`` inside it), sim GPU file, and a free port of its own, so two demos on
one machine never share a sim, a port or a run store. The folder holds ``lock``, flock'ed
for the demo's life. Quitting stops the demo's runs and its tmux server and removes the
folder; a folder whose lock is free (its console was killed) is cleaned up by the next demo
that starts: its runs stopped (only the pids its own run store recorded), its tmux server
killed, the folder removed.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import sys
import tempfile
from pathlib import Path

from mambaconsole.node import tmux_server
from mambaconsole.node.local import LocalNode
from mambaconsole.node.runs import RunStore
from mambaconsole.session.feed import Feed
from mambaconsole.session.settings import HostSettings

SESSION = "demo"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Demo:
    """The demo's node, store and processes. ``home`` defaults to the user cache dir;
    ``speed`` is the sim's time scale (tests run it faster); ``python``: the command that starts
    the sim's runs (default: this python by its full path; ``scripts/screenshots.py`` gives
    ``python``, found on its PATH, so the pictures do not show this machine's folders)."""

    def __init__(self, home: Path | None = None, *, version: str = "0.5.11", speed: float = 1.0, seed: int = 0,
                 extra_env: dict[str, str] | None = None, python: str | None = None) -> None:
        from mambaconsole.sim import demo as sim_demo

        self.sim = sim_demo
        #: the demo made its own folder (removed on stop); False for a folder given by the caller
        self.owned = home is None
        self._lock_fd: int | None = None
        if home is None:
            self.root = sim_demo.prepare_home(None)  # <cache>/mambaconsole/demo (0700)
            home = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=self.root))
            self._lock_fd = _hold(home / LOCK)
        self.home = sim_demo.prepare_home(home)
        self.version, self.speed, self.seed = version, speed, seed
        self.python = python
        self.env = sim_demo.demo_env(self.home)
        self.tmux_dir = self.home / "tmux"
        self.tmux_dir.mkdir(mode=0o700, exist_ok=True)
        self.env.update(extra_env or {})
        self.env["TMUX_TMPDIR"] = str(self.tmux_dir)
        self.port = free_port()
        self.node: LocalNode | None = None
        self.feed: Feed | None = None

    def apply_env(self) -> None:
        """This process (and so every LocalNode command) uses the demo's home and tmux server."""
        os.environ.update(self.env)
        for k in tmux_server.TMUX_VARS:
            os.environ.pop(k, None)

    def first_argv(self) -> list[str]:
        """``python -m mambaconsole.sim --sim-... <the seed scenario's first failing SGLang args>``."""
        return self.sim.sim_command(self.sim.first_failing_argv(self.version, port=self.port),
                                    version=self.version, seed=self.seed, speed=self.speed, python=self.python)

    def make_feed(self) -> Feed:
        """The demo's feed: LocalNode, the demo home, the sim's resolver and GPU file."""
        self.apply_env()
        self.node = LocalNode("demo")
        settings = HostSettings(python=sys.executable, module="mambaconsole.sim", session=SESSION, port=self.port,
                                poll_s=1.0, env=self.run_env())
        self.feed = Feed(self.node, settings, home=str(self.home), simulated=True, adopt=False,
                         sim_gpu_file=self.env.get(self.sim.ENV_GPU_FILE))
        return self.feed

    async def start(self) -> str:
        """Clean up demos left by killed consoles (their folder's lock is free), stop a run left
        in this folder, then start the first failing command; returns its run id."""
        store = self.feed.store
        if self.owned:
            for stale in stale_demos(self.root):
                await self._clean(stale)
        for run in await store.list(adopt=False):
            if run.alive:
                await store.stop(run.run_id, int_s=5, term_s=3, kill_s=2)
        return (await store.start(self.first_argv(), env=self.run_env(), session=SESSION)).run_id

    async def _clean(self, stale: tuple[Path, int]) -> None:
        """Stop a dead console's demo: its live runs (as its run store names them), its tmux
        server, then remove its folder. ``stale``: (folder, its lock fd, held meanwhile)."""
        folder, fd = stale
        try:
            store = RunStore(self.node, home=str(folder))
            for run in await store.list(adopt=False):
                if run.alive:
                    await store.stop(run.run_id, int_s=2, term_s=2, kill_s=2)
            _kill_tmux(folder)
            shutil.rmtree(folder, ignore_errors=True)
        finally:
            os.close(fd)

    def run_env(self) -> dict[str, str]:
        """Environment of every demo run (first and relaunched): the GPU file, the home."""
        return {k: v for k, v in self.env.items() if k != "TMUX_TMPDIR"}

    async def stop(self) -> None:
        """Stop every live demo run, then the demo's tmux server; close the feed."""
        try:
            if self.feed is not None:
                try:
                    for run in await self.feed.store.list(adopt=False):
                        if run.alive:
                            await self.feed.store.stop(run.run_id, int_s=5, term_s=3, kill_s=2)
                finally:
                    await self.feed.close()
            tmux_server.kill_server(self.tmux_dir)
        finally:
            if self.owned:
                shutil.rmtree(self.home, ignore_errors=True)
                if self._lock_fd is not None:
                    os.close(self._lock_fd)
                    self._lock_fd = None


LOCK = "lock"


def _hold(path: Path) -> int:
    """Create ``path`` and hold an exclusive flock on it for this process's life (the fd is not
    inherited by children, so a tmux server started from here never keeps it)."""
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


def stale_demos(root: Path) -> list[tuple[Path, int]]:
    """Demo folders under ``root`` whose console is gone (their lock file is not flock'ed), each
    with the lock now held by this process (close the fd when done)."""
    out = []
    try:
        entries = list(root.iterdir())
    except OSError:
        return out
    for d in entries:
        lock = d / LOCK
        if not (d.is_dir() and d.name.split("-", 1)[0].isdigit() and lock.is_file()):
            continue
        try:
            fd = os.open(lock, os.O_RDWR)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)  # its console still runs
            continue
        out.append((d, fd))
    return out


def _kill_tmux(folder: Path) -> None:
    tmux_server.kill_server(folder / "tmux")
