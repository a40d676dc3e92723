"""Log throughput over SSH: 1,000,000 real-format SGLang lines, console path vs raw ``ssh cat``.

Starts its own OpenSSH sshd on 127.0.0.1 with throwaway keys (``tests/fixtures/sshd.py``),
writes the lines of ``bench/parse_throughput.py`` (the same mixed, real-format SGLang log)
to a file, then in the same run times, best of 2 each:

- raw: ``ssh gpu-node cat FILE``, its stdout read here and split into str lines;
- console: ``SSHNode`` (asyncssh) running the node agent (``--follow FILE``) and reading its
  ``log`` records until they reach the end of the file: the lines as the console gets them
  (str lines with byte offsets).

Goal: console lines/s >= 0.5x raw. Last line:
``log_throughput: ratio = X (goal >= 0.5) PASS|FAIL``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tui"), str(ROOT / "tests"), str(ROOT / "bench")]

from fixtures.sshd import ssh_session  # noqa: E402
from parse_throughput import N, generate  # noqa: E402

from mambaconsole.node.agent import agent_record_batches  # noqa: E402
from mambaconsole.node.ssh import SSHNode  # noqa: E402

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


async def console(path: Path, size: int) -> tuple[int, float]:
    node = SSHNode("gpu-node")
    await node.connect()
    t = time.perf_counter()
    n = 0
    stream = agent_record_batches(node, python=sys.executable, follow=str(path), interval=0)
    try:
        async for batch in stream:
            done = False
            for rec in batch:
                if rec["type"] == "log":
                    n += len(rec["lines"])
                    done = rec["end"] >= size
            if done:
                break
    finally:
        await stream.aclose()
        dt = time.perf_counter() - t
        await node.close()
    return n, dt


def main() -> int:
    tmp = Path(tempfile.mkdtemp(prefix="mc-bench-"))
    path = tmp / "server.log"
    generate(path)
    size = path.stat().st_size
    with ssh_session() as home:
        os.environ["HOME"] = str(home.home)
        os.environ.pop("SSH_AUTH_SOCK", None)
        raw = [raw_cat(home, path) for _ in range(2)]
        con = [asyncio.run(console(path, size)) for _ in range(2)]
    path.unlink()
    tmp.rmdir()
    for label, runs in (("raw ssh cat", raw), ("console", con)):
        for n, dt in runs:
            if n != N:
                print(f"{label}: got {n} lines, expected {N}")
                print(f"log_throughput: ratio = 0 (goal >= {GOAL}) FAIL")
                return 1
    raw_rate = max(N / dt for _, dt in raw)
    con_rate = max(N / dt for _, dt in con)
    ratio = con_rate / raw_rate
    print(f"file: {N} lines, {size / 2**20:.1f} MiB")
    print(f"raw ssh cat:  {raw_rate:,.0f} lines/s ({min(dt for _, dt in raw):.2f} s)")
    print(f"console:      {con_rate:,.0f} lines/s ({min(dt for _, dt in con):.2f} s)")
    ok = ratio >= GOAL
    print(f"log_throughput: ratio = {ratio:.2f} (goal >= {GOAL}) {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
