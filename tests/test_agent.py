"""The node agent: GPU records (none here, simulated, nvidia-smi) and log follow by byte offset."""

import asyncio
import json
import os
import shutil
import stat
import sys
import textwrap
from pathlib import Path

import pytest

from mambaconsole.node import connect
from mambaconsole.node.agent import agent_once, agent_records, log_lines
from mambaconsole.node.local import LocalNode
from mambaconsole.node.runs import RunStore


async def test_no_gpu_record_on_this_machine():
    if shutil.which("nvidia-smi") or Path("/dev/nvidia0").exists():
        pytest.skip("this machine has a GPU")
    async with LocalNode() as node:
        hello, rec = await agent_once(node, python=sys.executable)
    assert hello["type"] == "hello" and hello["gpu_backend"] == "none"
    assert hello["python"] == "%d.%d.%d" % sys.version_info[:3]
    assert rec["type"] == "no_gpu"
    assert "pynvml" in rec["reason"] and "nvidia-smi: not found" in rec["reason"]


async def test_sim_gpu_file(tmp_path):
    sim = {"gpus": [{"index": 0, "name": "NVIDIA RTX PRO 6000 Blackwell", "memory_total_mib": 97887,
                     "memory_used_mib": 81234.5, "utilization_pct": 87,
                     "processes": [{"pid": 4242, "used_mib": 81000, "cmdline": "python -m sglang.launch_server"}]}],
           "simulated": True}
    f = tmp_path / "gpu.json"
    f.write_text(json.dumps(sim))
    async with LocalNode() as node:
        hello, rec = await agent_once(node, python=sys.executable, sim_file=str(f))
    assert hello["gpu_backend"] == "sim"
    assert rec["type"] == "gpu" and rec["simulated"] is True and rec["source"] == "sim"
    g = rec["gpus"][0]
    assert (g["name"], g["memory_total_mib"], g["memory_used_mib"], g["utilization_pct"]) == \
        ("NVIDIA RTX PRO 6000 Blackwell", 97887, 81234.5, 87)
    assert g["processes"] == sim["gpus"][0]["processes"]


async def test_nvidia_smi_fallback(tmp_path, monkeypatch):
    # a stand-in nvidia-smi printing the CSV format of `--format=csv,noheader,nounits`
    fake = tmp_path / "bin" / "nvidia-smi"
    fake.parent.mkdir()
    fake.write_text(textwrap.dedent("""\
        #!/bin/sh
        case "$1" in
          --query-gpu=*) printf '0, NVIDIA H100 80GB HBM3, 70123, 81559, 93, GPU-aaaa\\n1, NVIDIA H100 80GB HBM3, 1, 81559, [N/A], GPU-bbbb\\n' ;;
          --query-compute-apps=*) printf 'GPU-aaaa, %s, 70000\\n' "$$" ;;
        esac
        """))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    async with LocalNode() as node:
        hello, rec = await agent_once(node, python=sys.executable, gpu="nvidia-smi")
    assert rec["type"] == "gpu" and rec["source"] == "nvidia-smi" and rec["simulated"] is False
    g0, g1 = rec["gpus"]
    assert (g0["index"], g0["name"], g0["memory_used_mib"], g0["memory_total_mib"], g0["utilization_pct"]) == \
        (0, "NVIDIA H100 80GB HBM3", 70123, 81559, 93)
    assert g1["utilization_pct"] is None and g1["processes"] == []
    assert len(g0["processes"]) == 1 and g0["processes"][0]["used_mib"] == 70000


class Collector:
    """Collects an agent's log records in the background."""

    def __init__(self, node, **kw):
        self.records = []
        self.task = asyncio.ensure_future(self._run(node, kw))

    async def _run(self, node, kw):
        async for rec in agent_records(node, **kw):
            self.records.append(rec)

    def lines(self):
        return [ln for r in self.records if r["type"] == "log" for ln in log_lines(r)]

    async def wait(self, pred, timeout=30.0):
        deadline = asyncio.get_running_loop().time() + timeout
        while not pred(self):
            if self.task.done():
                self.task.result()
                raise AssertionError("agent stopped")
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"timed out; got {self.records[-5:]}")
            await asyncio.sleep(0.02)

    async def stop(self):
        self.task.cancel()
        try:
            await self.task
        except asyncio.CancelledError:
            pass


async def test_log_follow_truncation_rotation_bad_utf8_long_lines(ssh_home, tmp_path):
    log = tmp_path / "logs" / "server.log"
    log.parent.mkdir()
    first = [b"line one", b"bad utf-8 \xff\xfe here", "unicode ✓ 模型".encode()]
    log.write_bytes(b"\n".join(first) + b"\n")
    async with await connect("gpu-node") as node:
        c = Collector(node, python=sys.executable, follow=str(log), interval=0)
        await c.wait(lambda c: len(c.lines()) == 3)
        got = c.lines()
        assert [ln.raw for ln in got] == first
        assert [ln.offset for ln in got] == [0, len(first[0]) + 1, len(first[0]) + len(first[1]) + 2]
        assert got[1].text == "bad utf-8 \ufffd\ufffd here"

        # a partial line is held until its newline arrives
        with open(log, "ab") as f:
            f.write(b"partial")
        await asyncio.sleep(0.3)
        assert len(c.lines()) == 3
        huge = b"x" * (3 * 1024 * 1024)
        with open(log, "ab") as f:
            f.write(b" done\n" + huge + b"\nafter huge\n")
        await c.wait(lambda c: len(c.lines()) == 6)
        p, h, a = c.lines()[3:]
        size_before = sum(len(x) + 1 for x in first)
        assert (p.raw, p.offset) == (b"partial done", size_before)
        assert h.truncated and h.length == len(huge) and h.raw == huge[: 1024 * 1024]
        assert h.offset == size_before + len(b"partial done\n")
        assert (a.raw, a.offset) == (b"after huge", h.offset + len(huge) + 1)

        # truncation (like `> server.log`): lines restart at offset 0
        with open(log, "wb") as f:
            f.write(b"after truncate\n")
        await c.wait(lambda c: len(c.lines()) == 7)
        resets = [r for r in c.records if r["type"] == "log_reset"]
        assert [r["reason"] for r in resets] == ["truncated"]
        assert (c.lines()[6].raw, c.lines()[6].offset) == (b"after truncate", 0)

        # rotation: the old file gets a last line, is renamed; a new file appears
        with open(log, "ab") as f:
            f.write(b"last old line\n")
        os.rename(log, log.with_suffix(".log.1"))
        log.write_bytes(b"new file line\n")
        await c.wait(lambda c: len(c.lines()) == 9)
        assert [r["reason"] for r in c.records if r["type"] == "log_reset"] == ["truncated", "rotated"]
        assert [(ln.raw, ln.offset) for ln in c.lines()[7:]] == [
            (b"last old line", len(b"after truncate\n")), (b"new file line", 0)]
        await c.stop()


async def test_follow_run_from_first_line_and_status(node_home, tmp_path):
    script = tmp_path / "s.py"
    script.write_text("import time\nprint('first', flush=True)\ntime.sleep(0.5)\nprint('second')\n")
    async with LocalNode() as node:
        run = await RunStore(node).start([sys.executable, str(script)])
        c = Collector(node, python=sys.executable, run_id=run.run_id, interval=0)
        await c.wait(lambda c: any(r["type"] == "run" and r["status"].get("state") == "exited" for r in c.records))
        await c.wait(lambda c: len(c.lines()) >= 2)
        assert [ln.raw for ln in c.lines()] == [b"first", b"second"]
        runs = [r for r in c.records if r["type"] == "run"]
        assert runs[-1]["status"]["exit_code"] == 0 and runs[-1]["alive"] is False
        await c.stop()


async def test_missing_log_waits_then_follows(tmp_path):
    log = tmp_path / "later.log"
    async with LocalNode() as node:
        c = Collector(node, python=sys.executable, follow=str(log), interval=0)
        await c.wait(lambda c: any(r["type"] == "log_wait" for r in c.records))
        log.write_bytes(b"hello\n")
        await c.wait(lambda c: len(c.lines()) == 1)
        await c.stop()


async def test_gpu_samples_stream_at_interval(tmp_path):
    """GPU samples come every ``interval`` seconds, measured on their own timestamps: never
    sooner (no busy loop), and not at some other pace (the median gap is the interval, with
    room for a loaded machine)."""
    f = tmp_path / "gpu.json"
    f.write_text(json.dumps({"gpus": [], "simulated": True}))
    interval = 0.3
    async with LocalNode() as node:
        c = Collector(node, python=sys.executable, sim_file=str(f), interval=interval)
        await c.wait(lambda c: sum(r["type"] == "gpu" for r in c.records) >= 8)
        await c.stop()
    times = [r["time"] for r in c.records if r["type"] == "gpu"]
    gaps = sorted(b - a for a, b in zip(times, times[1:]))
    assert gaps[0] >= interval * 0.9, gaps
    assert gaps[len(gaps) // 2] <= interval + 0.25, gaps
