"""Start-up without the garbage collector (``ui/__init__.py``): ``mambaconsole HOST`` turns it
off before it imports the app, and the app turns it back on at its mount (after freezing what
start-up built); a console that fails before its mount turns it back on too, and a collector
its owner had turned off stays off."""

from __future__ import annotations

import gc
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


async def test_the_app_turns_the_collector_back_on_at_its_mount(collector_on):
    from mambaconsole.ui.app import ConsoleApp

    hold_collector()
    assert not gc.isenabled()
    app = ConsoleApp(Feed(LocalNode("t"), HostSettings()), start_workers=False)
    async with app.run_test(size=(120, 40)):
        assert gc.isenabled()


def test_a_collector_its_owner_turned_off_stays_off(collector_on):
    gc.disable()
    hold_collector()
    release_collector()
    assert not gc.isenabled()
