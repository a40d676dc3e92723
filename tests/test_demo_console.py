"""The console on the simulated node (``mambaconsole --demo``'s set-up), driven by Pilot: the
seed scenario's first failure, the pre-flight refusing an invalid edit without touching the
running server, an edit + relaunch whose new run carries the edit, the history of both runs,
hostile editor values. Expected values come from the sim's scenario (its docstrings and
inputs: 96 GiB GPU, exit 137 OOM, 0.5.11's ValueError text) or its ground-truth file."""

from __future__ import annotations

import json
import re
import os
import tempfile
from pathlib import Path

from fixtures.screen import shown
import pytest

from fixtures.console import wait_until
from mambaconsole.sim import demo as sim_demo
from mambaconsole.ui.app import ConsoleApp
from mambaconsole.session.demo import Demo

pytestmark = pytest.mark.timeout(240)

SPEED = 20  # the sim's time scale: startup in well under a second


def demo_app(home: Path, truth: Path | None = None, **kw) -> tuple[Demo, ConsoleApp]:
    demo = Demo(home, speed=SPEED, extra_env={"MAMBACONSOLE_SIM_TRUTH": str(truth)} if truth else None)
    feed = demo.make_feed()
    return demo, ConsoleApp(feed, poll_s=0.3, prepare=kw.pop("prepare", demo.start), on_quit=demo.stop, **kw)


async def open_editor(pilot, app):
    await pilot.press("e")
    await wait_until(pilot, lambda: type(app.screen).__name__ == "EditorScreen" and app.screen.params,
                     what="the editor with the node's parser")
    return app.screen


async def test_demo_first_failure_then_edit_relaunch_ready(demo_home, tmp_path):
    truth = tmp_path / "truth.json"
    demo, app = demo_app(demo_home, truth)
    async with app.run_test(size=(120, 40)) as pilot:
        # the seed scenario's first command: extra_buffer with default caps → CUDA OOM, exit 137
        await wait_until(pilot, lambda: app.state.status == "oom", timeout=60, what="the OOM")
        await wait_until(pilot, lambda: app.state.run.exit_code is not None, timeout=30)
        first = app.state.run
        assert first.exit_code == 137
        assert first.argv[3:] == tuple(sim_demo.sim_command(sim_demo.first_failing_argv(port=demo.port),
                                                            speed=SPEED)[3:])
        assert "OutOfMemoryError" in app.state.failure
        assert app.state.simulated and "SIMULATED" in shown(app.bar)
        # the GPU pane reads the sim's GPU: the default --sim-gpu "RTX PRO 6000 Blackwell,96"
        await wait_until(pilot, lambda: app.state.gpu and app.state.gpu.gpus)
        g = app.state.gpu.gpus[0]
        assert g.name == "RTX PRO 6000 Blackwell" and g.total_mib == 96 * 1024 and g.simulated
        # ServerArgs: NEXTN is rewritten to EAGLE by SGLang although the user gave NEXTN
        await wait_until(pilot, lambda: app.state.rows, what="the resolution")
        row = next(r for r in app.state.rows if r.field == "speculative_algorithm")
        assert (row.value, row.source) == ("EAGLE", "overridden")

        # edit the Mamba caps, pre-flight, relaunch
        ed = await open_editor(pilot, app)
        ed.query_one("#f-max_mamba_cache_size").value = "24"
        ed.query_one("#f-mamba_full_memory_ratio").value = "0.4"
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: ed.verdict is not None and ed.verdict_for == ed.edited_args(), what="pre-flight")
        assert ed.verdict["ok"] is True
        await pilot.press("ctrl+y")
        await wait_until(pilot, lambda: app.state.run.run_id != first.run_id, timeout=60, what="the new run")
        new = app.state.run
        assert list(new.argv) == list(first.argv) + ["--mamba-full-memory-ratio", "0.4", "--max-mamba-cache-size", "24"]
        await wait_until(pilot, lambda: app.state.status == "ready", timeout=60, what="ready")
        await wait_until(pilot, lambda: app.state.spec_n >= 3, timeout=60, what="decode batches")
        # the spec pane holds the sim's own accept lengths (its ground truth), in order
        await wait_until(pilot, lambda: truth.exists() and len(json.loads(truth.read_text())["accept_lens"]) >= app.state.spec_n)
        want = json.loads(truth.read_text())["accept_lens"][: app.state.spec_n]
        assert [round(p.accept_len, 2) for p in app.state.spec] == [round(x, 2) for x in want]
        assert app.state.phase is None  # the relaunch phase ended with ready

        # history: both runs, newest first, the edit as the argv change
        await pilot.press("h")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "HistoryScreen")
        table = app.screen.query_one("DataTable")
        assert table.row_count == 2
        assert str(table.get_row_at(0)[0]) == new.run_id and str(table.get_row_at(1)[0]) == first.run_id
        # the edit's two changes: the column shows them whole, or the first whole and how many more
        cell = str(table.get_row_at(0)[table.get_column_index("argv change")])
        edits = ["+ --max-mamba-cache-size 24", "+ --mamba-full-memory-ratio 0.4"]
        assert any(cell in (f"{a}  {b}", f"{a} … 1 more") for a, b in (edits, edits[::-1])), cell
        await wait_until(pilot, lambda: str(table.get_row_at(1)[table.get_column_index("outcome")]).startswith("OOM exit 137"),
                         what="the first run's outcome")
        # the highlighted run in full under the table: the whole argv change, which the column cuts
        detail = lambda: shown(app.screen.query_one("#hist-detail"))  # noqa: E731
        assert f"run {new.run_id}" in " ".join(detail().split())
        assert "--mamba-full-memory-ratio 0.4" in detail() and "--max-mamba-cache-size 24" in detail()
        # Enter on the older run: the history closes and the log pane shows that run's log
        table.move_cursor(row=1)
        await pilot.pause(0.05)
        assert f"run {first.run_id}" in detail() and "first run" in detail()
        await pilot.press("enter")
        await wait_until(pilot, lambda: type(app.screen).__name__ != "HistoryScreen", what="the history closed")
        await wait_until(pilot, lambda: app.state.log_run_id == first.run_id, what="the first run's log")
        await wait_until(pilot, lambda: any("out of memory" in ln.text.lower() for ln in app.state.log),
                         what="the OOM in the first run's log")
    # quitting stops the demo's processes
    runs = await Demo(demo_home).make_feed().store.list(adopt=False)
    assert runs and not any(r.alive for r in runs)


async def test_preflight_refuses_without_stopping_the_server(demo_home):
    demo = Demo(demo_home, speed=SPEED)

    async def start_working():
        env = demo.run_env()
        await demo.feed.store.start(sim_demo.sim_command(sim_demo.working_argv(port=demo.port), speed=SPEED),
                                    env=env, session="demo")

    feed = demo.make_feed()
    app = ConsoleApp(feed, poll_s=0.3, prepare=start_working, on_quit=demo.stop)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.state.status == "ready", timeout=60, what="ready")
        running = app.state.run
        ed = await open_editor(pilot, app)
        sel = ed.query_one("#f-mamba_scheduler_strategy")
        sel.value = "no_buffer"
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: ed.verdict is not None and ed.verdict_for == ed.edited_args(), what="pre-flight")
        err = ed.verdict["error"]
        # 0.5.11's ValueError names --mamba-scheduler-strategy no_buffer (sglang-observables §4.3)
        assert err["type"] == "ValueError"
        assert "--mamba-scheduler-strategy no_buffer" in err["message"]
        assert "PRE-FLIGHT REFUSED" in shown(ed.query_one("#ed-verdict"))
        assert ed.query_one("#ed-go").disabled
        await pilot.press("ctrl+y")  # refused: the editor stays, nothing is stopped
        await pilot.pause(0.5)
        assert type(app.screen).__name__ == "EditorScreen"
        await pilot.press("escape")
        await pilot.pause(1.0)
        runs = await feed.store.list(adopt=False)
        assert [r.run_id for r in runs] == [running.run_id] and runs[0].alive


async def test_hostile_editor_values(demo_home):
    canary = Path(tempfile.gettempdir()) / f"mc-pwned-{os.getpid()}"
    demo, app = demo_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.state.run and app.state.run.exit_code is not None, timeout=60)
        first = app.state.run
        ed = await open_editor(pilot, app)
        box = ed.query_one("#f-speculative_draft_model_path")
        # a newline (or any control character) is refused by validation: no pre-flight, no relaunch
        box.value = "x\ntouch " + str(canary)
        await pilot.press("ctrl+r")
        await pilot.pause(0.3)
        assert ed.invalid_fields() and ed.query_one("#ed-go").disabled
        # shell syntax is accepted as a value and reaches the server as one literal argv element
        hostile = f"; touch {canary} $(touch {canary}) `touch {canary}` 'q\" "
        box.value = hostile
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: ed.verdict is not None and ed.verdict_for == ed.edited_args(), what="pre-flight")
        assert ed.verdict["fields"]["speculative_draft_model_path"]["value"] == hostile
        await pilot.press("ctrl+y")
        await wait_until(pilot, lambda: app.state.run.run_id != first.run_id, timeout=60, what="the new run")
        argv = json.loads((demo_home / "runs" / app.state.run.run_id / "argv.json").read_text())
        i = argv.index("--speculative-draft-model-path")
        assert argv[i + 1] == hostile
        assert not canary.exists()


async def test_access_lines_of_the_polls_dim_hide_show(demo_home):
    """The console's own /server_info and /metrics polls print uvicorn access lines into the
    sim's log: hidden from the view by default (the state keeps them), ``a`` dims them, then
    shows them plain, then hides them again."""
    demo = Demo(demo_home, speed=SPEED)

    async def start_working():
        await demo.feed.store.start(sim_demo.sim_command(sim_demo.working_argv(port=demo.port), speed=SPEED),
                                    env=demo.run_env(), session="demo")

    def is_poll(text: str) -> bool:  # the sim's access line (sim/http.py) for a path the console polls
        return text.startswith("INFO:     127.0.0.1:") and any(
            f'"GET {p} HTTP/1.1"' in text for p in ("/server_info", "/get_server_info", "/metrics", "/health"))

    app = ConsoleApp(demo.make_feed(), poll_s=0.3, prepare=start_working, on_quit=demo.stop)
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.log_pane
        await wait_until(pilot, lambda: sum(is_poll(ln.text) for ln in app.state.log) >= 3, timeout=60,
                         what="access lines of the polls")
        polls = [ln.text for ln in app.state.log if is_poll(ln.text)]
        others = [ln.text for ln in app.state.log if not is_poll(ln.text)]
        assert any("Decode batch" in t or "fired up" in t for t in others)
        # default: hidden from the view, kept in the state, counted in the status line
        assert pane.access_mode == "hide"
        assert not any(is_poll(ln.text) for ln in pane._shown)
        # the count of them, in the row's full or short form (120x40: short)
        assert re.search(r" \d+ (poll lines?|polls?) hidden", shown(pane.query_one("#log-status")))
        n_before = app.state.log_total
        await wait_until(pilot, lambda: app.state.log_total > n_before + 2, timeout=30, what="more lines")
        assert not any(is_poll(ln.text) for ln in pane._shown)  # new ones stay hidden too
        assert sum(is_poll(ln.text) for ln in app.state.log) >= len(polls)
        # a: dim: shown, every character dimmed; the other lines are not dimmed as a whole
        pane.view.focus()
        await pilot.press("a")
        await pilot.pause(0.1)
        assert pane.access_mode == "dim"
        by_text = {ln.text: ln for ln in pane._shown}
        assert set(polls) <= set(by_text)
        for t in polls:
            styled = pane.view.line_text(by_text[t])
            assert any(sp.start == 0 and sp.end == len(t) and "dim" in str(sp.style) for sp in styled.spans), styled.spans
        ready = next(ln for ln in pane._shown if "fired up" in ln.text)
        assert not any(sp.start == 0 and sp.end == len(ready.text) and "dim" in str(sp.style)
                       for sp in pane.view.line_text(ready).spans)
        # a: shown plain (the severity/envelope styling only: no span over the whole line)
        await pilot.press("a")
        await pilot.pause(0.1)
        assert pane.access_mode == "show"
        line = next(ln for ln in pane._shown if is_poll(ln.text))
        assert not any("dim" in str(sp.style) for sp in pane.view.line_text(line).spans)
        # a: back to hidden
        await pilot.press("a")
        await pilot.pause(0.1)
        assert pane.access_mode == "hide" and not any(is_poll(ln.text) for ln in pane._shown)
