"""Console CPU while idle: the console on the demo's simulated node, serving (decode lines
every few seconds, GPU file, /server_info and /metrics polled), every poller on, for D seconds
(default 60). Measures the console process's CPU time (the sim and the node's agents are other
processes) as a percentage of one core; the same run measures an idle asyncio loop as a
baseline. Goal: under 3% of one core.

    .venv/bin/python bench/idle_cpu.py [SECONDS]
"""

from __future__ import annotations

import asyncio
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from mambaconsole.node import tmux_server
from mambaconsole.sim import demo as sim_demo
from mambaconsole.ui.app import ConsoleApp
from mambaconsole.session.demo import Demo


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def baseline(seconds: float) -> float:
    c0, t0 = cpu(), time.monotonic()
    await asyncio.sleep(seconds)
    return (cpu() - c0) / (time.monotonic() - t0) * 100


async def console(seconds: float) -> float:
    home = Path(tempfile.mkdtemp(prefix="mc-bench-"))
    demo = Demo(home, speed=1.0)

    async def start_working():
        await demo.feed.store.start(sim_demo.sim_command(sim_demo.working_argv(port=demo.port), speed=1.0),
                                    env=demo.run_env(), session="demo")

    app = ConsoleApp(demo.make_feed(), poll_s=2.0, prepare=start_working, on_quit=demo.stop)
    try:
        async with app.run_test(size=(120, 40)) as pilot:
            deadline = time.monotonic() + 60
            while app.state.status != "ready" and time.monotonic() < deadline:
                await pilot.pause(0.5)
            if app.state.status != "ready":
                raise SystemExit("idle_cpu: the simulated server did not become ready")
            await pilot.pause(3)
            c0, t0 = cpu(), time.monotonic()
            await pilot.pause(seconds)
            return (cpu() - c0) / (time.monotonic() - t0) * 100
    finally:
        tmux_server.kill_server(home / "tmux")
        shutil.rmtree(home, ignore_errors=True)


def main() -> int:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
    base = asyncio.run(baseline(min(seconds, 10.0)))
    pct = asyncio.run(console(seconds))
    print(f"idle asyncio loop: {base:.2f}% of one core; console serving the demo for {seconds:.0f} s: {pct:.2f}%")
    print(f"idle_cpu: console CPU = {pct:.2f}% of one core (goal 3.00%) {'PASS' if pct < 3.0 else 'FAIL'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
