"""Rendered rows freed when dropped, not left for the garbage collector.

Textual's compositor cuts every rendered row of every repainted widget at the screen's cuts
(``textual/_compositor.py`` ``_render_chops``: ``strip.divide(cuts)``). A row no other widget
cuts is divided at its own length only, and ``Strip.divide`` (textual 8.2.8 ``strip.py``) then
caches ``[self]`` in the Strip's own ``_divide_cache``: the Strip refers to itself, so once the
widget drops it (the next frame, a row scrolled away) reference counting never frees it, nor
its 7 caches, segments and styles: only the collector's passes over reference cycles do. Under
``bench/keys_under_flood.py`` (20k lines/s, the log view repainted 30 times a second) that was
about 680 Strips, 8,000 objects, a second, 94 % of all the console's cyclic garbage
(``gc.DEBUG_SAVEALL`` over 3 s: 24,617 objects, 1,427 without the self-reference); each full
collection freed 10k-140k of them, the longest 18 ms of CPU at Python's thresholds.

The same holds for ``Strip.crop_extend`` of a Strip exactly as wide as asked: the log view
crops its rows through :func:`crop_extend`, which returns such a Strip as it is.

:func:`install` wraps ``Strip.divide`` once: a division at the Strip's own length returns
``[self]`` without caching it (what Textual returns, made anew: a one-item list); every other
division is Textual's own, cached as before. The app installs it (``ConsoleApp.__init__``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from textual.strip import Strip

_textual_divide = Strip.divide


def _divide(self: Strip, cuts: Iterable[int]) -> Sequence[Strip]:
    """``Strip.divide``; at the Strip's own length only: ``[self]``, not cached."""
    cell_length = self.cell_length
    cuts = [cut for cut in cuts if cut <= cell_length]
    if cuts == [cell_length]:
        return [self]
    return _textual_divide(self, cuts)


def crop_extend(strip: Strip, start: int, end: int, style) -> Strip:
    """``strip.crop_extend(start, end, style)``; ``strip`` itself when it spans exactly that
    (``start`` 0, ``end`` its length), which Textual's ``crop_extend`` (textual 8.2.8
    ``strip.py``) returns too but caches in ``strip`` itself: a reference cycle, for every row
    as wide as the view (a wrapped long line's rows, a line cut at the edge)."""
    if start == 0 and end == strip.cell_length:
        return strip
    return strip.crop_extend(start, end, style)


def install() -> None:
    """Wrap ``Strip.divide`` (once; again: nothing)."""
    if Strip.divide is not _divide:
        Strip.divide = _divide
