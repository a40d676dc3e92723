"""KeyFooter (real Textual, Pilot): the footer shows the focused widget's keys and the app's; it
recomposes when the shown keys change (focus moves to a widget with other bindings, a binding
gets disabled) and keeps its FooterKey widgets when focus moves between widgets whose keys are
the same. Expected keys are read off the test's own BINDINGS."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from mambaconsole.ui.footer import KeyFooter


class Plain(Static, can_focus=True):
    """Focusable, no keys of its own."""


class Searchable(Static, can_focus=True):
    BINDINGS = [Binding("slash", "search", "Search"), Binding("f", "filter", "Filter")]

    def action_search(self) -> None:
        pass

    def action_filter(self) -> None:
        pass


class Demo(App):
    BINDINGS = [Binding("q", "quit", "Quit"), Binding("x", "stop", "Stop"), Binding("t", "theme", "Theme", show=False)]
    stop_allowed = True

    def compose(self) -> ComposeResult:
        yield Plain("one", id="one")
        yield Plain("two", id="two")
        yield Searchable("log", id="log")
        yield KeyFooter()

    def check_action(self, action: str, parameters) -> bool | None:
        if action == "stop":
            return True if self.stop_allowed else None  # None: shown, disabled
        return True

    def action_stop(self) -> None:
        pass


def shown(app: App) -> list[tuple[str, str, bool]]:
    """(description, key display, enabled) of each FooterKey shown, left to right (palette key
    last); a disabled key has the class ``-disabled`` (Textual 8 FooterKey)."""
    return [(str(k.description), k.key_display, not k.has_class("-disabled")) for k in app.screen.query("FooterKey")
            if k.display]


async def test_footer_follows_the_focused_widgets_keys():
    app = Demo()
    async with app.run_test(size=(100, 10)) as pilot:
        app.query_one("#one").focus()
        await pilot.pause()
        base = [d for d, _k, _e in shown(app)]
        assert "Quit" in base and "Stop" in base and "Theme" not in base
        assert "Search" not in base and "Filter" not in base

        app.query_one("#log").focus()
        await pilot.pause()
        descs = [d for d, _k, _e in shown(app)]
        assert "Search" in descs and "Filter" in descs and "Quit" in descs


async def test_footer_keeps_its_keys_when_focus_moves_between_like_widgets():
    app = Demo()
    async with app.run_test(size=(100, 10)) as pilot:
        app.query_one("#one").focus()
        await pilot.pause()
        before = list(app.screen.query("FooterKey"))
        app.query_one("#two").focus()
        await pilot.pause()
        assert list(app.screen.query("FooterKey")) == before  # the same widgets: no recompose


async def test_footer_recomposes_when_a_key_gets_disabled():
    app = Demo()
    async with app.run_test(size=(100, 10)) as pilot:
        app.query_one("#one").focus()
        await pilot.pause()
        assert ("Stop", "x", True) in shown(app)
        app.stop_allowed = False
        app.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        assert ("Stop", "x", False) in shown(app)


async def test_keys_the_focused_widget_lacks_are_hidden_not_recomposed():
    """From a widget with more keys to one whose keys are those less some, in the same order,
    the footer hides the others (the same widgets, no recompose); and back it shows them."""
    app = Demo()
    async with app.run_test(size=(100, 10)) as pilot:
        app.query_one("#log").focus()
        await pilot.pause()
        with_search = shown(app)
        widgets = list(app.screen.query("FooterKey"))
        app.query_one("#one").focus()
        await pilot.pause()
        assert list(app.screen.query("FooterKey")) == widgets  # kept, not recomposed
        assert shown(app) == [k for k in with_search if k[0] not in ("Search", "Filter")]
        assert [d for d, _k, _e in shown(app)] == ["Quit", "Stop", "palette"]
        app.query_one("#log").focus()
        await pilot.pause()
        assert list(app.screen.query("FooterKey")) == widgets and shown(app) == with_search
        # what is drawn: no Search while #one is focused (the footer is the only place it shows)
        app.query_one("#one").focus()
        await pilot.pause()
        screen = app.export_screenshot()
        assert "Search" not in screen and "Filter" not in screen and "Quit" in screen
