"""``mambaconsole launch --break-stale``: the relaunch lock held by another process is broken
only when that holder is gone and the lock is older than the bound (the console's rule);
two real processes: a holder that takes the lock through RunStore, and the launch CLI."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.timeout(120)

HOLDER = textwrap.dedent("""
    import asyncio, sys
    from mambaconsole.node.local import LocalNode
    from mambaconsole.node.runs import RunStore

    async def main():
        async with LocalNode() as node:
            await RunStore(node).acquire_lock(sys.argv[1])
            print("locked", flush=True)
            await asyncio.sleep(600)

    asyncio.run(main())
""")
# a stand-in server that exits 0 at once: `python -m timeit -n 1 pass`
LAUNCH = ["launch", "local", "--python", sys.executable, "--module", "timeit"]
SERVER_ARGS = ["--", "-n", "1", "pass"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mambaconsole", *args], capture_output=True, text=True, timeout=60)


def _holder(name: str) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", HOLDER, name], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "locked"
    return p


def _age(lock_path, seconds: float) -> None:
    """The lock as it is ``seconds`` later: its ``since`` moved back (the node's clock is ours)."""
    data = json.loads(lock_path.read_text())
    data["since"] -= seconds
    lock_path.write_text(json.dumps(data))


def test_break_stale_only_when_the_holder_is_gone_and_the_lock_is_old(node_home):
    lock_path = node_home / "relaunch.lock"
    alice = _holder("alice@laptop")
    try:
        _age(lock_path, 3600)
        # the holder still runs: never broken, whatever its age
        r = _cli(*LAUNCH, "--break-stale", *SERVER_ARGS)
        assert r.returncode == 1 and "alice@laptop" in r.stderr and "wait for it to finish" in r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and r.stdout == ""
        assert json.loads(lock_path.read_text())["holder"] == "alice@laptop"
    finally:
        alice.send_signal(signal.SIGKILL)
        alice.wait()
    # holder gone, lock an hour old: stale; without the flag launch refuses and says how
    r = _cli(*LAUNCH, *SERVER_ARGS)
    assert r.returncode == 1 and "alice@laptop" in r.stderr and "--break-stale" in r.stderr
    assert json.loads(lock_path.read_text())["holder"] == "alice@laptop"
    assert not (node_home / "runs").exists() or not any((node_home / "runs").iterdir())
    # with the flag: broken (kept aside), the run started, our own lock released afterwards
    r = _cli(*LAUNCH, "--break-stale", *SERVER_ARGS)
    assert r.returncode == 0, r.stderr
    run_id = r.stdout.strip()
    assert (node_home / "runs" / run_id / "argv.json").exists()
    assert json.loads((node_home / "runs" / run_id / "argv.json").read_text()) == [
        sys.executable, "-m", "timeit", "-n", "1", "pass"]
    assert "broke the stale relaunch lock of alice@laptop" in r.stderr
    assert json.loads((node_home / "relaunch.lock.broken").read_text())["holder"] == "alice@laptop"
    assert not lock_path.exists()


def test_break_stale_refuses_a_young_lock_of_a_gone_holder(node_home):
    bob = _holder("bob@desk")
    bob.send_signal(signal.SIGKILL)
    bob.wait()
    r = _cli(*LAUNCH, "--break-stale", *SERVER_ARGS)
    assert r.returncode == 1 and "bob@desk" in r.stderr and "can be broken in" in r.stderr
    assert json.loads((node_home / "relaunch.lock").read_text())["holder"] == "bob@desk"
