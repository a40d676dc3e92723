"""What folding a log's history costs the console, without SSH or drawing: ``ConsoleState.apply``
of the history of ``bench/log_throughput.py`` (``console_rig.BOOT``, then N lines of the
realistic mix, ``console_rig.mix_lines``: a crash loop, about one restart per 200 lines) and of
the serving mix (``templates=SERVING``: a long-running server), in the pieces the session hands
history over in (``session.intake.HISTORY_CHUNK`` lines), the garbage collector off. Not a
benchmark (no goal, no PASS/FAIL): a diagnosis, fixed input, CPU time (best of ``--reps``).

Per mix: microseconds of CPU per line; the lines the block fold read in bulk and those that
took the general path (the parser, then the run fold, event by event), the runs, the parser
calls; with ``--stages``, the CPU time of the general path (parsing, then folding and showing
its events, including the record each run ends) and of the runs read in bulk (the decode
lines' numbers: one regex search per run, then their tally), measured around those calls (so a
little slower in all).

    .venv/bin/python scripts/fold_cost.py [N] [--reps R] [--stages] [--mix bench|serving]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tui"), str(ROOT / "tests"), str(ROOT / "bench")]

from console_rig import BOOT, SERVING, mix_lines  # noqa: E402
from parse_throughput import TEMPLATES  # noqa: E402
from mambaconsole.node.agent import LineBatch  # noqa: E402
from mambaconsole.sglang import block_fold as BF  # noqa: E402
from mambaconsole.session.intake import HISTORY_CHUNK  # noqa: E402
from mambaconsole.state import ConsoleState, LogLines, RunInfo, RunsListed  # noqa: E402

NOW = 1_900_000_000.0


def _pieces(text: str, chunk: int) -> tuple[list[LogLines], int]:
    """``text`` as the history pieces a session applies: consecutive lines, the file opened
    after the last (all of it history), its own timestamps 3600 s behind the console's clock."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    offsets, nbytes, off = [], [], 0
    for ln in lines:
        n = len(ln.encode())
        offsets.append(off)
        nbytes.append(n)
        off += n + 1
    batch = LineBatch(offsets, lines, nbytes, consecutive=True)  # as log_batch makes them
    return [LogLines("r1", batch[i:i + chunk], size=off, opened_size=off if i == 0 else None,
                     time_shift=3600.0 if i == 0 else None)
            for i in range(0, len(lines), chunk)], len(lines)


def _state() -> ConsoleState:
    st = ConsoleState("h", clock=lambda: NOW)
    run = RunInfo(run_id="r1", argv=("python",), started=NOW - 86400, state="running", log_path="/x")
    st.apply(RunsListed(runs=(run,), current="r1"))
    st.show_log_of("r1")
    return st


class _Stages:
    """CPU time around the block fold's general path and its runs (``--stages``)."""

    def __init__(self) -> None:
        self.parse = self.events = self.runs = self.numbers = 0.0
        self.calls = self.general_lines = self.n_runs = 0

    def install(self) -> None:
        clock = time.process_time
        general_events, run = BF.BlockFold._general_events, BF.BlockFold._run
        numbers = BF._NUMBERS
        st = self

        def _general(folder, lines):
            st.calls += 1
            st.general_lines += len(lines)
            t = clock()
            events = folder.parser.feed_many(lines)
            st.parse += clock() - t
            folder._general_events(events)

        def _general_events(folder, events):
            t = clock()
            general_events(folder, events)
            st.events += clock() - t

        def _run(folder, text, s, e):
            st.n_runs += 1
            t = clock()
            run(folder, text, s, e)
            st.runs += clock() - t

        class _Numbers:
            def findall(self, *a):
                t = clock()
                rows = numbers.findall(*a)
                st.numbers += clock() - t
                return rows

        BF.BlockFold._general, BF.BlockFold._general_events = _general, _general_events
        BF.BlockFold._run, BF._NUMBERS = _run, _Numbers()


def measure(text: str, reps: int, chunk: int) -> tuple[float, int, ConsoleState]:
    pieces, n = _pieces(text, chunk)
    best, st = float("inf"), None
    for _ in range(reps):
        st = _state()
        gc.collect()
        gc.disable()
        t = time.process_time()
        for p in pieces:
            st.apply(p)
        best = min(best, time.process_time() - t)
        gc.enable()
    return best, n, st


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", nargs="?", type=int, default=300_000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--chunk", type=int, default=HISTORY_CHUNK)
    ap.add_argument("--stages", action="store_true")
    ap.add_argument("--mix", choices=("bench", "serving"), action="append")
    a = ap.parse_args()
    for mix in a.mix or ("bench", "serving"):
        templates = SERVING if mix == "serving" else TEMPLATES
        text = BOOT + "".join(mix_lines(a.n, 1234, t0=NOW - 86400, templates=templates))
        stages = None
        if a.stages:
            stages = _Stages()
            general, general_events, run, numbers = (BF.BlockFold._general, BF.BlockFold._general_events,
                                                     BF.BlockFold._run, BF._NUMBERS)
            stages.install()
        try:
            cpu, n, st = measure(text, 1 if a.stages else a.reps, a.chunk)
        finally:
            if stages is not None:
                BF.BlockFold._general, BF.BlockFold._general_events = general, general_events
                BF.BlockFold._run, BF._NUMBERS = run, numbers
        folder = st.slices.fold._block
        bulk = folder.bulk_lines if folder is not None else 0
        print(f"{mix}: {n} lines in pieces of {a.chunk}: {cpu:.3f} s CPU, {cpu / n * 1e6:.2f} us/line; "
              f"{bulk} lines read in bulk, {n - bulk} through the parser; "
              f"{st.slices.fold.fold.n_boots} boots")
        if stages is not None:
            print(f"  general path: {stages.general_lines} lines in {stages.calls} parser calls: parsing "
                  f"{stages.parse:.3f} s, folding and showing their events {stages.events:.3f} s "
                  f"(with the records runs end)")
            print(f"  runs: {stages.n_runs}, {stages.runs:.3f} s in all (the events of the records they end "
                  f"among them), {stages.numbers:.3f} s of it the decode numbers' regex (E.DECODE_NUMBERS)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
