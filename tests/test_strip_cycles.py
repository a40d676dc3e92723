"""Rendered rows are freed when dropped (``ui/strip_cycles.py``): Textual's ``Strip.divide``
cached ``[self]`` for a division at the Strip's own length (every row no other widget cuts),
so each repainted row became a reference cycle for the garbage collector. Expected values: the
divisions Textual itself makes (its own ``Strip.divide``, kept aside), and whether a dropped
Strip is gone before any collection."""

from __future__ import annotations

import gc

import pytest
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from mambaconsole.ui import strip_cycles


def _row() -> Strip:
    return Strip([Segment("[2026-12-01 10:00:00] ", Style(dim=True)), Segment("Decode batch, #running-req: 8")])


def _left_for_the_collector(use) -> bool:
    """Whether a row that ``use(row)`` handled and that was then dropped is still there for the
    collector to find in a reference cycle (``gc.DEBUG_SAVEALL`` keeps what it finds)."""
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        row = _row()
        use(row)
        at = id(row)
        del row
        gc.collect()
        return any(id(o) == at and isinstance(o, Strip) for o in gc.garbage)
    finally:
        gc.set_debug(0)
        gc.garbage.clear()


def _left_after_divide(divide) -> bool:
    """Whether a row divided by ``divide`` at its own length and dropped is left to the collector."""
    def use(row: Strip) -> None:
        assert divide(row, [row.cell_length]) == [row]
    return _left_for_the_collector(use)


def test_a_row_divided_at_its_own_length_is_freed_when_dropped():
    strip_cycles.install()
    assert not _left_after_divide(Strip.divide)  # freed by reference counting


def test_textuals_own_divide_leaves_such_a_row_to_the_collector():
    """What the wrapper is for (and a sign to drop it once Textual stops doing this)."""
    assert _left_after_divide(strip_cycles._textual_divide)


@pytest.mark.parametrize("cuts", [[51], [60], [10, 51], [0, 22, 51], [22], [], [5, 10, 15, 20, 51], [22, 70]])
def test_the_divisions_are_textuals_own(cuts):
    strip_cycles.install()
    row = _row()
    assert row.cell_length == 51
    mine = row.divide(cuts)
    theirs = strip_cycles._textual_divide(_row(), cuts)
    assert [(s.text, s.cell_length, list(s)) for s in mine] == [(s.text, s.cell_length, list(s)) for s in theirs]
    assert row.divide(cuts) == mine  # again: the same strips


def _left_after_crop_extend(crop) -> bool:
    """Whether a row exactly as wide as the view, cropped to it by ``crop`` and dropped, is
    left to the collector."""
    def use(row: Strip) -> None:
        assert crop(row, 0, row.cell_length, None) is row
    return _left_for_the_collector(use)


def test_a_row_as_wide_as_the_view_is_freed_when_dropped():
    assert not _left_after_crop_extend(strip_cycles.crop_extend)
    assert _left_after_crop_extend(Strip.crop_extend)  # Textual's own caches it in itself


@pytest.mark.parametrize("start,end", [(0, 51), (0, 40), (0, 60), (5, 51), (5, 30), (10, 80)])
def test_the_crops_are_textuals_own(start, end):
    style = Style(bgcolor="black")
    mine = strip_cycles.crop_extend(_row(), start, end, style)
    theirs = _row().crop_extend(start, end, style)
    assert (mine.text, mine.cell_length, list(mine)) == (theirs.text, theirs.cell_length, list(theirs))
