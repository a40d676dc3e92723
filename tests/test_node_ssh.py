"""SSHNode against a real OpenSSH sshd on 127.0.0.1 (tests/fixtures/sshd.py)."""

import asyncio
import socket
import sys

import pytest

from fixtures.sshd import make_key, start_sshd, write_ssh_home
from mambaconsole.node import connect
from mambaconsole.node.base import CommandTimeout, NodeError
from mambaconsole.node.ssh import AuthError, HostKeyError, parse_host

pytestmark = pytest.mark.sshd


async def test_connect_by_alias_runs_argv_literally(ssh_home):
    async with await connect("gpu-node") as node:
        assert node.hostname == "127.0.0.1" and node.port == ssh_home.port
        hostile = ["; touch /tmp/x", "$(id)", "`id`", "a b", "it's", "é\n2"]
        res = await node.run([sys.executable, "-c", "import sys, json; print(json.dumps(sys.argv[1:]))", *hostile])
        import json

        assert res.exit_status == 0, res.err
        assert json.loads(res.out) == hostile
        res = await node.run(["cat"], input=b"x" * 100000 + b"\n")
        assert res.stdout == b"x" * 100000 + b"\n"
        res = await node.run(["sh", "-c", "echo $A; pwd; exit 7"], env={"A": "v w"}, cwd="/")
        assert (res.exit_status, res.out) == (7, "v w\n/\n")
        # the node's session environment from the test sshd
        res = await node.run(["sh", "-c", "echo $MAMBACONSOLE_HOME"])
        assert res.out.strip() == str(ssh_home.sshd.node_home)


async def test_user_host_port_form(ssh_home):
    async with await connect(f"{ssh_home.sshd.user}@gpu-node:{ssh_home.port}") as node:
        assert (await node.run(["true"])).ok


async def test_run_timeout_and_long_stream_lines(ssh_home):
    async with await connect("gpu-node") as node:
        with pytest.raises(CommandTimeout):
            await node.run(["sleep", "30"], timeout=0.3)
        # a 3 MiB line, then small lines; the stream keeps going until we leave it
        script = b"import sys\nsys.stdout.write('a'*(3<<20)+'\\n')\nfor i in range(3): print(i)\nsys.stdout.flush()\nimport time; time.sleep(30)\n"
        got = []
        async for line in node.stream_lines([sys.executable, "-u", "-"], input=script):
            got.append(line)
            if len(got) == 4:
                break
        assert len(got[0]) == 3 << 20 and set(got[0]) == {ord("a")}
        assert got[1:] == [b"0", b"1", b"2"]
        assert (await node.run(["true"])).ok  # the connection is still usable


async def test_forward_port(ssh_home):
    srv = await asyncio.start_server(lambda r, w: (w.write(b"hello\n"), w.close()), "127.0.0.1", 0)
    port = srv.sockets[0].getsockname()[1]
    async with await connect("gpu-node") as node:
        local = await node.forward_port(port)
        reader, writer = await asyncio.open_connection("127.0.0.1", local)
        assert await reader.readline() == b"hello\n"
        writer.close()
    srv.close()


async def test_unknown_host_key_refused(ssh_home):
    ssh_home.known_hosts.write_text("")
    with pytest.raises(HostKeyError) as err:
        await connect("gpu-node")
    msg = str(err.value)
    assert "\n" not in msg
    assert str(ssh_home.known_hosts) in msg
    assert ssh_home.sshd.fingerprint in msg  # fingerprint as ssh-keygen -l computes it
    assert "not in" in msg


async def test_changed_host_key_refused(ssh_home, sshd_dir, user_key):
    # a second sshd with its own host key, but known_hosts records the first server's key
    other = start_sshd(sshd_dir / "server2", [user_key])
    try:
        write_ssh_home(ssh_home.home, other, user_key, known_host_key=ssh_home.sshd.host_public_key)
        with pytest.raises(HostKeyError) as err:
            await connect("gpu-node")
        msg = str(err.value)
        assert "CHANGED" in msg and "\n" not in msg
        assert other.fingerprint in msg and str(ssh_home.known_hosts) in msg
    finally:
        other.stop()


async def test_wrong_key_refused(ssh_home, sshd_dir):
    stranger = make_key(sshd_dir / "stranger" / "id_ed25519")
    write_ssh_home(ssh_home.home, ssh_home.sshd, stranger)
    with pytest.raises(AuthError) as err:
        await connect("gpu-node")
    assert "authentication failed" in str(err.value) and "\n" not in str(err.value)


async def test_closed_port_one_line_error(ssh_home):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(NodeError) as err:
        await connect(f"127.0.0.1:{port}")
    msg = str(err.value)
    assert "\n" not in msg and str(port) in msg and "refused" in msg.lower()


def test_parse_host():
    assert parse_host("gpu-node") == ("gpu-node", None, None)
    assert parse_host("me@box:2222") == ("box", "me", 2222)
    assert parse_host("[::1]:22") == ("::1", None, 22)
    with pytest.raises(NodeError):
        parse_host("box:http")
    with pytest.raises(NodeError):
        parse_host("@box")


async def test_hashed_known_hosts_entry_accepted(ssh_home):
    # Debian's default HashKnownHosts: entries are stored as |1|salt|hash, as ssh-keygen -H writes them
    import subprocess

    subprocess.run(["ssh-keygen", "-H", "-f", str(ssh_home.known_hosts)], check=True, capture_output=True)
    text = ssh_home.known_hosts.read_text()
    assert text.startswith("|1|") and "127.0.0.1" not in text
    async with await connect("gpu-node") as node:
        assert (await node.run(["true"])).ok


async def test_lost_connection_is_reopened(ssh_home):
    async with await connect("gpu-node") as node:
        assert node.connected
        # the server side of the connection goes away: kill sshd's per-connection processes
        import os
        import signal

        sshd_pid = ssh_home.sshd.proc.pid
        children = [int(p) for p in os.listdir("/proc") if p.isdigit() and _ppid(int(p)) == sshd_pid]
        assert children
        for pid in children:
            os.kill(pid, signal.SIGTERM)
        for _ in range(500):
            if not node.connected:
                break
            await asyncio.sleep(0.01)
        assert not node.connected
        res = await node.run(["echo", "again"])  # the next command reconnects
        assert res.out == "again\n" and node.connected


def _ppid(pid):
    try:
        data = open(f"/proc/{pid}/stat", "rb").read()
        return int(data[data.rindex(b")") + 2:].split()[1])
    except (OSError, ValueError):
        return None


async def test_abandoned_commands_are_killed_on_the_node(ssh_home):
    import os

    code = "import os, time; print(os.getpid(), flush=True); time.sleep(120)"
    async with await connect("gpu-node") as node:
        # a stream left early
        async for line in node.stream_lines([sys.executable, "-u", "-c", code]):
            first = int(line)
            break
        # a command past its timeout
        pidfile = ssh_home.home / "pidfile"
        with pytest.raises(CommandTimeout):
            await node.run(["sh", "-c", "echo $$ > pidfile.tmp; mv pidfile.tmp pidfile; exec sleep 120"],
                           cwd=str(ssh_home.home), timeout=5)
        # (on a very busy machine it may have been killed before it wrote its pid: nothing to check)
        second = int(pidfile.read_text()) if pidfile.exists() else first
        # a command whose caller was cancelled (a worker replaced, the console closing)
        cancelled_pid = ssh_home.home / "cancelled-pid"
        task = asyncio.create_task(node.run(
            ["sh", "-c", "echo $$ > cancelled-pid.tmp; mv cancelled-pid.tmp cancelled-pid; exec sleep 120"],
            cwd=str(ssh_home.home), timeout=120))
        for _ in range(600):
            if cancelled_pid.exists():
                break
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.5)  # the node layer has read the remote pid
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        fourth = int(cancelled_pid.read_text())
        # a stream still open when the node is closed
        stream = node.stream_lines([sys.executable, "-u", "-c", code])
        third = int(await stream.__anext__())
    for pid in (first, second, third, fourth):
        for _ in range(3000):
            if not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split(") ")[1][0] == "Z":
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError(f"pid {pid} still runs on the node")
