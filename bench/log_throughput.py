"""Log throughput over SSH: N real-format SGLang lines through the whole console vs raw ``ssh cat``.

Starts its own OpenSSH sshd on 127.0.0.1 with throwaway keys (``tests/fixtures/sshd.py``),
writes the mixed, real-format SGLang log of ``bench/console_rig.py`` (a real boot, then the mix
of ``bench/parse_throughput.py``: every format the parser knows, its startup-only lines among
them about one line in 30, so the fold reads a crash loop, a new boot about every 200 lines; a
long-running server's log, ``console_rig.SERVING``, folds in less than half the CPU:
``scripts/fold_cost.py``) as a running run's log, then in the same run times, best of 2 each:

- raw: ``ssh gpu-node cat FILE``, its stdout read here and split into str lines;
- console: the real console (``mambaconsole gpu-node`` as a headless app at 120x40: node
  agent, feed, state with SGLang's parser and the run fold, panes) opened on the run with
  ``log_tail_mib`` above the file's size (every line read, none skipped), from the app's start
  until the state has the last line and the log pane drew it (``console_rig.state_right``).

Goal: console lines/s >= 0.5x raw. Last line:
``log_throughput: ratio = X (goal >= 0.5) PASS|FAIL``.

    .venv/bin/python bench/log_throughput.py [LINES]
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tui"), str(ROOT / "tests"), str(ROOT / "bench")]

from fixtures.sshd import ssh_session  # noqa: E402
from console_rig import BOOT, console, make_run, mix_lines, state_right  # noqa: E402

N = 300_000
GOAL = 0.5


def raw_cat(home, path: Path) -> tuple[int, float]:
    t = time.perf_counter()
    p = subprocess.Popen(home.ssh_argv("cat", str(path)), stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    n, rest = 0, ""
    while True:
        chunk = p.stdout.read1(1 << 18)
        if not chunk:
            break
        lines = (rest + chunk.decode("utf-8", "replace")).split("\n")
        rest = lines.pop()
        n += len(lines)
    p.wait()
    return n + (1 if rest else 0), time.perf_counter() - t


async def through_console(store: Path, run_id: str, size: int) -> tuple[int, float]:
    t = time.perf_counter()
    async with console("gpu-node", store, log_tail_mib=2 * size / 2**20 + 1) as (app, pilot):
        while not state_right(app, run_id, size):
            await pilot.pause(0.01)
        took = time.perf_counter() - t
        return app.state.log_total, took


def main() -> int:
    n_mix = int(sys.argv[1]) if len(sys.argv) > 1 else N
    tmp = Path(tempfile.mkdtemp(prefix="mc-bench-"))
    path = tmp / "server.log"
    with open(path, "w") as f:
        f.write(BOOT)
        f.writelines(mix_lines(n_mix, 1234))
    n = BOOT.count("\n") + n_mix
    size = path.stat().st_size
    proc = None
    try:
        with ssh_session() as home:
            os.environ["HOME"] = str(home.home)
            os.environ.pop("SSH_AUTH_SOCK", None)
            run_id, proc = make_run(tmp / "store", path)
            raw = [raw_cat(home, path) for _ in range(2)]
            con = [asyncio.run(through_console(tmp / "store", run_id, size)) for _ in range(2)]
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    for label, runs in (("raw ssh cat", raw), ("console", con)):
        for got, _dt in runs:
            if got != n:
                print(f"{label}: got {got} lines, expected {n}")
                print(f"log_throughput: ratio = 0 (goal >= {GOAL}) FAIL")
                return 1
    raw_rate = max(n / dt for _, dt in raw)
    con_rate = max(n / dt for _, dt in con)
    ratio = con_rate / raw_rate
    print(f"file: {n} lines, {size / 2**20:.1f} MiB")
    print(f"raw ssh cat:  {raw_rate:,.0f} lines/s ({min(dt for _, dt in raw):.2f} s)")
    print(f"console:      {con_rate:,.0f} lines/s ({min(dt for _, dt in con):.2f} s: app start, ssh, agent, "
          "parser, fold, state, panes)")
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs while measured)")
    ok = ratio >= GOAL
    print(f"log_throughput: ratio = {ratio:.2f} (goal >= {GOAL}) {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
