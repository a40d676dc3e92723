"""Redraw only what changed: the panes rebuild their content from the state at every event,
and most events change little of it. Textual repaints (and, with ``layout``, re-arranges the
whole screen) whenever a widget is updated, equal content or not."""

from __future__ import annotations

from typing import Any

_NOTHING = object()


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
