"""80x24 (a laptop's SSH window): one pane at a time with the pane keys switching it, a header
whose lines never wrap (the failure stays on line 2), a footer without the palette key docked
over the hints, and an editor that shows the fields. The recorded simulated run of the
snapshot tests; the editor reads the recorded 0.5.11 parser."""

from __future__ import annotations

from test_console_snapshots import _json, feed_recorded, frozen_app
from mambaconsole.state import LogLine, LogLines
from mambaconsole.ui.editor import EditorScreen
from textual.widgets import Input


def shown_panes(app) -> list[str]:
    return [p.id for p in app.query(".pane") if p.display and p.region.area]


async def test_80x24_shows_one_pane_and_the_pane_keys_switch_it(monkeypatch):
    app = frozen_app(monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        feed_recorded(app)
        await pilot.pause()
        assert shown_panes(app) == ["log"]
        for key, pane in (("1", "gpu"), ("2", "spec"), ("3", "args"), ("4", "log")):
            await pilot.press(key)
            await pilot.pause()
            assert shown_panes(app) == [pane]
            region = app.query_one(f"#{pane}").region
            assert region.width == 80 and region.height >= 24 - 2 - 1 - 1  # all but header and footer
        # a wider terminal: the four panes again
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert sorted(shown_panes(app)) == ["args", "gpu", "log", "spec"]


async def test_80x24_header_lines_do_not_wrap_and_footer_keeps_its_hints(monkeypatch):
    app = frozen_app(monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        feed_recorded(app)
        run = app.state.run.run_id
        tb = ["[2026-11-30 14:20:00] Scheduler hit an exception: Traceback (most recent call last):",
              '  File "/x/sglang/srt/managers/scheduler.py", line 10, in run_scheduler_process',
              "RuntimeError: something failed while serving, with a message long enough to need cutting"]
        off = app.state.log_offset
        app.state.apply(LogLines(run, tuple(LogLine(run, off + i * 200, t) for i, t in enumerate(tb))))
        app.state.flush_log()
        app.refresh_panes({"header", "log", "spec", "args"})
        await pilot.pause()
        assert app.state.failure
        lines = app.query_one("StatusBar").render().plain.split("\n")
        assert len(lines) == 2 and all(len(ln) <= 80 for ln in lines)
        # the first line is the status line (its title gives way at 80 columns, the state word never)
        assert " ● CRASHED" in lines[0] and lines[1].startswith(" Scheduler: RuntimeError")
        footer = app.screen.query_one("KeyFooter")
        assert not footer.show_command_palette and footer.compact


async def test_80x24_editor_shows_the_fields_and_the_one_typed_into(monkeypatch):
    app = frozen_app(monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        feed_recorded(app)
        ed = EditorScreen(app.feed, list(app.state.run.argv), params=_json("params-0.5.11.json"))
        await app.push_screen(ed)
        await pilot.pause()
        form = ed.query_one("#ed-form")
        seen = [r for r in ed.query(".row") if form.region.contains_region(r.region)]
        assert len(seen) >= 10, len(seen)
        # the last field, focused and typed into, is in sight
        last = list(ed.query(".row Input"))[-1]
        last.focus()
        await pilot.pause()
        await pilot.press("1")
        await pilot.pause()
        assert form.region.contains_region(last.region) and isinstance(app.focused, Input)
        assert ed.query_one("#ed-buttons").region.bottom <= 23  # the buttons above the footer
