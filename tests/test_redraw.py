"""Redraw only what changed (issue 14): a text box's height steadies under a flood, so a number
whose width crosses the box's edge does not lay out the whole screen every few frames."""

from __future__ import annotations

from types import SimpleNamespace

from rich.text import Text

from mambaconsole.ui.redraw import SHRINK_AFTER_S, steady_height


def test_a_box_grows_at_once_and_shrinks_only_after_its_height_went_unused():
    box = SimpleNamespace()
    two, three = Text("a\nb"), Text("a\nb\nc")
    assert steady_height(box, two, 2, 0.0) == (two, True)  # first: laid out
    assert steady_height(box, three, 3, 0.1) == (three, True)  # grows at once
    shown, layout = steady_height(box, two, 2, 0.2)  # needs less: keeps its 3 rows, blank last
    assert not layout and shown.plain == "a\nb\n" and shown.plain.count("\n") + 1 == 3
    assert two.plain == "a\nb"  # the caller's text is not changed
    assert steady_height(box, three, 3, 0.3) == (three, False)  # the kept rows are used again
    assert steady_height(box, two, 2, 0.3 + SHRINK_AFTER_S * 0.9)[1] is False
    assert steady_height(box, two, 2, 0.31 + SHRINK_AFTER_S) == (two, True)  # unused long enough: shrinks
    assert steady_height(box, two, 2, 10.0) == (two, False)
