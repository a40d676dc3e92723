"""``mambaconsole --demo``: the console on the simulated node, no GPU and no SSH.

Starts the seed scenario's first failing command (``extra_buffer`` with default caps, which
OOMs while allocating the Mamba cache) as a run in tmux, with the simulated SGLang
(``python -m mambaconsole.sim``), and opens the console on it through ``LocalNode``. The demo
lives under its own ``MAMBACONSOLE_HOME`` in the user cache dir
(``platformdirs.user_cache_dir("mambaconsole")/demo``), with its own tmux server
(``TMUX_TMPDIR`` inside it), never mixed with real runs. Quitting stops the demo's runs and
its tmux server.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from mambaconsole.node.local import LocalNode
from mambaconsole.node.runs import RunStore
from mambaconsole.ui.feed import Feed
from mambaconsole.ui.settings import HostSettings

SESSION = "demo"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Demo:
    """The demo's node, store and processes. ``home`` defaults to the user cache dir;
    ``speed`` is the sim's time scale (tests run it faster)."""

    def __init__(self, home: Path | None = None, *, version: str = "0.5.11", speed: float = 1.0, seed: int = 0,
                 extra_env: dict[str, str] | None = None) -> None:
        from mambaconsole.sim import demo as sim_demo

        self.sim = sim_demo
        self.home = sim_demo.prepare_home(home)
        self.version, self.speed, self.seed = version, speed, seed
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
        os.environ.pop("TMUX", None)

    def first_argv(self) -> list[str]:
        """``python -m mambaconsole.sim --sim-... <the seed scenario's first failing SGLang args>``."""
        return self.sim.sim_command(self.sim.first_failing_argv(self.version, port=self.port),
                                    version=self.version, seed=self.seed, speed=self.speed)

    def make_feed(self) -> Feed:
        """The demo's feed: LocalNode, the demo home, the sim's resolver and GPU file."""
        self.apply_env()
        self.node = LocalNode("demo")
        settings = HostSettings(python=sys.executable, module="mambaconsole.sim", session=SESSION, port=self.port,
                                poll_s=1.0, env=self.run_env())
        self.feed = Feed(self.node, settings, home=str(self.home), simulated=True, adopt=False,
                         sim_gpu_file=self.env.get("MAMBACONSOLE_SIM_GPU"))
        return self.feed

    async def start(self) -> str:
        """Stop a demo left running by a killed console, then start the first failing command;
        returns its run id."""
        store = self.feed.store
        for run in await store.list(adopt=False):
            if run.alive:
                await store.stop(run.run_id, int_s=5, term_s=3, kill_s=2)
        return (await store.start(self.first_argv(), env=self.run_env(), session=SESSION)).run_id

    def run_env(self) -> dict[str, str]:
        """Environment of every demo run (first and relaunched): the GPU file, the home."""
        return {k: v for k, v in self.env.items() if k != "TMUX_TMPDIR"}

    async def stop(self) -> None:
        """Stop every live demo run, then the demo's tmux server; close the feed."""
        if self.feed is not None:
            try:
                for run in await self.feed.store.list(adopt=False):
                    if run.alive:
                        await self.feed.store.stop(run.run_id, int_s=5, term_s=3, kill_s=2)
            finally:
                await self.feed.close()
        subprocess.run(["tmux", "kill-server"], env={**os.environ, **self.env}, capture_output=True, timeout=10)


def run(args) -> int:
    """``mambaconsole --demo [--read-only]``."""
    from mambaconsole.ui.app import ConsoleApp

    demo = Demo()
    feed = demo.make_feed()
    app = ConsoleApp(feed, read_only=bool(getattr(args, "read_only", False)), poll_s=1.0, prepare=demo.start,
                     on_quit=demo.stop, theme=getattr(args, "theme", None))
    return int(app.run() or 0)
