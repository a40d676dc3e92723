"""TTFT and ITL p50/p99 in the single-server console's speculative pane: the simulated server
exports SGLang's two histograms (names, labels and default buckets of 0.5.23's
TokenizerMetricsCollector), the feed keeps a one-minute window over its /metrics polls, the
state holds it and the pane shows it."""

from __future__ import annotations

import asyncio
import re
import time

import httpx
import pytest

from mambaconsole.node.local import LocalNode
from mambaconsole.sglang import latency as L
from mambaconsole.sglang.metrics import parse_metrics
from mambaconsole.sim import demo
from mambaconsole.state import LogLine, LogLines, MetricsSnapshot, RunInfo, RunsListed
from mambaconsole.ui.app import ConsoleApp
from mambaconsole.session.feed import Feed
from mambaconsole.session.settings import HostSettings

pytestmark = pytest.mark.timeout(120)


def test_sim_exports_ttft_and_itl_histograms(sim_process, free_port):
    run = sim_process("0.5.23", demo.working_argv("0.5.23", port=free_port), speed=50)
    run.wait_for("Decode batch", timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        body = httpx.get(f"http://127.0.0.1:{free_port}/metrics", timeout=5).text
        snap = parse_metrics(body)
        if (h := L.histogram(snap, L.ITL)) is not None and h.count > 0:
            break
        time.sleep(0.2)
    text = run.text()
    assert "# TYPE sglang:time_to_first_token_seconds histogram" in body
    assert "# TYPE sglang:inter_token_latency_seconds histogram" in body
    # 0.5.23's default buckets (metrics_collector.py): 18 TTFT bounds and 23 ITL bounds + Inf
    assert len(L.histogram(snap, L.TTFT).buckets) == 19 and len(L.histogram(snap, L.ITL).buckets) == 24
    # every admitted request had its first token: TTFT count = sglang:num_requests_total
    assert L.histogram(snap, L.TTFT).count == snap.value("sglang:num_requests_total")
    # a forward step is 2 s / 40 = 50 ms and yields 'accept len' tokens (1..4 with 4 draft tokens),
    # so every inter-token latency lies in [12.5, 50] ms; the p50 within the buckets around it
    lens = [float(m) for m in re.findall(r"accept len: ([0-9.]+)", text)]
    assert lens and all(1.0 <= a <= 4.0 for a in lens)
    p50 = L.quantile(0.5, L.histogram(snap, L.ITL))
    assert 0.010 <= p50 <= 0.060


def test_latency_text():
    lat = L.Latency(ttft_p50=0.35, ttft_p99=0.594, itl_p50=0.0175, itl_p99=0.04, window_s=60.0,
                    exported=(L.ITL, L.TTFT))
    assert lat.text() == "TTFT p50 350 ms  p99 594 ms  (last 60 s)\nITL  p50 18 ms  p99 40 ms"
    slow = L.Latency(ttft_p50=21.25, ttft_p99=139.6, exported=(L.TTFT,))
    assert slow.text() == "TTFT p50 21.2 s  p99 140 s  (since start)"
    assert L.Latency(exported=(L.TTFT,), window_s=60.0).text() == "TTFT/ITL: no request in the last 60 s"
    assert L.Latency().text() == ""


async def test_feed_state_and_spec_pane_show_ttft_and_itl(sim_process, free_port):
    run = sim_process("0.5.23", demo.working_argv("0.5.23", port=free_port), speed=50)
    await asyncio.to_thread(run.wait_for, "Decode batch", 60)
    feed = Feed(LocalNode("t"), HostSettings(port=free_port))
    first = await feed.metrics(free_port)
    await asyncio.sleep(0.5)
    second = await feed.metrics(free_port)
    assert first.latency.window_s is None and second.latency.window_s is not None
    assert L.TTFT in second.latency.exported and L.ITL in second.latency.exported
    # another run on the same port starts its own window, counter reset or not: the newcomer
    # read "TTFT ... (last 65 s)" on a relaunched server up 36 s
    third = await feed.metrics(free_port, "r2")
    assert third.latency.window_s is None
    fourth = await feed.metrics(free_port, "r2")
    assert fourth.latency.window_s is not None

    app = ConsoleApp(Feed(LocalNode("t"), HostSettings()), start_workers=False)
    lat = L.Latency(ttft_p50=0.35, ttft_p99=0.594, itl_p50=0.0175, itl_p99=0.04, window_s=60.0,
                    exported=(L.ITL, L.TTFT))
    decode = ("[2026-04-23 07:32:10] Decode batch, #running-req: 4, #full token: 2048, full token usage: 0.10, "
              "mamba num: 8, mamba usage: 0.20, accept len: 2.50, accept rate: 0.60, cuda graph: True, "
              "gen throughput (token/s): 400.00, #queue-req: 0")
    async with app.run_test(size=(120, 40)) as pilot:
        app.state.apply(RunsListed((RunInfo("r1", log_path="/x", state="running", pid=1),), "r1"))
        app.state.apply(LogLines("r1", (LogLine("r1", 0, decode),)))
        app.state.flush_log()
        assert app.state.apply(MetricsSnapshot({"sglang:num_running_reqs": 4.0}, latency=lat)) >= {"spec"}
        app.refresh_panes({"spec"})
        await pilot.pause(0.05)
        stats = str(app.spec_pane.query_one("#spec-stats").render())
        assert "TTFT p50 350 ms  p99 594 ms  (last 60 s)\nITL  p50 18 ms  p99 40 ms" in stats
    await feed.close()
