"""``h``: the run history kept on the node, newest first: per run the argv diff from the
previous run, outcome, time to ready, peak GPU memory, mean accept length."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from mambaconsole.state import RunInfo, fmt_duration
from mambaconsole.ui.argv_diff import diff_text


def history_rows(runs: list[RunInfo], clock=time.time) -> list[tuple]:
    rows = []
    prev = None
    for r in runs:
        when = time.strftime("%m-%d %H:%M:%S", time.localtime(r.started)) if r.started else "?"
        out = r.outcome or r.state
        if r.exit_code is not None:
            out += f" ({r.exit_code})"
        d = diff_text(prev.argv, r.argv) if prev is not None else "first run"
        rows.append((r.run_id, when, out, fmt_duration(r.time_to_ready) if r.time_to_ready is not None else "-",
                     f"{r.peak_mem_mib / 1024:.1f} GiB" if r.peak_mem_mib else "-",
                     f"{r.mean_accept_len:.2f}" if r.mean_accept_len else "-", d))
        prev = r
    return list(reversed(rows))


class HistoryScreen(Screen[None]):
    BINDINGS = [Binding("escape,h,q", "close", "Back")]
    DEFAULT_CSS = """
    HistoryScreen #hist-title { height: 1; background: $panel; padding: 0 1; }
    HistoryScreen DataTable { height: 1fr; }
    """

    def __init__(self, runs: list[RunInfo], host: str, current: str | None) -> None:
        super().__init__()
        self.runs, self.host, self.current = runs, host, current

    def compose(self) -> ComposeResult:
        yield Static(Text.assemble(("Run history", "bold"), f" on {self.host}: {len(self.runs)} runs, newest first"),
                     id="hist-title")
        t = DataTable(cursor_type="row", id="hist-table")
        t.add_columns("run", "started", "outcome", "to ready", "peak GPU", "accept len", "argv change from previous run")
        for row in history_rows(self.runs):
            style = "bold" if row[0] == self.current else ""
            outcome = row[2]
            ostyle = "green" if outcome.startswith("ready") else ("red" if any(w in outcome for w in ("oom", "arg_error", "crash", "dead", "exited")) else "")
            t.add_row(Text(row[0], style=style), row[1], Text(outcome, style=ostyle), *row[3:6], row[6])
        yield t
        yield Footer()

    def action_close(self) -> None:
        self.dismiss(None)
