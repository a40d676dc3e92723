"""Log pane under a flood: 20,000 lines/s of the realistic mix (``bench/console_rig.py``: every
format the parser knows, tracebacks, access lines) arrive for D seconds (default 10) in batches
every 50 ms, as the tail worker delivers them; each batch is folded into the ConsoleState (SGLang
parsing and the run fold included) and the panes redraw. Measures the worst and the
p95 time per batch (a frame: goal under 50 ms), then floods D seconds more under tracemalloc to
check that memory stays bounded (lines kept, and traced allocations at the end vs after the
first second; tracemalloc is off while frames are timed, it slows every allocation several
times over). Baseline, same run: the same lines parsed by sglang.events alone.

Note: the lines are generated in this process (the node and the SSH/agent path are measured by
bench/log_latency.py and bench/log_throughput.py); this isolates the console's cost.

    .venv/bin/python bench/flood.py [SECONDS]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from console_rig import mix_lines  # noqa: E402

from mambaconsole.node.local import LocalNode  # noqa: E402
from mambaconsole.sglang.events import LogParser  # noqa: E402
from mambaconsole.state import LOG_KEEP, LogLine, LogLines, RunInfo, RunsListed  # noqa: E402
from mambaconsole.ui.app import ConsoleApp  # noqa: E402
from mambaconsole.session.feed import Feed  # noqa: E402
from mambaconsole.session.settings import HostSettings  # noqa: E402

RATE = 20_000
FRAME = 0.05
PER_BATCH = int(RATE * FRAME)


_MIX = [ln.rstrip("\n") for ln in mix_lines(200_000, 42)]


def line(i: int) -> str:
    return _MIX[i % len(_MIX)]


async def flood(seconds: float) -> tuple[list[float], int, int, int]:
    """Two phases on one app: ``seconds`` of flood timed per frame, then ``seconds`` more with
    tracemalloc on for the memory check. tracemalloc slows every allocation several times
    over (the frames it would time are not the console's, and the parse-only baseline runs
    without it), so it is never on while frames are timed."""
    feed = Feed(LocalNode("bench"), HostSettings())
    app = ConsoleApp(feed, start_workers=False)
    frames: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        app.state.apply(RunsListed((RunInfo("flood", log_path="/dev/null"),), "flood"))
        app.state.show_log_of("flood")
        off, i = 0, 0

        async def one_frame() -> float:
            nonlocal off, i
            batch = []
            for _ in range(PER_BATCH):
                text = line(i)
                batch.append(LogLine("flood", off, text))
                off += len(text) + 1
                i += 1
            t0 = time.perf_counter()
            changed = app.state.apply(LogLines("flood", tuple(batch)))
            app.refresh_panes(changed)
            await pilot.pause(0)  # let the screen update
            took = time.perf_counter() - t0
            await asyncio.sleep(max(0.0, FRAME - took))
            return took

        t_end = time.monotonic() + seconds
        while time.monotonic() < t_end:
            frames.append(await one_frame())
        # memory: the same flood, traced; what is still allocated after 1 s vs at the end
        tracemalloc.start()
        mem_1s = None
        t_first = time.monotonic()
        t_end = t_first + seconds
        while time.monotonic() < t_end:
            await one_frame()
            if mem_1s is None and time.monotonic() - t_first > 1.0:
                mem_1s = tracemalloc.get_traced_memory()[0]
        mem_end = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        kept = len(app.state.log)
    return frames, kept, mem_1s or 0, mem_end


def baseline(n: int) -> float:
    p = LogParser()
    t0 = time.perf_counter()
    for i in range(n):
        p.feed(line(i))
    return time.perf_counter() - t0


def main() -> int:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0
    frames, kept, m1, m2 = asyncio.run(flood(seconds))
    parse = baseline(PER_BATCH) * 1000
    worst, p95 = max(frames) * 1000, statistics.quantiles(frames, n=20)[-1] * 1000
    bounded = kept <= LOG_KEEP and m2 < 2 * m1 + 8 * 2**20
    print(f"{len(frames)} batches of {PER_BATCH} lines ({RATE} lines/s): p95 {p95:.1f} ms, worst {worst:.1f} ms per batch; "
          f"parse-only baseline {parse:.1f} ms per batch; lines kept {kept} (cap {LOG_KEEP}); "
          f"traced memory {m1 / 2**20:.1f} MiB after 1 s, {m2 / 2**20:.1f} MiB at the end")
    ok = p95 < 50 and bounded
    print(f"flood: p95 frame time = {p95:.1f} ms (goal 50 ms, memory bounded: {'yes' if bounded else 'no'}) "
          f"{'PASS' if ok else 'FAIL'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
