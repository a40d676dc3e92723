"""The GPU pane's numbers: the percent on a bar line is memory used/total (the same numbers the
line prints, and the bar's fill), in GiB from the MiB that NVML / nvidia-smi (here: the
simulated node's GPU file) report; the budget from SGLang's log is labelled GiB with a legend
line saying SGLang's "GB" is bytes/1024³. Expected numbers are read off the sim's GPU file and
a recorded log, and computed here."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from mambaconsole.node.local import LocalNode
from mambaconsole.sim.gpu import gpu_state, write_atomic
from mambaconsole.sim.model import MiB, SimGPU
from mambaconsole.state import ConsoleState, GpuReading, GpuSnapshot, LogLine, LogLines, RunInfo, RunsListed
from mambaconsole.units import fmt_duration
from mambaconsole.session.feed import Feed
from mambaconsole.ui.fit import item_lines
from mambaconsole.ui.gpu_pane import GB_NOTE, _legend, gpu_renderable
from mambaconsole.session.settings import HostSettings

LOG = Path(__file__).parent / "data" / "console" / "sim-ready.log"


def raw_text(state: ConsoleState, width: int = 90) -> list[str]:
    console = Console(width=width, record=True, color_system=None, file=open("/dev/null", "w"))
    console.print(gpu_renderable(state, width, {}))
    return console.export_text().splitlines()


def pane_text(state: ConsoleState, width: int = 90) -> list[str]:
    return [" ".join(ln.split()) for ln in raw_text(state, width)]  # runs of spaces as one


async def sim_state(tmp_path, used_bytes: int, util: int) -> tuple[ConsoleState, dict]:
    path = tmp_path / "sim-gpu.json"
    write_atomic(path, gpu_state(SimGPU.parse("RTX PRO 6000 Blackwell,96"), used_bytes=used_bytes,
                                 utilization_pct=util, pid=4242, cmdline="python -m mambaconsole.sim --port 30000"))
    feed = Feed(LocalNode("gpu-node"), HostSettings(), simulated=True, sim_gpu_file=str(path))
    state = ConsoleState("gpu-node")
    state.apply(await feed.gpu())
    return state, json.loads(path.read_text())["gpus"][0]


async def test_bar_line_percent_and_gib_come_from_the_same_used_total(tmp_path):
    state, g = await sim_state(tmp_path, used_bytes=53012 * MiB + 4096, util=87)
    used, total = g["memory_used_mib"], g["memory_total_mib"]
    pct = used / total * 100
    assert round(pct) != g["utilization_pct"]  # the two percents differ: which is which must be clear
    lines = pane_text(state)
    (bar,) = [ln for ln in lines if "GiB" in ln and "/" in ln]
    assert f"{used / 1024:.1f}/{total / 1024:.1f} GiB {round(pct)}%" in bar
    assert f"{g['utilization_pct']}%" not in bar
    (name,) = [ln for ln in lines if ln.startswith("GPU0 ")]
    assert f"util {g['utilization_pct']}%" in name
    # the bar's fill is the same fraction: used cells / all cells
    raw = [ln for ln in raw_text(state) if "GiB" in ln and "/" in ln][0]
    cells = raw[: raw.index(f"{used / 1024:.1f}/")].rstrip()
    assert round(used / total * len(cells)) == len(cells) - cells.count("·")
    # the process table in the same unit
    (proc,) = [ln for ln in lines if "4242" in ln]
    assert f"{g['processes'][0]['used_mib'] / 1024:.1f}" in proc
    assert "MiB" not in "\n".join(lines)


async def test_budget_from_the_log_is_gib_with_the_gb_note(tmp_path):
    state, g = await sim_state(tmp_path, used_bytes=97000 * MiB, util=80)
    run = RunInfo("r1", argv=("python3", "-m", "sglang.launch_server"), started=1.0, state="running", pid=4242)
    state.apply(RunsListed((run,), run.run_id))
    text = LOG.read_text()
    off, lines = 0, []
    for t in text.splitlines():
        lines.append(LogLine(run.run_id, off, t))
        off += len(t.encode()) + 1
    state.apply(LogLines(run.run_id, tuple(lines)))
    state.flush_log()
    weights = float(re.search(r"Load weight end\..*mem usage=([\d.]+) GB", text).group(1))
    out = "\n".join(pane_text(state, 120))
    assert f"W weights {weights:.2f}" in out
    assert 'budget GiB (SGLang logs "GB" = bytes/1024³):' in out
    # one unit label in the pane: every "GB" is the quoted one of the legend line
    assert out.count("GB") == out.count('"GB"') == 1
    pct = round(g["memory_used_mib"] / g["memory_total_mib"] * 100)
    assert f"{g['memory_used_mib'] / 1024:.1f}/{g['memory_total_mib'] / 1024:.1f} GiB {pct}%" in out


def _apply_log(state, run_id: str, texts) -> None:
    """``texts`` (a log's lines) into ``state`` as ``run_id``'s log from byte 0, folded."""
    batch, off = [], 0
    for text in texts:
        batch.append(LogLine(run_id, off, text))
        off += len(text.encode()) + 1
    state.apply(LogLines(run_id, tuple(batch)))
    state.flush_log()


async def _recorded_budget(tmp_path, used_bytes: int = 98000 * MiB, util: int = 80):
    """A simulated GPU (``used_bytes`` used) and the state after the recorded log (``LOG``) of
    a running run: its memory budget in ``state.budget_gb``. Returns ``(state, the GPU file's
    reading)``."""
    state, g = await sim_state(tmp_path, used_bytes=used_bytes, util=util)
    run = RunInfo("r1", argv=("python3", "-m", "sglang.launch_server"), started=1.0, state="running", pid=4242)
    state.apply(RunsListed((run,), run.run_id))
    _apply_log(state, run.run_id, LOG.read_text().splitlines())
    return state, g


async def test_budget_legend_wraps_between_items_and_other_gets_its_value(tmp_path):
    """The legend wraps as units (a swatch letter never ends a line away from its label) and
    ``other`` is GiB used minus the budget's parts (the GPU file's reading, the log's budget)."""
    state, g = await _recorded_budget(tmp_path)
    assert len(state.budget_gb) >= 5
    other = g["memory_used_mib"] / 1024 - sum(state.budget_gb.values())
    letters = {"weights": "W", "kv": "K", "mamba conv": "c", "mamba ssm": "M", "mamba spec": "s", "graphs": "G"}
    for width in (40, 45, 60, 90):
        out = pane_text(state, width)
        for key, gib in state.budget_gb.items():
            assert sum(f"{letters[key]} {key} {gib:.2f}" in ln for ln in out) == 1, (width, key, out)
        assert sum(f"o other {other:.2f}" in ln for ln in out) == 1, (width, out)
        # no line of the legend ends with a lone swatch letter
        assert not any(re.search(r"(^|\s)[WKcMsGo]$", ln) for ln in out), out
    # a reading below the budget's sum (taken before the pools were allocated) has no "other"
    state2, g2 = await _recorded_budget(tmp_path / "low", used_bytes=10000 * MiB, util=5)
    assert g2["memory_used_mib"] / 1024 < sum(state2.budget_gb.values())
    assert any("o other —" in ln for ln in pane_text(state2, 90))
    # without a GPU reading there is no "other" number
    state.gpu = None
    assert not any("other" in ln for ln in pane_text(state, 90))


@pytest.mark.parametrize("widths, width, lines", [
    # the demo's OOM: the GB note 44 cells, "W weights 51.20" 15, "+ unnamed before the OOM 36.27"
    # 30, "o other —" 9; 2 cells apart. At 96 (the pane at 200x60) filling each line in turn left
    # "o other —" alone: [GB W +] [o] has 3 and 87 blank cells, [GB W] [+ o] 35 and 55, [GB] [W + o] 52 and 38
    ([44, 15, 30, 9], 96, [[0], [1, 2, 3]]),
    # at 55 (120x40) three lines: [GB] [W +] [o] leaves 11, 8, 46 blank (2301 squared), [GB] [W] [+ o] 11, 40, 14 (1917)
    ([44, 15, 30, 9], 55, [[0], [1], [2, 3]]),
    ([44, 15, 30, 9], 104, [[0, 1, 2, 3]]),  # 44 + 2 + 15 + 2 + 30 + 2 + 9
    ([50, 5], 40, [[0], [1]]),                 # wider than the line: a line of its own
    ([], 40, []),
])
def test_items_break_into_the_fewest_lines_evenly(widths, width, lines):
    assert item_lines(widths, width) == lines


async def test_the_legend_leaves_no_item_alone_on_its_last_line(tmp_path):
    """The legend of the recorded log at 44 cells (the GB note's width) takes 5 lines whatever
    the breaks (no 3 items in a row fit 44); filling each line in turn left ``o other`` alone
    on the last. Of the breaks into 5 lines (2 items a line at most: the lone item first,
    second, third or last) blank cells 29, 15, 8, 17 (squared 1419), 17, 27, 8, 17 (1371),
    17, 8, 27, 17 (1371), 17, 8, 12, 32 (1521): of the two evenest, the one with more on the
    earlier lines, "s mamba spec" alone."""
    state, g = await _recorded_budget(tmp_path)
    b = state.budget_gb
    other = g["memory_used_mib"] / 1024 - sum(b.values())
    w, k, c = f"W weights {b['weights']:.2f}", f"K kv {b['kv']:.2f}", f"c mamba conv {b['mamba conv']:.2f}"
    m, s = f"M mamba ssm {b['mamba ssm']:.2f}", f"s mamba spec {b['mamba spec']:.2f}"
    gr, o = f"G graphs {b['graphs']:.2f}", f"o other {other:.2f}"
    assert [len(x) for x in (GB_NOTE, w, k, c, m, s, gr, o)] == [44, 15, 10, 17, 17, 17, 13, 12]
    assert _legend(state, {}, 44).plain.split("\n") == [GB_NOTE, f"{w}  {k}", f"{c}  {m}", s, f"{gr}  {o}"]


async def test_bar_fits_the_pane_after_every_resize(tmp_path):
    """The bar is drawn for the pane's width: after the terminal grows (200x60) or shrinks
    (80x24), and after a zoom and back, the used/total numbers stay whole on the pane's line."""
    from mambaconsole.ui.app import ConsoleApp

    state, g = await sim_state(tmp_path, used_bytes=53012 * MiB, util=50)
    want = f"{g['memory_used_mib'] / 1024:.1f}/{g['memory_total_mib'] / 1024:.1f} GiB"
    app = ConsoleApp(Feed(LocalNode("gpu-node"), HostSettings()), start_workers=False)

    def bar_line() -> str:
        body = app.gpu_pane.body
        lines = [s.text for s in body.render_lines(body.content_region.reset_offset)]
        return next((ln for ln in lines if "GiB" in ln and "/" in ln), "")

    async with app.run_test(size=(120, 40)) as pilot:
        app.state.gpu = state.gpu
        app.refresh_panes({"gpu"})
        for size in ((200, 60), (80, 24), (120, 40)):
            await pilot.resize_terminal(*size)
            await pilot.press("1")  # at 80x24 one pane shows at a time: the pane key brings it up
            await pilot.pause(0.1)
            line = bar_line()
            assert want in line and "…" not in line, (size, line)
        await pilot.press("1", "z")
        await pilot.pause(0.1)
        assert want in bar_line() and app.screen.maximized is app.gpu_pane
        wide = bar_line()
        await pilot.press("z")
        await pilot.pause(0.1)
        assert want in bar_line() and bar_line().index(want) < wide.index(want)  # a longer bar zoomed


async def test_the_pane_is_repainted_only_when_what_it_shows_changed(tmp_path):
    """A flood of startup lines in the log asks for the GPU pane at each batch: the same reading
    and budget leave it as it is; a new budget value repaints it. A layout (Textual lays out the
    whole screen: ~30 ms on 2 cores) only where the text's height changed: while the text fits
    the pane it is as high as the pane, so a legend row more or a number changed in place
    needs none; a text taller than the pane grows by a row with one."""
    from fixtures.screen import shown
    from mambaconsole.ui.app import ConsoleApp

    state, _ = await sim_state(tmp_path, used_bytes=53012 * MiB, util=87)
    app = ConsoleApp(Feed(LocalNode("t"), HostSettings()), start_workers=False)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.gpu_pane
        pane.refresh_from(state)
        await pilot.pause()
        updates = []
        update = pane.body.update
        pane.body.update = lambda *a, **kw: (updates.append(kw["layout"]), update(*a, **kw))
        pane.refresh_from(state)
        assert updates == []
        view = pane.scrollable_content_region.height

        def text_rows() -> int:  # the pane's text drawn at the pane's width
            con = Console(width=pane.scrollable_content_region.width, record=True, color_system=None,
                          file=open("/dev/null", "w"))
            con.print(gpu_renderable(state, pane.scrollable_content_region.width, app.theme_variables))
            return len(con.export_text().splitlines())

        rows_before = text_rows()
        state.budget_gb["weights"] = 40.18  # the budget legend's rows more, the text still fits: no layout
        pane.refresh_from(state)
        await pilot.pause()
        assert rows_before < text_rows() <= view
        assert updates == [False] and "weights 40.18" in shown(pane.body)
        assert pane.body.size.height == view and not pane.show_vertical_scrollbar
        state.budget_gb["weights"] = 40.19  # the same rows: repainted, no layout
        pane.refresh_from(state)
        await pilot.pause()
        assert updates == [False, False] and "weights 40.19" in shown(pane.body)

    app = ConsoleApp(Feed(LocalNode("h"), HostSettings()), start_workers=False, clock=lambda: 2.0)
    async with app.run_test(size=(120, 40)) as pilot:
        _oom_run(app, processes=True)  # taller than the pane
        await pilot.pause(0.2)
        pane = app.gpu_pane
        rows, view = _pane_rows(app)
        assert len(rows) > view and pane.body.size.height == len(rows)
        before = len(rows)
        updates = []
        update = pane.body.update
        pane.body.update = lambda *a, **kw: (updates.append(kw["layout"]), update(*a, **kw))
        from mambaconsole.state import GpuProcess

        procs = (GpuProcess(0, 42, 51.7 * 1024, "python -m sglang.launch_server"),
                 GpuProcess(0, 77, 512.0, "", resolved=False), GpuProcess(0, 78, 256.0, "python x.py"))
        app.state.apply(GpuSnapshot((GpuReading(0, "H100", 51.7 * 1024, 95.08 * 1024),), procs, t=3.0))
        pane.refresh_from(app.state)  # a process row more
        await pilot.pause(0.2)
        rows, view = _pane_rows(app)
        assert len(rows) == before + 1
        assert updates == [True] and pane.body.size.height == len(rows)


async def test_used_history_says_its_range_and_the_time_it_spans(tmp_path):
    """The history line: one column per sample, the lowest and highest of the samples shown (in
    GiB, "sampled"), and the time those samples span (samples x the stream's interval): a steady
    run's line goes flat once the load rolls off, and only the span says how far back it reaches."""
    path = tmp_path / "sim-gpu.json"
    feed = Feed(LocalNode("gpu-node"), HostSettings(), simulated=True, sim_gpu_file=str(path))
    state = ConsoleState("gpu-node")
    used_gib = [10, 20, 40, 80, 60]
    for u in used_gib:
        write_atomic(path, gpu_state(SimGPU.parse("RTX PRO 6000 Blackwell,96"), used_bytes=u * 1024 * MiB,
                                     utilization_pct=50, pid=4242, cmdline="python -m x"))
        state.apply(await feed.gpu())
    assert state.gpu_interval_s == 2.0
    (hist,) = [ln for ln in raw_text(state) if ln.startswith("used ")]
    label, spark = hist.rstrip().rsplit(" ", 1)
    assert label == "used 10.0–80.0 GiB sampled, last 10 s"  # 5 samples 2 s apart, from 10 to 80 GiB
    assert len(spark) == len(used_gib) and spark[3] == "█"
    # a long history: the columns the line holds, and the span of just those
    for u in range(125):
        write_atomic(path, gpu_state(SimGPU.parse("RTX PRO 6000 Blackwell,96"), used_bytes=(30 + u % 7) * 1024 * MiB,
                                     utilization_pct=50, pid=4242, cmdline="python -m x"))
        state.apply(await feed.gpu())
    (hist,) = [ln for ln in raw_text(state, 90) if ln.startswith("used ")]
    label, spark = hist.rstrip().rsplit(" ", 1)
    m = re.fullmatch(r"used 30\.0–36\.0 GiB sampled, last (\d+) min (\d+) s", label)  # 30 + 0..6 GiB
    assert m, label
    assert int(m[1]) * 60 + int(m[2]) == len(spark) * 2 and len(hist.rstrip()) <= 90


def _gib_samples(gib: list[float]) -> list[float]:
    return [g * 1024 for g in gib]  # MiB, as the stream gives them


def test_the_history_range_is_the_samples_the_line_shows_not_those_before():
    """The newcomer's "used 0–88.5 GiB, last 29 s" beside a flat, full line: the 0 was the bars'
    floor, not a sample of those 29 s. The range is the lowest and highest of the shown samples
    only: the GPU idle before the run (0 GiB), or higher before it (another run's 95 GiB), stays
    out of it. Expected values computed here from the samples the line shows."""
    from mambaconsole.ui.gpu_pane import history_row

    for before, window in (([0.0] * 40, [88.5] * 40),  # idle, then a steady run
                           ([95.0] * 40, [40.0, 60.0, 51.5] * 14)):  # a higher run, then one that varies
        hist = _gib_samples(before + window)
        text = history_row(hist, 2.0, 60, {}).plain
        label, spark = text.rstrip().rsplit(" ", 1)
        n = len(spark)
        assert 1 < n <= len(window)  # the line shows only samples of the later run
        shown = [v / 1024 for v in hist[-n:]]
        lo, hi = f"{min(shown):.1f}", f"{max(shown):.1f}"
        want = f"used {hi} GiB sampled" if lo == hi else f"used {lo}–{hi} GiB sampled"
        assert label == f"{want}, last {fmt_duration(n * 2.0)}", label
        assert not label.startswith(("used 0", "used 0.0")) and "95.0" not in label  # the earlier samples


def test_an_oom_above_every_sample_says_the_samples_missed_its_peak():
    """The demo's OOM run: the history read "used 0–51.7 GiB" while PyTorch's message said the
    process "had 88.02 GiB in use": the samples missed the peak, and the pane says so under the
    history line, with the highest sample taken while the run was alive. A sample at or above
    the message's number: no such line. The OOM message is case-19's real one (93.27 GiB in use)."""
    lines = (Path(__file__).parent / "data" / "cases" / "case-19" / "input.log").read_text().splitlines()

    def pane_after(samples_gib: list[float]) -> str:
        st = ConsoleState("h")
        st.apply(RunsListed((RunInfo("r1", log_path="/x", state="running", pid=42),), "r1"))
        for i, g in enumerate(samples_gib):
            st.apply(GpuSnapshot((GpuReading(0, "H100", g * 1024, 95.08 * 1024),), t=float(i)))
        _apply_log(st, "r1", lines)
        st.apply(RunsListed((RunInfo("r1", log_path="/x", state="exited", exit_code=1, pid=42),), "r1"))
        st.apply(GpuSnapshot((GpuReading(0, "H100", 0.0, 95.08 * 1024),), t=99.0))  # after its death
        assert st.status == "oom" and st.oom_numbers.in_use_gib == 93.27
        return " ".join(pane_text(st, 100))

    text = pane_after([0.0, 40.0, 51.7])
    assert "at the OOM: " in text and "the OOM's 93.27 GiB fell between samples (highest 51.7)" in text, text
    # right under the sampled range it qualifies, before the legend and the OOM's lines (a short pane cuts those)
    assert text.index("GiB sampled") < text.index("fell between samples") < text.index("at the OOM")
    assert "between samples" not in pane_after([0.0, 93.3, 60.0])  # a sample saw it


def _on_screen(app, widget) -> list[str]:
    """The rows of ``widget``'s content region as the screen shows them (the compositor's
    strips, cut to the region: a row the pane does not reach is not there)."""
    r = widget.scrollable_content_region
    rows = [s.text for s in app.screen._compositor.render_strips()]
    return [row[r.x:r.right].rstrip() for row in rows[r.y:r.bottom]]


def _oom_run(app, processes: bool) -> None:
    """The console's state after an OOM run: case-19's real log (its OOM message), three GPU
    samples (with two processes, the smaller an unresolved PID, or none) and a budget of two
    parts (its legend one row in a wide pane, two in a narrow one); then the GPU pane drawn."""
    from mambaconsole.state import GpuProcess

    log = (Path(__file__).parent / "data" / "cases" / "case-19" / "input.log").read_text().splitlines()
    st = app.state
    st.apply(RunsListed((RunInfo("r1", log_path="/x", state="running", pid=42),), "r1"))
    for i, g in enumerate((0.0, 40.0, 51.7)):
        procs = (GpuProcess(0, 42, g * 1024, "python -m sglang.launch_server"),
                 GpuProcess(0, 77, 512.0, "", resolved=False)) if processes else ()
        st.apply(GpuSnapshot((GpuReading(0, "H100", g * 1024, 95.08 * 1024),), procs, t=float(i)))
    _apply_log(st, "r1", log)
    st.apply(RunsListed((RunInfo("r1", log_path="/x", state="exited", exit_code=1, pid=42),), "r1"))
    st.budget_gb.update({"weights": 51.2, "kv": 22.08})
    app.refresh_panes({"gpu"})


def _pane_rows(app) -> tuple[list[str], int]:
    """The GPU pane's text drawn here at the width the pane gives it (less its scrollbar while
    one shows), and the number of rows the pane shows."""
    pane = app.gpu_pane
    width, height = pane.scrollable_content_region.width, pane.scrollable_content_region.height
    con = Console(width=width, record=True, color_system=None, file=open("/dev/null", "w"))
    con.print(gpu_renderable(app.state, width, app.theme_variables))
    return [ln.rstrip() for ln in con.export_text().splitlines()], height


async def test_text_taller_than_the_pane_is_reached_by_keys_and_wheel():
    """An OOM at 120x40: the OOM's sentence and the process table under the bar take more
    rows than the pane has. The pane shows a scrollbar; End (pane focused) brings the last row
    on screen, Home the first, and the mouse wheel scrolls it as well."""
    from textual import events

    from mambaconsole.ui.app import ConsoleApp

    app = ConsoleApp(Feed(LocalNode("h"), HostSettings()), start_workers=False, clock=lambda: 2.0)
    async with app.run_test(size=(120, 40)) as pilot:
        _oom_run(app, processes=True)
        await pilot.press("1")
        await pilot.pause(0.2)
        pane = app.query_one("#gpu")
        rows, height = _pane_rows(app)
        # the smallest process, last in the table, is the unresolved PID 77
        assert len(rows) > height and "77" in rows[-1] and "PID not visible" in rows[-1], (height, rows)
        assert rows[0] in _on_screen(app, pane) and rows[-1] not in _on_screen(app, pane)
        assert pane.show_vertical_scrollbar  # the sign that there is more
        await pilot.press("end")
        await pilot.pause(0.2)
        shown_rows = _on_screen(app, pane)
        assert shown_rows[-1] == rows[-1] and rows[0] not in shown_rows, shown_rows
        await pilot.press("home")
        await pilot.pause(0.2)
        assert _on_screen(app, pane)[0] == rows[0]
        for _ in range(len(rows) - height):
            await pilot._post_mouse_events([events.MouseScrollDown], widget=pane, offset=(4, 4))
        await pilot.pause(0.2)
        assert _on_screen(app, pane)[-1] == rows[-1]


async def test_the_text_keeps_its_own_height_through_resizes():
    """The terminal resized, then the GPU pane focused (the focus restyles the pane while its
    text is drawn again for the new width): the text is as many rows high as it takes at the
    new width (the pane's height where it takes fewer), its last row in reach, no blank rows
    under it to scroll to. (Left to Textual's
    ``height: auto`` the text kept the height of the one drawn before: here at 120x40 12 of
    its 13 rows, the last out of reach; on the demo at 200x60 12 rows for 10, a scrollbar for
    nothing.)"""
    from mambaconsole.ui.app import ConsoleApp

    app = ConsoleApp(Feed(LocalNode("h"), HostSettings()), start_workers=False, clock=lambda: 2.0)
    async with app.run_test(size=(120, 40)) as pilot:
        _oom_run(app, processes=False)
        await pilot.pause(0.5)
        pane = app.gpu_pane
        for size in ((80, 24), (200, 60), (120, 40), (200, 60)):
            await pilot.press("4")
            await pilot.resize_terminal(*size)
            await pilot.press("1")
            await pilot.pause(0.3)
            rows, height = _pane_rows(app)
            assert pane.body.size.height == max(len(rows), height), (size, rows)
            assert pane.show_vertical_scrollbar == (len(rows) > height), (size, height, rows)
            await pilot.press("end")
            await pilot.pause(0.2)
            shown_rows = _on_screen(app, pane)
            assert shown_rows[-1] == rows[-1] if len(rows) >= height else shown_rows[:len(rows)] == rows, (
                size, rows, shown_rows)
