"""``mambaconsole inspect --json`` of a 1 GiB mixed server log: peak memory and time, against a
plain-``re`` single pass over the same file in the same run.

Writes the log of ``bench/console_rig.py`` (a real 0.5.23 boot up to its ready line, then a
long-running server's mix: batch lines of both generations, scheduler debug lines, request
traces, access lines, warnings, failed requests' tracebacks). Then, each in a fresh process,
its peak RSS read by the process itself (``ru_maxrss``) at the end:

- baseline: ``for line in open(FILE, "rb"): DECODE.search(line)``, one compiled regex over
  every line (what ``grep`` does, in Python);
- inspect: ``python -m mambaconsole inspect FILE --json`` (the whole path: reading, parsing,
  the run fold, the summary, the JSON).

Goals: peak RSS <= 256 MiB and time <= 3x the baseline's. Last line:
``inspect_big: time ratio = X, peak RSS = Y MiB (goal <= 3x, <= 256 MiB) PASS|FAIL``.

    .venv/bin/python bench/inspect_big.py [GiB]
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from console_rig import ROOT, write_log  # noqa: E402

GOAL_RATIO = 3.0
GOAL_MIB = 256

RUN = r"""
import resource, runpy, sys, time
t = time.perf_counter()
try:
    if sys.argv[1] == "baseline":
        import re
        DECODE = re.compile(rb"Decode batch, #running-req: (\d+).*?accept len: ([\d.]+)")
        n = 0
        with open(sys.argv[2], "rb") as f:
            for line in f:
                if DECODE.search(line):
                    n += 1
        print(n)
    else:
        sys.argv = ["mambaconsole"] + sys.argv[1:]
        runpy.run_module("mambaconsole", run_name="__main__")
except SystemExit as exc:
    if exc.code not in (0, None):
        raise
finally:
    sys.stdout.flush()
    print("BENCH %f %d" % (time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss),
          file=sys.stderr)
"""


#: seconds a run may take before it is stopped (and the benchmark fails)
LIMIT_S = 600


def run(*args: str) -> tuple[float, float, str]:
    """(seconds, peak RSS in MiB, stdout) of one fresh process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "tui"))
    try:
        p = subprocess.run([sys.executable, "-c", RUN, *args], capture_output=True, text=True, env=env,
                           timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        raise SystemExit(f"{args[0]} did not finish in {LIMIT_S} s\n"
                         f"inspect_big: time ratio = inf, peak RSS = ? MiB (goal <= {GOAL_RATIO:g}x, "
                         f"<= {GOAL_MIB} MiB) FAIL") from None
    line = [ln for ln in p.stderr.splitlines() if ln.startswith("BENCH ")]
    if p.returncode != 0 or not line:
        raise SystemExit(f"{args[0]} failed ({p.returncode}): {p.stderr[-2000:]}\n"
                         f"inspect_big: time ratio = inf, peak RSS = inf MiB (goal <= {GOAL_RATIO:g}x, "
                         f"<= {GOAL_MIB} MiB) FAIL")
    _, secs, kib = line[-1].split()
    return float(secs), int(kib) / 1024, p.stdout


def main() -> int:
    gib = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    tmp = Path(tempfile.mkdtemp(prefix="mc-bench-"))
    try:
        log = tmp / "server.log"
        size = write_log(log, int(gib * 2**30))
        base = [run("baseline", str(log)) for _ in range(2)]
        insp = run("inspect", str(log), "--json")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    b_t = min(t for t, _, _ in base)
    i_t, i_rss, out = insp
    outcome = json.loads(out).get("outcome") if out.strip().startswith("{") else "?"
    ratio = i_t / b_t
    print(f"file: {size / 2**20:.0f} MiB; inspect --json says outcome {outcome!r}")
    print(f"plain re pass: {b_t:.1f} s, peak RSS {min(r for _, r, _ in base):.0f} MiB")
    print(f"inspect --json: {i_t:.1f} s, peak RSS {i_rss:.0f} MiB")
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs while measured)")
    ok = ratio <= GOAL_RATIO and i_rss <= GOAL_MIB
    print(f"inspect_big: time ratio = {ratio:.1f}, peak RSS = {i_rss:.0f} MiB (goal <= {GOAL_RATIO:g}x, "
          f"<= {GOAL_MIB} MiB) {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
