"""One row of parts fitted to a width: the less important parts take a short form or give way,
whole, so the essential ones never lose a character to an ellipsis (the header's state word and
SIMULATED). The log pane's status row fits whole rows instead, one form for all its parts
(:meth:`mambaconsole.ui.log_pane.LogPane._status_row`), and draws them with :func:`parts_text`."""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text


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
