"""Host-key refusals say what happened and what to do (issue 13 item 10): no known_hosts file
at all, and a host key marked ``@revoked`` in it. Real loopback sshd."""

from __future__ import annotations

import pytest

from mambaconsole.node import connect
from mambaconsole.node.ssh import HostKeyError

pytestmark = pytest.mark.sshd


async def test_missing_known_hosts_file(ssh_home):
    ssh_home.known_hosts.unlink()
    with pytest.raises(HostKeyError) as err:
        await connect("gpu-node")
    msg = str(err.value)
    assert "\n" not in msg and "No such file" not in msg
    assert f"{ssh_home.known_hosts} does not exist" in msg and ssh_home.sshd.fingerprint in msg
    assert "ssh-keyscan" in msg


async def test_revoked_host_key(ssh_home):
    key = ssh_home.sshd.host_public_key
    ssh_home.known_hosts.write_text(f"@revoked [127.0.0.1]:{ssh_home.port} {key}\n"
                                    f"[127.0.0.1]:{ssh_home.port} {key}\n")
    with pytest.raises(HostKeyError) as err:
        await connect("gpu-node")
    msg = str(err.value)
    assert "\n" not in msg and "CHANGED" not in msg
    assert "REVOKED" in msg and ssh_home.sshd.fingerprint in msg and str(ssh_home.known_hosts) in msg
