"""ServerArgs pane: the resolved args of the current run with the source of each value."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Input, Static

from mambaconsole.state import ArgRow, ConsoleState

FILTERS = ("all", "non-default", "changed")


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


def visible_rows(rows: list[ArgRow], mode: str, query: str) -> list[ArgRow]:
    """Rows the pane shows for filter ``mode`` and search ``query`` (substring of flag or value),
    SGLang-changed fields first."""
    q = query.lower()
    out = []
    for r in rows:
        if mode == "non-default" and r.source == "default" and not r.disagrees:
            continue
        if mode == "changed" and r.source not in ("derived", "overridden") and not r.disagrees:
            continue
        if q and q not in r.flag.lower() and q not in _show(r.value).lower():
            continue
        out.append(r)
    order = {"overridden": 0, "derived": 1, "cli": 2, "config": 3, "env": 4, "default": 5}
    out.sort(key=lambda r: (0 if r.disagrees else 1, order.get(r.source, 6), r.flag))
    return out


class ArgsPane(Vertical, can_focus=False):
    """Table (flag, value, source, changed by). Keys: ``a`` filter, ``/`` search, ``v`` source."""

    BINDINGS = [
        Binding("a", "cycle_filter", "Filter", tooltip="all / non-default / changed by SGLang"),
        Binding("slash", "search", "Search"),
        Binding("v", "view_source", "Source"),
    ]

    DEFAULT_CSS = """
    ArgsPane DataTable { height: 1fr; }
    ArgsPane #args-search { display: none; height: 1; border: none; }
    ArgsPane #args-search.shown { display: block; }
    ArgsPane #args-note { height: auto; max-height: 3; color: $text-muted; }
    """

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.mode = "all"
        self.query_text = ""
        self._rows: list[ArgRow] = []
        self._state: ConsoleState | None = None

    def compose(self) -> ComposeResult:
        yield Input(placeholder="search flags and values (Enter: keep, Esc: clear)", id="args-search")
        t = DataTable(id="args-table", cursor_type="row", zebra_stripes=False)
        t.add_column("flag", width=25, key="flag")
        t.add_column("value", width=12, key="value")
        t.add_column("source", width=12, key="source")
        t.add_column("changed by", width=40, key="by")
        yield t
        yield Static("", id="args-note")

    def refresh_from(self, state: ConsoleState) -> None:
        self._state = state
        colors = self.app.theme_variables
        table = self.query_one(DataTable)
        rows = visible_rows(state.rows, self.mode, self.query_text)
        self._rows = rows
        keep = table.cursor_row
        table.clear()
        for r in rows:
            style = source_style(r.source, colors)
            value = Text(_show(r.value), no_wrap=True, overflow="ellipsis")
            if r.disagrees:
                value = Text.assemble((_show(r.value), ""), (f"  live: {_show(r.live)}", f"bold {colors.get('error', 'red')}"))
            table.add_row(Text(r.flag, style="bold" if r.source != "default" else ""), value,
                          Text(r.source, style=style), Text(r.changed_by, style="dim"))
        if rows:
            table.move_cursor(row=min(keep, len(rows) - 1))
        res = state.resolution
        n_over = sum(1 for r in state.rows if r.source == "overridden")
        n_der = sum(1 for r in state.rows if r.source == "derived")
        n_dis = sum(1 for r in state.rows if r.disagrees)
        note = Text(no_wrap=False)
        if res is None:
            note.append("resolving the run's argv on the node…" if state.run else "no run", "dim")
        elif res.get("usage_error"):
            note.append("usage error: " + str(res["usage_error"].get("message", "")), colors.get("error", "red"))
        elif res.get("error"):
            e = res["error"]
            note.append(f"{e.get('type')}: {e.get('message')}  ({e.get('file')}:{e.get('line')})", colors.get("error", "red"))
        else:
            note.append(f"filter {self.mode}  ·  {len(rows)}/{len(state.rows)} fields  ·  ")
            note.append(f"{n_over} overridden", source_style("overridden", colors) if n_over else "dim")
            note.append(f"  ·  {n_der} derived")
            if n_dis:
                note.append(f"  ·  {n_dis} differ from /server_info", f"bold {colors.get('error', 'red')}")
        self.query_one("#args-note", Static).update(note)

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
        box = self.query_one("#args-search", Input)
        if ev.key == "escape" and box.has_focus:
            box.value = ""
            box.remove_class("shown")
            self.query_one(DataTable).focus()
            ev.stop()

    def action_view_source(self) -> None:
        row = self.current_row()
        if row is None:
            return
        self.app.action_view_source(row)  # type: ignore[attr-defined]
