"""The run store under faults (issue 13): a relaunch lock that always clears, exactly one server
from concurrent launches, a full store disk that never kills the server, files only the user can
read, no phantom run without tmux, launch's exit status. Real processes throughout: the launch
CLI, the node agent run as a file, tmux, a tmpfs as the small full disk."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mambaconsole.node.runs import AGENT_DIR

pytestmark = pytest.mark.timeout(180)

AGENT = str(AGENT_DIR / "runs_agent.py")

# a stand-in server: prints "up"; once the file argv[3] exists (when given) argv[1] lines of
# 1 KiB and "served"; serves until the file argv[2] exists, then prints "bye" and exits 0
SERVER = textwrap.dedent("""
    import os, sys, time
    n, stop = int(sys.argv[1]), sys.argv[2]
    print("up", flush=True)
    while len(sys.argv) > 3 and not os.path.exists(sys.argv[3]):
        time.sleep(0.05)
    for i in range(n):
        print("line %06d " % i + "x" * 1012, flush=True)
    print("served", flush=True)
    while not os.path.exists(stop):
        time.sleep(0.05)
    print("bye", flush=True)
""")


def _cli(*args: str, env: dict | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mambaconsole", *args], capture_output=True, text=True,
                          timeout=timeout, env=env)


def _server_module(tmp_path, text=SERVER) -> list[str]:
    """launch options running ``text`` as the server: ``python -m standin_server`` in tmp_path."""
    (tmp_path / "standin_server.py").write_text(text)
    return ["--python", sys.executable, "--module", "standin_server", "--cwd", str(tmp_path)]


def _launch(tmp_path, *server_args: str, env=None, extra=()):
    return _cli("launch", "local", *_server_module(tmp_path), *extra, "--", *server_args, env=env)


def _agent(op: str, req: dict, **kw) -> dict:
    p = subprocess.run([sys.executable, AGENT, op, json.dumps(req)], capture_output=True, text=True, timeout=30, **kw)
    return json.loads(p.stdout.strip().splitlines()[-1])


def _run_dirs(home: Path) -> list[Path]:
    runs = home / "runs"
    return sorted(p for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".")) if runs.exists() else []


def _pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


# -- 1. the relaunch lock ---------------------------------------------------------------------

ORPHAN = textwrap.dedent("""
    import os, sys, time
    agent, req = sys.argv[1], sys.argv[2]
    parent = os.getpid()
    if os.fork() == 0:
        while os.getppid() == parent:  # wait until the parent is gone: re-parented (PID 1 or a subreaper)
            time.sleep(0.01)
        os.execv(sys.executable, [sys.executable, agent, "lock", req])
    os._exit(0)
""")


@pytest.mark.parametrize("over_ssh", [True, False])
def test_an_orphaned_agent_takes_no_lock(node_home, over_ssh):
    """The SSH connection cut while the lock request was on its way: the agent, re-parented
    before it ran, must not take a lock whose holder (PID 1, or a subreaper) lives forever."""
    env = dict(os.environ)
    if over_ssh:
        env["SSH_CONNECTION"] = "127.0.0.1 50000 127.0.0.1 22"
    req = json.dumps({"holder": "alice@laptop", "pid": 4242})
    p = subprocess.run([sys.executable, "-c", ORPHAN, AGENT, req], capture_output=True, text=True, timeout=30, env=env)
    answer = json.loads(p.stdout.strip().splitlines()[-1])
    assert answer["ok"] is False and "nothing was locked" in answer["error"], answer
    assert not (node_home / "relaunch.lock").exists()


def test_a_lock_naming_pid_1_is_not_a_live_holder(node_home, tmp_path):
    """Locks written by the old agent after such a cut name ``session_pid: 1`` (with PID 1's own
    start ticks, so it 'always looks alive'): it is a gone holder, breakable once old."""
    ticks = int(Path("/proc/1/stat").read_text().rsplit(")", 1)[1].split()[19])
    (node_home / "relaunch.lock").write_text(json.dumps({
        "holder": "alice@laptop", "pid": 4242, "since": time.time() - 3600, "token": "t",
        "session_pid": 1, "session_start_ticks": ticks, "session_kind": "process"}))
    r = _launch(tmp_path, "0", str(tmp_path / "stop"), extra=["--break-stale", "--check-s", "0"])
    assert r.returncode == 0, r.stderr
    assert "broke the stale relaunch lock of alice@laptop" in r.stderr
    (tmp_path / "stop").touch()


@pytest.mark.parametrize("content", [b"", b"{\"holder\": \"al", b"[1, 2]"])
def test_an_empty_or_unreadable_lock_is_stale_at_once(node_home, tmp_path, content):
    lock = node_home / "relaunch.lock"
    lock.write_bytes(content)
    r = _launch(tmp_path, "0", str(tmp_path / "stop"), extra=["--check-s", "0"])
    assert r.returncode == 1 and "--break-stale" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert lock.read_bytes() == content and not _run_dirs(node_home)
    r = _launch(tmp_path, "0", str(tmp_path / "stop"), extra=["--break-stale", "--check-s", "0"])
    assert r.returncode == 0, r.stderr
    assert (node_home / "relaunch.lock.broken").read_bytes() == content and not lock.exists()
    assert len(_run_dirs(node_home)) == 1
    (tmp_path / "stop").touch()


def test_every_refusal_says_what_to_do(node_home, tmp_path):
    """A live holder: wait, or end the named session process."""
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import asyncio, sys
        from mambaconsole.node.local import LocalNode
        from mambaconsole.node.runs import RunStore
        async def main():
            async with LocalNode() as node:
                await RunStore(node).acquire_lock("bob@desk")
                print("locked", flush=True)
                await asyncio.sleep(600)
        asyncio.run(main())
    """)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        lock = json.loads((node_home / "relaunch.lock").read_text())
        assert lock["session_pid"] == holder.pid and lock["session_kind"] == "process"
        assert lock["boot_id"] == Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        r = _launch(tmp_path, "0", str(tmp_path / "stop"), extra=["--break-stale"])
        assert r.returncode == 1 and "bob@desk" in r.stderr
        assert "wait for it to finish" in r.stderr and f"pid {holder.pid}" in r.stderr
    finally:
        holder.kill()
        holder.wait()


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs (needs root or password-less sudo for mount: tests/run.sh runs as either)."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
    p = subprocess.run([*sudo, "mount", "-t", "tmpfs", "-o", f"size=1m,uid={os.getuid()},mode=0700", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if p.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {p.stderr.strip()}")
    yield mnt
    subprocess.run([*sudo, "umount", "-l", str(mnt)], capture_output=True)


def _fill(path: Path) -> Path:
    """Fill the file system of ``path`` to the last byte; returns the filler file."""
    filler = path / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError:
        pass
    finally:
        os.close(fd)
    return filler


def test_a_full_disk_leaves_no_empty_lock(small_disk, tmp_path, monkeypatch):
    home = small_disk / "store"
    home.mkdir()
    monkeypatch.setenv("MAMBACONSOLE_HOME", str(home))
    monkeypatch.setenv("TMUX_TMPDIR", str(tmp_path))
    _fill(small_disk)
    answer = _agent("lock", {"holder": "alice@laptop", "console_pid": os.getpid()})
    assert answer["ok"] is False and "No space left on device" in answer["error"], answer
    assert [p.name for p in home.iterdir()] == []  # no empty relaunch.lock, no temporary file


# -- 3. a full store disk never kills the server --------------------------------------------

def test_a_full_store_disk_never_kills_the_server(small_disk, tmp_path, monkeypatch):
    """The store's disk is full when the server writes 3 MiB: it keeps running (its pipe is
    drained), the record says how much of its output was lost and why, the log says where once
    space is back, the exit is recorded, and no status.json.tmp.* file is left."""
    home = small_disk / "store"
    tmux = tmp_path / "tmux"
    tmux.mkdir(mode=0o700)
    env = {**os.environ, "MAMBACONSOLE_HOME": str(home), "TMUX_TMPDIR": str(tmux)}
    env.pop("TMUX", None)
    stop, go = tmp_path / "stop", tmp_path / "go"
    n = 3072
    try:
        r = _launch(tmp_path, str(n), str(stop), str(go), env=env, extra=["--json", "--check-s", "0"])
        assert r.returncode == 0, r.stderr
        run_dir = Path(json.loads(r.stdout)["run_dir"])
        log = run_dir / "log"

        def status():
            return json.loads((run_dir / "status.json").read_text())

        deadline = time.monotonic() + 90
        while log.read_bytes() != b"up\n" and time.monotonic() < deadline:
            time.sleep(0.05)
        before = log.stat().st_size
        filler = _fill(small_disk)
        go.touch()
        printed = n * len(b"line 000000 " + b"x" * 1012 + b"\n") + len(b"served\n")
        # the wrapper says what it lost as soon as the output pauses
        while time.monotonic() < deadline and \
                status().get("log_lost_bytes", 0) + log.stat().st_size - before < printed:
            time.sleep(0.1)
        st = status()
        assert st["log_error"] == "No space left on device", st
        assert st["log_lost_bytes"] + log.stat().st_size - before == printed
        assert _pid_alive(st["pid"]), "the server died of the full disk"
        filler.unlink()  # space comes back; the server's last line lands after the line saying what was lost
        stop.touch()
        while status().get("state") != "exited" and time.monotonic() < deadline:
            time.sleep(0.1)
        st = status()
        assert st["state"] == "exited" and st["exit_code"] == 0, st
        text = log.read_bytes()
        assert text.endswith(b"bye\n")
        start = text.rindex(b"\n[mambaconsole]")
        note = text[start + 1:].split(b"\n")[0].decode()
        assert "bytes of the server's output were lost here" in note and "No space left on device" in note
        lost = int(note.split()[1])
        assert lost == st["log_lost_bytes"]
        assert (start - before) + lost == printed  # every byte printed is in the log or counted lost
        assert not list(run_dir.glob("*.tmp.*"))
        r = _cli("runs", "local", "--json", env=env)
        (row,) = [row for row in json.loads(r.stdout) if row["run_id"] == run_dir.name]
        assert row["state"] == "exited" and row["log_lost_bytes"] == lost
        assert row["log_error"] == "No space left on device"
    finally:
        stop.touch()
        subprocess.run(["tmux", "kill-server"], env=env, capture_output=True)


# -- 5. the store is the user's alone ---------------------------------------------------------

def test_store_files_are_the_users_alone(node_home, tmp_path):
    os.chmod(node_home, 0o755)  # a store an older version made
    r = _launch(tmp_path, "1", str(tmp_path / "stop"), extra=["--check-s", "0"])
    assert r.returncode == 0, r.stderr
    (tmp_path / "stop").touch()
    (run_dir,) = _run_dirs(node_home)
    for d in (node_home, node_home / "runs", run_dir):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700, d
    deadline = time.monotonic() + 30
    while json.loads((run_dir / "status.json").read_text()).get("state") != "exited" and time.monotonic() < deadline:
        time.sleep(0.05)
    for name in ("argv.json", "env.json", "status.json", "log", "wrapper.py"):
        assert stat.S_IMODE((run_dir / name).stat().st_mode) == 0o600, name
    answer = _agent("lock", {"holder": "me", "console_pid": os.getpid()})
    assert answer["ok"], answer
    assert stat.S_IMODE((node_home / "relaunch.lock").stat().st_mode) == 0o600


# -- 7. exactly one server from concurrent launches -------------------------------------------

def test_ten_concurrent_launches_start_exactly_one_server(node_home, tmp_path):
    stop = tmp_path / "stop"
    argv = [sys.executable, "-m", "mambaconsole", "launch", "local", *_server_module(tmp_path),
            "--check-s", "0", "--", "0", str(stop)]
    try:
        procs = [subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(10)]
        results = [(p.wait(120), *p.communicate()) for p in procs]
        started = [out.strip() for rc, out, err in results if rc == 0]
        assert len(started) == 1, results
        assert [d.name for d in _run_dirs(node_home)] == started
        for rc, out, err in results:
            if rc != 0:
                # each refusal names the holder: the lock's, or the live run's
                assert "relaunch lock held by" in err or f"run {started[0]}" in err, err
        # and one more, later, with the first still serving: refused, naming it
        r = _cli(*argv[3:])
        assert r.returncode == 1 and f"run {started[0]}" in r.stderr and "mambaconsole stop" in r.stderr, r.stderr
        assert len(_run_dirs(node_home)) == 1
    finally:
        stop.touch()


# -- 10. launch: no tmux, a server that dies at once, a bad port -------------------------------

def test_launch_without_tmux_leaves_no_run(node_home, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "python3").symlink_to(sys.executable)
    env = {**os.environ, "PATH": str(bindir)}
    r = _launch(tmp_path, "0", str(tmp_path / "stop"), env=env)
    assert r.returncode == 1 and "tmux is not installed" in r.stderr, r.stderr
    assert _run_dirs(node_home) == []


def test_launch_exits_non_zero_when_the_server_dies_at_once(node_home, tmp_path):
    r = _cli("launch", "local", *_server_module(tmp_path, "import time, sys; time.sleep(0.5); sys.exit(3)"))
    assert r.returncode == 1 and "exited at once with code 3" in r.stderr, (r.stdout, r.stderr)


@pytest.mark.parametrize("port", ["-1", "0", "65536", "99999999999999999999", "80x"])
def test_launch_refuses_a_port_out_of_range(node_home, port):
    r = _cli("launch", "local", f"--port={port}", "--", "--model-path", "m")
    assert r.returncode == 2 and "--port" in r.stderr, r.stderr
    assert _run_dirs(node_home) == []


# -- 9. adoption only on request, or of servers in the store's own tmux session ----------------

def _hand_server(tag: str, **kw) -> subprocess.Popen:
    """A server started by hand: its argv reads ``python -c ... -m sglang.launch_server --port TAG``."""
    return subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(0.1)", "-m",
                             "sglang.launch_server", "--port", tag], stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)


def _wait_argv(pid: int, tag: str) -> None:
    deadline = time.monotonic() + 10
    while tag.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes():
        assert time.monotonic() < deadline, "stand-in server did not start"
        time.sleep(0.02)


def test_runs_adopts_only_on_request_or_from_its_own_tmux_session(node_home, tmp_path):
    import uuid

    outside, inside = uuid.uuid4().hex, uuid.uuid4().hex
    proc = _hand_server(outside)
    cmd = (f"exec {sys.executable} -c 'import time\nwhile True: time.sleep(0.1)' -m sglang.launch_server "
           f"--port {inside}")
    subprocess.run(["tmux", "new-session", "-d", "-s", "sglang", "-x", "120", "-y", "30", cmd], check=True)
    try:
        _wait_argv(proc.pid, outside)
        r = _cli("runs", "local", "--json")
        rows = json.loads(r.stdout)
        by_tag = {row["argv"][-1]: row for row in rows if row["argv"] and row["argv"][-1] in (outside, inside)}
        # the one in the store's tmux session ("sglang") is adopted; the other is named, left alone
        assert by_tag[inside]["adopted"] is True and by_tag[inside]["state"] == "adopted"
        assert by_tag[outside]["state"] == "not_adopted" and by_tag[outside]["pid"] == proc.pid
        assert by_tag[outside]["run_id"] is None and by_tag[outside]["tmux_session"] is None
        text = _cli("runs", "local").stdout
        line = next(ln for ln in text.splitlines() if outside in ln)
        assert line.startswith(f"your server, not adopted (not in tmux; runs local --adopt adopts it): pid {proc.pid}")
        # stop cannot reach it: it has no run id in the store
        assert not any(outside in (d / "argv.json").read_text() for d in _run_dirs(node_home))
        # on request
        rows = json.loads(_cli("runs", "local", "--adopt", "--json").stdout)
        (row,) = [row for row in rows if row["argv"] and row["argv"][-1] == outside]
        assert row["adopted"] is True and row["pid"] == proc.pid and row["run_id"]
    finally:
        proc.kill()
        proc.wait()


def test_the_console_header_says_the_log_lost_output():
    from mambaconsole.node.runs import Run
    from mambaconsole.state import ConsoleState
    from mambaconsole.session.feed import run_info
    from mambaconsole.ui.header import status_text

    lost = 3 * 2**20 + 2**19  # 3.5 MiB
    run = Run.from_record({"run_id": "r1", "state": "running", "alive": True, "pid": 5,
                           "log_lost_bytes": lost, "log_error": "No space left on device"})
    assert run.state_text == "running; log lost 3.5 MiB (No space left on device)"
    state = ConsoleState()
    state.run = run_info(run)
    text = status_text(state, {}).plain
    assert "log lost 3.5 MiB (No space left on device)" in text and "the server kept running" in text


async def test_the_console_names_a_server_it_did_not_adopt(node_home):
    """The console (Feed with adoption on) leaves a hand-started server outside its tmux session
    alone and the header says how to adopt it."""
    import uuid

    from mambaconsole.node.local import LocalNode
    from mambaconsole.state import ConsoleState
    from mambaconsole.session.feed import Feed
    from mambaconsole.ui.header import status_text
    from mambaconsole.session.settings import HostSettings

    tag = uuid.uuid4().hex
    proc = _hand_server(tag)
    try:
        _wait_argv(proc.pid, tag)
        async with LocalNode() as node:
            feed = Feed(node, HostSettings(), adopt=True)
            listed = await feed.runs()
        assert not any(r.argv and r.argv[-1] == tag for r in listed.runs)
        (mine,) = [o for o in listed.not_adopted if o["pid"] == proc.pid]
        assert mine["argv"][-1] == tag and mine["tmux_session"] is None
        state = ConsoleState()
        state.host = "local"
        state.apply(type(listed)(runs=(), current=None, not_adopted=(mine,)))
        text = status_text(state, {}).plain
        assert f"a server of yours runs outside tmux (pid {proc.pid}), not adopted: mambaconsole runs local --adopt" \
            in text
    finally:
        proc.kill()
        proc.wait()
