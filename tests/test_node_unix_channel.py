"""``Node.exchange_unix``: one request/answer on a UNIX socket of the node without starting a
process there (issue 18's warm prediction: the warm resolver is asked so), locally and over a
real OpenSSH sshd (a direct-streamlocal channel); and the warm resolver's fallback to its
``python -c CLIENT`` command where a node refuses such channels."""

from __future__ import annotations

import asyncio
import json
import sys

import pytest

from mambaconsole.node import connect
from mambaconsole.node.base import CommandTimeout, NodeError
from mambaconsole.node.local import LocalNode
from mambaconsole.resolve import WarmResolver


async def serve_unix(path: str, *, answer=None, silent: bool = False, by_line: bool = False):
    """A UNIX socket server: reads one request to EOF (``by_line``: to its newline, as the warm
    resolver's parent does: its ``python -c CLIENT`` does not close its sending half), answers
    ``answer(request)`` (default: the request in capitals) and closes (or never answers,
    ``silent``)."""

    async def handle(reader, writer):
        data = await reader.readline() if by_line else await reader.read()
        if silent:
            await asyncio.sleep(30)
        writer.write(answer(data) if answer else data.upper())
        await writer.drain()
        writer.close()

    return await asyncio.start_unix_server(handle, path)


async def test_local_exchange_answer_missing_and_silent(tmp_path):
    node = LocalNode()
    path = str(tmp_path / "sock")
    srv = await serve_unix(path)
    try:
        big = b"x" * 300_000 + b"\n"  # more than one read chunk each way
        assert await node.exchange_unix(path, big) == big.upper()
    finally:
        srv.close()
    with pytest.raises(NodeError, match="cannot connect"):
        await node.exchange_unix(str(tmp_path / "none"), b"hi\n")
    quiet = str(tmp_path / "quiet")
    srv = await serve_unix(quiet, silent=True)
    try:
        with pytest.raises(CommandTimeout, match="no answer"):
            await node.exchange_unix(quiet, b"hi\n", timeout=0.3)
    finally:
        srv.close()


@pytest.mark.sshd
async def test_ssh_exchange_over_a_channel_of_the_connection(ssh_home, tmp_path):
    path = str(tmp_path / "sock")  # the sshd runs as this user on this machine: the node's file system
    srv = await serve_unix(path, answer=lambda d: json.dumps({"got": len(d)}).encode())
    try:
        async with await connect("gpu-node") as node:
            for n in (10, 2_000_000):
                assert json.loads(await node.exchange_unix(path, b"a" * n)) == {"got": n}
            with pytest.raises(NodeError, match="cannot reach"):
                await node.exchange_unix(str(tmp_path / "none"), b"hi\n")
            assert (await node.run(["true"])).ok  # the connection is still usable
    finally:
        srv.close()


class NoChannelNode(LocalNode):
    """A node whose sshd refuses streamlocal channels (``AllowStreamLocalForwarding no``)."""

    async def exchange_unix(self, path, data, *, timeout=60.0, limit=64 << 20):
        raise NodeError("channel open failed: administratively prohibited")


@pytest.mark.parametrize("node_cls", [LocalNode, NoChannelNode])
async def test_warm_resolver_request_paths(tmp_path, node_cls):
    """The warm resolver's request reaches the parent's socket either way, with the same answer;
    a refused channel switches to the command for good."""
    path = str(tmp_path / "sock")
    answer = {"sglang_version": "x", "echo": None}

    def reply(data: bytes) -> bytes:
        return json.dumps({**answer, "echo": json.loads(data)}).encode() + b"\n"

    srv = await serve_unix(path, answer=reply, by_line=True)
    try:
        warm = WarmResolver(node_cls(), python=sys.executable)
        warm.info = {"socket": path}
        for _ in range(2):
            got = await warm._request({"argv": ["--model-path", "m"], "env": {}})
            assert got == {**answer, "echo": {"argv": ["--model-path", "m"], "env": {}}}
        assert warm._unix_channel is (node_cls is LocalNode)
    finally:
        srv.close()
