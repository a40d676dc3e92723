"""The relaunch loop, step by step, each step reported to ``phase(name, text)``:
take the node's relaunch lock → stop the old server → wait until its processes no longer hold
GPU memory → start the new run in tmux → follow it to ready or failure.

The steps are the node layer's (:mod:`mambaconsole.node.runs`); this module only orders them
and reports them. No Textual here."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from mambaconsole.errors import ConsoleError
from mambaconsole.state import RunInfo

Phase = Callable[[str, str], None]
#: seconds to wait for the old server's processes to release GPU memory
GPU_FREE_TIMEOUT = 120.0
#: seconds to follow a new run to ready or failure before handing it to the pollers
FOLLOW_TIMEOUT = 900.0


def _runs_api():
    try:
        from mambaconsole.node import runs  # type: ignore[attr-defined]
    except ImportError:
        raise ConsoleError("starting and stopping runs needs mambaconsole.node.runs (not in this build)") from None
    return runs


async def stop(feed, run: RunInfo, phase: Phase) -> None:
    runs = _runs_api()
    phase("stop", f"stopping run {run.run_id} (SIGINT → SIGTERM → SIGKILL)")
    await runs.stop_run(feed.node, run.run_id, home=feed.home or None)


async def wait_gpu_free(feed, pids: set[int], phase: Phase, timeout: float = GPU_FREE_TIMEOUT) -> None:
    if not pids:
        return
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        snap = await feed.gpu()
        held = [p for p in snap.processes if p.pid in pids]
        if not snap.available or not held:
            return
        phase("wait-gpu", f"waiting for GPU memory: {sum(p.used_mib for p in held) / 1024:.1f} GiB still held by "
                          f"{', '.join(str(p.pid) for p in held)} ({time.monotonic() - t0:.0f} s)")
        await asyncio.sleep(1.0)
    raise ConsoleError(f"the old server's processes still hold GPU memory after {timeout:.0f} s; not starting")


async def relaunch(feed, old: RunInfo | None, argv: list[str], phase: Phase) -> str:
    """Stop ``old`` (when running) and start ``argv`` as a new run; returns the new run id."""
    runs = _runs_api()
    phase("lock", "taking the node's relaunch lock")
    async with runs.relaunch_lock(feed.node, home=feed.home or None):
        if old is not None and old.state not in ("exited", "dead", "never_started"):
            await stop(feed, old, phase)
            await wait_gpu_free(feed, set(old.pids) | ({old.pid} if old.pid else set()), phase)
        phase("start", "starting the new run in tmux")
        new_id = await runs.start_run(feed.node, argv, python=feed.settings.python, module=feed.settings.module,
                                      session=feed.settings.session, env=feed.settings.env,
                                      workdir=feed.settings.workdir, home=feed.home or None)
    phase("follow", f"run {new_id} started; following it to ready or failure")
    return new_id
