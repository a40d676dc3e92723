"""One row of parts fitted to a width: the less important parts take a short form or give way,
whole, so the essential ones never lose a character to an ellipsis (the header's state word and
SIMULATED). The log pane's status row fits whole rows instead, one form for all its parts
(:meth:`mambaconsole.ui.log_pane.LogPane._status_row`), and draws them with :func:`parts_text`.
Items that all stay but may take several lines (the GPU pane's legend) break between items,
evenly (:func:`item_lines`). Texts are measured off screen with :data:`MEASURE`
(:func:`wrapped_lines`)."""

from __future__ import annotations

import io
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

#: an off-screen console (it writes nothing) that wraps texts and renders tables to count
#: the rows they take; the width of each measure is given to it
MEASURE = Console(width=200, color_system=None, file=io.StringIO())


def wrapped_lines(text: Text, width: int) -> int:
    """The lines ``text`` takes at ``width`` cells, broken as Rich breaks it (``Text.wrap``)."""
    return len(text.wrap(MEASURE, width))


@dataclass(frozen=True)
class Part:
    """One part of a row. ``give_way``: None for an essential part (always shown, in full);
    otherwise its rank, the lowest giving way first. ``short``: the form it takes, when given,
    before giving way altogether."""

    text: str
    style: str = ""
    give_way: int | None = None
    short: str | None = None


def parts_width(parts: list[Part]) -> int:
    """The cells ``parts`` take on one row, each in full."""
    return sum(cell_len(p.text) for p in parts)


def fit_parts(parts: list[Part], width: int | None) -> list[Part]:
    """The parts shown within ``width`` cells, in their order: all in full when they fit (or
    ``width`` is None); else the essential ones in full, then the others, the most important
    (highest ``give_way``) first, each in full, else in its short form, else left out, while the
    room lasts. The essential ones alone may still be wider than ``width``."""
    if width is None or parts_width(parts) <= width:
        return list(parts)
    room = width - parts_width([p for p in parts if p.give_way is None])
    chosen: dict[int, Part] = {}
    optional = sorted((i for i, p in enumerate(parts) if p.give_way is not None),
                      key=lambda i: -parts[i].give_way)  # type: ignore[operator]
    for i in optional:
        p = parts[i]
        for form in (p.text, p.short):
            if form is not None and cell_len(form) <= room:
                chosen[i] = Part(form, p.style, p.give_way)
                room -= cell_len(form)
                break
    return [p if p.give_way is None else chosen[i] for i, p in enumerate(parts)
            if p.give_way is None or i in chosen]


def parts_text(parts: list[Part], width: int | None = None) -> Text:
    """:func:`fit_parts` as one Rich Text row (no wrap; an ellipsis only where even the
    essential parts are wider than ``width``)."""
    shown = fit_parts(parts, width)
    t = Text(no_wrap=True, overflow="ellipsis")
    for p in shown:
        t.append(p.text, p.style)
    return t


def item_lines(widths: list[int], width: int, gap: int = 2) -> list[list[int]]:
    """Items ``widths`` cells wide, ``gap`` cells apart, on lines of ``width`` cells, broken
    between items, never inside one: the indices on each line. As few lines as they take, and
    of those breaks the evenest (the least sum of each line's squared blank cells), so that an
    item does not sit alone on the last line where moving others down to it keeps the count
    (``W weights  + unnamed`` / ``o other`` becomes ``W weights`` / ``+ unnamed  o other``);
    between breaks as even, the one with more on the earlier lines. An item wider than
    ``width`` takes a line of its own."""
    n = len(widths)
    # best[i]: (lines, blank cost, minus the end of the first line) for the items from i on
    best: list[tuple[int, int, int]] = [(0, 0, -n)] * (n + 1)
    for i in range(n - 1, -1, -1):
        options = []
        used = -gap
        for j in range(i + 1, n + 1):
            used += gap + widths[j - 1]
            if used > width and j > i + 1:
                break
            rest = best[j]
            options.append((rest[0] + 1, rest[1] + max(0, width - used) ** 2, -j))
        best[i] = min(options)
    lines, i = [], 0
    while i < n:
        j = -best[i][2]
        lines.append(list(range(i, j)))
        i = j
    return lines
