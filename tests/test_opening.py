"""``mambaconsole HOST`` opens the node while the UI is imported (``mambaconsole/opening.py``):
the first look goes out and is answered during the import, its answers are held for the app
and handled by it, in order, once it is mounted (nothing lost)."""

from __future__ import annotations

import asyncio
import json
import sys
import time

import pytest

from fixtures.console import wait_until
from mambaconsole import opening
from fixtures.nodes import CountingNode
from mambaconsole.session.feed import Feed
from mambaconsole.session.session import Session
from mambaconsole.session.settings import HostSettings

RUN = "20261201-100000-open"
LINES = [f"[2026-12-01 10:00:{i % 60:02d}] line {i} of the run's log\n" for i in range(500)]

#: a UI module whose import lasts until the node has been asked (its first command started)
#: and has answered (an answer held for the app): it ends only if the node's work ran during
#: the import; then it is the console's app module
SLOW_UI = '''
import sys, time
from mambaconsole.ui.app import *  # noqa: F401,F403
from mambaconsole.ui.app import ConsoleApp, run  # noqa: F401

probe = sys.modules["opening_probe"]
deadline = time.monotonic() + 60
while not (probe.node.started and probe.held()):
    if time.monotonic() > deadline:
        raise RuntimeError("the node was not asked, or did not answer, while the UI was imported")
    time.sleep(0.01)
probe.asked_during_import = list(probe.node.started)
'''


@pytest.fixture
def probe(tmp_path, monkeypatch):
    home = tmp_path / "home"
    log = tmp_path / "server.log"
    log.write_text("".join(LINES))
    d = home / "runs" / RUN
    d.mkdir(parents=True)
    (d / "argv.json").write_text(json.dumps(["sleep", "1"]))
    (d / "status.json").write_text(json.dumps({"state": "exited", "exit_code": 0, "started": 1000.0,
                                               "log_path": str(log)}))
    mod = type(sys)("opening_probe")
    mod.node = CountingNode()
    mod.session = None
    mod.held = lambda: mod.session is not None and mod.session.dispatch.__self__  # the list open_host holds into
    monkeypatch.setitem(sys.modules, "opening_probe", mod)
    (tmp_path / "slow_ui.py").write_text(SLOW_UI)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(opening, "UI_MODULE", "slow_ui")
    monkeypatch.setattr(opening, "needs_terminal", lambda: None)

    def for_host(host, overrides, *, loop=None):
        feed = Feed(mod.node, HostSettings(python=sys.executable), home=str(home), agent_python=sys.executable,
                    adopt=False)
        mod.session = Session(feed, poll_s=0.3)
        return mod.session

    import mambaconsole.session.session as session_mod

    monkeypatch.setattr(session_mod, "for_host", for_host)
    yield mod
    sys.modules.pop("slow_ui", None)


def test_the_first_look_is_answered_while_the_ui_is_imported_and_the_app_handles_its_answers(probe):
    t0 = time.monotonic()
    opened = opening.open_host("counted", {})
    try:
        assert opened.ui.__name__ == "slow_ui" and opened.session is probe.session
        # the node's first command (the first look: runs and the current run's log) went out
        # during the import, and its answer was held for the app
        assert len(probe.asked_during_import) == 1 and '"current": true' in " ".join(probe.asked_during_import[0])
        assert opened.held and not probe.session.state.log_total  # held: nothing applied without the app

        async def console():
            app = opened.ui.ConsoleApp(opened.session, held=opened.held, on_quit=opened.session.feed.close)
            async with app.run_test(size=(120, 40)) as pilot:
                st = app.state
                await wait_until(pilot, lambda: st.run is not None and st.log_total == len(LINES)
                                 and app.log_pane._seen_total == st.log_total, what="the run and its log drawn")
                assert st.run.run_id == RUN and st.log_run_id == RUN
                assert [ln.text for ln in st.log] == [ln.rstrip("\n") for ln in LINES]
                # the log came from the first look's agent, not from an agent started again
                tails = [c for c in probe.node.started if "--tail-bytes" in c]
                assert tails == [probe.node.started[0]], probe.node.started

        opened.loop.run_until_complete(console())
    finally:
        opening.close_loop(opened.loop)
    assert time.monotonic() - t0 < 60


def test_a_ui_that_cannot_be_imported_closes_the_session_and_its_loop(probe, monkeypatch):
    monkeypatch.setattr(opening, "UI_MODULE", "no_such_ui_module_xyz")
    loops = []
    real = asyncio.new_event_loop

    def new_loop():
        loops.append(real())
        return loops[-1]

    monkeypatch.setattr(opening.asyncio, "new_event_loop", new_loop)
    with pytest.raises(ModuleNotFoundError):
        opening.open_host("counted", {})
    assert probe.session.closing and loops and loops[0].is_closed()
