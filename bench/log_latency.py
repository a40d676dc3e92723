"""Log latency over SSH: a line appended to a run log on the node until the console has it.

Starts its own OpenSSH sshd on 127.0.0.1 with throwaway keys (``tests/fixtures/sshd.py``).
A writer process appends ``N`` lines, one every ``GAP`` seconds, each carrying its write time
(``time.time_ns()``; one machine, one clock). In the same run, taking turns :data:`ROUNDS`
times, each round a fresh file:

- raw: ``ssh gpu-node tail -n0 -F FILE`` read here line by line;
- console: the real console (``mambaconsole gpu-node`` as a headless app at 120x40: node
  agent, feed, state, panes), in a process of its own as a user starts it, following a running
  run whose log is the file; a line has arrived when the screen update that first shows it in
  the log pane is written (the compositor's render after the pane took the line from the state).

Latency = arrival time - write time. The p50 and p99 of each side are over all its rounds'
lines (raw's p99 in one round is the 5th-slowest of 400 lines of a sub-millisecond path: on
this project's 2-core box it ranged 0.7-4 ms between runs, and the goal moved with it); each
round's p99s are printed too. Goal: console p99 <= 5x raw p99. Last line:
``log_latency: p99 ratio = X (goal <= 5) PASS|FAIL``.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tui"), str(ROOT / "tests"), str(ROOT / "bench")]

from fixtures.sshd import ssh_session  # noqa: E402

from console_rig import BOOT, console, make_run  # noqa: E402

N = 400
GAP = 0.01
ROUNDS = 3
GOAL = 5.0

WRITER = r"""
import sys, time
path, n, gap = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
sys.stdin.readline()  # "go"
with open(path, "ab", buffering=0) as f:
    for i in range(n):
        f.write(b"[2026-10-01 12:34:56 TP0] Decode batch, #running-req: 8, #full token: 20480, full token usage: 0.12, mamba num: 16, mamba usage: 0.03, accept len: 2.80, accept rate: 0.60, cuda graph: True, gen throughput (token/s): 812.05, #queue-req: 0 t=%d\n" % time.time_ns())
        time.sleep(gap)
    f.write(b"END\n")
"""


def stamp(line: str) -> int | None:
    i = line.rfind(" t=")
    return int(line[i + 3:]) if i >= 0 else None


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))]


async def measure(path: Path, reader) -> list[float]:
    """reader: async iterator of str lines. Warm up until a line arrives, then time N lines."""
    queue: asyncio.Queue = asyncio.Queue()

    async def pump():
        async for item in reader:  # a line, or (when it arrived, line)
            queue.put_nowait(item if isinstance(item, tuple) else (time.time_ns(), item))

    task = asyncio.ensure_future(pump())
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(N), str(GAP)], stdin=subprocess.PIPE)
    lat = []
    try:
        while True:  # warm-up: append until the reader shows it is following
            with open(path, "ab") as f:
                f.write(b"warm-up\n")
            try:
                _, line = await asyncio.wait_for(queue.get(), 0.5)
                if line == "warm-up":
                    break
            except asyncio.TimeoutError:
                continue
        while not queue.empty():
            queue.get_nowait()
        writer.stdin.write(b"go\n")
        writer.stdin.flush()
        while True:
            now, line = await asyncio.wait_for(queue.get(), 30)
            if line == "END":
                break
            t = stamp(line)
            if t is not None:
                lat.append((now - t) / 1e6)
    finally:
        task.cancel()
        try:
            await task
        except (asyncio.CancelledError, Exception):
            pass
        writer.stdin.close()
        writer.wait(30)
    return lat


async def raw_lines(home, path: Path):
    p = await asyncio.create_subprocess_exec(*home.ssh_argv("tail", "-n0", "-F", str(path)),
                                             stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
                                             stdin=asyncio.subprocess.DEVNULL)
    try:
        while True:
            line = await p.stdout.readline()
            if not line:
                return
            yield line.decode("utf-8", "replace").rstrip("\n")
    finally:
        p.kill()
        await p.wait()


async def console_lines(store: Path, run_id: str):
    """(when it was drawn, line) for each line the console's log pane shows, from the screen
    update that first shows it."""
    drawn: asyncio.Queue = asyncio.Queue()
    async with console("gpu-node", store) as (app, pilot):
        display = app._display
        seen = [app.log_pane._seen_total]

        def _display(screen, renderable):
            display(screen, renderable)
            now = time.time_ns()
            st, took = app.state, app.log_pane._seen_total
            n = took - seen[0]
            if renderable is not None and n > 0:
                behind = st.log_total - seen[0]
                for rec in st.log.tail_raw(min(behind, len(st.log)))[:n]:
                    drawn.put_nowait((now, rec[1]))
                seen[0] = took

        app._display = _display
        try:
            while True:
                yield await drawn.get()
        finally:
            app._display = display


async def console_round(store: Path, run_id: str, path: Path) -> list[float]:
    gen = console_lines(store, run_id)
    try:
        return await measure(path, gen)
    finally:
        await gen.aclose()


def run_round(home, tmp: Path) -> tuple[list[float], list[float]]:
    """One round: raw here, then the console in a child process (``--console-round``)."""
    tmp.mkdir(parents=True)
    raw_path, con_path = tmp / "raw.log", tmp / "console.log"
    raw_path.touch()

    async def raw_round():
        gen = raw_lines(home, raw_path)
        try:
            return await measure(raw_path, gen)
        finally:
            await gen.aclose()

    raw = asyncio.run(raw_round())
    con_path.write_text(BOOT)
    run_id, proc = make_run(tmp / "store", con_path)
    try:
        out = subprocess.run([sys.executable, __file__, "--console-round", str(tmp / "store"), run_id, str(con_path)],
                             stdout=subprocess.PIPE, text=True, timeout=300)
    finally:
        proc.kill()
        proc.wait()
    lines = out.stdout.strip().splitlines()
    con = json.loads(lines[-1]) if out.returncode == 0 and lines else []
    return raw, con


def main() -> int:
    if sys.argv[1:2] == ["--console-round"]:  # a child of run_round: the console's side of a round
        store, run_id, path = sys.argv[2:5]
        print(json.dumps(asyncio.run(console_round(Path(store), run_id, Path(path)))))
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="mc-bench-"))
    with ssh_session() as home:
        os.environ["HOME"] = str(home.home)
        os.environ.pop("SSH_AUTH_SOCK", None)
        rounds = [run_round(home, tmp / f"round{r}") for r in range(ROUNDS)]
    shutil.rmtree(tmp, ignore_errors=True)
    if any(len(raw) != N or len(con) != N for raw, con in rounds):
        print("lines timed (raw, console) per round:", [(len(raw), len(con)) for raw, con in rounds], f"expected {N}")
        print(f"log_latency: p99 ratio = inf (goal <= {GOAL:g}) FAIL")
        return 1
    raw = [x for r, _ in rounds for x in r]
    con = [x for _, c in rounds for x in c]
    print(f"{ROUNDS} rounds of {N} lines, one every {GAP * 1000:g} ms, raw and console taking turns")
    print("p99 per round, raw / console (ms): " + ", ".join(f"{pct(r, 99):.2f} / {pct(c, 99):.2f}" for r, c in rounds))
    print(f"raw ssh tail -F: p50 {statistics.median(raw):.2f} ms, p99 {pct(raw, 99):.2f} ms")
    print(f"console (drawn): p50 {statistics.median(con):.2f} ms, p99 {pct(con, 99):.2f} ms")
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs while measured)")
    ratio = pct(con, 99) / pct(raw, 99)
    ok = ratio <= GOAL
    print(f"log_latency: p99 ratio = {ratio:.2f} (goal <= {GOAL:g}) {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
