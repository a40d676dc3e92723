"""Start-up without the garbage collector (``ui/__init__.py``): ``mambaconsole HOST`` turns it
off before it imports the app, and the app turns it back on once it has read the log's history
and frozen what start-up and that read built (at the latest ``COLLECTOR_HELD_S`` after its
mount); a console that fails before that turns it back on too, and a collector its owner had
turned off stays off."""

from __future__ import annotations

import gc
import json
import sys
import time
from types import SimpleNamespace

import pytest

from mambaconsole import cli
from mambaconsole.node.local import LocalNode
from mambaconsole.session.feed import Feed
from mambaconsole.session.settings import HostSettings
from mambaconsole.ui import hold_collector, release_collector


@pytest.fixture
def collector_on():
    """Each test starts and ends with the collector on (as a process starts)."""
    gc.enable()
    yield
    release_collector()
    gc.enable()


def test_the_command_line_opens_the_host_and_runs_the_console_with_the_collector_off(collector_on, monkeypatch):
    from mambaconsole import opening

    seen = []

    def run(args, opened):
        seen.append(("run", args.host, opened.session, gc.isenabled()))
        return 0

    def open_host(host, overrides):
        seen.append(("open", host, overrides["python"], gc.isenabled()))
        return opening.Opened("the session", None, SimpleNamespace(run=run))

    monkeypatch.setattr(opening, "open_host", open_host)
    assert cli.main(["gpu-node", "--python", "/opt/sglang/bin/python"]) == 0
    assert seen == [("open", "gpu-node", "/opt/sglang/bin/python", False), ("run", "gpu-node", "the session", False)]
    assert gc.isenabled()  # the app never mounted (a stand-in ran): the command line turned it on


def test_a_console_that_fails_before_its_mount_turns_the_collector_back_on(collector_on, monkeypatch, capsys):
    from mambaconsole import opening
    from mambaconsole.errors import ConsoleError

    def fail(host, overrides):
        assert not gc.isenabled()
        raise ConsoleError(f"{host}: no route to host")

    monkeypatch.setattr(opening, "open_host", fail)
    assert cli.main(["gpu-node"]) == 1
    assert "gpu-node: no route to host" in capsys.readouterr().err
    assert gc.isenabled()


def _ended_run(tmp_path, lines: int) -> None:
    """An ended run in the store ``tmp_path/home`` whose log has ``lines`` INFO lines."""
    log = tmp_path / "server.log"
    log.write_text("".join(f"[2026-12-01 10:00:{i % 60:02d}] INFO: line {i}\n" for i in range(lines)))
    d = tmp_path / "home" / "runs" / "20261201-100000-gc"
    d.mkdir(parents=True)
    (d / "argv.json").write_text(json.dumps(["sleep", "1"]))
    (d / "status.json").write_text(json.dumps({"state": "exited", "exit_code": 0, "started": time.time() - 60,
                                               "log_path": str(log)}))


async def test_the_app_turns_the_collector_back_on_once_the_logs_history_is_read(collector_on, tmp_path,
                                                                                   monkeypatch):
    from fixtures.console import console_for, wait_until
    from mambaconsole.ui import app as ui_app

    monkeypatch.setattr(ui_app, "COLLECTOR_HELD_S", 60.0)  # not the bound: the history's end
    _ended_run(tmp_path, 3000)
    hold_collector()
    app = console_for(LocalNode("t"), str(tmp_path / "home"), agent_python=sys.executable)
    async with app.run_test(size=(120, 40)) as pilot:
        assert not gc.isenabled()  # mounted: still held, the history is not read yet
        st = app.state
        await wait_until(pilot, lambda: st.log_total == 3000 and st.reading_left() is None, what="the history read")
        await wait_until(pilot, gc.isenabled, timeout=10, what="the collector on again")


async def test_once_the_history_is_read_full_collections_are_rare_until_the_app_ends(collector_on, tmp_path,
                                                                                    monkeypatch):
    """A full collection rescans what start-up did not freeze (Textual's row caches): at
    Python's default (every 10 collections of the middle generation) one ran about every second
    while a line came every 10 ms. Once the history is read: every 100; Python's again after."""
    from fixtures.console import console_for, wait_until

    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # Python's defaults
    try:
        _ended_run(tmp_path, 500)
        app = console_for(LocalNode("t"), str(tmp_path / "home"), agent_python=sys.executable)
        async with app.run_test(size=(120, 40)) as pilot:
            st = app.state
            await wait_until(pilot, lambda: st.log_total == 500 and st.reading_left() is None, what="the history read")
            await wait_until(pilot, lambda: gc.get_threshold() == (700, 10, 100), timeout=10,
                             what="full collections every 100 of the middle generation")
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)


async def test_without_a_log_the_collector_runs_again_soon_after_the_mount(collector_on, monkeypatch):
    from fixtures.console import wait_until
    from mambaconsole.ui import app as ui_app

    monkeypatch.setattr(ui_app, "COLLECTOR_HELD_S", 0.3)
    hold_collector()
    app = ui_app.ConsoleApp(Feed(LocalNode("t"), HostSettings()), start_workers=False)
    async with app.run_test(size=(120, 40)) as pilot:
        t0 = time.monotonic()
        await wait_until(pilot, gc.isenabled, timeout=10, what="the collector on again")
        assert time.monotonic() - t0 < 5


def test_a_collector_its_owner_turned_off_stays_off(collector_on):
    gc.disable()
    hold_collector()
    release_collector()
    assert not gc.isenabled()
