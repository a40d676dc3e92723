import sys

import pytest

from mambaconsole.node.base import CommandTimeout, command_line
from mambaconsole.node.local import LocalNode


async def test_run_returns_status_and_output():
    async with LocalNode() as node:
        res = await node.run([sys.executable, "-c", "import sys; print('hi'); sys.stderr.write('e'); sys.exit(3)"])
    assert res.exit_status == 3
    assert res.out == "hi\n"
    assert res.err == "e"


async def test_run_sends_input_and_times_out():
    async with LocalNode() as node:
        res = await node.run(["cat"], input=b"abc")
        assert res.stdout == b"abc"
        with pytest.raises(CommandTimeout):
            await node.run(["sleep", "5"], timeout=0.2)


async def test_stream_lines_yields_lines_and_stops_command():
    async with LocalNode() as node:
        lines = []
        async for line in node.stream_lines([sys.executable, "-u", "-c", "import time\nfor i in range(3): print(i)\ntime.sleep(30)"]):
            lines.append(line)
            if len(lines) == 3:
                break
    assert lines == [b"0", b"1", b"2"]


def test_command_line_quotes_each_element():
    import shlex

    argv = ["echo", "; touch /tmp/x", "$(id)", "a b"]
    assert shlex.split(command_line(argv)) == argv
    assert shlex.split(command_line(argv, env={"A": "x y"})) == ["env", "A=x y", *argv]
    with pytest.raises(ValueError):
        command_line(argv, env={"A;B": "1"})


async def test_line_batches_joins_lines_split_across_reads():
    from mambaconsole.node.base import line_batches

    data = b"alpha\nbe" + b"x" * 300_000 + b"ta\n\ngamma"  # a line longer than one read, a last line without \n
    pos = 0

    async def read(n):
        nonlocal pos
        chunk = data[pos:pos + min(n, 7)] if pos < 20 else data[pos:pos + n]
        pos += len(chunk)
        return chunk

    lines = [ln async for batch in line_batches(read) for ln in batch]
    assert lines == data.split(b"\n")


async def test_a_cancelled_run_leaves_no_process_behind(tmp_path):
    """Cancelling the task awaiting ``run`` (a worker replaced, the console closing) kills the
    command's process group; it does not run on, holding pipes into a closed event loop."""
    import asyncio
    import os

    pid_file = tmp_path / "pid"
    script = f"import os, time; open({str(pid_file)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    node = LocalNode()
    task = asyncio.create_task(node.run([sys.executable, "-c", script], timeout=120))
    for _ in range(200):
        if pid_file.exists() and pid_file.read_text():
            break
        await asyncio.sleep(0.05)
    pid = int(pid_file.read_text())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        await asyncio.sleep(0.05)
    else:
        pytest.fail(f"pid {pid} still runs after its run() was cancelled")
