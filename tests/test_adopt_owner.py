"""Adoption of servers started by hand on a shared machine: only this user's processes are
adopted (another user's are named, never adopted, never stopped); an adopted run's id is the
server's start time, the same for the same process whoever adopts it.

Stand-in servers are real processes whose argv holds ``-m sglang.launch_server`` (the adoption
pattern) behind ``python -c``; another user's server runs as ``nobody`` (needs root)."""

from __future__ import annotations

import calendar
import json
import os
import subprocess
import sys
import time
import uuid

import pytest

from mambaconsole.node.local import LocalNode
from mambaconsole.node.runs import RunError, RunStore

SLEEP = "import time; [time.sleep(0.1) for _ in iter(int, 1)]"


def _server(python: str, tag: str, **kw) -> subprocess.Popen:
    return subprocess.Popen([python, "-c", SLEEP, "-m", "sglang.launch_server", "--port", tag],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)


def _ps_start_utc(pid: int) -> float:
    """The process start time as procps prints it (``ps -o lstart``, local time, seconds)."""
    out = subprocess.run(["ps", "-o", "lstart=", "-p", str(pid)], capture_output=True, text=True,
                         env=dict(os.environ, TZ="UTC", LC_ALL="C"), check=True).stdout.strip()
    return calendar.timegm(time.strptime(out, "%a %b %d %H:%M:%S %Y"))


def _wait_cmdline(pid: int, tag: str) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if tag.encode() in open(f"/proc/{pid}/cmdline", "rb").read():
                return
        except OSError:
            pass
        time.sleep(0.02)
    raise AssertionError("stand-in server did not start")


@pytest.fixture
def nobody():
    if os.getuid() != 0 or not os.path.exists("/usr/bin/python3"):
        pytest.skip("needs root (to run a stand-in server as another user) and /usr/bin/python3")
    import pwd

    return pwd.getpwnam("nobody")


def _cli(*args: str) -> str:
    p = subprocess.run([sys.executable, "-m", "mambaconsole", *args], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return p.stdout


async def test_other_users_server_is_listed_not_adopted_never_stopped(node_home, nobody):
    tag = uuid.uuid4().hex
    proc = _server("/usr/bin/python3", tag, user=nobody.pw_uid, group=nobody.pw_gid, cwd="/")
    try:
        _wait_cmdline(proc.pid, tag)
        mine = [["-m", "sglang.launch_server", "--port", tag]]
        async with LocalNode() as node:
            store = RunStore(node)
            runs, others, _ = await store.list_with_others(patterns=mine)
            assert [r for r in runs if r.pid == proc.pid] == []
            assert [(o["pid"], o["uid"], o["user"]) for o in others] == [(proc.pid, nobody.pw_uid, "nobody")]
            assert others[0]["argv"][-1] == tag
            assert not any(r.pid == proc.pid for r in await store.list(adopt=True, patterns=mine))
            # a record made before this rule (adopted someone else's server) is never signalled
            rid = "20000101-000000-beef"
            d = node_home / "runs" / rid
            d.mkdir(parents=True)
            (d / "argv.json").write_text(json.dumps(open(f"/proc/{proc.pid}/cmdline", "rb").read()
                                                    .decode().split("\0")[:-1]))
            ticks = int(open(f"/proc/{proc.pid}/stat").read().rsplit(")", 1)[1].split()[19])
            (d / "status.json").write_text(json.dumps({"run_id": rid, "adopted": True, "pid": proc.pid,
                                                       "pid_start_ticks": ticks, "state": "running"}))
            with pytest.raises(RunError) as err:
                await store.stop(rid, int_s=1, term_s=1, kill_s=1)
            assert "another user's server" in str(err.value) and "nobody" in str(err.value)
            assert proc.poll() is None
            import shutil

            shutil.rmtree(d)
        # the CLI names it the same way
        out = _cli("runs", "local")
        line = next(ln for ln in out.splitlines() if tag in ln)
        assert line.startswith(f"other user's server ({nobody.pw_uid}/nobody), not adopted: pid {proc.pid}")
        rows = [r for r in json.loads(_cli("runs", "local", "--json")) if r["argv"] and r["argv"][-1] == tag]
        assert [(r["run_id"], r["state"], r["adopted"], r["uid"], r["user"]) for r in rows] == [
            (None, "other_user", False, nobody.pw_uid, "nobody")]
    finally:
        proc.kill()
        proc.wait()


async def test_adopted_run_id_is_the_process_start_time(node_home, tmp_path):
    tag_a, tag_b = uuid.uuid4().hex, uuid.uuid4().hex
    a = _server(sys.executable, tag_a)
    time.sleep(1.2)
    b = _server(sys.executable, tag_b)
    try:
        _wait_cmdline(a.pid, tag_a)
        _wait_cmdline(b.pid, tag_b)
        time.sleep(2.2)  # adopted well after they started
        pats = [["-m", "sglang.launch_server", "--port", tag_a], ["-m", "sglang.launch_server", "--port", tag_b]]
        async with LocalNode() as node:
            runs = [r for r in await RunStore(node).list(adopt=True, patterns=pats) if r.adopted]
            # a second store (another console's home) adopting the same processes
            other = [r for r in await RunStore(node, home=str(tmp_path / "home2")).list(adopt=True, patterns=pats) if r.adopted]
            again = [r for r in await RunStore(node).list(adopt=True, patterns=pats) if r.adopted]
        by_pid = {r.pid: r for r in runs}
        assert set(by_pid) == {a.pid, b.pid}
        for p in (a, b):
            rid = by_pid[p.pid].run_id
            when = calendar.timegm(time.strptime(rid[:15], "%Y%m%d-%H%M%S"))
            assert abs(when - _ps_start_utc(p.pid)) <= 1, (rid, _ps_start_utc(p.pid))
            assert when < by_pid[p.pid].record["created"] - 1  # not the adoption time
        # ids sort by when the servers started; the list is in that order
        assert [r.pid for r in runs] == [a.pid, b.pid] and by_pid[a.pid].run_id < by_pid[b.pid].run_id
        # the same process gets the same id, whoever adopts it, and is adopted once
        assert sorted(r.run_id for r in other) == sorted(r.run_id for r in runs)
        assert [r.run_id for r in again] == [r.run_id for r in runs]
    finally:
        for p in (a, b):
            p.kill()
            p.wait()
