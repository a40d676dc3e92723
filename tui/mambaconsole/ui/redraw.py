"""Redraw only what changed: the panes rebuild their content from the state at every event,
and most events change little of it. Textual repaints (and, with ``layout``, re-arranges the
whole screen) whenever a widget is updated, equal content or not."""

from __future__ import annotations

from typing import Any

_NOTHING = object()

#: seconds a text box keeps rows its text no longer needs before it shrinks (each change of its
#: height lays out the whole screen: under a flood of decode lines a number's width crossing
#: the box's edge wrapped a row on and off every few frames)
SHRINK_AFTER_S = 2.0


def update_static(widget: Any, content: Any, *, key: Any = _NOTHING, lines: int | None = None) -> bool:
    """``widget.update(content)`` (a :class:`textual.widgets.Static`) unless ``key`` (default:
    ``content`` itself, e.g. a :class:`rich.text.Text`, which compares by text and styles)
    equals the last one shown. A layout is asked for only when the content's height in lines
    (``lines``, default: a Text's line count) changed. Returns whether it updated."""
    key = content if key is _NOTHING else key
    if lines is None:
        plain = getattr(content, "plain", None)
        lines = plain.count("\n") + 1 if isinstance(plain, str) else None
    old_key = getattr(widget, "_mc_shown_key", _NOTHING)
    if old_key is not _NOTHING and old_key == key:
        return False
    old_lines = getattr(widget, "_mc_shown_lines", None)
    widget._mc_shown_key = key
    widget._mc_shown_lines = lines
    widget.update(content, layout=lines is None or lines != old_lines)
    return True


def set_if_changed(obj: Any, attr: str, value: Any) -> bool:
    """``setattr(obj, attr, value)`` unless it already holds an equal value (a reactive
    attribute then triggers no repaint)."""
    if getattr(obj, attr) == value:
        return False
    setattr(obj, attr, value)
    return True


def steady_height(widget: Any, content: Any, rows: int, now: float) -> tuple[Any, bool]:
    """``(content, layout)`` for a height-auto text box ``widget`` whose ``content`` (a
    :class:`rich.text.Text`) takes ``rows`` rows: it grows at once (``layout`` True); it keeps a
    height it needed within the last :data:`SHRINK_AFTER_S` seconds (``now``, monotonic), the
    content padded with blank rows (no layout); then it shrinks (``layout`` True)."""
    kept = getattr(widget, "_mc_rows", None)
    if kept is None or rows > kept or (rows < kept and now - widget._mc_rows_at >= SHRINK_AFTER_S):
        widget._mc_rows, widget._mc_rows_at = rows, now
        return content, kept != rows
    if rows == kept:
        widget._mc_rows_at = now
        return content, False
    padded = content.copy()
    padded.append("\n" * (kept - rows))
    return padded, False


class FramePacer:
    """When the next redraw of the log's panes may start: at once, unless the last one is not
    on screen yet or the redraws have taken more than ``share`` of the app's time. A redraw's
    cost is the wall time (``time.perf_counter`` seconds) from its start until the screen
    update that shows it was written: the app's event loop is busy with it for that long (on
    a machine whose CPUs are shared, a frame takes longer and the redraws slow down, leaving
    the loop the same share for keys and the node's lines; anything the loop did meanwhile,
    such as folding more lines of a flood, counts, so a flood slows the redraws down).

    The share is kept over time, not frame by frame: each second earns ``share`` seconds of
    redrawing, up to ``burst`` seconds saved (default ``share * longest``), and a redraw spends
    its cost. While the saved time is not negative, a redraw starts at once; after a dear one it
    waits until the debt is earned back, never more than ``longest`` seconds after the last
    began (a flood, once its frames are dear, is drawn ``1 / longest`` times a second), and no
    more debt is kept than that wait earns (one dear frame, say a garbage collection, holds back
    one redraw, not the next ones). Over any stretch the redraws take at most ``share`` of it
    plus ``burst``. With lines 10 ms apart and frames of 4-6 ms, each line goes out at once: a
    rule per frame (the next ``cost / share`` after the last began) held back every line that
    came a little early, by a few milliseconds each. A redraw not reported on screen within
    ``unshown`` seconds is taken as shown (the screen it was drawn for went away before its
    update, say a dialog that closed): the log is never left undrawn."""

    def __init__(self, share: float, longest: float, unshown: float = 0.25, burst: float | None = None) -> None:
        self.share = share
        self.longest = longest
        self.unshown = unshown
        self.burst = share * longest if burst is None else burst
        self.started = float("-inf")  # perf_counter seconds: the last redraw began
        self.cost = 0.0  # seconds: how long the last redraw took until it was on screen
        #: the last redraw is not on screen yet (a redraw now would be written with it)
        self.in_flight = False
        self.saved = self.burst  # seconds of redrawing saved (negative: owed) at `at`
        self.at = float("-inf")  # perf_counter seconds: when `saved` was last brought up to date

    def _saved_at(self, now: float) -> float:
        """The redrawing saved at ``now`` (perf_counter seconds; a clock that went back earns
        nothing)."""
        if self.at == float("-inf"):
            return self.burst
        return min(self.burst, self.saved + max(0.0, now - self.at) * self.share)

    def due(self) -> float:
        """The earliest ``time.perf_counter()`` at which the next redraw may start (while the
        last one is :attr:`in_flight`: ``unshown`` seconds after it began, unless it is shown
        before)."""
        if self.in_flight:
            return self.started + self.unshown
        if self.saved >= 0:
            return self.at
        return min(self.started + self.longest, self.at - self.saved / self.share)

    def begin(self, now: float) -> None:
        """A redraw starts at ``now`` (perf_counter seconds)."""
        self.saved, self.at = self._saved_at(now), now
        self.started = now
        self.in_flight = True

    def shown(self, now: float) -> None:
        """The redraw begun last is on screen at ``now`` (perf_counter seconds)."""
        self.cost = max(0.0, now - self.started)
        self.saved = max(-self.share * self.longest, self._saved_at(now) - self.cost)
        self.at = max(now, self.at)
        self.in_flight = False
