"""The key-hint footer of every screen: Textual's :class:`~textual.widgets.Footer`, recomposed
only when the keys it shows change.

Textual's Footer (8.x, ``widgets/_footer.py``) throws away and mounts all its ``FooterKey``
widgets on every ``bindings_updated`` signal, which fires on each focus change, on screen
resume and after mounting: three times before the main screen's first paint, again on each Tab
between panes, and each time styling a dozen new widgets (about 15 ms a time, a quarter of the
console's start-up). The keys shown do not change with focus on most of our screens, so this
subclass compares what it would show with what it shows and skips the identical recompose.
"""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    """:class:`~textual.widgets.Footer` that recomposes only when the shown bindings change
    (key, description, action, enabled, tooltip, group: all that ``Footer.compose`` reads)."""

    _shown: tuple | None = None

    def shown_bindings(self, screen: Screen) -> tuple:
        """What ``Footer.compose`` would render for ``screen``: one tuple per shown binding."""
        palette = self.app.COMMAND_PALETTE_BINDING
        return tuple((key, b.key_display, b.description, b.action, enabled, tooltip, b.group)
                     for key, (_node, b, enabled, tooltip) in screen.active_bindings.items()
                     if b.show or key == palette)

    def bindings_changed(self, screen: Screen) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus:
            return
        if self.is_attached and screen is self.screen:
            shown = self.shown_bindings(screen)
            if shown == self._shown:
                return
            self._shown = shown
            self.call_after_refresh(self.recompose)

    #: narrower than this many columns: compact key hints, no palette key at the right (it is
    #: docked over the last hints there; ctrl+p still opens the palette)
    NARROW = 100

    def on_resize(self) -> None:
        narrow = self.app.size.width < self.NARROW
        if (self.compact, self.show_command_palette) != (narrow, not narrow):
            self.compact, self.show_command_palette = narrow, not narrow
            self._shown = None
            if self._bindings_ready:
                self.call_after_refresh(self.recompose)
