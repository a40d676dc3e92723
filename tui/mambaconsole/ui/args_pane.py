"""ServerArgs pane: the resolved args of the current run with the source of each value."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Input, Static

from mambaconsole.state import ArgRow, ConsoleState
from mambaconsole.ui.fit import wrapped_lines
from mambaconsole.ui.redraw import update_static

FILTERS = ("all", "non-default", "changed", "live")
#: the columns' cell padding (DataTable's default 1 each side) and the vertical scrollbar
_PAD = 2
_SCROLLBAR = 2


def source_style(source: str, colors: dict[str, str]) -> str:
    return {
        "default": "dim",
        "cli": colors.get("primary", "blue"),
        "config": colors.get("secondary", "cyan"),
        "env": colors.get("accent", "magenta"),
        "derived": colors.get("warning", "yellow"),
        "overridden": f"bold #ffffff on {colors.get('error', 'red')}",
    }.get(source, "")


def _show(v, limit: int = 200) -> str:
    text = v if isinstance(v, str) else repr(v)
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: the note's partition of the shown rows by source: (label, sources); every row is in one
SHOWN_KINDS = (("overridden", ("overridden",)), ("derived", ("derived",)),
               ("given", ("cli", "config", "env")), ("default", ("default",)))


def shown_counts(rows: list[ArgRow]) -> list[tuple[str, int]]:
    """``[(label, n), ...]`` for the shown ``rows`` by source (:data:`SHOWN_KINDS`), the kinds
    with no row left out except ``overridden``; the counts add up to ``len(rows)`` (a row whose
    source is none of these counts as "given")."""
    known = {s for _, kind in SHOWN_KINDS for s in kind}
    out = []
    for label, kind in SHOWN_KINDS:
        n = sum(1 for r in rows if r.source in kind or (label == "given" and r.source not in known))
        if n or label == "overridden":
            out.append((label, n))
    return out


def passes(r: ArgRow, mode: str) -> bool:
    """Whether filter ``mode`` shows row ``r`` (a row that differs from the live server passes
    every filter)."""
    if mode == "non-default":
        return r.source != "default" or r.disagrees
    if mode == "changed":
        return r.source in ("derived", "overridden") or r.disagrees
    if mode == "live":
        return r.disagrees
    return True


def visible_rows(rows: list[ArgRow], mode: str, query: str, first: tuple[str, ...] = ()) -> list[ArgRow]:
    """Rows the pane shows for filter ``mode`` and search ``query`` (substring of flag or value):
    the flags in ``first`` (those that size the allocation an OOM failed on), in that order and
    whatever the filter, then SGLang-changed fields."""
    q = query.lower()
    out = []
    for r in rows:
        if r.flag in first and not q:
            out.append(r)
            continue
        if not passes(r, mode):
            continue
        if q and q not in r.flag.lower() and q not in _show(r.value).lower() and not (
                r.disagrees and q in _show(r.live).lower()):
            continue
        out.append(r)
    order = {"overridden": 0, "derived": 1, "cli": 2, "config": 3, "env": 4, "default": 5}
    out.sort(key=lambda r: (first.index(r.flag) if r.flag in first else len(first),
                            0 if r.disagrees else 1, order.get(r.source, 6), r.flag))
    return out


#: the narrowest each column is worth showing: a flag column of 26 cells shows every Mamba flag
#: whole (``--mamba-scheduler-strategy``); a value of 12 cells a number, a choice or a model's
#: organisation; a changed-by column of 20 cells the writer's function name (most of it)
FLAG_MIN, VALUE_MIN, BY_MIN = 26, 12, 20
#: the narrowest a column ever gets (a pane narrowed with ``[``): a flag column of 16 cells still
#: names the flag (``--speculative-…``), a value of 5 a number, a source of 3 ``cli``; below
#: that the table scrolls sideways (at 22 cells the rows were ``…  …  cli``, no flag named)
FLAG_FLOOR, VALUE_FLOOR, SOURCE_FLOOR = 16, 5, 3


def column_widths(width: int, flags: list[str], values: list[str], sources: list[str],
                  writers: list[str]) -> tuple[int, int, int, int]:
    """Widths in cells of (flag, value, source, changed by) for a table ``width`` cells wide
    (each column also takes 2 cells of padding; 2 are kept for the vertical scrollbar); a
    changed-by width of 0 means that column is left out.

    Four columns where they fit: the value column as wide as the longest value (at most 35% of
    the room), the source column as its longest entry, the flag column the longest flag that fits
    in what is left (at least 30 cells where there is room: every Mamba and speculative flag),
    changed-by the rest. That layout is kept when every column gets at least its useful width
    (``FLAG_MIN``, ``VALUE_MIN``, ``BY_MIN``, or its longest entry if shorter) and all four fit.

    Otherwise (a narrow pane) changed-by is left out, since the detail area under the table
    shows the highlighted row's writer, and flag, value and source fill the width exactly: the
    source as its longest entry (cut where that would squeeze flag and value under their useful
    widths, never under 10 cells: ``overridden``), the flag its longest entry or what the value's
    longest entry leaves, at least ``FLAG_MIN`` while the value keeps ``VALUE_MIN``, and the
    value the rest. Narrower still, the flag column keeps ``FLAG_FLOOR`` cells (the value, then
    the source, give up room down to ``VALUE_FLOOR`` and ``SOURCE_FLOOR``) and the table scrolls
    sideways past that (a pane narrowed with ``[`` to about 30 cells)."""
    flag_nat = max([len("flag"), *map(len, flags)])
    value_nat = max([len("value"), *map(len, values)])
    src_nat = max([len("source"), *map(len, sources)])
    by_nat = max([len("changed by"), *map(len, writers)])

    avail = width - 4 * _PAD - _SCROLLBAR
    value_w = min(value_nat, max(avail * 7 // 20, VALUE_MIN))
    rest = avail - src_nat - value_w
    flag_w = min(flag_nat, max(rest - by_nat, min(30, rest)))
    if flag_w < min(flag_nat, FLAG_MIN) and value_w > VALUE_MIN:  # the value gives up some room first
        d = min(min(flag_nat, FLAG_MIN) - flag_w, value_w - VALUE_MIN)
        value_w, flag_w = value_w - d, flag_w + d
    by_w = avail - flag_w - value_w - src_nat
    if (flag_w >= min(flag_nat, FLAG_MIN) and value_w >= min(value_nat, VALUE_MIN)
            and by_w >= min(by_nat, BY_MIN)):
        return flag_w, value_w, src_nat, by_w

    avail = max(width - 3 * _PAD - _SCROLLBAR, 3)
    src_w = max(min(src_nat, avail - FLAG_MIN - VALUE_MIN), min(src_nat, 10), 1)
    rest = max(avail - src_w, 2)
    flag_w = min(flag_nat, max(rest - value_nat, min(FLAG_MIN, rest - VALUE_MIN), rest // 2))
    value_w = rest - flag_w
    floor = min(flag_nat, FLAG_FLOOR)
    if flag_w < floor:  # the flag names the row: the value, then the source, give up room first
        d = min(floor - flag_w, max(value_w - VALUE_FLOOR, 0))
        flag_w, value_w = flag_w + d, value_w - d
        d = min(floor - flag_w, max(src_w - SOURCE_FLOOR, 0))
        flag_w, src_w = flag_w + d, src_w - d
        flag_w = max(flag_w, floor)  # still short: the table scrolls sideways
    return flag_w, max(value_w, min(value_nat, VALUE_FLOOR)), src_w, 0


def value_cell(r: ArgRow, given, colors: dict[str, str], width: int | None = None) -> Text:
    """The value column: the resolved value; ``given X`` on an overridden row; ``V → L live``
    where the live server (or a cap SGLang logged) differs from the resolution; with no
    resolution (it failed), the live value where the server reports one, marked ``live``.

    With ``width`` (the column's cells) a cell longer than that puts what follows the value
    (``given X``, ``→ L live``) on a second line instead of cutting it (``EAGLE`` over ``given
    NEXTN`` in a 60-cell pane); the row is then 2 lines high (:func:`cell_height`)."""
    if not r.resolved and r.live_from:
        text = Text(_show(r.live), no_wrap=True, overflow="ellipsis")
        text.append(" live", "dim")
        return text
    text = Text(_show(r.value), no_wrap=True, overflow="ellipsis")
    more = Text()
    if r.disagrees:
        more.append("→ ", "bold")
        more.append(_show(r.live), f"bold {colors.get('warning', 'yellow')}")
        more.append(" live", f"bold reverse {colors.get('warning', 'yellow')}")
    if r.source == "overridden" and given is not None:
        more.append(("  " if more else "") + f"given {_show(given)}", "italic")
    if not more:
        return text
    sep = "\n" if width is not None and len(text.plain) + 2 + len(more.plain) > width else (
        " " if r.disagrees else "  ")
    return text + Text(sep) + more


def cell_height(cell: Text) -> int:
    """Lines a value cell takes (1, or 2 when :func:`value_cell` moved its note down)."""
    return cell.plain.count("\n") + 1


def detail_text(r: ArgRow, given, colors: dict[str, str], width: int | None = None, lines: int = 4) -> Text:
    """The detail area's text for row ``r``. Line 1: the flag, its full value and source; line 2:
    on an overridden or derived row the value given on the command line (``given`` from the
    resolution, None: not given), on a cli/config/env row the default, and where the live
    server disagrees ``live V (from /server_info|scheduler|log)``; line 3: the writer of an
    overridden or derived row (``changed by function file:line``, :attr:`ArgRow.changed_by`).
    With ``width`` (cells), long values are cut (``…``) until the text wraps to at most
    ``lines`` lines; failing that ``(from …)`` is left out (the table's source column says it)."""
    text = _detail(r, given, colors, 160, True)
    if width is None:
        return text
    for limit, where in ((160, True), (100, True), (64, True), (40, True), (24, True), (12, True), (12, False)):
        text = _detail(r, given, colors, limit, where)
        if wrapped_lines(text, width) <= lines:
            break
    return text


def _detail(r: ArgRow, given, colors: dict[str, str], limit: int, where: bool) -> Text:
    text = Text(no_wrap=False)
    text.append(r.flag, "bold")
    text.append(" = ")
    text.append(_show(r.value, limit))
    text.append("  ")
    text.append(r.source, source_style(r.source, colors))
    text.append("\n")
    if r.source in ("overridden", "derived"):
        if given is not None:
            text.append("given ", "dim")
            text.append(_show(given, limit), "italic")
        else:
            text.append("not given", "dim")
    elif r.source in ("cli", "config", "env"):
        text.append("default ", "dim")
        text.append(_show(r.default, limit))
    else:
        text.append("SGLang's default", "dim")
    if r.disagrees:
        warn = colors.get("warning", "yellow")
        text.append("  ·  ", "dim")
        text.append("live ", f"bold {warn}")
        text.append(_show(r.live, limit), f"bold {warn}")
        if where:
            text.append(f" (from {r.live_from})", warn)
    if r.source in ("overridden", "derived") and r.changed_by:
        text.append("\nchanged by ", "dim")
        text.append(r.changed_by)
    return text


class ArgsPane(Vertical, can_focus=False):
    """Table (flag, value, source, changed by), columns sized to the pane's width (a narrow pane
    leaves changed-by out), and under it the highlighted row in full (:func:`detail_text`). Where
    the live server disagrees with the resolution the value reads ``resolved → live live`` and the
    source says where the live value was read. Keys: ``a`` filter, ``/`` search (Enter keeps it,
    Esc in the box or on the table clears it), ``v`` source."""

    BINDINGS = [
        Binding("a", "cycle_filter", "Filter", tooltip="all / non-default / changed by SGLang / differs from the live server"),
        Binding("slash", "search", "Search"),
        Binding("v", "view_source", "Source"),
        Binding("escape", "clear_search", "Clear the search", show=False),
    ]

    DEFAULT_CSS = """
    ArgsPane DataTable { height: 1fr; }
    ArgsPane #args-search { display: none; height: 1; border: none; }
    ArgsPane #args-search.shown { display: block; }
    ArgsPane #args-detail { height: auto; min-height: 4; max-height: 5; background: $boost; }
    ArgsPane #args-note { height: auto; max-height: 3; color: $text-muted; }
    """

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.mode = "all"
        self.query_text = ""
        self._rows: list[ArgRow] = []
        self._state: ConsoleState | None = None
        self._table_shown: tuple | None = None  # (columns, widths, rows) the table holds

    def compose(self) -> ComposeResult:
        yield Input(placeholder="search flags and values (Enter: keep, Esc: clear)", id="args-search")
        yield DataTable(id="args-table", cursor_type="row", zebra_stripes=False)
        yield Static("", id="args-detail")
        yield Static("", id="args-note")

    def refresh_from(self, state: ConsoleState) -> None:
        self._state = state
        colors = self.app.theme_variables
        table = self.query_one(DataTable)
        site = state.oom_site
        sizing = site.flags if site is not None else ()
        rows = visible_rows(state.rows, self.mode, self.query_text, sizing)
        self._rows = rows
        keep = table.cursor_row
        fields = ((state.resolution or {}).get("fields") or {})
        values = [value_cell(r, (fields.get(r.field) or {}).get("given"), colors) for r in rows]
        self._layout_columns(table, [r.flag for r in rows], [v.plain for v in values],
                             [r.source + (f" · {r.live_from}" if r.disagrees else "") for r in rows],
                             [r.changed_by for r in rows])
        n_cols = len(table.columns)
        value_w = self._widths[1]
        values = [v if len(v.plain) <= value_w else value_cell(r, (fields.get(r.field) or {}).get("given"), colors, value_w)
                  for r, v in zip(rows, values)]
        cells = []
        for r, value in zip(rows, values):
            style = source_style(r.source, colors)
            source = Text(r.source, style=style, overflow="ellipsis")
            if r.disagrees:
                source.append(f" · {r.live_from}", "dim")
            flag_style = f"bold {colors.get('error', 'red')}" if r.flag in sizing else (
                "bold" if r.source != "default" else "")
            cells.append(((Text(r.flag, style=flag_style, overflow="ellipsis"), value,
                           source, Text(r.changed_by, style="dim", overflow="ellipsis"))[:n_cols], cell_height(value)))
        # the same rows in the same columns: the table is left as it is (a rebuild repaints
        # the pane; a flood of log lines asks for this pane at every change of the run's failure)
        shown = (n_cols, tuple(self._widths), cells)
        if shown != self._table_shown or table.row_count != len(cells):
            table.clear()
            for row, height in cells:
                table.add_row(*row, height=height)
            if rows:
                table.move_cursor(row=min(keep, len(rows) - 1))
            self._table_shown = shown
        self._show_detail()
        res = state.resolution
        n_dis = sum(1 for r in state.rows if r.disagrees)
        note = Text(no_wrap=False)
        if res is None:
            note.append("resolving the run's argv on the node…" if state.run else "no run", "dim")
        elif res.get("usage_error"):
            note.append("usage error: " + str(res["usage_error"].get("message", "")), colors.get("error", "red"))
        elif res.get("error"):
            e = res["error"]
            note.append("resolution failed: ", f"bold {colors.get('error', 'red')}")
            note.append(f"{e.get('type')}: {e.get('message')}  ({e.get('file')}:{e.get('line')})", colors.get("error", "red"))
            note.append("\nvalues: the argv's and the defaults as parsed; 'live': what the server reports", "dim")
        else:
            if site is not None:
                note.append("first: what sized the OOM's allocation\n", f"bold {colors.get('error', 'red')}")
            # the OOM's sizing flags are pinned whatever the filter: counted apart, so the
            # filter's own counts are of the rows it chose
            pinned = [r for r in rows if r.flag in sizing and not passes(r, self.mode)]
            chosen = [r for r in rows if r not in pinned]
            note.append(f"filter {self.mode} · {len(chosen)}/{len(state.rows)} fields")
            if pinned:
                note.append(f" + {len(pinned)} pinned (sized the OOM)")
            for i, (label, n) in enumerate(shown_counts(chosen)):
                note.append(": " if i == 0 else ", ")
                style = (source_style("overridden", colors) if n else "dim") if label == "overridden" else ""
                note.append(f"{n} {label}", style)
            if n_dis:
                # a run that is over: what its server said while it ran, not a live server
                what = "from the live server" if state.live else "from the server while it ran"
                verb = ("differs" if n_dis == 1 else "differ") if state.live else "differed"
                note.append(f" · {n_dis} {verb} {what}", f"bold {colors.get('warning', 'yellow')}")
            if not rows and state.rows and self.query_text:
                note.append(f"\nno field matches '{self.query_text}' (filter {self.mode}; Esc: clear the search)",
                            "dim")
            elif not rows and state.rows:
                note.append("\n" + {
                    "live": "no field differs from what the server reports"
                            + ("" if state.server_info or state.dumped_args else " (the server has not answered yet)"),
                    "changed": "SGLang changed no field of this argv",
                    "non-default": "every field is at SGLang's default",
                }.get(self.mode, "no field"), "dim")
        # the same note again (a flood of log lines refreshes the pane): no repaint, no layout
        update_static(self.query_one("#args-note", Static), note)

    def _layout_columns(self, table: DataTable, flags: list[str], values: list[str], sources: list[str],
                        writers: list[str]) -> None:
        """(Re)create the columns sized to the pane's width (called on every refresh and resize)."""
        width = self.size.width or 120
        widths = column_widths(width, flags, values, sources, writers)
        if getattr(self, "_widths", None) == widths and table.columns:
            return
        self._widths = widths
        table.clear(columns=True)
        for (label, key), w in zip((("flag", "flag"), ("value", "value"), ("source", "source"),
                                    ("changed by", "by")), widths):
            if w:  # changed-by is 0 (left out) in a narrow pane
                table.add_column(label, width=w, key=key)

    def _show_detail(self) -> None:
        """The detail area: the highlighted row in full (hidden when there is none)."""
        detail = self.query_one("#args-detail", Static)
        row = self.current_row()
        if row is None or self._state is None:
            detail.display = False
            return
        fields = ((self._state.resolution or {}).get("fields") or {})
        detail.update(detail_text(row, (fields.get(row.field) or {}).get("given"), self.app.theme_variables,
                                  width=detail.size.width or self.size.width or None))
        detail.display = True

    def on_data_table_row_highlighted(self, ev: DataTable.RowHighlighted) -> None:
        ev.stop()
        self._show_detail()

    def on_mount(self) -> None:
        # zoom (Screen.maximize/minimize) does not always send this pane a Resize: re-lay out
        # the columns after the screen's next layout
        self.watch(self.screen, "maximized", lambda _: self.call_after_refresh(self._relayout), init=False)

    def on_resize(self, _ev) -> None:
        self._relayout()

    def _relayout(self) -> None:
        if self._state is not None and self.is_mounted:
            self.refresh_from(self._state)

    def current_row(self) -> ArgRow | None:
        table = self.query_one(DataTable)
        if not self._rows or table.cursor_row is None:
            return None
        return self._rows[min(table.cursor_row, len(self._rows) - 1)]

    def action_cycle_filter(self) -> None:
        self.mode = FILTERS[(FILTERS.index(self.mode) + 1) % len(FILTERS)]
        if self._state:
            self.refresh_from(self._state)

    def action_search(self) -> None:
        box = self.query_one("#args-search", Input)
        box.add_class("shown")
        box.focus()

    def on_input_changed(self, ev: Input.Changed) -> None:
        if ev.input.id == "args-search":
            self.query_text = ev.value
            if self._state:
                self.refresh_from(self._state)

    def on_input_submitted(self, ev: Input.Submitted) -> None:
        if ev.input.id == "args-search":
            self.query_one(DataTable).focus()

    def on_key(self, ev) -> None:
        if ev.key == "escape" and self.query_one("#args-search", Input).has_focus:
            self.action_clear_search()
            ev.stop()

    def action_clear_search(self) -> None:
        """Esc in the search box, or on the table while a kept search is in force (one carried
        to the next run may match nothing there): no search, the box closed, the table focused."""
        box = self.query_one("#args-search", Input)
        box.value = ""
        box.remove_class("shown")
        if self.query_text:
            self.query_text = ""
            if self._state:
                self.refresh_from(self._state)
        self.query_one(DataTable).focus()

    def takes_escape(self, focused: object) -> bool:
        """Esc on the table clears a kept search before it un-zooms the pane
        (:attr:`ConsoleApp.escape_to_minimize` asks: Textual un-zooms before any binding)."""
        return bool(self.query_text) and focused is self.query_one(DataTable)

    def action_view_source(self) -> None:
        row = self.current_row()
        if row is None:
            return
        self.app.action_view_source(row)  # type: ignore[attr-defined]
