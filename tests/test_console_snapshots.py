"""SVG snapshots of the console (pytest-textual-snapshot): the main screen, the editor with a
pre-flight error and the run history, at 120x40 and 200x60. The app is fed recorded inputs
(a log and resolver answers of the simulated node, tests/data/console) with its workers off,
time frozen and the time zone fixed, so every run draws the same screen."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from mambaconsole.state import (
    GpuProcess, GpuReading, GpuSnapshot, LogLine, LogLines, NodeFacts, Resolution, RunInfo, RunsListed,
)
from mambaconsole.ui import messages as M
from mambaconsole.ui.app import ConsoleApp
from mambaconsole.ui.editor import EditorScreen
from mambaconsole.session.feed import Feed
from mambaconsole.node.local import LocalNode
from mambaconsole.session.settings import HostSettings

DATA = Path(__file__).parent / "data" / "console"
NOW = 1796040000.0  # frozen clock (Unix seconds)
SIZES = [(80, 24), (120, 40), (200, 60)]  # 80x24: one pane at a time (ConsoleApp.compact)
PY = "/opt/venv/bin/python"
SIM = [PY, "-m", "mambaconsole.sim", "--sim-version", "0.5.11", "--sim-seed", "0", "--sim-speed", "1"]


def _json(name):
    return json.loads((DATA / name).read_text())


def _working_args() -> list[str]:
    from mambaconsole.sim import demo

    return demo.working_argv(port=30000)


def _runs() -> tuple[RunInfo, RunInfo]:
    first_args = [a for a in _working_args()]
    for flag in ("--max-mamba-cache-size", "--mamba-full-memory-ratio"):
        i = first_args.index(flag)
        del first_args[i:i + 2]
    first = RunInfo("20261130-120000-a1b2", argv=tuple(SIM + first_args), started=NOW - 600, ended=NOW - 590,
                    exit_code=137, state="exited", outcome="oom", pid=4000)
    second = RunInfo("20261130-120830-c3d4", argv=tuple(SIM + _working_args()), started=NOW - 90, state="running",
                     pid=4242, log_path="/x/log", log_mtime=NOW - 1)
    return first, second


def frozen_app(monkeypatch) -> ConsoleApp:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    feed = Feed(LocalNode("gpu-node"), HostSettings(python=PY, module="mambaconsole.sim"), simulated=True)
    return ConsoleApp(feed, clock=lambda: NOW, start_workers=False)


def feed_recorded(app: ConsoleApp) -> None:
    first, second = _runs()
    events = [NodeFacts("gpu-node", "0.5.11", simulated=True), RunsListed((first, second), second.run_id)]
    lines, off = [], 0
    for text in (DATA / "sim-ready.log").read_text().splitlines():
        lines.append(LogLine(second.run_id, off, text))
        off += len(text.encode()) + 1
    events.append(LogLines(second.run_id, tuple(lines)))
    used = 97642.0
    for i, frac in enumerate((0.0, 0.2, 0.53, 0.53, 0.8, 0.95, 0.99, 0.99)):
        events.append(GpuSnapshot((GpuReading(0, "RTX PRO 6000 Blackwell", used * frac, 98304.0, 80.0, simulated=True),),
                                  (GpuProcess(0, 4242, used * frac, " ".join(second.argv)), GpuProcess(0, 77, 512.0, "", resolved=False)),
                                  simulated=True, t=NOW - 8 + i))
    events.append(Resolution(_json("resolve-working.json"), second.argv))
    for ev in events:
        app.state.apply(ev)
    app.state.flush_log()
    app.refresh_panes({"header", "gpu", "spec", "args", "log"})


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_main_screen(snap_compare, monkeypatch, size):
    app = frozen_app(monkeypatch)

    async def before(pilot):
        feed_recorded(app)
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_editor_preflight_error(snap_compare, monkeypatch, size):
    app = frozen_app(monkeypatch)

    async def before(pilot):
        feed_recorded(app)
        ed = EditorScreen(app.feed, list(app.state.run.argv), params=_json("params-0.5.11.json"))
        await app.push_screen(ed)
        await pilot.pause()
        ed.query_one("#f-mamba_scheduler_strategy").value = "no_buffer"
        await pilot.pause()
        ed.post_message(M.PreflightDone(ed.edited_args(), _json("resolve-no-buffer.json")))
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_history(snap_compare, monkeypatch, size):
    app = frozen_app(monkeypatch)
    first, second = _runs()
    app._summaries.update({
        first.run_id: {"outcome": "oom", "time_to_ready": None, "budget_gb": 51.2, "mean_accept_len": None},
        second.run_id: {"outcome": "ready", "time_to_ready": 12.0, "budget_gb": 94.8, "mean_accept_len": 2.97},
    })

    async def before(pilot):
        feed_recorded(app)
        app.action_history()
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=before)
