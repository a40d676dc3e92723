"""Log pane: the tail of a run's log. Follows by default, pauses when scrolled up (and counts
the new lines), ``/`` search with ``n``/``N``, ``f`` filter (regex, ``!`` prefix inverts),
severity colours, ``E`` jumps to the first error, ``r`` picks another run's log, ``a`` cycles the
HTTP access lines of the polls (hide the console's own / dim / show), ``w`` wraps long lines or
not (on by default; continuation rows start with a dim ``↳``). The search and filter boxes
close on Enter (an empty filter clears it) or Esc (changes nothing); the active search and filter
stay on (also across runs: the next run's log is searched for the same text, its matches
counted, ``0 matches`` where it has none) and are shown in the status line, apart from the log's
text, the search with the key that clears it (Esc on the log, before Esc un-zooms), a filter
that leaves no line with the key that changes it (``f``). Always says whose log it
shows, and warns when that is not the current run's or is older than the run. Memory is bounded
by :data:`mambaconsole.state.LOG_KEEP` lines; the rows are drawn by
:class:`mambaconsole.ui.log_view.LogView`, which renders only the visible ones."""

from __future__ import annotations

import re

from rich.cells import cell_len, set_cell_size
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Label, Static

from mambaconsole.state import LOG_KEEP, ConsoleState, LineBuffer, ShownLine
from mambaconsole.ui.fit import Part, parts_text, parts_width
from mambaconsole.ui.log_view import ACCESS_MODES, LogView
from mambaconsole.ui.redraw import update_static
from mambaconsole.units import fmt_bytes

#: the paths the console itself polls (session/feed.py: /server_info or /get_server_info, /metrics)
#: and health checks: their access lines are hidden in the default access mode ("hide"); other
#: access lines of polls stay dimmed
OWN_POLL_PATHS = frozenset({"/metrics", "/server_info", "/get_server_info", "/health", "/health_generate"})
# the request path of a uvicorn access line (with or without uvicorn's colours)
_REQUEST_PATH = re.compile(r'"(?:\x1b\[[0-9;]*m)?GET (/[^\s?"\x1b]*)')


def is_own_poll(text: str) -> bool:
    """An access line (``ShownLine.access``) for one of :data:`OWN_POLL_PATHS`."""
    m = _REQUEST_PATH.search(text)
    return bool(m) and m.group(1) in OWN_POLL_PATHS


def compile_filter(text: str) -> tuple[re.Pattern | None, bool, str | None]:
    """``(pattern, invert, error)`` for a filter string; ``!`` prefix inverts; a bad regex is
    refused: no pattern, and ``error`` is Python's message (``not a regex: missing ), unterminated
    subpattern at position 0``), never silently matched as plain text."""
    invert = text.startswith("!")
    body = text[1:] if invert else text
    if not body:
        return None, False, None
    try:
        return re.compile(body, re.IGNORECASE), invert, None
    except re.error as exc:
        return None, invert, f"not a regex: {exc}"


#: after the search in force in the status: the key that clears it (:meth:`LogPane.action_clear_search`)
CLEAR_HINT = " (Esc: clear)"
#: after a filter in force that leaves no line: the key that opens it to change or clear it
#: (:meth:`LogPane.action_filter`: the box holds the filter; Enter on it emptied clears it)
CHANGE_HINT = " (f: change)"

#: the status row's forms, tried in order (:meth:`LogPane._status_row`), the first whose whole
#: row fits is drawn: ``(form, leave)`` of :meth:`LogPane._count_parts`: every part in full,
#: every part short, short without the key hints, then one claim more leaving each step
STATUS_LEVELS = ((0, 0), (1, 0), (2, 0), (2, 1), (2, 2), (2, 3), (2, 4))
#: the claims of the status row in the order they leave where the row is too narrow: the lines
#: kept in memory, the poll lines' clause, the skipped middle, the line count
LEAVE_ORDER = ("kept", "polls", "skipped", "count")

#: the search and filter boxes' prompts, longest first: a box shows the longest that fits whole
#: (at 120x40 the pane is 56 columns and the filter's long prompt ended at "(Enter: apply;")
_PROMPTS = {
    "search": ("text (Enter: next match; empty Enter: no search; Esc: close)",
               "text; Enter: next match; empty: no search",
               "text; Esc: close"),
    "filter": ("regex, !regex keeps the others (Enter: apply; empty Enter: no filter; Esc: close)",
               "regex, !regex keeps the others; empty: none",
               "regex; Esc: close"),
}


class LogPane(Vertical):
    BINDINGS = [
        Binding("slash", "search", "Search"),
        Binding("n", "next_match", "Next", show=False),
        Binding("N", "prev_match", "Prev", show=False),
        Binding("escape", "clear_search", "Clear the search", show=False),
        Binding("f", "filter", "Filter"),
        Binding("E", "first_error", "First error"),
        Binding("a", "cycle_access", "Access lines", show=False),
        Binding("w", "wrap", "Wrap lines", show=False),
        Binding("end,G", "follow", "Follow", show=False),
        Binding("r", "pick_run", "Pick run", show=False),
        Binding("b", "page_back", "Earlier lines", show=False),
    ]

    DEFAULT_CSS = """
    LogPane #log-title { height: 1; }
    LogPane LogView { height: 1fr; scrollbar-size-vertical: 1; }
    LogPane .log-ask { display: none; height: 1; }
    LogPane .log-ask.shown { display: block; }
    LogPane .log-ask Label { width: auto; height: 1; padding: 0 1; background: $accent; color: $text; text-style: bold; }
    LogPane .log-ask Input { width: 1fr; height: 1; border: none; padding: 0 1; }
    LogPane #log-status { height: 1; color: $text-muted; }
    LogPane #log-active { height: auto; max-height: 2; display: none; }
    LogPane #log-active.shown { display: block; }
    """

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.search_text = ""
        self.filter_text = ""
        self.access_mode = ACCESS_MODES[0]
        self._filter: re.Pattern | None = None
        self._invert = False
        self._seen_total = 0  # state.log_total when the view last took the state's new lines
        self._run_id: str | None = None
        self._generation = -1
        self._new = 0
        self._match_at: int | None = None
        self._state: ConsoleState | None = None
        self._note = ""
        self._match_info: tuple[int, int] | None = None  # (match number, matches) of the search
        self._hidden = 0  # poll access lines left out by the "hide" access mode
        #: ``(key, why)``: the line a jump put in view (``E``: "first error", ``n``/``N``: "",
        #: the search part says it), held there (never following) until it leaves the view or End/G;
        #: ``key`` is the view's line key (:meth:`LogView.key_of`), stable as lines leave the front
        self._held: tuple[int, str] | None = None
        self._texts: dict[str, Text] = {}

    def compose(self) -> ComposeResult:
        yield Static("", id="log-title")
        with Horizontal(id="log-search-row", classes="log-ask"):
            yield Label("search")
            yield Input(placeholder=_PROMPTS["search"][0], id="log-search")
        with Horizontal(id="log-filter-row", classes="log-ask"):
            yield Label("filter")
            yield Input(placeholder=_PROMPTS["filter"][0], id="log-filter")
        yield LogView(max_lines=LOG_KEEP, id="log-view")
        yield Static("", id="log-active")
        yield Static("", id="log-status")

    @property
    def view(self) -> LogView:
        return self.query_one("#log-view", LogView)

    @property
    def _shown(self) -> LineBuffer:
        """The lines the view may show (after the filter and the access-line mode), oldest first."""
        return self.view.lines

    @property
    def following(self) -> bool:
        """At the end of the log, or about to be put there (``pin_end``: a new size pending),
        and no line held in view by a jump (``E``, ``n``/``N``: a first error near the end of a
        short log is at the end too, yet the view is there for it). The end is the last row
        shown at the bottom (Textual draws the row ``round(scroll_y)`` at the top): one row
        above it is not, so ``up`` once pauses the view and new lines leave it there."""
        v = self.view
        return self._held is None and (v.pin_end or round(v.scroll_y) >= v.max_scroll_y)

    def _hold(self, idx: int, why: str) -> None:
        """Hold line ``idx`` of the view in sight, for ``why``."""
        self._held = (self.view.key_of(idx), why)

    def _held_index(self) -> int | None:
        """The held line's index in the view (the first kept line once it fell off), or None."""
        if self._held is None or not len(self._shown):
            return None
        return min(max(0, self.view.index_of(self._held[0])), len(self._shown) - 1)

    def _colors(self) -> dict[str, str]:
        c = self.app.theme_variables
        return {"error": c.get("error", "red"), "warning": c.get("warning", "yellow"),
                "ready": c.get("success", "green")}

    def _keep(self, line: ShownLine) -> bool:
        if line.access and self.access_mode == "hide" and is_own_poll(line.text):
            self._hidden += 1
            return False
        if self._filter is None:
            return True
        return bool(self._filter.search(line.text)) != self._invert

    def refresh_from(self, state: ConsoleState, *, status: bool = True) -> None:
        """Take the state's new log lines (or its other log: the view rebuilt) and redraw the
        title and status row; ``status=False``: not the title and status row (their counts;
        :meth:`refresh_status` draws them), unless the view was rebuilt."""
        self._state = state
        self.view.restyle(colors=self._colors())
        if state.log_generation != self._generation or state.log_run_id != self._run_id:
            status = True
            self._rebuild(state)
            # another run's log (or the same log read anew): what the status said about the
            # lines shown before ("first error", "'x' not found", match 3/7) is void; the
            # search and filter stay on and count this log's matches
            self._note = ""
            self._match_at = None
            if self.search_text:
                self._match_info = (0, len(self._matches()))
        else:
            new = state.log_since(self._seen_total, raw=True)  # (offset, text, severity, access)
            self._seen_total = state.log_total
            if self._filter is not None or self.access_mode == "hide":
                new = [ln for ln in new if self._keep(ShownLine._make(ln))]
            if new:
                follow = self.following
                full = len(self._shown) + len(new) > (self._shown.maxlen or LOG_KEEP)  # lines leave at the front
                added = self.view.extend(new, follow=follow)
                if follow:
                    self._new = 0
                else:
                    self._new += added
                if self.search_text and self._match_info is not None:
                    if full:  # evicted lines took matches (and the ordinals) with them: count again
                        self._match_at = None
                        self.view.set_current(None)
                        self._match_info = (0, len(self._matches()))
                    else:
                        q = self.search_text.lower()
                        n, total = self._match_info
                        self._match_info = (n, total + sum(1 for ln in new if q in ln[1].lower()))
        if status:
            self._update_title(state)

    def refresh_status(self, state: ConsoleState) -> None:
        """Redraw the title and status row only (what ``refresh_from(status=False)`` left)."""
        self._state = state
        self._update_title(state)

    def _rebuild(self, state: ConsoleState, follow: bool = True) -> None:
        self._run_id = state.log_run_id
        self._generation = state.log_generation
        self._seen_total = state.log_total
        self._hidden = 0
        self._held = None  # the lines were replaced: their keys name other lines now
        self.view.set_lines((ln for ln in state.log if self._keep(ln)), maxlen=state.log.maxlen)
        if follow:
            self.view.scroll_end(animate=False, immediate=True, x_axis=False)
            # not laid out yet: scroll once the size is known (not later: by then the user may
            # have scrolled up)
            self.view.pin_end = not self.view.size.height
        self._new = 0

    def _update_title(self, state: ConsoleState) -> None:
        c = self.app.theme_variables
        t = Text(no_wrap=True, overflow="ellipsis")
        rid = state.log_run_id or (state.run.run_id if state.run else None)
        t.append(f"log of run {rid}" if rid else "no log yet", "bold")
        if state.log_is_stale():
            if state.run and state.log_run_id and state.log_run_id != state.run.run_id:
                t.append(f"  ⚠ NOT the current run ({state.run.run_id})", f"bold reverse {c.get('warning', 'yellow')}")
            else:
                t.append("  ⚠ log file older than the run", f"bold reverse {c.get('warning', 'yellow')}")
        if state.run and state.run.state == "never_started":
            t.append("  ⚠ the run never started", f"bold reverse {c.get('error', 'red')}")
        self._set_static("#log-title", t)
        status = self.query_one("#log-status", Static)
        self._set_static("#log-status", self._status_row(state, status.size.width or None))
        self._status_key = (self.following, self._new)

    def _status_row(self, state: ConsoleState, width: int | None) -> Text:
        """The status line within ``width`` cells. Always whole: where the view is (one true
        thing: ``following``; ``at line 151/400: first error`` where a jump holds a line;
        ``paused at line 151/400`` where scrolled up; ``/400``: the lines shown), the new lines,
        the answer to a key, the search and filter in force, wrap or no wrap. Then the counts,
        one claim a reader can check against the position (:meth:`_count_parts`): ``400 of 650
        lines shown, 250 poll lines hidden (a)``.

        One rule fits it to the width, the one the search's key hints follow (:meth:`_hints`):
        whole rows, fullest first, and the first that fits is drawn (:data:`STATUS_LEVELS`):
        every part in full; every part short (``400/650 shown, 250 polls hidden (a)``: never
        some short and some full); short without the key hints ``(a)``, ``b: earlier``, ``(w)``; then
        whole claims leave, in :data:`LEAVE_ORDER`: ``(last N kept)``, the poll lines' clause, the
        skipped middle, the line count. A row that left any ends in ``+N more``, N the claims
        left out (a ``…`` there read as cut text). The search's ``(Esc: clear)`` gives way
        first where it would cost the log a row and a match in view says a search is on
        (:meth:`_hints`); a filter's ``(f: change)`` is drawn only where it leaves no line, and
        then stays as the search's does. Where the search and filter in force do not fit beside
        the rest (in its tersest row), they take a row of their own above it (``#log-active``;
        two rows, search and filter, where one is too narrow), their texts cut (``Decode b…``)
        only where a row is too narrow, their counts never (at 120x40 the pane is 56 columns
        and the line ended at ``filter Decode``, never reaching ``wrap (w)``)."""
        c = self.app.theme_variables
        warn = c.get("warning", "yellow")
        head: list[Part] = []
        held = self._held_index()
        n_shown = len(self._shown)
        if held is not None:  # why: the first error; a search match says itself in the search part
            why = f": {self._held[1]}" if self._held[1] else ""  # type: ignore[index]
            head.append(Part(f" at line {held + 1}/{n_shown}{why} ", f"bold reverse {warn}"))
        elif self.following:
            head.append(Part(" following ", "dim"))
        else:
            top = self._top_line() + 1 if n_shown else 0
            head.append(Part(f" paused at line {top}/{n_shown} ", "dim"))
        note = [Part(f" {self._note} ", f"bold reverse {warn}")] if self._note else []
        # the new lines' marker in the row's form (STATUS_LEVELS): full, short, short with its key
        # kept terse (it is how to act on the marker); at 120x40 beside a held line the full one
        # pushed the row's "+N more" past the pane's edge
        n_new = self._new
        new_forms = [[Part(text, f"bold reverse {c.get('accent', 'magenta')}")] for text in (
            f" ▼ {n_new} new line{'' if n_new == 1 else 's'} (End: follow) ", f" ▼ {n_new} new (End: follow) ",
            f" ▼ {n_new} new (End) ")] if n_new else [[], [], []]

        def row(level: tuple[int, int], active: list[Part]) -> list[Part]:
            # the note (feedback to a key just pressed) where it is seen, before the counts
            return head + new_forms[level[0]] + note + active + self._count_parts(state, *level)

        active: list[Part] = []
        active_row = None
        if self._active_parts():  # first: the part that changes what the rows mean
            style = f"bold reverse {c.get('secondary', 'cyan')}"
            for hint in self._hints():
                text = " · ".join(self._active_parts(hint=hint))
                with_active = [Part(" "), Part(f" {text} ", style), Part(" ")]
                if width is None or parts_width(row(STATUS_LEVELS[-1], with_active)) <= width:
                    active = with_active
                    break
            else:  # rows of their own, above, so that the status line's essentials stay whole
                active_row = self._active_rows(style, width)
        box = self.query_one("#log-active", Static)
        if active_row is not None:
            update_static(box, active_row)  # one row, or two (search, filter): a layout then
        box.set_class(active_row is not None, "shown")
        rows = (row(level, active) for level in STATUS_LEVELS)
        return parts_text(next((r for r in rows if width is None or parts_width(r) <= width),
                               row(STATUS_LEVELS[-1], active)))

    def _count_parts(self, state: ConsoleState, form: int, leave: int) -> list[Part]:
        """The status row's parts after the position, the new lines, the note and the search and
        filter: the line count, the poll lines, the skipped middle or earlier lines, wrap.
        ``form``: 0 full, 1 short, 2 short without the key hints; ``leave``: how many claims
        leave, in :data:`LEAVE_ORDER`; where any did, a last part ``+N more`` says how many.
        The counts: ``shown`` the lines in the view (after the poll lines hidden and the
        filter), ``of T lines`` all the lines read from the log (``state.log_total``; a skipped
        middle is not read, its lines not counted), ``(last K kept)`` where lines left memory."""
        warn = self.app.theme_variables.get("warning", "yellow")
        shown, total = len(self._shown), state.log_total
        gone = set(LEAVE_ORDER[:leave])
        short = form > 0
        parts: list[Part] = []
        if "count" not in gone:
            if shown == total:
                lines = "line" if total == 1 else "lines"
                parts.append(Part(f" {total} shown" if short else f" {total} {lines} shown"))
            else:
                parts.append(Part(f" {shown}/{total} shown" if short else f" {shown} of {total} lines shown"))
            if state.log_dropped and "kept" not in gone:
                k = len(state.log)
                parts.append(Part(f" ({k} kept)" if short else f" (last {k} kept)", "dim"))
            if "polls" not in gone:
                if self.access_mode == "hide":
                    n = self._hidden
                    polls = f", {n} {'poll' if short else 'poll line'}{'' if n == 1 else 's'} hidden"
                else:
                    polls = f", {'polls' if short else 'poll lines'} {'dimmed' if self.access_mode == 'dim' else 'shown'}"
                parts.append(Part(polls + (" (a)" if form < 2 else "")))
        if state.log_skipped is not None and "skipped" not in gone:
            a, b = state.log_skipped
            hint = (" (b: earlier)", " (b)", "")[form]
            parts.append(Part(f"  {fmt_bytes(b - a)} skipped{hint}", warn))
        elif state.log_dropped and form < 2:  # a key hint only: it goes with the others
            parts.append(Part("  b: earlier" if short else "  b: earlier lines", "dim"))
        parts.append(Part(f"  {'wrap' if self.view.wrap else 'no wrap'}{' (w)' if form < 2 else ''}"))
        if "count" in gone:  # the next part follows the head's trailing space: one space, as the count did
            parts[0] = Part(parts[0].text[1:], parts[0].style)
        there = {"polls", "count"} | ({"kept"} if state.log_dropped else set()) | \
            ({"skipped"} if state.log_skipped is not None else set())
        left = sum(1 for name in LEAVE_ORDER[:leave] if name in there)
        if left:
            parts.append(Part(f"  +{left} more", "dim"))
        return parts

    def on_resize(self) -> None:
        if self._state is not None:
            self._update_title(self._state)

    def _active_rows(self, style: str, width: int | None) -> Text:
        """The search and filter in force on one row where they fit in ``width`` cells, else
        each on its own; a row still too wide has its search or filter text cut (``Decode b…``),
        never its counts; its key hint (:meth:`_active_parts`) stays while the text can keep 8
        cells, then goes."""
        rows = [" · ".join(self._active_parts())] if width is None else []
        if not rows:
            one = next((one for hint in self._hints()
                        if cell_len(one := " · ".join(self._active_parts(hint=hint))) + 2 <= width), None)
            if one is not None:
                rows = [one]
            else:
                longest = max(len(self.search_text), len(self.filter_text))
                for i in range(len(self._active_parts())):
                    # the key hint stays while the text can keep 8 cells; then it goes
                    for hint, floor in ((True, min(8, longest)), (False, 1)):
                        limit = None
                        while True:
                            row = self._active_parts(limit, hint=hint)[i]
                            if cell_len(row) + 2 <= width or (limit or longest) <= floor:
                                break
                            limit = (limit or longest) - 1
                        if cell_len(row) + 2 <= width:
                            break
                    rows.append(row)
        t = Text(no_wrap=True, overflow="ellipsis")
        for i, row in enumerate(rows):
            t.append(("\n" if i else "") + f" {row} ", style)
        return t

    def _hints(self) -> tuple[bool | None, ...]:
        """The ``hint`` values of :meth:`_active_parts` to try, in order, for the search and filter
        beside the status line: every key hint; then, where a match of the search is in view to
        say a search is on, only the hints that nothing in view stands for (the search's gives
        way rather than cost the log a row)."""
        return (True, None) if self.search_text and self._has_matches() else (True,)

    def _has_matches(self) -> bool:
        """The search has matches among the shown lines (their highlights say it is on)."""
        return self._match_info is not None and self._match_info[1] > 0

    def _active_parts(self, limit: int | None = None, hint: bool | None = True) -> list[str]:
        """``["search 'OutOfMemory' 3/7 (Esc: clear)", "filter '!mem' 27 shown"]``: the search
        and filter in force; ``limit``: each text cut to that many cells, its end an ellipsis.
        ``hint``: the keys that clear or change them, where they have one: the search's
        :data:`CLEAR_HINT` always, a filter's :data:`CHANGE_HINT` where it leaves no line
        (``filter 'x' 0 shown (f: change)``); True: all of them, None: only those where nothing
        in view says it is on (a search with no match, a filter with no line), False: none."""
        def cut(text: str) -> str:
            return text if limit is None or cell_len(text) <= limit else set_cell_size(text, limit - 1) + "…"

        parts = []
        if self.search_text:
            if self._match_info is None:
                where = ""
            elif self._match_info[0]:
                where = f" {self._match_info[0]}/{self._match_info[1]}"
            else:
                n = self._match_info[1]
                where = f" {n} match{'' if n == 1 else 'es'}"
            keys = CLEAR_HINT if hint or (hint is None and not self._has_matches()) else ""
            parts.append(f"search '{cut(self.search_text)}'{where}{keys}")
        if self.filter_text and self._filter is not None:
            n = len(self._shown)
            keys = CHANGE_HINT if n == 0 and hint is not False else ""
            parts.append(f"filter '{cut(self.filter_text)}' {n} shown{keys}")
        return parts

    def _set_static(self, selector: str, text: Text) -> None:
        """Update a one-row Static only when its text changed (no layout: the row stays one)."""
        if self._texts.get(selector) != text:
            self._texts[selector] = text
            self.query_one(selector, Static).update(text, layout=False)

    # ----------------------------------------------------------------- actions
    def action_follow(self) -> None:
        self.view.scroll_end(animate=False)
        self._new = 0
        self._held = None
        self._note = ""
        if self._state:
            self._update_title(self._state)

    def on_log_view_scrolled(self, ev: LogView.Scrolled) -> None:
        """Scrolled up: "paused" at once; back at the end: "following", the new-line count gone;
        a held line (:attr:`_held`) scrolled out of view lets go. The message goes no further:
        it comes with every line a followed log scrolls by, and each container above (the
        panes' grid, the screen, the app) would take it in a turn of its own."""
        ev.stop()
        held = self._held_index()
        if held is not None:
            v = self.view
            top, height = int(v.scroll_y), v.scrollable_content_region.height or v.size.height
            first = v.row_of(held)
            if height and (first + v.rows_of(held) <= top or first >= top + height):
                self._held = None
                self._note = ""
        following = self.following
        if following and self._new:
            self._new = 0
        if self._state is not None and ((following, self._new) != getattr(self, "_status_key", None)
                                        or not following):
            self._update_title(self._state)  # paused: the line at the top is in the status


    def _open(self, which: str, value: str) -> None:
        """Show the ``which`` box ("search"/"filter") prefilled with what is in force."""
        for other in ("search", "filter"):
            if other != which:
                self.query_one(f"#log-{other}-row").remove_class("shown")
        self.query_one(f"#log-{which}-row").add_class("shown")
        box = self.query_one(f"#log-{which}", Input)
        # the longest prompt that fits whole beside the label (both with one cell of padding a side)
        room = self.content_size.width - (len(which) + 2) - 2
        box.placeholder = next((p for p in _PROMPTS[which] if cell_len(p) <= room), _PROMPTS[which][-1])
        box.value = value
        box.cursor_position = len(value)
        box.focus()

    def _close(self, box: Input) -> None:
        self.query_one(f"#{box.id}-row").remove_class("shown")
        self.view.focus()

    def action_search(self) -> None:
        self._open("search", self.search_text)

    def action_filter(self) -> None:
        self.query_one("#log-filter-row Label", Label).update("filter")
        self.query_one("#log-filter", Input).remove_class("-invalid")
        self._open("filter", self.filter_text)

    def set_filter(self, text: str) -> None:
        self.filter_text = text
        self._filter, self._invert, err = compile_filter(text)
        self._note = err or ""
        if self._state:
            self._rebuild(self._state, follow=self.following)
            if self.search_text:  # the rows changed: count the matches again, none is current
                self._match_at = None
                self._match_info = (0, len(self._matches()))
            self._update_title(self._state)

    def set_search(self, text: str) -> None:
        self.search_text = text
        self._match_at = None
        self.view.set_current(None)
        self._match_info = None
        self.view.restyle(search=text)
        if self._state:
            self.action_next_match()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Esc clears a search only where one is in force (else the key goes on: it un-zooms);
        None: listed under ``?``, not run."""
        if action == "clear_search":
            return True if self.search_text else None
        return True

    def action_clear_search(self) -> None:
        """Esc on the log: no search in force (its highlights and its part of the status go)."""
        self.set_search("")

    def takes_escape(self, focused: object) -> bool:
        """Esc on the log view clears the search in force before it un-zooms the pane
        (:attr:`ConsoleApp.escape_to_minimize` asks: Textual un-zooms before any binding)."""
        return bool(self.search_text) and focused is self.view

    def action_cycle_access(self) -> None:
        """``a``: HTTP access lines of polls: those of the console's own polls hidden (default,
        the others dimmed), all dimmed, all shown plain. Hiding only leaves them out of the view;
        the state keeps them."""
        old = self.access_mode
        self.access_mode = ACCESS_MODES[(ACCESS_MODES.index(old) + 1) % len(ACCESS_MODES)]
        self.view.restyle(access=self.access_mode)
        if "hide" in (old, self.access_mode) and self._state:
            self._rebuild(self._state, follow=self.following)
        if self._state:
            self._update_title(self._state)

    def action_wrap(self) -> None:
        """``w``: wrap long lines (continuation rows marked) or one row per line, scrolled
        sideways. Keeps the end in sight when following, else the held line (``E``, a search
        match) or the line at the top, at the top of the view (where the end of a short log
        lets it)."""
        held = self._held_index()
        self.view.set_wrap(not self.view.wrap, follow=self.following,
                           top=None if held is None else self.view.key_of(held))
        if self._state:
            self._update_title(self._state)

    def on_input_submitted(self, ev: Input.Submitted) -> None:
        if ev.input.id == "log-search":
            ev.stop()
            self._close(ev.input)
            if ev.value != self.search_text:
                self.set_search(ev.value)
            elif ev.value:
                self.action_next_match()
        elif ev.input.id == "log-filter":
            ev.stop()
            err = compile_filter(ev.value)[2]
            label = self.query_one("#log-filter-row Label", Label)
            if err:  # refused where it was typed; the box stays open, the filter in force stays
                label.update(f"filter: {err}")
                ev.input.add_class("-invalid")
                self._note = f"filter refused: {err}"
                if self._state:
                    self._update_title(self._state)
                return
            label.update("filter")
            ev.input.remove_class("-invalid")
            self._close(ev.input)
            if ev.value != self.filter_text:
                self.set_filter(ev.value)

    def on_key(self, ev) -> None:
        """Esc in a box closes it and changes nothing else (the app does not un-zoom then:
        :attr:`ConsoleApp.escape_to_minimize`)."""
        if ev.key != "escape":
            return
        for box in self.query(Input):
            if box.has_focus:
                self._close(box)
                ev.stop()

    def _top_line(self) -> int:
        """Index of the line at the top of the view (wrapped: the line of the top row)."""
        return self.view.line_at(int(self.view.scroll_y))[0]

    def _matches(self) -> list[int]:
        q = self.search_text.lower()
        return [i for i, ln in enumerate(self._shown) if q and q in ln.text.lower()]

    def _jump(self, idx: int, query: str = "") -> None:
        self._match_at = idx
        self.view.set_current(idx if query else None)  # a search match: drawn as the current one
        self.view.reveal(idx, query)  # two rows above it; wrapped, the match's own row in view
        if self._state:
            self._update_title(self._state)

    def action_next_match(self) -> None:
        m = self._matches()
        if not m:
            self._match_info = None
            self._note = f"'{self.search_text}' not found" if self.search_text else ""
            if self._state:
                self._update_title(self._state)
            return
        self._note = ""
        cur = self._match_at if self._match_at is not None else self._top_line() + 1
        nxt = next((i for i in m if i > cur), m[0])
        self._match_info = (m.index(nxt) + 1, len(m))
        self._hold(nxt, "")
        self._jump(nxt, self.search_text)

    def action_prev_match(self) -> None:
        m = self._matches()
        if not m:
            return
        cur = self._match_at if self._match_at is not None else self._top_line() + 1
        prv = next((i for i in reversed(m) if i < cur), m[-1])
        self._note = ""
        self._match_info = (m.index(prv) + 1, len(m))
        self._hold(prv, "")
        self._jump(prv, self.search_text)

    def action_first_error(self) -> None:
        st = self._state
        if st is None or st.first_error_offset is None:
            self._note = "no error in the kept lines"
        else:
            idx = next((i for i, ln in enumerate(self._shown) if ln.offset >= st.first_error_offset), None)
            if idx is None:
                self._note = "the first error is hidden by the filter"
            else:
                self._note = ""  # the status says it where it says where the view is
                self._hold(idx, "first error")
                self._jump(idx)
                return
        if st:
            self._update_title(st)

    def action_page_back(self) -> None:
        """``b``: read the page of the log before the first kept line (into a skipped middle, or
        lines the bounded buffer let go); the view stays where it was, the page above it. The
        answer when there is nothing to read is said in the status line (a toast covered it)."""
        self._note = self.app.action_page_back() or ""  # type: ignore[attr-defined]
        if self._state:
            self._update_title(self._state)

    def show_earlier(self, state: ConsoleState, end: int) -> None:
        """After a page read back came in place (:meth:`ConsoleState.page_back_range`): rebuild,
        keep in sight the line at byte ``end`` (where the page ends), the page's last rows above."""
        self._state = state
        self._rebuild(state, follow=False)
        self._note = ""
        self._update_title(state)
        idx = next((i for i, ln in enumerate(self._shown) if ln.offset >= end), len(self._shown) - 1)
        if idx >= 0:
            self.view.scroll_to(y=max(0, self.view.row_of(idx) - 2), animate=False, immediate=True)

    def action_pick_run(self) -> None:
        self.app.action_pick_run()  # type: ignore[attr-defined]
