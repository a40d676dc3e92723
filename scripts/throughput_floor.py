"""Whether ``bench/log_throughput.py``'s goal fits this machine: the work its console path does,
measured stage by stage in one run, against the time the goal allows. Not a benchmark (no goal
of its own, no PASS/FAIL): a diagnosis of what any design would have to remove.

On the bench's own input (``console_rig.BOOT`` + N lines of ``console_rig.mix_lines``, as a
running run's log read from byte 0; its startup-only lines come about one in 30, so the fold
sees a new boot about every 200 lines: 1,520 in 300k, a crash loop), or with ``--serving``
on a long-running server's (``console_rig.SERVING``: one boot), over a fresh OpenSSH sshd on
127.0.0.1 per phase:

- ``raw``: ``ssh gpu-node cat FILE`` (best of 3), on the file and on a 1,000-line file (its
  fixed part: SSH login, the node's login shell, ``cat``'s start);
- ``console``: the console as the bench runs it (``console_rig.console``, the history read,
  drawn), on the file and on the 1,000-line file (its fixed part: the app's start, the SSH
  login, the node's first look, the first view), best of 2: wall time, the console process's
  CPU (``time.process_time``: every thread of it) and the node side's (sshd, the login shell,
  the node agent: ``RUSAGE_CHILDREN`` once the phase's sshd has been stopped and reaped);
- ``fold``: ``ConsoleState.apply`` of the same lines in the session's history pieces, without
  SSH or drawing, the collector off (``scripts/fold_cost.py``'s measure, best of 3).

Then two lower bounds of the console's wall time on this machine's ``os.cpu_count()`` cores,
as long as each stage costs what it costs now:

- *the fold in one pass*: the fixed part, then the fold, even if everything else ran beside it.
  The fold is one sequential pass today (each line read in the state the lines before it left);
  it could be split at a boot boundary (each half of the crash-loop input folds in about half
  the time), which is a different design, not this one;
- *all cores busy*, as the console works now: the fixed part, then the CPU of every stage past
  the fixed part (the console's and the node's, both on this machine in the bench) spread
  perfectly over the cores. The node's part includes the node commands the console starts
  while the history is still read (``session.FIRST_LOG_WAIT_S``: the facts, the GPU stream,
  the runs agent, each starting the node's login shell), which a design could put off.

and a third that holds for any design as long as the fold costs what it costs now:

- *any design with this fold*: the fixed part, then only the CPU no design can skip (moving the
  bytes over SSH as ``ssh cat`` does: raw's CPU past its own fixed part; and the fold) spread
  perfectly over the cores: nothing else costs anything (line framing, the agent's records,
  the log ring, drawing, node commands), the fold splits into equal parts for free. The room
  it leaves under the goal is all any real design has for those. Printed also with raw's fixed
  part (the SSH login, the node's shell, ``cat``'s start) in place of the console's (which adds
  the app's start and the first look).

The bounds move with the machine's load (the fixed part doubled at load 2.6).

The goal (0.5x raw's lines per second) allows ``2 x raw``'s wall time.

    .venv/bin/python scripts/throughput_floor.py [LINES] [--serving]
"""

from __future__ import annotations

import asyncio
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tui"), str(ROOT / "tests"), str(ROOT / "bench"), str(ROOT / "scripts")]

from fixtures.sshd import ssh_session  # noqa: E402
from console_rig import BOOT, SERVING, TEMPLATES, make_run, mix_lines  # noqa: E402
import log_throughput as LT  # noqa: E402

SMALL = 1_000


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _phase(fn):
    """``fn(home)`` under a fresh sshd; returns its result and the CPU seconds of every process
    the phase started (sshd and what it ran, ssh clients), counted once the sshd is reaped."""
    before = _children_cpu()
    saved = os.environ.get("HOME")
    try:
        with ssh_session() as home:
            os.environ["HOME"] = str(home.home)
            os.environ.pop("SSH_AUTH_SOCK", None)
            out = fn(home)
    finally:
        if saved is not None:
            os.environ["HOME"] = saved
    time.sleep(0.2)  # the daemon's last children reaped
    return out, _children_cpu() - before


def _raw(path: Path, reps: int = 3) -> tuple[float, float]:
    """Best wall of ``ssh cat`` and the CPU of all its processes per run (seconds)."""
    walls, cpu = _phase(lambda home: [LT.raw_cat(home, path)[1] for _ in range(reps)])
    return min(walls), cpu / reps


def _console(tmp: Path, path: Path, reps: int = 2) -> tuple[float, float, float]:
    """Best wall of the console reading ``path``'s whole history, its process's CPU (best) and
    the node side's CPU per run (seconds)."""
    size = path.stat().st_size
    store = tmp / f"store-{path.stem}"

    def run(home):
        run_id, proc = make_run(store, path)
        try:
            walls, cpus = [], []
            for _ in range(reps):
                c = time.process_time()
                walls.append(asyncio.run(LT.through_console(store, run_id, size))[1])
                cpus.append(time.process_time() - c)
            return walls, cpus
        finally:
            proc.kill()
            proc.wait()

    (walls, cpus), node = _phase(run)
    return min(walls), min(cpus), node / reps


def _fold(path: Path) -> float:
    import fold_cost
    from mambaconsole.session.intake import HISTORY_CHUNK

    best, _n, _st = fold_cost.measure(path.read_text(), 3, HISTORY_CHUNK)
    return best


def main() -> int:
    args = [a for a in sys.argv[1:] if a != "--serving"]
    templates = SERVING if "--serving" in sys.argv[1:] else TEMPLATES
    n_mix = int(args[0]) if args else LT.N
    tmp = Path(tempfile.mkdtemp(prefix="mc-floor-"))
    try:
        big, small = tmp / "server.log", tmp / "small.log"
        with open(big, "w") as f:
            f.write(BOOT)
            f.writelines(mix_lines(n_mix, 1234, templates=templates))
        with open(small, "w") as f:
            f.write(BOOT)
            f.writelines(mix_lines(SMALL, 1234, templates=templates))
        lines = BOOT.count("\n") + n_mix
        raw_small, raw_small_cpu = _raw(small)
        raw_big, raw_big_cpu = _raw(big)
        con_small, con_small_cpu, node_small = _console(tmp, small)
        con_big, con_big_cpu, node_big = _console(tmp, big)
        fold = _fold(big)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    cores = os.cpu_count() or 1
    budget = 2 * raw_big
    variable_cpu = (con_big_cpu - con_small_cpu) + (node_big - node_small)
    one_pass = con_small + fold
    all_cores = con_small + variable_cpu / cores
    transport_cpu = max(0.0, raw_big_cpu - raw_small_cpu)
    any_design = con_small + (transport_cpu + fold) / cores
    any_login = raw_small + (transport_cpu + fold) / cores
    print(f"file: {lines} lines of the {'serving' if templates is SERVING else 'bench'} mix; this machine: {cores} CPUs, load average {os.getloadavg()[0]:.1f}")
    print(f"raw ssh cat:   {raw_big:.2f} s wall ({raw_small:.2f} s of it fixed: a {SMALL}-line file), "
          f"{raw_big_cpu:.2f} s CPU in all")
    print(f"console:       {con_big:.2f} s wall ({con_small:.2f} s fixed); CPU: console process "
          f"{con_big_cpu:.2f} s ({con_small_cpu:.2f} fixed), node side {node_big:.2f} s ({node_small:.2f} fixed)")
    print(f"fold alone:    {fold:.2f} s CPU (ConsoleState.apply of the same lines, no SSH, no drawing)")
    print(f"goal (0.5x raw's rate): console wall <= {budget:.2f} s")
    print(f"bound, the fold in one pass:  {con_small:.2f} fixed + {fold:.2f} fold = {one_pass:.2f} s")
    print(f"bound, all {cores} cores busy (as now):     {con_small:.2f} fixed + {variable_cpu:.2f} CPU / {cores} = {all_cores:.2f} s")
    print(f"bound, any design with this fold: {con_small:.2f} fixed + ({transport_cpu:.2f} moving the bytes as ssh cat does "
          f"+ {fold:.2f} fold) / {cores} = {any_design:.2f} s ({(budget - any_design) / budget:+.0%} of the goal's time left "
          f"for everything else); with raw's fixed part (the SSH login alone) for the console's: {any_login:.2f} s "
          f"({(budget - any_login) / budget:+.0%})")
    over = max(one_pass, all_cores) - budget
    if over > 0:
        print(f"the goal needs {over:.2f} s less than the larger bound: the fold cut to "
              f"<= {budget - con_small:.2f} s on its critical path (split across processes, or cheaper) "
              f"AND the whole path's CPU past the fixed part cut to <= {(budget - con_small) * cores:.2f} s")
    else:
        print("both bounds are within the goal: a design that overlaps the stages could meet it")
    return 0


if __name__ == "__main__":
    sys.exit(main())
