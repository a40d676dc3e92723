"""The log pane's view: a Line API widget (a :class:`textual.scroll_view.ScrollView` with
``render_line``, the way Textual's own ``Log`` works) over a bounded
:class:`mambaconsole.state.LineBuffer`. Only the rows on screen are styled and rendered; their
Strips are kept in an LRU cache keyed by the line's position since the view was cleared, which
is dropped when the styling changes (theme, search text, access-line mode). Appending a batch
costs the batch (no per-line rendering of lines that are never shown), so a flood of log lines
keeps the frame time flat whatever :data:`mambaconsole.state.LOG_KEEP` is.

Styling of a line: the SGLang envelope (``[2026-11-30 12:00:00 TP0]``) dim, the message in its
severity colour, the search text reversed, and uvicorn access lines of the console's own polls
(``INFO:     127.0.0.1:PORT - "GET /metrics HTTP/1.1" 200 OK``) muted or plain (the pane hides
the console's own polls in its default mode)
(:attr:`LogView.access`)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.cache import LRUCache
from textual.geometry import Size
from textual.scroll_view import ScrollView
from textual.selection import Selection
from textual.strip import Strip

from mambaconsole.state import LOG_KEEP, LineBuffer, ShownLine

#: SGLang's log envelope: ``[2026-11-30 12:00:00 TP0] `` (sglang/srt/utils configure_logger)
ENVELOPE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?[^\]]*\]")
_CONTROL = re.compile("[\u0000-\u0008\u000b-\u001f\u007f]")

#: rendered rows kept (about two tall screens: scrolling back and forth re-renders nothing)
CACHE_ROWS = 128

#: access-line display modes, in the order ``a`` cycles them; the first is the default. "hide":
#: the pane leaves the console's own polls out (log_pane.OWN_POLL_PATHS), the others are dimmed
ACCESS_MODES = ("hide", "dim", "show")


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
        self._cache: LRUCache[int, Strip] = LRUCache(CACHE_ROWS)
        self.search = ""
        self.access = ACCESS_MODES[0]
        self.palette: dict[str, str] = {}
        self._styles: dict[str, Style] | None = None
        self._search_re: re.Pattern | None = None
        self._paint_style: Style | None = None
        self.pin_end = False  # scroll to the end once the size is known (set before layout)

    # ------------------------------------------------------------------ content
    def clear(self) -> None:
        self.lines.clear()
        self._base = 0
        self._width = 0
        self._cache.clear()
        self.virtual_size = Size(0, 0)
        self.refresh()

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
        w = self._width
        for ln in lines:
            t = ln[1]  # text
            n = len(t) if t.isascii() and "\t" not in t else cell_len(_clean(t))
            if n > w:
                w = n
        self._width = w
        self.virtual_size = Size(w, len(self.lines))
        if follow:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        elif dropped and self.scroll_y > 0:
            self.scroll_to(y=max(0, self.scroll_y - dropped), animate=False, immediate=True)
        self.refresh()
        return len(lines)

    def set_lines(self, lines: Iterable[ShownLine]) -> None:
        """Replace every line (filter changed, another run's log)."""
        self.lines.clear()
        self._base = 0
        self._width = 0
        self._cache.clear()
        self.virtual_size = Size(0, 0)
        self.extend(lines, follow=False)
        self.refresh()

    def on_resize(self) -> None:
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
            }
            self._search_re = re.compile(re.escape(self.search), re.IGNORECASE) if self.search else None
        return self._styles

    def _pieces(self, line: tuple) -> tuple[str, list[tuple[int, int, Style]]]:
        """``(text, [(start, end, style), ...])`` for one line: consecutive pieces covering the
        text, each with its own style (envelope dim, message in its severity colour, a muted
        access line, search matches reversed over whatever they cross)."""
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
                pieces = _overlay(pieces, hits, styles["match"])
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
        if row >= len(self.lines) or row < 0:
            return Strip.blank(width, rich_style)
        strip = self._row_strip(row, rich_style)
        return strip.crop_extend(scroll_x, scroll_x + width, rich_style).apply_offsets(scroll_x, row)

    def _row_strip(self, row: int, rich_style: Style) -> Strip:
        key = self._base + row
        selection = self.text_selection
        if selection is None:
            cached = self._cache.get(key)
            if cached is not None:
                return cached
            # Segments straight from the pieces (Text.render's general machinery is most of
            # a row's cost)
            text, pieces = self._pieces(self.lines.raw(row))
            segments = [Segment(text[a:b], rich_style + style if style else rich_style)
                        for a, b, style in pieces if b > a]
            strip = Strip(segments, len(text) if text.isascii() else None)
            self._cache[key] = strip
            return strip
        t = self.line_text(self.lines.raw(row))
        t.stylize_before(rich_style)
        span = selection.get_span(row)
        if span is not None:
            start, end = span
            if end == -1:
                end = len(t)
            t.stylize(self.screen.get_component_rich_style("screen--selection"), start, end)
        return Strip(t.render(self.app.console), t.cell_len)

    # ------------------------------------------------------------------ selection
    def get_selection(self, selection: Selection) -> tuple[str, str] | None:
        return selection.extract("\n".join(_clean(ln.text) for ln in self.lines)), "\n"

    def selection_updated(self, selection: Selection | None) -> None:
        self._cache.clear()
        self.refresh()
