"""The console's GPU data path: one long-lived node agent stream (the simulated node's GPU file,
or a stand-in nvidia-smi), each process placed on the GPU that holds it, and the run's peak GPU
memory in the history and in its record on the node. Expected values are computed from what
the tests wrote (the GPU file, the stand-in's CSV), never from the console's output."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import stat
import sys
import textwrap

import pytest

from fixtures.console import console_for, wait_until
from mambaconsole.node.local import LocalNode
from mambaconsole.node.runs import RunStore
from mambaconsole.session.feed import Feed
from mambaconsole.session.settings import HostSettings

pytestmark = pytest.mark.timeout(120)

# Serves (does nothing) until SIGINT.
IDLE = textwrap.dedent("""
    import signal, sys, time
    signal.signal(signal.SIGINT, lambda *a: sys.exit(0))
    print("serving", flush=True)
    while True:
        time.sleep(0.05)
""")


def two_gpus(used0: float, used1: float, procs1: list[dict]) -> dict:
    """The simulated GPU file (mambaconsole/sim/gpu.py shape) with two GPUs, the processes on
    GPU 1 only."""
    return {"gpus": [
        {"index": 0, "name": "Sim GPU A", "memory_total_mib": 81920, "memory_used_mib": used0,
         "utilization_pct": 0, "processes": []},
        {"index": 1, "name": "Sim GPU B", "memory_total_mib": 81920, "memory_used_mib": used1,
         "utilization_pct": 55, "processes": procs1},
    ], "simulated": True}


def write(path, data) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


async def test_stream_places_processes_on_their_gpu(tmp_path):
    f = tmp_path / "gpu.json"
    procs = [{"pid": 5151, "used_mib": 40000, "cmdline": "python -m sglang.launch_server --tp 1"},
             {"pid": 5152, "used_mib": 1000, "cmdline": "python worker.py"}]
    write(f, two_gpus(10, 41000, procs))
    async with LocalNode() as node:
        feed = Feed(node, HostSettings(python=sys.executable), agent_python=sys.executable, sim_gpu_file=str(f))
        stream = feed.gpu_stream(0.2)
        try:
            snap = await stream.__anext__()
        finally:
            await stream.aclose()
        one = await feed.gpu()  # the one-shot sample (relaunch) reads the same way
    for s in (snap, one):
        assert [(g.index, g.name, g.used_mib) for g in s.gpus] == [(0, "Sim GPU A", 10), (1, "Sim GPU B", 41000)]
        assert sorted((p.gpu, p.pid, p.used_mib) for p in s.processes) == [(1, 5151, 40000), (1, 5152, 1000)]
        assert s.simulated


async def test_a_failed_sample_is_an_unavailable_reading_not_an_error(tmp_path):
    # the simulated node has not written its GPU file yet
    async with LocalNode() as node:
        feed = Feed(node, HostSettings(python=sys.executable), agent_python=sys.executable,
                    sim_gpu_file=str(tmp_path / "absent.json"))
        snap = await feed.gpu()
    assert not snap.available and snap.simulated and snap.reason == "simulated GPU: no readings yet"


async def test_nvidia_smi_processes_land_on_the_gpu_of_their_uuid(tmp_path, monkeypatch):
    # a stand-in nvidia-smi printing `--format=csv,noheader,nounits`: the app runs on GPU-bbbb
    fake = tmp_path / "bin" / "nvidia-smi"
    fake.parent.mkdir()
    fake.write_text(textwrap.dedent("""\
        #!/bin/sh
        case "$1" in
          --query-gpu=*) printf '0, NVIDIA H100 80GB HBM3, 3, 81559, 0, GPU-aaaa\\n1, NVIDIA H100 80GB HBM3, 70123, 81559, 91, GPU-bbbb\\n' ;;
          --query-compute-apps=*) printf 'GPU-bbbb, %s, 70000\\n' "$$" ;;
        esac
        """))
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    async with LocalNode() as node:
        feed = Feed(node, HostSettings(python=sys.executable), agent_python=sys.executable)
        stream = feed.gpu_stream(0.2)
        try:
            snap = await stream.__anext__()
        finally:
            await stream.aclose()
    if not snap.available and "pynvml" not in (snap.reason or ""):
        pytest.fail(snap.reason)
    if snap.gpus and snap.gpus[0].name != "NVIDIA H100 80GB HBM3":
        pytest.skip("this machine has a real GPU (pynvml answered)")
    assert [(g.index, g.used_mib) for g in snap.gpus] == [(0, 3), (1, 70123)]
    assert [(p.gpu, p.used_mib) for p in snap.processes] == [(1, 70000)]


async def test_pane_shows_gpu1_processes_and_history_peak_is_the_max_observed(node_home, tmp_path, no_config):
    f = tmp_path / "gpu.json"
    write(f, {"gpus": [], "simulated": True})
    script = tmp_path / "idle.py"
    script.write_text(IDLE)
    # what the "server" uses over time, per GPU (MiB); its processes are on GPU 1
    samples = [(100.0, 20480.0), (200.0, 65536.5), (150.0, 40000.0)]
    async with LocalNode() as node:
        store = RunStore(node)
        run = await store.start([sys.executable, str(script)])
        app = console_for(node, sim_gpu_file=str(f), agent_python=sys.executable)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: app.state.run and app.state.run.run_id == run.run_id
                             and app.state.run.state == "running", what="the run")
            for used0, used1 in samples:
                write(f, two_gpus(used0, used1, [{"pid": run.pid, "used_mib": used1, "cmdline": "python idle.py"}]))
                await wait_until(pilot, lambda u=used1: app.state.gpu and len(app.state.gpu.gpus) == 2
                                 and app.state.gpu.gpus[1].used_mib == u, what=f"the sample {used1}")
            procs = app.state.gpu.processes
            assert [(p.gpu, p.pid) for p in procs] == [(1, run.pid)]
            # the pane's process row names GPU 1
            from mambaconsole.ui.gpu_pane import gpu_renderable
            from rich.console import Console

            con = Console(width=100, record=True)
            con.print(gpu_renderable(app.state, 100, {}))
            row = next(ln for ln in con.export_text().splitlines() if str(run.pid) in ln)
            assert row.split()[1] == "1", row

            peak = max(max(s) for s in samples)  # the fullest GPU at its fullest
            want = f"{peak / 1024:.1f} GiB seen"  # sampled: the log says nothing of memory
            await pilot.press("h")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "HistoryScreen")
            table = app.screen.query_one("DataTable")
            assert str(table.get_row_at(0)[table.get_column_index("peak GPU")]) == want
            await pilot.press("escape")
            # kept with the run on the node (within the note interval)
            async def noted():
                return (await store.get(run.run_id)).record.get("peak_mem_mib")

            for _ in range(100):
                if await noted() == peak:
                    break
                await pilot.pause(0.2)
            assert await noted() == peak
        # a lower peak noted later (another console) never lowers the record
        assert (await store.note(run.run_id, peak_mem_mib=1.0)).record["peak_mem_mib"] == peak
        await store.stop(run.run_id, int_s=5)


async def test_next_gpu_reads_the_running_stream_and_starts_no_agent(tmp_path, monkeypatch):
    """The relaunch's wait for free GPU memory (Feed.next_gpu) takes the pane's streamed sample
    while a stream runs; with none running it takes one short agent run. A sample written to the
    GPU file after the call is what it returns."""
    f = tmp_path / "gpu.json"
    write(f, two_gpus(10, 100, []))
    async with LocalNode() as node:
        feed = Feed(node, HostSettings(python=sys.executable), agent_python=sys.executable, sim_gpu_file=str(f))
        one_shots = []
        real_gpu = feed.gpu

        async def counted():
            one_shots.append(1)
            return await real_gpu()

        monkeypatch.setattr(feed, "gpu", counted)
        no_stream = await feed.next_gpu(wait=5)
        assert one_shots == [1] and [g.used_mib for g in no_stream.gpus] == [10, 100]

        stream = feed.gpu_stream(0.2)
        got: list = []

        async def pane() -> None:  # the console's GPU worker
            async for snap in stream:
                got.append(snap)

        task = asyncio.create_task(pane())
        try:
            for _ in range(300):  # the stream's first sample (the agent starting)
                if got:
                    break
                await asyncio.sleep(0.1)
            write(f, two_gpus(10, 41000, [{"pid": 77, "used_mib": 40900, "cmdline": "x"}]))
            snap = await feed.next_gpu(wait=10)
            while [g.used_mib for g in snap.gpus] != [10, 41000]:  # a sample read before the write
                snap = await feed.next_gpu(wait=10)
            assert [(p.gpu, p.pid) for p in snap.processes] == [(1, 77)]
            assert one_shots == [1]  # no agent started while the stream ran
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await stream.aclose()


async def test_each_gpu_file_change_reaches_the_state_from_one_stream(node_home, tmp_path, no_config):
    """The pane's GPU stream is opened once and every change of the GPU file reaches the state
    within a few poll intervals (0.3 s here; 8 s is generous on a loaded 2-core machine). The
    GPU worker's handler once returned post_message's bool, which the reader awaited: each
    sample "broke" the stream, so samples came only at each restart, 1, 2, 4 ... 30 s apart
    (the demo's pane 20-30 s behind the run)."""
    f = tmp_path / "gpu.json"
    write(f, two_gpus(0, 0, []))
    async with LocalNode() as node:
        app = console_for(node, sim_gpu_file=str(f), agent_python=sys.executable)
        opened = []
        real_stream = app.feed.gpu_stream

        def counted(*a, **kw):
            opened.append(1)
            return real_stream(*a, **kw)

        app.feed.gpu_stream = counted
        lost = []
        real_lost = app.session._lost
        app.session._lost = lambda poll, exc: (lost.append((poll, repr(exc))), real_lost(poll, exc))
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: app.state.gpu and len(app.state.gpu.gpus) == 2, what="the first sample")
            for used in (1000.0, 2000.0, 3000.0, 4000.0, 5000.0, 0.0):
                write(f, two_gpus(10, used, []))
                await wait_until(pilot, lambda u=used: app.state.gpu.gpus[1].used_mib == u, timeout=8,
                                 what=f"the sample {used} within 8 s")
            assert [p for p, _ in lost if p == "gpu"] == [], lost
            assert opened == [1]


async def test_a_stale_reading_says_its_age_and_ages_on_screen():
    """No sample for longer than a few seconds: the pane's first line says how old its numbers
    are, and the once-a-second tick ages it; a fresh sample takes the line away. Times are set
    here (a clock the test moves), thresholds from the pane's rule: 5 s, or 2.5 intervals."""
    from mambaconsole.state import GpuReading, GpuSnapshot
    from mambaconsole.ui.app import ConsoleApp

    now = [1_800_000_000.0]
    feed = Feed(LocalNode("gpu-node"), HostSettings(python=sys.executable), simulated=True)
    app = ConsoleApp(feed, clock=lambda: now[0], start_workers=False, poll_s=2.0)

    def pane_text() -> str:
        from rich.console import Console

        con = Console(width=120, record=True)
        con.print(app.gpu_pane.body.content)  # what the pane was last given to show
        return con.export_text()

    async with app.run_test(size=(120, 40)) as pilot:
        app.state.apply(GpuSnapshot((GpuReading(0, "Sim GPU", 90624.0, 98304.0, 78.0),), t=now[0]))
        app.refresh_panes({"gpu"})
        await pilot.pause(0.1)
        assert "88.5/96.0 GiB" in pane_text() and " old" not in pane_text()
        now[0] += 4.0  # within 5 s: fresh
        await pilot.pause(1.3)
        assert " old" not in pane_text()
        now[0] += 19.0  # 23 s without a sample
        await wait_until(pilot, lambda: "GPU reading 23 s old" in pane_text(), timeout=5, what="the age line")
        first = pane_text().strip().splitlines()[0]
        assert first.startswith("GPU reading 23 s old"), first
        now[0] += 7.0
        await wait_until(pilot, lambda: "GPU reading 30 s old" in pane_text(), timeout=5, what="the line aging")
        app.state.apply(GpuSnapshot((GpuReading(0, "Sim GPU", 0.0, 98304.0, 0.0),), t=now[0]))
        app.refresh_panes({"gpu"})
        await wait_until(pilot, lambda: " old" not in pane_text() and "0.0/96.0 GiB" in pane_text(), timeout=5)
        # a slower stream (poll 10 s) is stale only after 2.5 intervals
        app.state.gpu_interval_s = 10.0
        now[0] += 20.0
        await pilot.pause(1.3)
        assert " old" not in pane_text()
        now[0] += 6.0
        await wait_until(pilot, lambda: "GPU reading 26 s old" in pane_text(), timeout=5, what="the slow stream's age")


# Writes log lines as fast as a busy server's decode log, until SIGINT.
FLOOD = textwrap.dedent("""
    import signal, sys, time
    signal.signal(signal.SIGINT, lambda *a: sys.exit(0))
    i = 0
    while True:
        sys.stdout.write("".join("[2026-11-30 14:13:42] Decode batch, #running-req: 4, #full token: %d, "
                                 "gen throughput (token/s): 240.50, #queue-req: 22\\n" % (i + j) for j in range(200)))
        sys.stdout.flush()
        i += 200
        time.sleep(0.01)
""")


async def test_gpu_samples_keep_up_under_a_log_flood(node_home, tmp_path, no_config):
    """While the run's log floods the console (the app folds lines in slices and redraws the
    other panes only every 2 s), each GPU file change still reaches the state within 8 s
    (samples every 0.3 s; generous for a loaded 2-core machine)."""
    f = tmp_path / "gpu.json"
    write(f, two_gpus(0, 0, []))
    script = tmp_path / "flood.py"
    script.write_text(FLOOD)
    async with LocalNode() as node:
        store = RunStore(node)
        run = await store.start([sys.executable, str(script)])
        app = console_for(node, sim_gpu_file=str(f), agent_python=sys.executable)
        try:
            async with app.run_test(size=(120, 40)) as pilot:
                await wait_until(pilot, lambda: app.state.log_offset > 1_000_000, what="the flood in the log")
                for used in (1000.0, 2000.0, 3000.0, 4000.0, 5000.0):
                    write(f, two_gpus(10, used, []))
                    await wait_until(pilot, lambda u=used: app.state.gpu and app.state.gpu.gpus[1].used_mib == u,
                                     timeout=8, what=f"the sample {used} within 8 s of the write")
                assert app.state.log_offset > 2_000_000  # still flooding
        finally:
            await store.stop(run.run_id, int_s=5)
