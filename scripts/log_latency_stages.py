"""Where a line's latency goes: the run of ``bench/log_latency.py`` (a decode line written on
the node every 10 ms, the console headless at 120x40), each line stamped at every stage it
passes, and the p50/p99 of each gap. Not a benchmark (no goal, no PASS/FAIL): a diagnosis.

Stages (``time.time_ns``, one clock with the writer's stamp):

- ``write``: the writer's stamp in the line;
- ``put``: the session queued the agent's record in the intake (``LogIntake.put``);
- ``pending``: the app's ``_log_pending`` began folding (``Session.fold_log`` called);
- ``folded``: ``Session.fold_log`` returned (the line is in the state);
- ``drawn``: the log pane took the line from the state (``LogPane.refresh_from`` returned);
- ``render0`` / ``render1``: the screen's compositor render (``Compositor.render_update``)
  that first includes the pane's new content began / ended;
- ``shown``: ``App._display`` of that render returned (what ``log_latency`` times).

Also: the slowest 1% of lines stage by stage with the garbage collections (gen 1 and 2, or
over 1 ms) while each was on its way, the collections while timed, and the widgets the
compositor repainted per frame; the event loop's callbacks over 1 ms (wall and CPU time) on the
slowest lines' way and summed while timed. Usage: ``python scripts/log_latency_stages.py [N]
[--profile[=FILE]]`` (``--profile``: a cProfile of the event loop's thread while timed, which
slows it down: for where the CPU goes, not for the latencies).
"""

from __future__ import annotations

import asyncio
import collections
import gc
import os
import shutil
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tui"), str(ROOT / "tests"), str(ROOT / "bench")]

import log_latency as LL  # noqa: E402
from fixtures.sshd import ssh_session  # noqa: E402

from console_rig import BOOT, console, make_run  # noqa: E402

#: the widgets of a frame that draws only the log pane's new lines (its view and status line)
LOG_ONLY = {"LogView#log-view", "Static#log-status", "ScrollBar"}

STAGES = ("write", "put", "pending", "folded", "drawn", "render0", "render1", "shown")


class Stalls:
    """What the event loop was doing when it did not come round for over ``limit_s``: a
    thread samples the loop thread's stack every millisecond while a heartbeat callback is
    late, and counts the innermost frames of the console's own code (or of Textual / asyncssh
    below it) it was in."""

    def __init__(self, limit_s: float = 0.02) -> None:
        self.limit_s = limit_s
        self.beat = time.perf_counter()
        self.samples: collections.Counter = collections.Counter()
        self.stop = threading.Event()
        self.loop_thread = threading.get_ident()

    async def heartbeat(self) -> None:
        while not self.stop.is_set():
            self.beat = time.perf_counter()
            await asyncio.sleep(0.001)

    def watch(self) -> None:
        while not self.stop.wait(0.001):
            if time.perf_counter() - self.beat > self.limit_s:
                frame = sys._current_frames().get(self.loop_thread)
                if frame is not None:
                    stack = traceback.extract_stack(frame)
                    ours = [f for f in stack if "/mambaconsole/" in f.filename] or stack
                    top = ours[-1]
                    self.samples[f"{Path(top.filename).name}:{top.lineno} {top.name}"
                                 f" < {stack[-1].name} ({Path(stack[-1].filename).name})"] += 1


class Callbacks:
    """Every callback the event loop ran (``asyncio.Handle._run``: a task's step, a timer, a
    protocol's ``data_received``) that took over ``limit_ms`` of wall time: ``(start time_ns,
    wall ns, the loop thread's CPU ns, what it was)``. A callback whose wall time is far over
    its CPU time waited for a core (the machine's other processes) or for the GIL."""

    def __init__(self, limit_ms: float = 1.0) -> None:
        self.limit_ns = int(limit_ms * 1e6)
        self.slow: list[tuple[int, int, int, str]] = []
        self._run = asyncio.events.Handle._run

    @staticmethod
    def what(handle) -> str:
        cb = handle._callback
        task = getattr(cb, "__self__", None)
        if isinstance(task, asyncio.Task):
            coro = task.get_coro()
            frame = getattr(coro, "cr_frame", None)
            owner = frame.f_locals.get("self") if frame is not None else None
            name = getattr(coro, "__qualname__", repr(coro))
            if owner is not None:
                name += f" of {type(owner).__name__}" + (f"#{owner.id}" if getattr(owner, "id", None) else "")
                if isinstance(getattr(owner, "name", None), str):  # a Textual Timer: its name
                    name += f" {owner.name}"
            return name
        return getattr(cb, "__qualname__", repr(cb))

    def install(self) -> None:
        run, limit, slow, what = self._run, self.limit_ns, self.slow, self.what

        def _run(handle):
            t0, c0 = time.time_ns(), time.thread_time_ns()
            try:
                return run(handle)
            finally:
                wall = time.time_ns() - t0
                if wall > limit:
                    slow.append((t0, wall, time.thread_time_ns() - c0, what(handle)))

        asyncio.events.Handle._run = _run

    def remove(self) -> None:
        asyncio.events.Handle._run = self._run


class Imports:
    """The modules imported on the event loop's thread once the app runs (imports at first
    use): ``(start time_ns, ms, name)`` of each outermost import (``importlib._bootstrap.
    _find_and_load``, which every import statement of a module not yet loaded goes through)."""

    def __init__(self) -> None:
        import importlib._bootstrap as boot

        self.boot = boot
        self._load = boot._find_and_load
        self.seen: list[tuple[int, float, str]] = []
        self.on = False
        self.depth = 0
        self.thread = threading.get_ident()

    def install(self) -> None:
        load = self._load

        def _find_and_load(name, import_):
            if not self.on or threading.get_ident() != self.thread:
                return load(name, import_)
            self.depth += 1
            t0 = time.time_ns()
            try:
                return load(name, import_)
            finally:
                self.depth -= 1
                if self.depth == 0:
                    self.seen.append((t0, (time.time_ns() - t0) / 1e6, name))

        self.boot._find_and_load = _find_and_load

    def remove(self) -> None:
        self.boot._find_and_load = self._load


class Timeline:
    """Per stage, a list of ``(time_ns, count)``: when ``count`` lines (counted from the
    start of timing) had passed the stage."""

    def __init__(self) -> None:
        self.marks: dict[str, list[tuple[int, int]]] = collections.defaultdict(list)
        self.widgets: collections.Counter = collections.Counter()
        self.frames = 0
        self.pacer_waits: list[tuple[str, float]] = []  # (why, seconds) of each redraw the pacer held back
        self.renders: list[tuple[str, int, int]] = []  # (kind, wall ns, CPU ns) of each compositor render
        self.profile = None  # a cProfile.Profile of the loop thread while timed (--profile)
        self.cpu: list[float | None] = [0.0, None]  # the loop thread's CPU (thread_time) from the warm-up line to END
        self.gcs: list[tuple[int, int, int]] = []  # (start, end time_ns, generation) of each collection
        self.gc_more: list[tuple[int, int]] = []  # (CPU ns, objects freed) of each collection
        self._gc_at = 0

    def on_gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._gc_at = time.time_ns()
            self._gc_cpu = time.thread_time_ns()
        else:
            self.gcs.append((self._gc_at, time.time_ns(), info["generation"]))
            self.gc_more.append((time.thread_time_ns() - self._gc_cpu, info["collected"]))

    def mark(self, stage: str, count: int) -> None:
        self.marks[stage].append((time.time_ns(), count))

    def at(self, stage: str, i: int) -> int | None:
        """When line ``i`` (0-based) first passed ``stage``."""
        for t, c in self.marks[stage]:
            if c > i:
                return t
        return None


async def console_run(store: Path, run_id: str, tl: Timeline):
    drawn: asyncio.Queue = asyncio.Queue()
    async with console("gpu-node", store) as (app, pilot):
        st = app.state
        # counts are lines of the file (the log is read from its byte 0)
        intake = app.session.intake
        put = intake.put
        counts = {"put": 0}

        def _put(ev):
            counts["put"] += len(ev.lines)
            r = put(ev)
            tl.mark("put", counts["put"])
            return r

        intake.put = _put
        # (@on handlers are looked up on the class: "pending" is when the fold begins)
        fold = app.session.fold_log

        def _fold(until=None):
            tl.mark("pending", st.log_total + intake.lines)
            r = fold(until)
            tl.mark("folded", st.log_total)
            return r

        app.session.fold_log = _fold
        pane = app.log_pane
        rf = pane.refresh_from

        def _refresh_from(state, **kw):
            r = rf(state, **kw)
            tl.mark("drawn", pane._seen_total)
            return r

        pane.refresh_from = _refresh_from
        dwd = app._draw_when_due

        def _draw_when_due(now):
            due = app._pacer.due()
            if now < due and app._log_changed:
                tl.pacer_waits.append(("the last redraw not on screen yet" if app._pacer.in_flight
                                       else "the redraws' share of the time", due - now))
            return dwd(now)

        app._draw_when_due = _draw_when_due
        comp = app.screen._compositor
        ru, uw = comp.render_update, comp.update_widgets
        seen_at_render = [0]

        updated: set[str] = set()

        def _update_widgets(widgets):
            for w in widgets:
                name = type(w).__name__ + ("#" + w.id if w.id else "")
                tl.widgets[name] += 1
                updated.add(name)
            return uw(widgets)

        def _render_update(*a, **k):
            seen_at_render[0] = pane._seen_total
            tl.mark("render0", seen_at_render[0])
            c0 = time.thread_time_ns()
            r = ru(*a, **k)
            tl.mark("render1", seen_at_render[0])
            kind = "log pane only" if updated <= LOG_ONLY else "with other panes"
            tl.renders.append((kind, tl.marks["render1"][-1][0] - tl.marks["render0"][-1][0],
                               time.thread_time_ns() - c0))
            updated.clear()
            tl.frames += 1
            return r

        comp.render_update, comp.update_widgets = _render_update, _update_widgets
        display = app._display
        seen = [pane._seen_total]

        def _display(screen, renderable):
            display(screen, renderable)
            now = time.time_ns()
            took = pane._seen_total
            n = took - seen[0]
            if renderable is not None:
                tl.mark("shown", seen_at_render[0])
            if renderable is not None and n > 0:
                behind = st.log_total - seen[0]
                for rec in st.log.tail_raw(min(behind, len(st.log)))[:n]:
                    drawn.put_nowait((now, rec[1]))
                seen[0] = took

        app._display = _display

        tl.counts = (counts, st)
        tl.imports.on = True  # from the first view on
        try:
            while True:
                item = await drawn.get()
                if item[1] == "warm-up" and tl.cpu[1] is None:  # from here on: the timed lines and their frames
                    tl.widgets.clear()
                    tl.renders.clear()
                    tl.pacer_waits.clear()
                    tl.frames = 0
                    tl.cpu = [time.thread_time(), None]
                    if tl.profile is not None:
                        tl.profile.enable()
                elif item[1] == "END":
                    tl.cpu[1] = time.thread_time()
                    old = gc.get_objects(2)
                    tl.heap = (gc.get_freeze_count(), [len(gc.get_objects(g)) for g in range(3)],
                               collections.Counter(type(o).__name__ for o in old).most_common(8))
                    del old
                    if tl.profile is not None:
                        tl.profile.disable()
                yield item
        finally:
            app._display = display


async def main_async(home, tmp: Path, n: int, profile=None):
    LL.N = n
    con_path = tmp / "console.log"
    con_path.write_text(BOOT)
    run_id, proc = make_run(tmp / "store", con_path)
    tl = Timeline()
    tl.profile = profile
    tl.callbacks = Callbacks()
    tl.callbacks.install()
    tl.imports = Imports()
    tl.imports.install()
    gc.callbacks.append(tl.on_gc)
    stalls = tl.stalls = Stalls()
    beat = asyncio.ensure_future(stalls.heartbeat())
    watcher = threading.Thread(target=stalls.watch, daemon=True)
    watcher.start()
    try:
        gen = console_run(tmp / "store", run_id, tl)
        lat = await LL.measure(con_path, gen)
        await gen.aclose()
    finally:
        stalls.stop.set()
        await beat
        gc.callbacks.remove(tl.on_gc)
        tl.callbacks.remove()
        tl.imports.remove()
        proc.kill()
        proc.wait()
    counts, st = tl.counts
    lines = con_path.read_text().splitlines()
    if not counts["put"] == st.log_total == len(lines):
        print(f"counts differ: put {counts['put']}, folded {st.log_total}, file {len(lines)} lines")
    return tl, lines, lat


def report(tl: Timeline, lines: list[str], lat: list[float]) -> None:
    rows = []
    for i, ln in enumerate(lines):
        if " t=" not in ln:
            continue
        row = {"write": LL.stamp(ln)}
        for s in STAGES[1:]:
            row[s] = tl.at(s, i)
        rows.append(row)
    cpu = (tl.cpu[1] - tl.cpu[0]) / len(rows) * 1e3 if tl.cpu[1] else float("nan")
    print(f"{len(rows)} lines; {tl.frames} frames; console p50 {LL.pct(lat, 50):.2f} ms, p99 {LL.pct(lat, 99):.2f} ms"
          f" (load {os.getloadavg()[0]:.1f}); the event loop's CPU: {cpu:.2f} ms a line")
    print(f"{'gap':<22}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'max ms':>9}")
    for a, b in list(zip(STAGES, STAGES[1:])) + [("write", "shown")]:
        gaps = [(r[b] - r[a]) / 1e6 for r in rows if r[a] is not None and r[b] is not None]
        if gaps:
            print(f"{a + ' -> ' + b:<22}{LL.pct(gaps, 50):9.2f}{LL.pct(gaps, 90):9.2f}{LL.pct(gaps, 99):9.2f}"
                  f"{max(gaps):9.2f}")
    # the slowest lines: their stages, and any garbage collection while they were on their way
    rows.sort(key=lambda r: (r["shown"] or 0) - r["write"])
    slow = rows[-max(1, len(rows) // 100):]
    t0 = min(r["write"] for r in rows)
    print(f"slowest {len(slow)} lines (1%): " + "; ".join(
        f"at {(r['write'] - t0) / 1e9:.2f} s: {(r['shown'] - r['write']) / 1e6:.1f} ms = " + " + ".join(
            f"{(r[b] - r[a]) / 1e6:.1f}" for a, b in zip(STAGES, STAGES[1:]) if r[a] and r[b])
        + "".join(f" [gc{g} {(e - b) / 1e6:.1f} ms]" for b, e, g in tl.gcs
                  if b < r["shown"] and e > r["write"] and (g or e - b > 1e6))
        + "".join(f"\n    {(b - r['write']) / 1e6:+6.1f} ms: {w / 1e6:5.1f} ms (CPU {c / 1e6:4.1f}) {what}"
                  for b, w, c, what in tl.callbacks.slow if b < r["shown"] and b + w > r["write"])
        for r in slow if r["shown"]))
    t1 = max(r["shown"] or 0 for r in rows)
    timed = [(b, e, g) for b, e, g in tl.gcs if t0 <= b <= t1]
    print(f"garbage collections while timed: {len(timed)}, gen2 {sum(g == 2 for *_, g in timed)}, "
          f"longest {max(((e - b) / 1e6 for b, e, _ in timed), default=0):.1f} ms")
    for gen in range(3):
        mine = [(e - b, c, n) for (b, e, g), (c, n) in zip(tl.gcs, tl.gc_more) if g == gen and t0 <= b <= t1]
        if mine:
            print(f"  gen{gen}: {len(mine)} collections, wall {sum(w for w, _, _ in mine) / 1e6:.1f} ms "
                  f"(longest {max(w for w, _, _ in mine) / 1e6:.1f}), CPU {sum(c for _, c, _ in mine) / 1e6:.1f} ms "
                  f"(longest {max(c for _, c, _ in mine) / 1e6:.1f}), {sum(n for *_, n in mine)} objects freed")
    if getattr(tl, "heap", None):
        frozen, gens, kinds = tl.heap
        print(f"the collector's heap at the end: {frozen} frozen; generations 0/1/2: {'/'.join(map(str, gens))};"
              " the oldest's most common: " + ", ".join(f"{k} {n}" for k, n in kinds))
    by: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0, 0, 0, 0])
    for b, w, c, what in tl.callbacks.slow:
        if t0 <= b <= t1:
            k = by[what]
            k[0] += 1
            k[1] += w
            k[2] += c
            if w > k[3]:
                k[3], k[4] = w, b
    limit = tl.callbacks.limit_ns / 1e6
    print(f"event loop callbacks over {limit:g} ms while timed ({(t1 - t0) / 1e9:.2f} s): count, wall ms, CPU ms, "
          "longest ms (at s)")
    for what, (k, w, c, m, at) in sorted(by.items(), key=lambda kv: -kv[1][1])[:12]:
        print(f"  {k:5d} {w / 1e6:8.1f} {c / 1e6:8.1f} {m / 1e6:7.1f} ({(at - t0) / 1e9:5.2f})  {what}")
    if tl.imports.seen:
        print("imported on the event loop's thread after the first view (s from the first timed line's write, ms, module):",
              ", ".join(f"{(b - t0) / 1e9:+.2f} {ms:.1f} {name}" for b, ms, name in tl.imports.seen if ms >= 0.5))
    if tl.stalls.samples:
        print(f"event loop late by over {tl.stalls.limit_s * 1e3:.0f} ms (whole run, start-up included), "
              "ms sampled in (innermost console frame < innermost frame):")
        for where, n in tl.stalls.samples.most_common(8):
            print(f"  {n:5d}  {where}")
    for kind in ("log pane only", "with other panes"):
        mine = [(w / 1e6, c / 1e6) for k, w, c in tl.renders if k == kind]
        if mine:
            walls, cpus = [w for w, _ in mine], [c for _, c in mine]
            print(f"compositor renders, {kind}: {len(mine)}, wall p50 {LL.pct(walls, 50):.2f} p90 {LL.pct(walls, 90):.2f} "
                  f"max {max(walls):.2f} ms, CPU p50 {LL.pct(cpus, 50):.2f} p90 {LL.pct(cpus, 90):.2f} max {max(cpus):.2f} ms")
    for why in ("the last redraw not on screen yet", "the redraws' share of the time"):
        waits = [w * 1e3 for k, w in tl.pacer_waits if k == why]
        if waits:
            print(f"redraws held back by the pacer for {why}: {len(waits)}, up to p50 {LL.pct(waits, 50):.2f} "
                  f"p90 {LL.pct(waits, 90):.2f} max {max(waits):.2f} ms (a bound: the screen's update may come sooner)")
    print("widgets updated per frame:", ", ".join(f"{k} {v / max(1, tl.frames):.2f}" for k, v in tl.widgets.most_common()))


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--profile")]
    prof = next((a.partition("=")[2] or "stages.prof" for a in sys.argv[1:] if a.startswith("--profile")), None)
    n = int(args[0]) if args else LL.N
    tmp = Path(tempfile.mkdtemp(prefix="mc-bench-"))
    profile = None
    if prof:
        import cProfile

        profile = cProfile.Profile()
    with ssh_session() as home:
        os.environ["HOME"] = str(home.home)
        os.environ.pop("SSH_AUTH_SOCK", None)
        tl, lines, lat = asyncio.run(main_async(home, tmp, n, profile))
    shutil.rmtree(tmp, ignore_errors=True)
    report(tl, lines, lat)
    if profile is not None:
        profile.dump_stats(prof)
        print(f"profile of the event loop's thread while timed: {prof}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
