"""The log pane's view: a Line API widget (a :class:`textual.scroll_view.ScrollView` with
``render_line``, the way Textual's own ``Log`` works) over a bounded
:class:`mambaconsole.state.LineBuffer`. Only the rows on screen are styled and rendered; their
Strips are kept in an LRU cache keyed by the line's position since the view was cleared
(:meth:`LogView.key_of`), which is dropped when the styling changes (theme, search text,
access-line mode). A row's Strip is made once, whole: its wrap mark and the offsets Textual's
selection reads (character, line key: a key, unlike an index, stays the line's own as lines
leave the front of the full buffer) are in it, so a frame after the log scrolled by a line
draws the same Strip objects one row higher, each already cropped to the view (a Strip keeps
its last crops), instead of making every row's Strips again (a 20-row repaint at 120x40: 0.95
ms before, 0.63 ms after). Appending a batch costs the batch (no per-line rendering of lines
that are never shown), so a flood of log lines keeps the frame time flat whatever
:data:`mambaconsole.state.LOG_KEEP` is.

Styling of a line: the SGLang envelope (``[2026-11-30 12:00:00 TP0]``) dim, the message in its
severity colour, the search text reversed, and uvicorn access lines of the console's own polls
(``INFO:     127.0.0.1:PORT - "GET /metrics HTTP/1.1" 200 OK``) muted or plain (the pane hides
the console's own polls in its default mode)
(:attr:`LogView.access`).

Wrapping (:attr:`LogView.wrap`, on by default; ``w`` in the log pane): a line is cut into the
rows :func:`row_starts` gives, the first at most ``width`` cells wide, each continuation row
starting with a dim :data:`WRAP_MARK` (``↳`` and a space: :data:`WRAP_INDENT` cells) and holding
at most ``width - 2`` cells; a row ends after the last space that fits (between words), or is
cut at the edge when it has none (one long token: a path, a hex dump).
The row counts are kept incrementally, as cumulative row ends per kept line (appending a batch
adds its lines' counts, lines falling off the bounded buffer's front are dropped from the front);
a view row maps to ``(line, row within the line)`` by bisecting them; every count is computed
again only when the width or the mode changes."""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from itertools import accumulate

from rich.cells import cell_len, get_character_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.actions import SkipAction
from textual.cache import LRUCache
from textual.geometry import Offset, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.scrollbar import ScrollBar
from textual.selection import Selection
from textual.strip import Strip

from mambaconsole.state import LOG_KEEP, LineBuffer, ShownLine
from mambaconsole.ui.strip_cycles import crop_extend

#: SGLang's log envelope: ``[2026-11-30 12:00:00 TP0] `` (sglang/srt/utils configure_logger)
ENVELOPE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?[^\]]*\]")
_CONTROL = re.compile("[\u0000-\u0008\u000b-\u001f\u007f]")

#: rendered rows kept (about two tall screens: scrolling back and forth re-renders nothing)
CACHE_ROWS = 128

#: access-line display modes, in the order ``a`` cycles them; the first is the default. "hide":
#: the pane leaves the console's own polls out (log_pane.OWN_POLL_PATHS), the others are dimmed
ACCESS_MODES = ("hide", "dim", "show")

#: what starts each continuation row of a wrapped line (dim), and its width in cells
WRAP_MARK = "↳ "
WRAP_INDENT = 2
# cumulative row ends dropped off the front are deleted once this many have piled up
_COMPACT = 4096


def row_starts(text: str, width: int, indent: int = WRAP_INDENT) -> list[int]:
    """The character offsets in ``text`` (as :func:`_clean` leaves it) where each of its wrapped
    rows begins, in a view ``width`` cells wide: the first row holds up to ``width`` cells, each
    continuation row up to ``width - indent`` (at least 1). A row that does not hold the rest of
    the line ends after its last space (the next row starts at a word; a space just past the
    edge ends the row too, drawn nowhere) or, with no space after its first character, is cut at
    the edge; a double-width character that does not fit starts the next row. ``width`` 0 or
    less (not laid out yet): one row."""
    if width <= 0:
        return [0]
    cont = max(1, width - indent)
    n = len(text)
    if text.isascii():  # one cell per character: str.rfind per row
        starts, s, room = [0], 0, width
        while n - s > room:
            edge = s + room
            k = text.rfind(" ", s + 1, edge + 1)
            s = k + 1 if k != -1 else edge
            if s >= n:  # only a trailing space past the edge
                break
            starts.append(s)
            room = cont
        return starts
    # the same rule on cell positions: cells[i] = cells of text[:i]
    cells = [0, *accumulate(map(get_character_cell_size, text))]
    starts, s, room = [0], 0, width
    while cells[n] - cells[s] > room:
        edge = max(s + 1, bisect_right(cells, cells[s] + room) - 1)
        k = text.rfind(" ", s + 1, edge + 1)
        s = k + 1 if k != -1 else edge
        if s >= n:
            break
        starts.append(s)
        room = cont
    return starts


def _overlay(pieces: list[tuple[int, int, Style]], hits: list[tuple[int, int]],
             extra: Style) -> list[tuple[int, int, Style]]:
    """``pieces`` split at the ``hits`` boundaries, ``extra`` added over the hits."""
    cuts = sorted({c for h in hits for c in h})
    out: list[tuple[int, int, Style]] = []
    for a, b, style in pieces:
        inner = [c for c in cuts if a < c < b]
        for x, y in zip([a, *inner], [*inner, b]):
            hit = any(h0 <= x and y <= h1 for h0, h1 in hits)
            out.append((x, y, style + extra if hit else style))
    return out


def _clean(text: str) -> str:
    """Tabs expanded, control characters (escape sequences) made visible."""
    text = text.expandtabs(4) if "\t" in text else text
    return _CONTROL.sub("\ufffd", text) if not text.isprintable() else text


class LogView(ScrollView, can_focus=True):
    class Scrolled(Message):
        """The view's vertical scroll position changed (the pane's "following"/"paused" and
        "N new lines" follow it at once, not at the next log line)."""

    """The rows of the log pane. ``lines`` (at most ``max_lines``) are what may be shown, after
    the pane's filter; the view renders only the visible rows."""

    DEFAULT_CSS = """
    LogView { background: $surface; color: $text; overflow: auto scroll; }
    LogView:focus { background-tint: $foreground 5%; }
    """

    def __init__(self, max_lines: int = LOG_KEEP, **kw) -> None:
        super().__init__(**kw)
        self.lines = LineBuffer(maxlen=max_lines)
        self._base = 0  # lines dropped off the front since clear(): cache keys are base + row
        self._width = 0
        self._cache: LRUCache[int, Strip | list[Strip]] = LRUCache(CACHE_ROWS)
        self.search = ""
        self._current_key: int | None = None  # _base + index of the current search match's line
        self.access = ACCESS_MODES[0]
        self.palette: dict[str, str] = {}
        self._styles: dict[str, Style] | None = None
        self._search_re: re.Pattern | None = None
        self._paint_style: Style | None = None
        self.pin_end = False  # scroll to the end once the size is known (set before layout)
        #: long lines wrap (continuation rows marked with WRAP_MARK); off: one row per line,
        #: scrolled sideways
        self.wrap = True
        self._wrap_w = 0  # the width the row counts were computed for (0: not laid out yet)
        # wrap mode: _ends[_head + i] is the absolute row just after kept line i; _row0 is the
        # absolute row of kept line 0 (rows of dropped lines are never renumbered)
        self._ends: list[int] = []
        self._head = 0
        self._row0 = 0
        self._anchor: tuple[str, int, int] | None = None  # what to keep in sight across a resize
        # (anchor, scroll_y) of the last wrap toggle: a toggle back with the view not moved
        # since keeps that anchor (the end of a short log clamped it, so that "at the end"
        # there was not a choice to follow)
        self._toggled: tuple[tuple[str, int, int], float] | None = None

    # ------------------------------------------------------------------ keys
    # A key scrolls the view at once (up/down/left/right, the page keys, home, end), as a pager does: Textual animates a keyboard scroll (50
    # rows a second, textual 8.2.8 widget.py ``Widget._scroll_to``), so one row's scroll took
    # 20 ms and several frames, each a render of every row in sight (under a flood, frames the
    # folding waited behind)
    def action_scroll_up(self) -> None:
        self._key_scroll(self.allow_vertical_scroll, self.scroll_up, immediate=True)

    def action_scroll_down(self) -> None:
        self._key_scroll(self.allow_vertical_scroll, self.scroll_down, immediate=True)

    def action_page_up(self) -> None:
        self._key_scroll(self.allow_vertical_scroll, self.scroll_page_up)

    def action_page_down(self) -> None:
        self._key_scroll(self.allow_vertical_scroll, self.scroll_page_down)

    def action_scroll_left(self) -> None:
        self._key_scroll(self.allow_horizontal_scroll, self.scroll_left, immediate=True)

    def action_scroll_right(self) -> None:
        self._key_scroll(self.allow_horizontal_scroll, self.scroll_right, immediate=True)

    def action_page_left(self) -> None:
        self._key_scroll(self.allow_horizontal_scroll, self.scroll_page_left)

    def action_page_right(self) -> None:
        self._key_scroll(self.allow_horizontal_scroll, self.scroll_page_right)

    def action_scroll_home(self) -> None:
        self._key_scroll(self._allow_scroll, self.scroll_home, x_axis=self.scroll_y == 0, immediate=True)

    def action_scroll_end(self) -> None:
        # at the end already: sideways to the end too (what Textual's own End means to do)
        self._key_scroll(self._allow_scroll, self.scroll_end, x_axis=self.is_vertical_scroll_end, immediate=True)

    @staticmethod
    def _key_scroll(allowed: bool, scroll, **kw) -> None:
        if not allowed:
            raise SkipAction()
        scroll(animate=False, **kw)

    # ------------------------------------------------------------------ content
    def clear(self) -> None:
        self.lines.clear()
        self._base = 0
        self._current_key = None
        self._width = 0
        self._cache.clear()
        self._reset_rows()
        self.virtual_size = Size(0, 0)
        self.refresh()

    # ------------------------------------------------------------------ rows (wrap mode)
    def _reset_rows(self) -> None:
        self._ends.clear()
        self._head = 0
        self._row0 = 0

    def _line_rows(self, text: str) -> int:
        """Rows of one line (raw text) at the current wrap width."""
        if text.isascii() and "\t" not in text:
            return 1 if len(text) <= self._wrap_w else len(row_starts(text, self._wrap_w))
        return len(row_starts(_clean(text), self._wrap_w))

    def _recount(self) -> None:
        """Every row count again (the width or the mode changed): costs the lines kept."""
        self._reset_rows()
        if self.wrap:
            end, rows, ends = 0, self._line_rows, self._ends
            for ln in self.lines.tail_raw(len(self.lines)):  # every kept line, lines added as texts too
                end += rows(ln[1])
                ends.append(end)
        self._cache.clear()

    def _drop_rows(self, n: int) -> int:
        """Forget the first ``n`` lines' rows (they fell off the buffer); returns their rows."""
        if n <= 0 or not self.wrap:
            return n
        head = self._head + n
        row0 = self._ends[head - 1]
        dropped, self._row0, self._head = row0 - self._row0, row0, head
        if head > _COMPACT and head * 2 > len(self._ends):
            del self._ends[:head]
            self._head = 0
        return dropped

    @property
    def row_count(self) -> int:
        """Rows of all kept lines: the virtual height."""
        if not self.wrap:
            return len(self.lines)
        return self._ends[-1] - self._row0 if len(self._ends) > self._head else 0

    def line_at(self, row: int) -> tuple[int, int]:
        """``(line index, row within that line)`` of view row ``row`` (clamped to the rows)."""
        n = len(self.lines)
        if not self.wrap or not n:
            return max(0, min(row, n - 1)), 0
        row = max(0, min(row, self.row_count - 1))
        i = bisect_right(self._ends, self._row0 + row, self._head) - self._head
        return i, row - self.row_of(i)

    def row_of(self, index: int) -> int:
        """The view row where line ``index`` begins."""
        if not self.wrap:
            return max(0, index)
        if index <= 0:
            return 0
        return self._ends[self._head + index - 1] - self._row0

    def rows_of(self, index: int) -> int:
        """Rows line ``index`` takes (1 when not wrapping)."""
        if not self.wrap:
            return 1
        return self._ends[self._head + index] - self._row0 - self.row_of(index)

    def _set_virtual(self, to_end: bool = False) -> None:
        """The scrollable size, without a layout of the screen: Textual's ``virtual_size`` is a
        layout reactive (each new line would lay out every widget, ~10-30 ms a line batch under a
        flood); only a scrollbar that appears or goes needs one (``_scroll_update`` sets those
        layout reactives itself). ``to_end``: the view scrolls to the end next; where the rows
        only grew and the vertical scrollbar then draws the same thumb, its values are set
        without a repaint (:meth:`_bar_keeps_its_thumb`)."""
        size = Size(self._wrap_w, self.row_count) if self.wrap else Size(self._width, len(self.lines))
        old = self.virtual_size
        if size == old:
            return
        if not self.is_mounted:
            self.virtual_size = size
            return
        self.set_reactive(LogView.virtual_size, size)
        if not (to_end and size.width == old.width and size.height > old.height and self._bar_keeps_its_thumb()):
            self._scroll_update(size)
        self.refresh()

    def _bar_keeps_its_thumb(self) -> bool:
        """The vertical scrollbar, for the rows now (:attr:`virtual_size`) scrolled to their
        end, draws the thumb it draws now (Textual's own ``ScrollBarRender.render_bar`` for both,
        compared segment by segment): then its new values are set without a repaint (the
        scroll to the end that follows sets the same position: no repaint either), and True.
        At the end of a long log the thumb is one cell at the bottom whatever the rows: a
        repaint of its 20 rows at 120x40 cost about 0.5 ms a frame, and often a frame of its
        own. False (nothing set) when it may draw otherwise: not shown, grabbed, another
        height or window."""
        if not self.show_vertical_scrollbar or self.show_horizontal_scrollbar:
            return False
        bar = self.vertical_scrollbar
        window = self.container_size.height
        height = bar.size.height
        if bar.grabbed or not height or bar.window_size != window:
            return False
        virtual, end = self.virtual_size.height, bar.validate_position(self.max_scroll_y)

        def thumb(virtual: int, position: float) -> list[tuple[str, Style | None]]:
            drawn = bar.renderer.render_bar(size=height, virtual_size=virtual,
                                            window_size=window if window < virtual else 0,
                                            position=position, thickness=bar.thickness, vertical=True)
            return [(seg.text, seg.style) for seg in drawn.segments]

        if thumb(bar.window_virtual_size, bar.position) != thumb(virtual, end):
            return False
        bar.set_reactive(ScrollBar.window_virtual_size, virtual)
        bar.set_reactive(ScrollBar.position, end)
        return True

    def _keep_in_sight(self, anchor: tuple[str, int, int] | None) -> None:
        """Scroll to ``anchor``: ``("end", 0, 0)`` the end, ``("line", key, row)`` that row
        of the line ``key`` (``_base`` + index; the first kept line if it fell off)."""
        if anchor is None:
            return
        kind, key, sub = anchor
        if kind == "end":
            self.scroll_end(animate=False, immediate=True, x_axis=False)
            return
        i = key - self._base
        if i < 0:
            i, sub = 0, 0
        if i >= len(self.lines):
            return
        y = self.row_of(i) + min(sub, self.rows_of(i) - 1)
        self.scroll_to(y=y, animate=False, immediate=True)

    def _anchor_now(self, following: bool) -> tuple[str, int, int]:
        if following:
            return ("end", 0, 0)
        i, sub = self.line_at(int(self.scroll_y))
        return ("line", self._base + i, sub)

    def wrap_at(self, width: int) -> None:
        """Wrap at ``width`` cells (the view's width less its vertical scrollbar; the view does
        this itself when resized): every row count again."""
        self._wrap_w = width
        self._recount()
        self._set_virtual()

    def key_of(self, index: int) -> int:
        """A key for line ``index`` that stays its own as lines leave the front."""
        return self._base + index

    def index_of(self, key: int) -> int:
        """The line index of :meth:`key_of`'s ``key`` (negative: it left the front)."""
        return key - self._base

    def set_wrap(self, on: bool, *, follow: bool, top: int | None = None) -> None:
        """Wrap long lines (``on``) or not; keeps line ``top`` (:meth:`key_of`) at the top of
        the view when given, else the end in sight when ``follow``, else the line at the top.
        Toggled back without a scroll in between, the view returns to where it was (at the
        end of a short log the first toggle's view was clamped to the end: that is no
        choice to follow)."""
        if on == self.wrap:
            return
        if not self.lines:
            anchor = None
        elif self._toggled is not None and self._toggled[1] == self.scroll_y:
            anchor = self._toggled[0]
        elif top is not None:
            anchor = ("line", top, 0)
        else:
            anchor = self._anchor_now(follow)
        self.wrap = on
        self.wrap_at(self.scrollable_content_region.width)
        if on:
            self.scroll_to(x=0, animate=False, immediate=True)
        self._keep_in_sight(anchor)
        self._toggled = (anchor, self.scroll_y) if anchor is not None else None
        self.refresh()

    def reveal(self, index: int, query: str = "", context: int = 2) -> None:
        """Scroll line ``index`` into view, ``context`` rows above it; wrapped, the row holding
        the first match of ``query`` (case-insensitive) is in view too."""
        first = self.row_of(index)
        target = first
        if self.wrap and query and 0 <= index < len(self.lines):
            text = _clean(self.lines.raw(index)[1])
            at = text.lower().find(query.lower())
            if at >= 0:
                target = first + bisect_right(row_starts(text, self._wrap_w), at) - 1
        y = max(0, first - context)
        height = self.scrollable_content_region.height or self.size.height
        if height and target >= y + height:
            y = max(0, target - height + min(2, height))
        self.scroll_to(y=y, animate=False)

    def extend(self, lines: Iterable[tuple], *, follow: bool) -> int:
        """Append lines (oldest first; :class:`ShownLine` or its plain tuples); scroll to the end
        when ``follow``, else keep the rows on screen where they are (lines falling off the front
        shift the scroll position). Returns the number of lines appended."""
        lines = list(lines)
        if not lines:
            return 0
        maxlen = self.lines.maxlen or len(lines)
        if len(lines) > maxlen:
            self._base += len(lines) - maxlen
            lines = lines[-maxlen:]
        dropped = max(0, len(self.lines) + len(lines) - maxlen)
        self._base += dropped
        self.lines.extend(lines)
        rows_dropped = self._drop_rows(dropped)
        w = self._width
        if self.wrap:
            ww = self._wrap_w
            ends = self._ends
            end = ends[-1] if len(ends) > self._head else self._row0
            for ln in lines:
                t = ln[1]  # text
                if t.isascii() and "\t" not in t:
                    n = len(t)
                    end += 1 if n <= ww or ww <= 0 else len(row_starts(t, ww))
                else:
                    c = _clean(t)
                    n = cell_len(c)
                    end += len(row_starts(c, ww))
                ends.append(end)
                if n > w:
                    w = n
        else:
            for ln in lines:
                t = ln[1]  # text
                n = len(t) if t.isascii() and "\t" not in t else cell_len(_clean(t))
                if n > w:
                    w = n
        self._width = w
        self._set_virtual(to_end=follow)
        if follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        elif rows_dropped and self.scroll_y > 0:
            self.scroll_to(y=max(0, self.scroll_y - rows_dropped), animate=False, immediate=True)
        self.refresh()
        return len(lines)

    def set_lines(self, lines: Iterable[ShownLine], maxlen: int | None = None) -> None:
        """Replace every line (filter changed, another run's log); ``maxlen``: keep that many
        from now on (the state's buffer grew by pages read back)."""
        if maxlen is not None and maxlen != self.lines.maxlen:
            self.lines = LineBuffer(maxlen=maxlen)
        self.lines.clear()
        self._base = 0
        self._current_key = None
        self._width = 0
        self._cache.clear()
        self._reset_rows()
        self.virtual_size = Size(0, 0)
        self.extend(lines, follow=False)
        self.refresh()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        if round(old_value) != round(new_value):
            self.post_message(self.Scrolled())

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        # what is in sight before the new size clamps the scroll position: kept in sight by
        # on_resize once the lines are wrapped again at the new width
        if size != self._size and self.lines and self._size.height:
            self._anchor = self._anchor_now(self.scroll_y >= self.max_scroll_y - 1)
        return super()._size_updated(size, virtual_size, container_size, layout)

    def on_resize(self) -> None:
        anchor, self._anchor = self._anchor, None
        width = self.scrollable_content_region.width  # less the vertical scrollbar
        if self.wrap and width != self._wrap_w:
            self.wrap_at(width)
        self._keep_in_sight(anchor)
        if self.pin_end and self.size.height:
            self.pin_end = False
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    # ------------------------------------------------------------------ styling
    def restyle(self, *, colors: dict[str, str] | None = None, search: str | None = None,
                access: str | None = None) -> bool:
        """Change how lines look; drops the cached rows when anything changed."""
        changed = False
        if colors is not None and colors != self.palette:
            self.palette, changed = dict(colors), True
        if search is not None and search != self.search:
            self.search, changed = search, True
        if access is not None and access != self.access:
            self.access, changed = access, True
        if changed:
            self._styles = None
            self._cache.clear()
            self.refresh()
        return changed

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = None
        self._cache.clear()

    def _style_map(self) -> dict[str, Style]:
        if self._styles is None:
            c = self.palette
            parse = Style.parse
            self._styles = {
                "error": parse(f"bold {c['error']}") if c.get("error") else Style(bold=True),
                "warning": parse(c["warning"]) if c.get("warning") else Style(),
                "ready": parse(f"bold {c['ready']}") if c.get("ready") else Style(bold=True),
                "info": Style(),
                "envelope": Style(dim=True),
                "access": Style(dim=True),
                "match": Style(reverse=True),
                "current match": Style(reverse=True, bold=True, underline=True),
            }
            self._search_re = re.compile(re.escape(self.search), re.IGNORECASE) if self.search else None
        return self._styles

    def set_current(self, index: int | None) -> None:
        """Line ``index`` holds the current search match (``n``/``N``): its matches are drawn
        bold and underlined on top of the reverse of every match; None: no current match."""
        key = None if index is None else self._base + index  # stays right as lines leave the front
        old = self._current_key
        if old == key:
            return
        self._current_key = key
        for k in (old, key):
            if k is not None:
                self._cache.discard(k)
        self.refresh()

    def _pieces(self, line: tuple, index: int | None = None) -> tuple[str, list[tuple[int, int, Style]]]:
        """``(text, [(start, end, style), ...])`` for one line (``index`` its position in
        :attr:`lines`): consecutive pieces covering the text, each with its own style (envelope
        dim, message in its severity colour, a muted access line, search matches reversed over
        whatever they cross, those of the current match's line also bold and underlined)."""
        styles = self._style_map()
        text = _clean(line[1])
        n = len(text)
        if line[3] and self.access != "show":  # access line of a poll (left when hiding: dimmed)
            pieces = [(0, n, styles["access"])]
        else:
            m = ENVELOPE.match(text)
            sev = styles.get(line[2], styles["info"])
            pieces = [(0, m.end(), styles["envelope"]), (m.end(), n, sev)] if m else [(0, n, sev)]
        if self._search_re is not None:
            hits = [h.span() for h in self._search_re.finditer(text)]
            if hits:
                current = index is not None and self._base + index == self._current_key
                pieces = _overlay(pieces, hits, styles["current match" if current else "match"])
        return text, pieces

    def line_text(self, line: tuple) -> Text:
        """One line as a Rich Text, styled as on screen (see :meth:`_pieces`)."""
        text, pieces = self._pieces(line)
        t = Text(text, no_wrap=True, end="")
        for a, b, style in pieces:
            if style and b > a:
                t.stylize(style, a, b)
        return t

    # ------------------------------------------------------------------ Line API
    def render_lines(self, crop):
        # the widget's base style once per repaint, not per row (DOMNode.rich_style walks the
        # ancestors every call)
        self._paint_style = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._paint_style = None

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        row = scroll_y + y
        width = self.size.width
        rich_style = self._paint_style or self.rich_style
        if self.wrap:
            if row >= self.row_count or row < 0:
                return Strip.blank(width, rich_style)
            i, sub = self.line_at(row)
            rows = self._wrapped_rows(i, rich_style)
            # (a Strip keeps its last crops: a row drawn again, one row higher as the log
            # scrolls, is the same Strip object, made once)
            return crop_extend(rows[min(sub, len(rows) - 1)], 0, width, rich_style)
        if row >= len(self.lines) or row < 0:
            return Strip.blank(width, rich_style)
        strip = self._row_strip(row, rich_style)
        return crop_extend(strip, scroll_x, scroll_x + width, rich_style).apply_offsets(scroll_x, self._base + row)

    def _row_strip(self, row: int, rich_style: Style) -> Strip:
        key = self._base + row
        selection = self.text_selection
        if selection is None:
            cached = self._cache.get(key)
            if cached is not None:
                return cached
            # Segments straight from the pieces (Text.render's general machinery is most of
            # a row's cost)
            text, pieces = self._pieces(self.lines.raw(row), row)
            segments = [Segment(text[a:b], rich_style + style if style else rich_style)
                        for a, b, style in pieces if b > a]
            strip = Strip(segments, len(text) if text.isascii() else None)
            self._cache[key] = strip
            return strip
        t = self.line_text(self.lines.raw(row))
        t.stylize_before(rich_style)
        span = selection.get_span(key)
        if span is not None:
            start, end = span
            if end == -1:
                end = len(t)
            t.stylize(self.screen.get_component_rich_style("screen--selection"), start, end)
        return Strip(t.render(self.app.console), t.cell_len)

    def _wrapped_rows(self, index: int, rich_style: Style) -> list[Strip]:
        """Line ``index`` cut into its rows as drawn (each continuation row with its mark),
        their text at its selection offsets (character, :meth:`key_of` the line); cached by line,
        like the unwrapped rows."""
        key = self._base + index
        selection = self.text_selection
        if selection is None:
            cached = self._cache.get(key)
            if cached is not None:
                return cached
        text, pieces = self._pieces(self.lines.raw(index), index)
        if selection is not None:
            span = selection.get_span(key)
            if span is not None:
                start, end = span
                pieces = _overlay(pieces, [(start, len(text) if end == -1 else end)],
                                  self.screen.get_component_rich_style("screen--selection"))
        starts = row_starts(text, self._wrap_w)
        ascii_ = text.isascii()
        rows = []
        for k, s in enumerate(starts):
            e = starts[k + 1] if k + 1 < len(starts) else len(text)
            segments = [Segment(text[max(a, s):min(b, e)], rich_style + style if style else rich_style)
                        for a, b, style in pieces if min(b, e) > max(a, s)]
            strip = Strip(segments, e - s if ascii_ else None).apply_offsets(s, key)
            if k:
                mark = Segment(WRAP_MARK, rich_style + Style(dim=True, meta={"offset": (s, key)}))
                strip = Strip([mark, *strip], None)
            rows.append(strip)
        if selection is None:
            self._cache[key] = rows
        return rows

    # ------------------------------------------------------------------ selection
    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        """The selected text. The rows carry their line's :meth:`key_of` as the offset's line
        (it stays the line's own as lines leave the front, so a row's Strip is made once):
        here the keys become indexes into the kept lines (a selection that began on a line
        since gone begins at the first kept line)."""
        base = self._base

        def index(at: Offset | None) -> Offset | None:
            return None if at is None else Offset(at.x, at.y - base) if at.y >= base else Offset(0, 0)

        kept = Selection(index(selection.start), index(selection.end))
        return kept.extract("\n".join(_clean(ln.text) for ln in self.lines)), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self._cache.clear()
        self.refresh()
