"""Runs in tmux: launch, log from the first line, exit code, stop, adopt, hostile argv, lock.

The stand-in server is a small Python script; runs go through LocalNode and through the real
sshd (gpu-node)."""

import json
import asyncio
import os
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from mambaconsole.node import connect, tmux_server
from mambaconsole.node.local import LocalNode
from mambaconsole.node.runs import LockHeld, RunError, RunStore

SERVER = textwrap.dedent("""
    import os, sys, time, signal
    print("first line of the server", flush=True)
    for i, a in enumerate(sys.argv[1:]):
        print("arg", i, repr(a), flush=True)
    if os.environ.get("STANDIN_EXIT"):
        sys.exit(int(os.environ["STANDIN_EXIT"]))
    def bye(sig, frame):
        print("got", signal.Signals(sig).name, flush=True)
        sys.exit(0 if os.environ.get("STANDIN_OBEY") else None)
    signal.signal(signal.SIGINT, bye if os.environ.get("STANDIN_OBEY") else signal.SIG_IGN)
    print("ready", flush=True)
    while True:
        time.sleep(0.05)
""")


def wait_for(pred, timeout=30.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def tmux(*args: str, **kw) -> subprocess.CompletedProcess:
    """``tmux ARGS`` on the test's own server (node_home / ssh_home set its TMUX_TMPDIR)."""
    return tmux_server.run(os.environ["TMUX_TMPDIR"], *args, **kw)


def read(path):
    return Path(path).read_bytes() if Path(path).exists() else b""


@pytest.fixture
def server_script(tmp_path):
    p = tmp_path / "standin_server.py"
    p.write_text(SERVER)
    return p


async def test_launch_log_from_first_line_exit_code(node_home, server_script):
    async with LocalNode() as node:
        store = RunStore(node)
        run = await store.start([sys.executable, str(server_script), "x"], env={"STANDIN_EXIT": "3"})
        assert run.run_dir.startswith(str(node_home))
        assert json.loads(Path(run.run_dir, "argv.json").read_text()) == [sys.executable, str(server_script), "x"]
        assert json.loads(Path(run.run_dir, "env.json").read_text()) == {"STANDIN_EXIT": "3"}
        done = wait_for(lambda: json.loads(Path(run.run_dir, "status.json").read_text()).get("state") == "exited",
                        what="exit")
        assert done
        run = await store.get(run.run_id)
        assert run.state == "exited" and run.exit_code == 3 and run.pid
        assert run.ended >= run.started
        log = read(run.log_path)
        assert log.splitlines()[0] == b"first line of the server"
        assert log.splitlines()[1] == b"arg 0 'x'"
        # the tmux window stays (remain-on-exit): its dead pane still shows the output and the exit
        def pane_text():
            return tmux("capture-pane", "-p", "-J", "-S", "-", "-t", run.pane,
                        capture_output=True, text=True).stdout

        wait_for(lambda: tmux("display-message", "-p", "-t", run.pane, "#{pane_dead}",
                              capture_output=True, text=True).stdout.strip() == "1", what="dead pane")
        wait_for(lambda: f"run {run.run_id} exited with code 3" in pane_text(), what="exit line in the pane")
        assert pane_text().startswith("first line of the server")


async def test_stop_escalates_and_records(ssh_home, server_script):
    async with await connect("gpu-node") as node:
        store = RunStore(node)
        # ignores SIGINT: stop must escalate to SIGTERM
        run = await store.start([sys.executable, str(server_script)])
        assert run.state == "running" and run.alive
        wait_for(lambda: b"ready" in read(run.log_path), what="ready")
        cmd = Path(f"/proc/{run.pid}/cmdline").read_bytes().split(b"\0")[:-1]
        assert cmd == [os.fsencode(a) for a in run.argv]
        stopped = await store.stop(run.run_id, int_s=0.5, term_s=5)
        assert stopped.state == "exited"
        assert stopped.record["signals_sent"] == ["SIGINT", "SIGTERM"]
        assert stopped.exit_code == 128 + 15 and stopped.record["signal"] == "SIGTERM"
        assert not Path(f"/proc/{run.pid}").exists()
        # a second, obedient server stops at SIGINT
        run2 = await store.start([sys.executable, str(server_script)], env={"STANDIN_OBEY": "1"})
        wait_for(lambda: b"ready" in read(run2.log_path), what="ready")
        stopped2 = await store.stop(run2.run_id, int_s=10)
        assert stopped2.record["signals_sent"] == ["SIGINT"] and stopped2.exit_code == 0
        assert b"got SIGINT" in read(run2.log_path)
        runs = await store.list(adopt=False)
        assert [r.run_id for r in runs] == [run.run_id, run2.run_id]
        # the stop is kept with the run: later listings say it was stopped, with what
        assert runs[0].record["stopped"]["signals"] == ["SIGINT", "SIGTERM"]
        assert runs[0].state_text == "exited 143 (SIGTERM, stopped)"
        assert runs[1].record["stopped"]["signals"] == ["SIGINT"]
        # a run that ends by itself was not stopped
        run3 = await store.start([sys.executable, "-c", "print('bye')"])
        wait_for(lambda: b"bye" in read(run3.log_path), what="exit")
        for _ in range(100):
            done = await store.get(run3.run_id)
            if done.state == "exited":
                break
            await asyncio.sleep(0.05)
        assert done.state == "exited" and "stopped" not in done.record and done.state_text == "exited 0"
        with pytest.raises(RunError):
            await store.get("no-such-run")


async def test_hostile_argv_reaches_server_literally(ssh_home, server_script):
    canary = Path(f"/tmp/pwned-{uuid.uuid4().hex}")
    hostile = [
        f"; touch {canary}", f"$(touch {canary})", f"`touch {canary}`", f"'; touch {canary}; '",
        f'"; touch {canary}; "', f"a\nb\ntouch {canary}", "--flag=value with spaces",
        "ünïcødé ✓ 模型", f"&& touch {canary} ||", "*", "~", "$HOME", "\\", "",
    ]
    async with await connect("gpu-node") as node:
        store = RunStore(node)
        run = await store.start([sys.executable, str(server_script), *hostile], env={"WEIRD": f"$(touch {canary})"})
        wait_for(lambda: b"ready" in read(run.log_path), what="ready")
        cmd = Path(f"/proc/{run.pid}/cmdline").read_bytes().split(b"\0")[:-1]
        assert cmd == [os.fsencode(a) for a in [sys.executable, str(server_script), *hostile]]
        env = dict(e.split(b"=", 1) for e in Path(f"/proc/{run.pid}/environ").read_bytes().split(b"\0") if b"=" in e)
        assert env[b"WEIRD"] == f"$(touch {canary})".encode()
        await store.stop(run.run_id, int_s=0.2, term_s=5)
    assert not canary.exists()


async def test_adopt_server_started_by_hand_in_tmux(ssh_home, tmp_path, server_script):
    # a fake "sglang" package so the hand-started process looks like `python -m sglang.launch_server`
    pkg = tmp_path / "fake" / "sglang"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "launch_server.py").write_text(server_script.read_text())
    # started by hand: a shell in a tmux pane, the user types the command
    tmux("new-session", "-d", "-s", "byhand", "-x", "150", "-y", "40", check=True)
    tag = uuid.uuid4().hex  # this machine may run other sglang servers: adopt only ours
    cmd = f"cd {tmp_path / 'fake'} && STANDIN_OBEY=1 {sys.executable} -m sglang.launch_server --port {tag}"
    tmux("send-keys", "-t", "byhand", cmd, "Enter", check=True)

    def pane_text():
        return tmux("capture-pane", "-p", "-t", "byhand", capture_output=True, text=True).stdout

    wait_for(lambda: "ready" in pane_text(), what="hand-started server")
    async with await connect("gpu-node") as node:
        store = RunStore(node)
        mine = [["-m", "sglang.launch_server", "--port", tag]]
        runs = await store.list(adopt=True, patterns=mine)
        adopted = [r for r in runs if r.adopted]
        assert len(adopted) == 1
        run = adopted[0]
        assert run.state == "adopted" and run.argv == [sys.executable, "-m", "sglang.launch_server", "--port", tag]
        assert run.record["session"] == "byhand"
        log = read(run.log_path)
        assert b"first line of the server" in log  # the scrollback
        # what follows is appended to the same log
        tmux("send-keys", "-t", "byhand", "C-c", "", check=True)
        wait_for(lambda: b"got SIGINT" in read(run.log_path), what="follow-up output in the adopted log")
        # listing again does not adopt it twice
        wait_for(lambda: not Path(f"/proc/{run.pid}").exists(), what="exit")
        again = await store.list(adopt=True, patterns=mine)
        assert [r.run_id for r in again if r.adopted] == [run.run_id]
        assert again[-1].state == "gone"


async def test_stop_adopted_server(ssh_home, tmp_path, server_script):
    pkg = tmp_path / "fake" / "sglang"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "launch_server.py").write_text(server_script.read_text())
    log = tmp_path / "nohup.out"
    with open(log, "wb") as out:
        tag = uuid.uuid4().hex
        proc = subprocess.Popen([sys.executable, "-m", "sglang.launch_server", tag], cwd=tmp_path / "fake",
                                stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ, STANDIN_OBEY="1"))
    try:
        wait_for(lambda: b"ready" in read(log), what="nohup server")
        async with await connect("gpu-node") as node:
            store = RunStore(node)
            [run] = [r for r in await store.list(adopt=True, patterns=[["-m", "sglang.launch_server", tag]]) if r.adopted]
            assert run.pid == proc.pid and run.log_path == str(log)
            stopped = await store.stop(run.run_id, int_s=10)
            assert stopped.state == "gone" and stopped.record["signals_sent"] == ["SIGINT"]
            assert proc.wait(5) == 0
    finally:
        if proc.poll() is None:
            proc.kill()


async def test_relaunch_lock(node_home):
    async with LocalNode() as node:
        store = RunStore(node)
        lock = await store.acquire_lock("alice@laptop")
        with pytest.raises(LockHeld) as err:
            await store.acquire_lock("bob@desk")
        assert "alice@laptop" in str(err.value) and "\n" not in str(err.value)
        assert await store.release_lock(lock)
        lock2 = await store.acquire_lock("bob@desk")
        assert lock2["holder"] == "bob@desk"
        # an old lock whose holder's session still runs (this process) is never breakable
        path = node_home / "relaunch.lock"
        data = json.loads(path.read_text())
        data["since"] -= 3600
        path.write_text(json.dumps(data))
        with pytest.raises(LockHeld) as err:
            await store.acquire_lock("carol@x", stale_s=60, break_stale=data)
        assert not err.value.breakable and "bob@desk" in str(err.value)
        # holder's session gone and older than the bound: stale, broken only when confirmed
        gone = subprocess.Popen(["true"])
        gone.wait()
        data["session_pid"] = gone.pid
        path.write_text(json.dumps(data))
        with pytest.raises(LockHeld) as err:
            await store.acquire_lock("carol@x", stale_s=60)
        assert err.value.breakable and "bob@desk" in str(err.value)
        assert json.loads(path.read_text())["holder"] == "bob@desk"  # nothing taken silently
        assert (await store.acquire_lock("carol@x", stale_s=60, break_stale=err.value.lock))["holder"] == "carol@x"


async def test_nul_byte_refused(node_home):
    async with LocalNode() as node:
        with pytest.raises(RunError) as err:
            await RunStore(node).start(["echo", "a\0b"])
    assert "NUL" in str(err.value)


async def test_missing_program_is_recorded(node_home):
    async with LocalNode() as node:
        store = RunStore(node)
        run = await store.start(["/nonexistent/python", "-m", "x"])
        run = await store.get(run.run_id)
        assert run.state == "exited" and run.exit_code == 127
        assert "No such file" in run.record["error"]


def test_default_adoption_patterns():
    from mambaconsole.agent.runs_agent import DEFAULT_PATTERNS, _matches

    yes = [
        ["/v/bin/python3", "-m", "sglang.launch_server", "--model-path", "m"],
        ["python", "-u", "-X", "faulthandler", "-m", "sglang.launch_server"],
        ["/v/bin/sglang", "serve", "--model-path", "m"],
        ["/v/bin/python3.12", "/v/bin/sglang", "serve"],
        ["python", "-m", "mambaconsole.sim", "--port", "30000"],
    ]
    no = [
        ["timeout", "40", "python", "-m", "sglang.launch_server"],  # the launcher, not the server
        ["bash", "-c", "python -m sglang.launch_server"],
        ["python", "-c", "import sglang.launch_server"],
        ["grep", "sglang serve"],
        ["python", "-m", "sglang.bench_serving"],
    ]
    assert [a for a in yes if not _matches(a, DEFAULT_PATTERNS)] == []
    assert [a for a in no if _matches(a, DEFAULT_PATTERNS)] == []


def test_runs_of_one_second_list_in_creation_order(tmp_path):
    """Run ids carry the second and 4 random hex digits: two runs started in one second are
    listed by their records' creation time, not by the random digits."""
    import json

    from mambaconsole.agent.runs_agent import op_list

    for rid, created in (("20261130-120000-ffff", 100.25), ("20261130-120000-0000", 100.75),
                         ("20261130-115959-9999", 99.5)):
        d = tmp_path / "runs" / rid
        d.mkdir(parents=True)
        (d / "argv.json").write_text(json.dumps(["python3", "-c", "pass"]))
        (d / "status.json").write_text(json.dumps({"state": "exited", "exit_code": 0, "created": created}))
    got = [r["run_id"] for r in op_list({"home": str(tmp_path)})]
    assert got == ["20261130-115959-9999", "20261130-120000-ffff", "20261130-120000-0000"]
