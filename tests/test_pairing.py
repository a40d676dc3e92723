"""Pairing sessions, reconnects and truthful state (issue 7), on real parts: the loopback sshd,
tmux runs on the "node", the Textual console under Pilot. Expected values come from the
stand-in servers' own inputs (the numbers they print), never from the console."""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import signal
import sys
import textwrap
import time
from pathlib import Path

from fixtures.screen import shown
import pytest

from fixtures.console import console_for, wait_until
from fixtures.pairing import UNTIL, sshd_cut, sshd_restart
from mambaconsole.node import node_for
from mambaconsole.node.local import LocalNode
from mambaconsole.node.runs import RunStore
from mambaconsole.state import ConsoleState, LogLine, LogLines, RunsListed
from mambaconsole.session.feed import Feed, run_info

# Prints "n 00001" .. "n N" one line every 10 ms, then serves until SIGINT (exit 0).
TICKER = textwrap.dedent("""
    import signal, sys, time
    signal.signal(signal.SIGINT, lambda *a: sys.exit(0))
    n = int(sys.argv[1])
    for i in range(1, n + 1):
        print("n %05d" % i, flush=True)
        time.sleep(0.01)
    while True:
        time.sleep(0.05)
""")

# Prints "n 00001", "n 00002", ... one line every 10 ms until the file argv[1] exists, then
# serves until SIGINT (exit 0).


def _script(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def _console(node, **kw):
    # other engineers' simulated servers run on this shared machine: never adopt them
    if "adopt" in inspect.signature(Feed).parameters:
        kw.setdefault("adopt", False)
    return console_for(node, **kw)


async def test_reconnect_resumes_log_without_loss_or_repeat(ssh_home, tmp_path, no_config):
    """The node writes a numbered line every 10 ms; the sshd goes away (listener and every
    session) and comes back; the console's log holds every number exactly once, in order."""
    stop_file = tmp_path / "stop-writing"
    starter = node_for("gpu-node")
    run = await RunStore(starter).start([sys.executable, _script(tmp_path, "until.py", UNTIL), str(stop_file)])
    await starter.close()
    app = _console(node_for("gpu-node"))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.state.log_total >= 60, what="the first lines")
        sshd_cut(ssh_home.sshd)  # the writer is still writing: it stops only once stop_file exists
        await wait_until(pilot, lambda: not app.state.connected, what="the connection lost state")
        shown_at_cut = app.state.log_total
        await pilot.pause(1.2)
        header = shown(app.bar)
        assert "CONNECTION LOST" in header and " s ago" in header and "reconnecting" in header
        # a relaunch pressed while disconnected is refused: no confirm screen, no new run
        await pilot.press("R")
        await pilot.pause(0.2)
        assert type(app.screen).__name__ != "ConfirmScreen" and not app.relaunching
        sshd_restart(ssh_home.sshd)
        await wait_until(pilot, lambda: app.state.connected, timeout=30, what="the reconnect")
        await wait_until(pilot, lambda: app.state.log_total > shown_at_cut + 50, timeout=30,
                         what="lines after the reconnect")
        stop_file.touch()
        await pilot.pause(0.5)
        # what the node wrote, read off the run's log file itself
        written = open(run.log_path, encoding="utf-8").read().splitlines()
        last = len(written)
        assert written == ["n %05d" % i for i in range(1, last + 1)]
        await wait_until(pilot, lambda: app.state.log_total >= last, timeout=30, what=f"all {last} lines")
        await pilot.pause(0.3)
        assert app.state.run.run_id == run.run_id
        assert [ln.text for ln in app.state.log] == written
        assert app.feed.link.reconnects >= 1
        assert "CONNECTION LOST" not in shown(app.bar)
    async with LocalNode() as local:
        runs = await RunStore(local).list(adopt=False)
        assert [r.run_id for r in runs if not r.adopted] == [run.run_id]  # the refused relaunch started nothing
        await RunStore(local).stop(run.run_id, int_s=5)


async def test_reconnect_follows_a_run_relaunched_meanwhile(ssh_home, tmp_path, no_config):
    """While this console is disconnected its pair relaunches; after the reconnect the console
    follows the new run, says so (and by whom), and shows only the new run's log."""
    script = _script(tmp_path, "ticker.py", TICKER)
    starter = node_for("gpu-node")
    first = await RunStore(starter).start([sys.executable, script, "5"])
    await starter.close()
    app = _console(node_for("gpu-node"))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.state.log_total == 5, what="run 1's log")
        sshd_cut(ssh_home.sshd)
        await wait_until(pilot, lambda: not app.state.connected, what="the connection lost state")
        async with LocalNode() as local:  # the pair, on the node itself
            store = RunStore(local)
            await store.stop(first.run_id, int_s=5)
            second = await store.start([sys.executable, script, "3"], launched_by="bob@laptop")
        sshd_restart(ssh_home.sshd)
        await wait_until(pilot, lambda: app.state.run and app.state.run.run_id == second.run_id, timeout=30,
                         what="the new run")
        await wait_until(pilot, lambda: app.state.log_total == 3, what="run 2's log")
        assert [ln.text for ln in app.state.log] == ["n 00001", "n 00002", "n 00003"]
        # the header is redrawn at most 30 times a second while lines arrive: once drawn
        await wait_until(pilot, lambda: f"now following run {second.run_id}" in shown(app.bar), timeout=2,
                         what="the header's notice")
        header = shown(app.bar)
        assert f"now following run {second.run_id}" in header and "bob@laptop" in header
    async with LocalNode() as local:
        await RunStore(local).stop(second.run_id, int_s=5)


# ------------------------------------------------------------------- truthful state

# Prints one line, then serves until SIGINT.
QUIET = textwrap.dedent("""
    import signal, sys, time
    signal.signal(signal.SIGINT, lambda *a: sys.exit(0))
    print("loaded", flush=True)
    while True:
        time.sleep(0.05)
""")


async def test_sigkill_is_dead_with_exit_status_never_running(node_home, tmp_path, no_config):
    async with LocalNode() as node:
        store = RunStore(node)
        run = await store.start([sys.executable, _script(tmp_path, "quiet.py", QUIET)])
        app = _console(node)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: app.state.log_total == 1, what="the first line")
            assert app.state.status == "starting"
            os.kill(run.pid, signal.SIGKILL)
            seen = []

            def dead():
                seen.append(app.state.status)
                return app.state.status == "dead" and app.state.run.exit_code is not None

            await wait_until(pilot, dead, what="the dead state")
            for _ in range(6):  # it stays dead on later polls
                await pilot.pause(0.2)
                seen.append(app.state.status)
            after = seen[next(i for i, w in enumerate(seen) if w == "dead"):]
            assert set(after) == {"dead"}
            assert app.state.run.exit_code == 128 + signal.SIGKILL
            assert f"DEAD exit {128 + signal.SIGKILL}" in shown(app.bar)
        rec = await store.get(run.run_id)
        assert (rec.state, rec.exit_code, rec.record.get("signal")) == ("exited", 137, "SIGKILL")


async def test_server_gone_without_status_is_marked_lost(node_home, tmp_path):
    """The wrapper and the server both die by SIGKILL (nobody records an exit): the store
    detects the pid is gone and writes the run down as lost, for every console to see."""
    async with LocalNode() as node:
        store = RunStore(node)
        run = await store.start([sys.executable, _script(tmp_path, "quiet.py", QUIET)])
        status_path = Path(run.run_dir) / "status.json"
        wrapper = json.loads(status_path.read_text())["wrapper_pid"]
        os.kill(wrapper, signal.SIGKILL)
        os.kill(run.pid, signal.SIGKILL)
        for _ in range(100):
            rec = await store.get(run.run_id)
            if rec.state != "exiting":
                break
            await asyncio.sleep(0.05)
        assert rec.state == "lost" and not rec.alive
        assert str(run.pid) in rec.record["error"]
        on_disk = json.loads(status_path.read_text())
        assert on_disk["state"] == "lost" and on_disk["ended"]
        assert run_info(rec).state == "dead"


async def test_stale_log_trap_new_run_never_started(node_home, tmp_path, no_config):
    """A previous run's log exists; the new launch cannot start its program. The console says
    the new run never started and does not show the old log as the new one."""
    async with LocalNode() as node:
        store = RunStore(node)
        old = await store.start([sys.executable, "-c", "print('old run line 1'); print('old run line 2')"])
        for _ in range(200):
            if (await store.get(old.run_id)).state == "exited":
                break
            await asyncio.sleep(0.05)
        missing = str(tmp_path / "no-such-venv" / "bin" / "python")
        new = await store.start([missing, "-m", "sglang.launch_server"])
        app = _console(node)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: app.state.run and app.state.run.run_id == new.run_id, what="the new run")
            await wait_until(pilot, lambda: app.state.log_total >= 1, what="the new run's log")
            assert app.state.status == "never started"
            # the panes are redrawn from the log at most LOG_FRAME_S after the state took it
            await wait_until(pilot, lambda: "reading" not in shown(app.bar), what="the header once the log is read")
            header = shown(app.bar)
            # the one-line header names the program by its path's end; the log has it whole
            tail = "/".join(Path(missing).parts[-3:])
            assert "NEVER STARTED" in header and "the run never started" in header and tail in header
            texts = [ln.text for ln in app.state.log]
            assert not any("old run line" in t for t in texts)
            assert any(missing in t for t in texts)  # the new run's own log says why
            assert app.state.log_run_id == new.run_id
            assert f"log of run {new.run_id}" in shown(app.log_pane.query_one("#log-title"))


async def test_log_silent_while_alive_is_flagged_after_a_bound(node_home, tmp_path):
    """The node reports how long the log has not grown; the console flags it past the bound
    and clears the flag when a line arrives."""
    async with LocalNode() as node:
        store = RunStore(node)
        run = await store.start([sys.executable, _script(tmp_path, "quiet.py", QUIET)])
        await asyncio.sleep(1.5)
        rec = await store.get(run.run_id)
        assert rec.state == "running" and rec.record["log_idle_s"] >= 1.0
        log_size = os.path.getsize(run.log_path)
        assert rec.record["log_size"] == log_size == len("loaded\n")
        now = [1000.0]
        st = ConsoleState("h", clock=lambda: now[0], log_silent_s=60.0)
        st.apply(RunsListed((run_info(rec),), rec.run_id))
        idle = rec.record["log_idle_s"]
        assert st.log_silent_for() is None
        now[0] += 61.0 - idle  # the log has now been silent just over the bound
        assert st.log_silent_for() == pytest.approx(61.0)
        st.apply(LogLines(rec.run_id, (LogLine(rec.run_id, 0, "loaded"),)))
        assert st.log_silent_for() is None
        await store.stop(run.run_id, int_s=5)


# ------------------------------------------------------------------- relaunch lock

# Prints one line; on SIGINT takes 2 s to shut down (a server freeing its GPU memory).
SLOW_STOP = textwrap.dedent("""
    import signal, sys, time
    def bye(*a):
        time.sleep(2.0)
        sys.exit(0)
    signal.signal(signal.SIGINT, bye)
    print("serving", flush=True)
    while True:
        time.sleep(0.05)
""")


async def test_two_consoles_relaunch_together_make_one_run(ssh_home, tmp_path, no_config):
    """Two consoles on one node over the loopback sshd press relaunch together: exactly one
    new run; the other shows who holds the lock and since when, and starts nothing."""
    from mambaconsole.node.runs import console_identity

    starter = node_for("gpu-node")
    first = await RunStore(starter).start([sys.executable, _script(tmp_path, "slow.py", SLOW_STOP)])
    await starter.close()
    a, b = _console(node_for("gpu-node")), _console(node_for("gpu-node"))
    async with a.run_test(size=(120, 40)) as pa, b.run_test(size=(120, 40)) as pb:
        for app, pilot in ((a, pa), (b, pb)):
            await wait_until(pilot, lambda: app.state.run and app.state.run.run_id == first.run_id
                             and app.state.log_total == 1, what="the first run")
        for pilot in (pa, pb):
            await pilot.press("R")
        for app, pilot in ((a, pa), (b, pb)):
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="the confirmation")
        await pa.press("y")
        await wait_until(pa, lambda: a.state.phase is not None and a.state.phase.name in ("stop", "wait-gpu"),
                         what="console A holding the lock")
        await pb.press("y")
        await wait_until(pb, lambda: b.state.notice and "relaunch refused" in b.state.notice, timeout=30,
                         what="console B refused")
        header = shown(b.bar)
        assert f"relaunch lock held by {console_identity()}" in header and "since" in header
        await wait_until(pa, lambda: a.state.run and a.state.run.run_id != first.run_id, timeout=40,
                         what="A's new run")
        new_id = a.state.run.run_id
        await wait_until(pb, lambda: b.state.run and b.state.run.run_id == new_id, timeout=20,
                         what="B following the new run")
        # B, pressing again for the run it saw, is told it was already replaced
        stale_view = next(r for r in b.state.runs if r.run_id == first.run_id)
        from mambaconsole.session import relaunch
        with pytest.raises(Exception) as err:
            await relaunch.relaunch(b.feed, stale_view, list(first.argv), lambda *x: None)
        assert f"already replaced by run {new_id}" in str(err.value)
    async with LocalNode() as local:
        store = RunStore(local)
        ours = [r for r in await store.list(adopt=False) if not r.adopted]
        assert [r.run_id for r in ours] == [first.run_id, new_id]
        await store.stop(new_id, int_s=5)


async def test_stale_lock_breaks_only_with_confirmation(ssh_home, tmp_path):
    """A console took the lock over SSH and its connection went away: once older than the
    bound the lock is reported breakable, is not taken silently, and breaks when confirmed."""
    from mambaconsole.node.runs import LockHeld

    gone = node_for("gpu-node")
    held = await RunStore(gone).acquire_lock("alice@laptop")
    assert held["session_kind"] == "ssh"
    other = node_for("gpu-node")
    store = RunStore(other)
    with pytest.raises(LockHeld) as err:  # alice's session is alive: not breakable, whatever its age
        await store.acquire_lock("bob@desk", stale_s=0.0, break_stale=held)
    assert not err.value.breakable and "alice@laptop" in str(err.value)
    await gone.close()  # alice's laptop drops off
    for _ in range(100):
        with pytest.raises(LockHeld) as err:
            await store.acquire_lock("bob@desk", stale_s=0.5)
        if err.value.breakable:
            break
        await asyncio.sleep(0.05)
    assert err.value.breakable and "alice@laptop" in str(err.value) and "confirmation" in str(err.value)
    lock_file = Path(ssh_home.sshd.node_home) / "relaunch.lock"
    assert json.loads(lock_file.read_text())["holder"] == "alice@laptop"  # still hers
    mine = await store.acquire_lock("bob@desk", stale_s=0.5, break_stale=err.value.lock)
    assert mine["holder"] == "bob@desk" and mine["broke"]["holder"] == "alice@laptop"
    assert await store.release_lock(mine)
    await other.close()


async def test_console_breaks_a_stale_lock_only_after_confirming(node_home, tmp_path, no_config):
    """A lock left by a console whose session is gone, an hour old: relaunch is refused and
    the console asks; answering no leaves the lock, answering yes breaks it and relaunches."""
    import subprocess

    async with LocalNode() as node:
        store = RunStore(node)
        first = await store.start([sys.executable, _script(tmp_path, "quiet.py", QUIET)])
        gone = subprocess.Popen(["true"])
        gone.wait()
        lock_file = node_home / "relaunch.lock"
        lock_file.write_text(json.dumps({"holder": "carol@old-laptop", "pid": 4242, "since": time.time() - 3600,
                                         "token": "t", "session_pid": gone.pid}))
        app = _console(node)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: app.state.run and app.state.run.run_id == first.run_id)
            for answer in ("n", "y"):
                await pilot.press("R")
                await wait_until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
                await pilot.press("y")  # relaunch: yes
                await wait_until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen"
                                 and "stale relaunch lock" in str(app.screen.question), what="the break question")
                assert "carol@old-laptop" in app.screen.question
                await pilot.press(answer)
                if answer == "n":
                    await pilot.pause(0.5)
                    assert json.loads(lock_file.read_text())["holder"] == "carol@old-laptop"
                    assert [r.run_id for r in await store.list(adopt=False) if not r.adopted] == [first.run_id]
            await wait_until(pilot, lambda: app.state.run and app.state.run.run_id != first.run_id, timeout=40,
                             what="the new run")
            await wait_until(pilot, lambda: not app.relaunching, what="the relaunch to finish")
        assert not lock_file.exists()  # released after the relaunch
        new_id = app.state.run.run_id
        assert [r.run_id for r in await store.list(adopt=False) if not r.adopted] == [first.run_id, new_id]
        await store.stop(new_id, int_s=5)
