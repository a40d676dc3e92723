"""Opening a two-day-old run: the console on a 1 GiB run log over loopback SSH, time until the
state is right, against the same console on a 10 MiB log in the same run.

Starts its own OpenSSH sshd on 127.0.0.1 (``tests/fixtures/sshd.py``), writes a 1 GiB and a
10 MiB run log (a real 0.5.23 boot up to its ready line, then the realistic mix of
``bench/console_rig.py``), makes each the log of a running run, and starts the real console
(``mambaconsole gpu-node`` as a headless app: node agent, feed, state, panes) on it, twice each.
"The state is right" (``console_rig.state_right``): the log read to its end, the history done,
the ServerArgs dump and the ready line folded in, the log pane drawn. Time from the app's start
(before the SSH connection) to then.

Goal: <= 5 s on the 1 GiB log and <= 3x the time on the 10 MiB log. Last line:
``open_big_log: time = X s (goal <= 5 s and <= 3x the 10 MiB log's Y s) PASS|FAIL``.

    .venv/bin/python bench/open_big_log.py [GiB]
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from console_rig import console, make_run, state_right, write_log  # noqa: E402
from fixtures.sshd import ssh_session  # noqa: E402

GOAL_S = 5.0
GOAL_RATIO = 3.0


async def open_once(home: Path, run_id: str, size: int, limit: float = 120.0) -> float:
    t0 = time.perf_counter()
    async with console("gpu-node", home) as (app, pilot):
        while not state_right(app, run_id, size):
            if time.perf_counter() - t0 > limit:
                st = app.state
                raise SystemExit(f"open_big_log: not right after {limit:.0f} s (read {st.log_offset} of {size}); "
                                 f"open_big_log: time = inf s (goal <= {GOAL_S:g} s) FAIL")
            await pilot.pause(0.01)
        took = time.perf_counter() - t0
    return took


def main() -> int:
    gib = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
    tmp = Path(tempfile.mkdtemp(prefix="mc-bench-"))
    procs = []
    try:
        t = time.perf_counter()
        big, small = tmp / "big.log", tmp / "small.log"
        big_size = write_log(big, int(gib * 2**30))
        small_size = write_log(small, 10 * 2**20)
        print(f"wrote {big_size / 2**20:.0f} MiB and {small_size / 2**20:.1f} MiB logs in {time.perf_counter() - t:.1f} s")
        with ssh_session() as home:
            os.environ["HOME"] = str(home.home)
            os.environ.pop("SSH_AUTH_SOCK", None)
            times = {}
            big_label = f"{big_size / 2**30:.2f} GiB"
            for label, log, size in (("10 MiB", small, small_size), (big_label, big, big_size)):
                store = tmp / f"store-{label.replace(' ', '')}"
                run_id, proc = make_run(store, log)
                procs.append(proc)
                times[label] = [asyncio.run(open_once(store, run_id, size)) for _ in range(2)]
                print(f"{label} log: state right after {', '.join(f'{x:.2f}' for x in times[label])} s")
    finally:
        for p in procs:
            p.kill()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    small_t, big_t = min(times["10 MiB"]), min(times[big_label])
    ok = big_t <= GOAL_S and big_t <= GOAL_RATIO * small_t
    load = os.getloadavg()[0]
    print(f"(load average {load:.1f} on {os.cpu_count()} CPUs while measured)")
    print(f"open_big_log: time = {big_t:.2f} s on {big_label} (goal <= {GOAL_S:g} s and <= {GOAL_RATIO:g}x the 10 MiB log's "
          f"{small_t:.2f} s) {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
