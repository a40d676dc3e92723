"""The remote pid of a command over SSH comes from a channel nothing else writes to (issue 13
item 2): a login shell that prints first (a ``.bashrc`` echoing a number, a ``setlocale``
warning) neither leaves a cancelled command running nor makes the console signal a process it
did not start. The login shell is played by a forced command in authorized_keys on the real
loopback sshd; the number it prints is the pid of a decoy process group of ours."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

from mambaconsole.node import connect
from mambaconsole.node.base import CommandTimeout

pytestmark = [pytest.mark.sshd, pytest.mark.timeout(120)]

SETLOCALE = "bash: warning: setlocale: LC_ALL: cannot change locale (xx_XX.UTF-8)"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture
def chatty_login(ssh_home):
    """Every login first prints, on stderr, the pid of a decoy process group (as a .bashrc
    that echoes a number would), then a setlocale warning, then runs the command."""
    decoy = subprocess.Popen(["sleep", "300"], start_new_session=True)
    keys = ssh_home.sshd.authorized_keys
    original = keys.read_text()
    forced = (f"printf '%s\\n' {decoy.pid} >&2; printf '%s\\n' '{SETLOCALE}' >&2; printf 'no newline' >&2; "
              'exec /bin/sh -c "$SSH_ORIGINAL_COMMAND"')
    keys.write_text("".join(f'command="{forced.replace(chr(34), chr(92) + chr(34))}" {line}\n'
                            for line in original.splitlines() if line.strip()))
    yield decoy
    keys.write_text(original)
    decoy.kill()
    decoy.wait()


async def test_a_chatty_login_shell_never_passes_for_the_pid(ssh_home, chatty_login, tmp_path):
    decoy = chatty_login
    async with await connect("gpu-node") as node:
        # what the login printed stays the command's stderr, whole; stdout is the command's
        res = await node.run(["sh", "-c", "echo out; echo err >&2"])
        assert res.out == "out\n"
        assert res.err == f"{decoy.pid}\n{SETLOCALE}\nno newlineerr\n"
        # a command past its timeout is killed (its pid from our marked line), the decoy is not
        pidfile = tmp_path / "pid"
        with pytest.raises(CommandTimeout):
            await node.run(["sh", "-c", f"echo $$ > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; exec sleep 120"],
                           timeout=3)
        # a stream left early
        async for line in node.stream_lines([sys.executable, "-u", "-c",
                                             "import os, time; print(os.getpid(), flush=True); time.sleep(120)"]):
            streamed = int(line)
            break
    deadline = time.monotonic() + 30
    for pid in ([int(pidfile.read_text())] if pidfile.exists() else []) + [streamed]:
        while _alive(pid) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        assert not _alive(pid), f"pid {pid} still runs on the node"
    assert _alive(decoy.pid), "the console signalled a process group it did not start"


async def test_a_pid_that_no_longer_carries_the_nonce_is_not_signalled(ssh_home, tmp_path):
    """The recorded pid is checked on the node before the kill: a process at that pid without
    this command's nonce in its environment (the pid reused, or a wrong pid) is left alone."""
    from mambaconsole.node.ssh import SSHNode

    decoy = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        async with await connect("gpu-node") as node:
            assert isinstance(node, SSHNode)
            conn = await node._connection()
            proc = await conn.create_process("sleep 60", encoding=None)
            await node._kill_remote(proc, decoy.pid, "0123456789abcdef")
        time.sleep(0.5)
        assert _alive(decoy.pid)
    finally:
        decoy.kill()
        decoy.wait()
