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
    on screen yet or the redraws would take more than ``share`` of the app's time. A redraw's
    cost is the wall time (``time.perf_counter`` seconds) from its start until the screen
    update that shows it was written: the app's event loop is busy with it for that long (on
    a machine whose CPUs are shared, a frame takes longer and the redraws slow down, leaving
    the loop the same share for keys and the node's lines; anything the loop did meanwhile,
    such as folding more lines of a flood, counts, so a flood slows the redraws down). The
    next redraw starts at least ``cost / share`` seconds after the last one began, and never
    has to wait more than ``longest`` seconds after it was shown: a line after a quiet spell
    is drawn at once, lines 10 ms apart each in their own frame when a frame takes a few
    milliseconds, and a flood at most ``1 / longest`` times a second once its frames are
    dear. A redraw not reported on screen within ``unshown`` seconds is taken as shown (the
    screen it was drawn for went away before its update, say a dialog that closed): the log is
    never left undrawn."""

    def __init__(self, share: float, longest: float, unshown: float = 0.25) -> None:
        self.share = share
        self.longest = longest
        self.unshown = unshown
        self.started = float("-inf")  # perf_counter seconds: the last redraw began
        self.cost = 0.0  # seconds: how long the last redraw took until it was on screen
        #: the last redraw is not on screen yet (a redraw now would be written with it)
        self.in_flight = False

    def due(self) -> float:
        """The earliest ``time.perf_counter()`` at which the next redraw may start (while the
        last one is :attr:`in_flight`: ``unshown`` seconds after it began, unless it is shown
        before)."""
        if self.in_flight:
            return self.started + self.unshown
        return self.started + min(self.longest, self.cost / self.share)

    def begin(self, now: float) -> None:
        """A redraw starts at ``now`` (perf_counter seconds)."""
        self.started = now
        self.in_flight = True

    def shown(self, now: float) -> None:
        """The redraw begun last is on screen at ``now`` (perf_counter seconds)."""
        self.cost = max(0.0, now - self.started)
        self.in_flight = False
