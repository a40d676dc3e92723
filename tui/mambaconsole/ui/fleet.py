"""The fleet screen (``mambaconsole fleet TARGET...`` on a terminal): one row per worker, the
router's and the engine's view side by side, a disagreement in the theme's error colour and
marked ``!``; below, the disagreements in words and the ServerArgs differences side by side
(one row per field, one column per worker), the ones that matter first. TTFT/ITL are over the last minute once the screen has polled that long.

Keys: Enter opens today's four-pane console on the highlighted worker's host (the ``[hosts]``
settings: a section named as the URL's host with that port; a loopback URL: the ``--via`` host
or ``local``); quitting it comes back here. ``r`` polls now, ``q`` quits.

The data comes from :class:`mambaconsole.session.fleet.Fleet` (headless), polled in a worker
every ``poll_s`` seconds; the next poll is armed only after the last one finished, later while
polls fail (:meth:`mambaconsole.backoff.Backoff.poll`).
"""

from __future__ import annotations

import argparse
from urllib.parse import urlsplit

from rich.text import Text
from textual import work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from mambaconsole.session.fleet import COLUMNS, Fleet, Snapshot, disagreement_line, row_cells
from mambaconsole.ui.footer import KeyFooter

POLL_S = 2.0


class FleetApp(App[tuple[str, int | None] | None]):
    """Returns (host, port) of the worker to open, or None on quit."""

    TITLE = "mambaconsole fleet"
    CSS = """
    #fleet-status { height: 1; padding: 0 1; }
    #fleet-table { height: auto; max-height: 50%; }
    #fleet-notes { padding: 0 1; height: auto; }
    #fleet-args-title { padding: 0 1; height: 1; text-style: bold; }
    #fleet-args { height: auto; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    """
    BINDINGS = [
        Binding("enter", "open", "Open console"),
        Binding("r", "refresh", "Poll now"),
        Binding("q", "quit", "Quit"),
    ]

    def __init__(self, fleet: Fleet, *, poll_s: float = POLL_S, theme: str | None = None) -> None:
        super().__init__()
        self.fleet = fleet
        self.poll_s = poll_s
        self.snapshot: Snapshot | None = None
        self.args_table = None  # the ServerArgs differences shown: header and rows of cell texts
        self._polls = 0
        self._fails = 0  # polls in a row that failed
        from mambaconsole.ui.themes import load_themes

        for th in load_themes():
            self.register_theme(th)
        want = theme or "mamba-dark"
        if want in self.available_themes:
            self.theme = want

    def compose(self) -> ComposeResult:
        yield Static("polling the fleet…", id="fleet-status")
        table = DataTable(id="fleet-table", cursor_type="row", zebra_stripes=True)
        table.add_columns("", *COLUMNS)
        yield table
        with VerticalScroll():
            yield Static("", id="fleet-notes")
            yield Static("", id="fleet-args-title")
            yield Static("", id="fleet-args")
        yield KeyFooter()

    async def on_mount(self) -> None:
        await self.fleet.__aenter__()
        self.query_one("#fleet-table", DataTable).focus()
        self.poll()

    async def on_unmount(self) -> None:
        await self.fleet.__aexit__(None, None, None)

    @work(exclusive=True, exit_on_error=False, group="fleet-poll")
    async def poll(self) -> None:
        """One poll; the next is armed when this one has finished, whatever happened (backing
        off while polls fail)."""
        from mambaconsole.backoff import Backoff

        try:
            snap = await self.fleet.poll()
            self._polls += 1
            self._fails = 0
            self.show(snap)
        except Exception as exc:  # noqa: BLE001 - a failed poll is shown, the next one still comes
            self._fails += 1
            self.query_one("#fleet-status", Static).update(
                Text(f"poll failed: {type(exc).__name__}: {exc}", style=f"bold {self.current_theme.error or 'red'}"))
        finally:
            self.set_timer(Backoff.poll(self.poll_s).next_in(fails=self._fails), self.poll)

    def action_refresh(self) -> None:
        self.poll()

    def show(self, snap: Snapshot) -> None:
        self.snapshot = snap
        err = self.current_theme.error or "red"
        warn = self.current_theme.warning or "yellow"
        marked = {d.worker for d in snap.disagreements}
        table = self.query_one("#fleet-table", DataTable)
        keep = table.cursor_row
        table.clear()
        for w in snap.workers:
            cells = row_cells(w, short=True)
            bad = w.url in marked
            row = [Text("!", style=f"bold {err}") if bad else Text("")]
            for name, cell in zip(COLUMNS, cells):
                style = ""
                if bad and name in ("ROUTER", "ENGINE"):
                    style = f"bold {err}"
                elif name == "ENGINE" and w.engine_health != "healthy":
                    style = f"bold {err}"
                elif name == "ROUTER" and w.router_health == "unhealthy":
                    style = warn
                row.append(Text(cell, style=style, no_wrap=True, overflow="ellipsis"))
            table.add_row(*row, key=w.url)
        if snap.workers:
            table.move_cursor(row=min(max(keep, 0), len(snap.workers) - 1))
        window = {w.latency.window_s for w in snap.workers if w.latency.window_s}
        lat = (f"TTFT/ITL over the last {max(window):.0f} s" if window else
               "TTFT/ITL since each server started (one look so far)")
        status = f"{len(snap.workers)} workers · {len(snap.disagreements)} disagreements · {lat} · Enter: console"
        for url, e in snap.router_errors.items():
            status += f" · router {url}: {e}"
        self.query_one("#fleet-status", Static).update(Text(status, style=f"bold {err}" if snap.router_errors else ""))
        notes = Text()
        if snap.disagreements:
            notes.append("router and engine disagree\n", style="bold")
            for d in snap.disagreements:
                notes.append(disagreement_line(d) + "\n", style=err)
        self.query_one("#fleet-notes", Static).update(notes)
        self._show_args(snap, warn)

    def _show_args(self, snap: Snapshot, warn: str) -> None:
        """The ServerArgs differences side by side: one row per field, one column per worker
        (the ones that matter first, in the warning colour; the others dimmed)."""
        title = self.query_one("#fleet-args-title", Static)
        box = self.query_one("#fleet-args", Static)
        names = [w.url for w in snap.workers if w.args is not None]
        if not snap.differences:
            title.update("ServerArgs: no differences between the workers that answered" if names else "")
            box.update("")
            self.args_table = None
            return
        title.update("ServerArgs differences (the ones that matter first)")
        head = ("field", "between", *(n.split("://", 1)[-1] for n in names), "why")
        rows = []
        for d in snap.differences:
            vals = dict(d.values)
            rows.append(((d.field, d.between, *("" if n not in vals else repr(vals[n]) for n in names), d.why),
                         f"bold {warn}" if d.matters else "dim"))
        widths = [max(len(r[i]) for r in [head] + [c for c, _ in rows]) for i in range(len(head) - 1)]

        def line(cells) -> str:
            return "  ".join(c.ljust(w) for c, w in zip(cells, widths)) + "  " + cells[-1]

        text = Text(no_wrap=True, overflow="ellipsis")
        text.append(line(head) + "\n", style="bold")
        for cells, style in rows:
            text.append(line(cells) + "\n", style=style)
        text.rstrip()
        box.update(text)
        self.args_table = [head] + [c for c, _ in rows]  # what the box shows (tests read it)

    def action_open(self) -> None:
        snap = self.snapshot
        table = self.query_one("#fleet-table", DataTable)
        if snap is None or not snap.workers or table.cursor_row < 0:
            return
        w = snap.workers[min(table.cursor_row, len(snap.workers) - 1)]
        if w.host is None:
            self.notify(f"{w.url}: no [hosts] entry maps to this worker (a [hosts.NAME] with NAME = the URL's host "
                        "and its port)", severity="warning", timeout=8)
            return
        port = urlsplit(w.url).port if w.url.startswith("http") else None
        self.exit((w.host, port))

    def on_data_table_row_selected(self, _ev: DataTable.RowSelected) -> None:
        self.action_open()


def run(args: argparse.Namespace) -> int:
    """The fleet screen; Enter runs the console on a worker's host (its session made as
    ``mambaconsole HOST`` makes one, :func:`mambaconsole.session.session.for_host`), then comes
    back."""
    from mambaconsole.commands.fleet import fleet_for
    from mambaconsole.session.session import for_host
    from mambaconsole.ui import app as console

    while True:
        choice = FleetApp(fleet_for(args)).run()
        if not choice:
            return 0
        host, port = choice
        console.run_session(for_host(host, {"port": port}))
