"""The ``?`` key map (Pilot, recorded state, no pollers): the app's own keys first, grouped by
pane in the order of the pane keys (global, GPU, spec, ServerArgs, log, editor), Textual's generic scroll/cursor keys last in
one short group; built from the bindings, so a key a pane's widget adds later shows up in that
pane's group; ``--read-only`` hides every key that changes the node. Expected rows are read off
the classes' BINDINGS."""

from __future__ import annotations

import sys

from textual.binding import Binding
from textual.widgets import Static

from mambaconsole.node.local import LocalNode
from mambaconsole.ui.app import NODE_CHANGING, ConsoleApp
from mambaconsole.ui.args_pane import ArgsPane
from mambaconsole.ui.editor import EditorScreen
from mambaconsole.session.feed import Feed
from mambaconsole.ui.help import GENERIC, HelpScreen
from mambaconsole.ui.log_pane import LogPane
from mambaconsole.session.settings import HostSettings


def make_app(read_only: bool = False) -> ConsoleApp:
    feed = Feed(LocalNode("gpu-node"), HostSettings(python=sys.executable, module="mambaconsole.sim"), simulated=True)
    return ConsoleApp(feed, clock=lambda: 1796040000.0, start_workers=False, read_only=read_only)


def actions(cls) -> list[tuple[str, str]]:
    """(key, description) of each binding a class declares itself (compound keys expanded)."""
    return [(b.key, b.description) for b in Binding.make_bindings(cls.__dict__.get("BINDINGS", []))]


class AccessToggle(Static, can_focus=True):
    """Stands in for a key another engineer adds to the log pane later (``a``)."""

    BINDINGS = [Binding("a", "toggle_access", "Access lines")]


async def open_help(pilot, app) -> HelpScreen:
    await pilot.press("question_mark")
    await pilot.pause()
    assert isinstance(app.screen, HelpScreen)
    return app.screen


async def test_own_keys_first_by_pane_generic_scroll_keys_last():
    app = make_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await app.query_one("#log").mount(AccessToggle("x"))
        await pilot.pause()
        app.query_one("#log-view").focus()  # the log has focus: its scroll keys must not come first
        await pilot.pause()
        groups = dict((await open_help(pilot, app)).groups)
        titles = [t for t, _ in (app.screen.groups)]
        assert titles[0] == "global" and titles[-1] == GENERIC
        # in the order of the pane keys 1-4
        assert [t for t in titles if t in ("GPU memory", "ServerArgs", "Log", "Speculative decoding")] == [
            "GPU memory", "Speculative decoding", "ServerArgs", "Log"]
        assert titles.index("editor (e)") == len(titles) - 2
        descs = {t: [d for _, d in rows] for t, rows in groups.items()}
        # every key of the app itself, in the global group or (focus keys) in its pane's group
        for key, desc in actions(ConsoleApp):
            where = next((t for t, rows in groups.items() for k, d in rows if d in (desc, "focus this pane")
                          and app.get_key_display(Binding(key, "x")) in k.split(" / ")), None)
            assert where is not None and where != GENERIC, (key, desc)
        assert "Quit" in descs["global"] and "Edit args" in descs["global"]
        for key, desc in actions(LogPane):
            assert desc in descs["Log"], desc
        assert "Access lines" in descs["Log"]  # picked up from the widget that declares it
        for key, desc in actions(ArgsPane):
            assert desc in descs["ServerArgs"], desc
        for key, desc in actions(EditorScreen):
            assert desc in descs["editor (e)"], desc
        # the generic group is short and holds only Textual's scroll/cursor keys
        generic = groups[GENERIC]
        assert 0 < len(generic) <= 8
        assert any("↑" in k for k, _ in generic)
        own = [d for t, rows in groups.items() if t != GENERIC for _, d in rows]
        assert not any(d.lower().startswith("scroll") for d in own)
        # drawn in that order
        keys = app.screen.query_one("#keys")
        text = "\n".join("".join(seg.text for seg in keys.render_line(y)) for y in range(keys.size.height))
        assert text.index("Quit") < text.index("Access lines") < text.index(GENERIC)


async def test_read_only_key_map_hides_node_changing_keys_and_the_editor():
    app = make_app(read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        groups = dict((await open_help(pilot, app)).groups)
        hidden = {desc for key, desc in actions(ConsoleApp)
                  if next(b.action for b in Binding.make_bindings(ConsoleApp.BINDINGS) if b.key == key) in NODE_CHANGING}
        assert hidden == {"Edit args", "Relaunch", "Stop"}
        shown = {d for rows in groups.values() for _, d in rows}
        assert not hidden & shown
        assert "editor (e)" not in groups
