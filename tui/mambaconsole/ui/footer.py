"""The key-hint footer of every screen: Textual's :class:`~textual.widgets.Footer`, recomposed
only when the keys it shows change.

Textual's Footer (8.x, ``widgets/_footer.py``) throws away and mounts all its ``FooterKey``
widgets on every ``bindings_updated`` signal, which fires on each focus change, on screen
resume and after mounting: three times before the main screen's first paint, again on each Tab
between panes, and each time styling a dozen new widgets (about 15 ms a time, a quarter of the
console's start-up). The keys shown do not change with focus on most of our screens, so this
subclass compares what it would show with what it shows and skips the identical recompose.

Where they do change (the log pane's keys and the GPU pane's), the keys of the one set are
often the other's with some left out, in the same order: then the footer keeps every
``FooterKey`` it has and hides the ones the focused widget does not have (``display``), instead
of a recompose. A recompose removed and mounted a dozen widgets and styled the new ones: about
60% of the app's CPU for a pane key (``1``..``4``) at 120x40, and a layout of the screen
behind which the next keys and log lines waited.
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
            if not self._show_only(screen):
                self.call_after_refresh(self.recompose)

    @staticmethod
    def _key_of(key: str, description: str, enabled: bool, tooltip: str) -> tuple:
        return key, description, enabled, tooltip

    def _show_only(self, screen: Screen) -> bool:
        """Show the FooterKeys of ``screen``'s shown bindings and hide the others, when every
        child is a FooterKey and the keys wanted are the children's in the same order (what
        ``Footer.compose`` would yield: one key per action, the palette key last); False
        (nothing changed) when they are not."""
        kids = list(self.children)
        if not kids or len(self.query_children("FooterKey")) != len(kids):
            return False
        palette = self.app.COMMAND_PALETTE_BINDING
        wanted, actions = [], set()
        for key, (_node, b, enabled, tooltip) in screen.active_bindings.items():
            if b.show and b.action not in actions:
                if b.group is not None:
                    return False  # a group of keys: composed with its label
                actions.add(b.action)
                wanted.append(self._key_of(b.key, b.description, enabled, tooltip))
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE and palette in screen.active_bindings:
            _node, b, enabled, _tooltip = screen.active_bindings[palette]
            wanted.append(self._key_of(b.key, b.description, enabled, b.tooltip or b.description))
        have = [self._key_of(k.key, k.description, not k.has_class("-disabled"), str(k.tooltip or ""))
                for k in kids]
        show, i = [], 0
        for h in have:
            take = i < len(wanted) and h == wanted[i]
            show.append(take)
            i += take
        if i < len(wanted):
            return False  # keys the footer does not have, or in another order
        for kid, on in zip(kids, show):
            if kid.display != on:
                kid.display = on
        return True

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
