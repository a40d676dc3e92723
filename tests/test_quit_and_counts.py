"""ctrl+c quits (Textual's default only showed a hint), after a confirmation while a relaunch
is in flight; the log's count of unseen lines says "1 new line". The recorded simulated run
of the snapshot tests."""

from __future__ import annotations

from mambaconsole.state import LogLine, LogLines
from test_console_snapshots import feed_recorded, frozen_app




async def test_ctrl_c_quits_at_once_or_asks_during_a_relaunch(monkeypatch):
    app = frozen_app(monkeypatch)
    async with app.run_test(size=(120, 40)) as pilot:
        feed_recorded(app)
        await pilot.pause()
        app.relaunching = True
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert type(app.screen).__name__ == "ConfirmScreen"
        await pilot.press("n")
        await pilot.pause()
        assert app.is_running and type(app.screen).__name__ != "ConfirmScreen"
        await pilot.press("ctrl+c")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
    assert app.return_code == 0

    app = frozen_app(monkeypatch)
    async with app.run_test(size=(120, 40)) as pilot:
        feed_recorded(app)
        await pilot.pause()
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert not app.is_running
    assert app.return_code == 0


async def test_one_unseen_line_is_one_new_line(monkeypatch):
    app = frozen_app(monkeypatch)
    async with app.run_test(size=(120, 40)) as pilot:
        feed_recorded(app)
        await pilot.pause()
        log = app.log_pane
        await pilot.press("4", "home")  # scrolled up: paused
        await pilot.pause()
        assert not log.following
        run = app.state.run.run_id
        app.state.apply(LogLines(run, (LogLine(run, app.state.log_offset, "[2026-11-30 14:14:00] one more"),)))
        app.state.flush_log()
        app.refresh_panes({"log"})
        await pilot.pause()
        status = log.query_one("#log-status").render().plain
        assert "▼ 1 new " in status, status  # the pane's row: the marker in its terse form
        assert "▼ 1 new line (End: follow)" in log._status_row(app.state, None).plain  # one line: "line"


async def test_ctrl_s_in_the_editor_saves_a_screenshot(monkeypatch, tmp_path):
    """The editor is modal, which hid the app's ctrl+s: the pre-flight verdict could not be
    captured."""
    from mambaconsole.ui.editor import EditorScreen
    from test_console_snapshots import _json

    app = frozen_app(monkeypatch)
    app.screenshot_dir = str(tmp_path / "shots")
    async with app.run_test(size=(120, 40)) as pilot:
        feed_recorded(app)
        await app.push_screen(EditorScreen(app.feed, list(app.state.run.argv), params=_json("params-0.5.11.json")))
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
        [svg] = list((tmp_path / "shots").glob("*.svg"))
        assert "Edit the Mamba parameters" in svg.read_text().replace("&#160;", " ")


async def test_a_pane_key_pressed_elsewhere_says_where_it_works(monkeypatch):
    """``w`` with the GPU pane focused did nothing, silently."""
    from mambaconsole.ui.log_pane import LogPane

    wrap = next(b for b in LogPane.BINDINGS if b.key == "w")  # the log pane's own description
    app = frozen_app(monkeypatch)
    async with app.run_test(size=(120, 40)) as pilot:
        feed_recorded(app)
        await pilot.pause()
        was = app.log_pane.view.wrap
        await pilot.press("1", "w")
        await pilot.pause()
        said = [n.message for n in app._notifications]
        assert any(m.startswith("w does nothing here: ") and f"{wrap.description.lower()} in the log pane (press 4 first)"
                   in m for m in said), said
        assert app.log_pane.view.wrap == was  # and it did nothing
        # in the log pane it works, and says nothing of the kind
        await pilot.press("4", "w")
        await pilot.pause()
        assert app.log_pane.view.wrap != was
        # typed into the log's search box it is a letter, nothing else
        n = len(app._notifications)
        await pilot.press("slash", "w")
        await pilot.pause()
        assert app.log_pane.query_one("#log-search").value == "w" and len(app._notifications) == n, [m.message for m in app._notifications]
