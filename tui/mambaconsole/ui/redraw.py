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
