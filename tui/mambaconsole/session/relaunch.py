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

Phase = Callable[..., None]  # phase(name, text[, run_id])
#: seconds to wait for the old server's processes to release GPU memory
GPU_FREE_TIMEOUT = 120.0
#: seconds to wait for the console's GPU stream's next sample before taking one of its own
GPU_SAMPLE_WAIT = 5.0
#: seconds to follow a new run to ready or failure before handing it to the pollers
FOLLOW_TIMEOUT = 900.0


def launch_argv(settings, args: list[str]) -> list[str]:
    """``python -m module ARGS`` for SGLang args, or ``args`` as they are when they already
    name a program (an edited full argv)."""
    if args and not args[0].startswith("-"):
        return list(args)
    return [settings.python, "-m", settings.module, *args]


async def stop(feed, run: RunInfo, phase: Phase) -> None:
    phase("stop", f"stopping run {run.run_id} (SIGINT → SIGTERM → SIGKILL)")
    await feed.store.stop(run.run_id)


async def wait_gpu_free(feed, pids: set[int], phase: Phase, timeout: float = GPU_FREE_TIMEOUT) -> None:
    """Return once no process in ``pids`` holds GPU memory (or the node has no GPU readings);
    samples come from the console's GPU stream (:meth:`Feed.next_gpu`), at most one a second.
    Raises ConsoleError after ``timeout`` seconds."""
    if not pids:
        return
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        asked = time.monotonic()
        snap = await feed.next_gpu(wait=GPU_SAMPLE_WAIT)
        held = [p for p in snap.processes if p.pid in pids]
        if not snap.available or not held:
            return
        phase("wait-gpu", f"waiting for GPU memory: {sum(p.used_mib for p in held) / 1024:.1f} GiB still held by "
                          f"{', '.join(str(p.pid) for p in held)} ({time.monotonic() - t0:.0f} s)")
        await asyncio.sleep(max(0.0, 1.0 - (time.monotonic() - asked)))  # at most one sample a second
    raise ConsoleError(f"the old server's processes still hold GPU memory after {timeout:.0f} s; not starting")


async def relaunch(feed, old: RunInfo | None, argv: list[str], phase: Phase, *, break_stale=None,
                   run_env: tuple[dict[str, str], str | None] | None = None) -> str:
    """Stop ``old`` (when running) and start ``argv`` as a new run; returns the new run id.
    The new run gets ``run_env`` (extra environment, working folder; the editor's) or else
    ``old``'s own (:meth:`Feed.run_environment`: its ``env.json`` and ``cwd``).
    Raises :class:`mambaconsole.node.runs.LockHeld` (naming the holder and since when) when
    another console is relaunching, and ConsoleError when the link to the node is down or
    ``old`` was already replaced by another console (its pair pressed relaunch too): nothing is
    stopped or started then, so two consoles relaunching together make exactly one new run.
    ``break_stale``: the stale lock (``LockHeld.lock``) the user confirmed breaking."""
    link = getattr(feed, "link", None)
    if link is not None:
        link.require_up("relaunch")  # never act on stale data
    phase("lock", "taking the node's relaunch lock")
    lock = await feed.store.acquire_lock(break_stale=break_stale)
    try:
        if old is not None:
            # under the lock, re-read the node: act only if `old` is still the current run
            listed = await feed.runs()
            if listed.current is not None and listed.current != old.run_id:
                cur = next((r for r in listed.runs if r.run_id == listed.current), None)
                who = f" by {cur.launched_by}" if cur is not None and cur.launched_by else ""
                raise ConsoleError(f"run {old.run_id} was already replaced by run {listed.current} "
                                   f"(launched{who}); not relaunching again")
        if old is not None and old.state not in ("exited", "dead", "never_started"):
            await stop(feed, old, phase)
            await wait_gpu_free(feed, set(old.pids) | ({old.pid} if old.pid else set()), phase)
        phase("start", "starting the new run in tmux")
        s = feed.settings
        env, cwd = feed.run_environment(old) if run_env is None else run_env
        new = await feed.store.start(launch_argv(s, argv), env=env or None, cwd=cwd, session=s.session, lock=lock)
        # said at once (no await in between): the console must know this run is its own
        phase("follow", f"run {new.run_id} started; following it to ready or failure", new.run_id)
    finally:
        await feed.store.release_lock(lock)
    return new.run_id
