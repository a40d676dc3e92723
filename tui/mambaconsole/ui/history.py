"""``h``: the run history kept on the node, newest first: per run the argv diff from the
previous run, outcome, time to ready, peak GPU memory, the log's memory budget, mean accept
length. What the run record does not hold is read from each run's log on the node (SGLang
knowledge's ``summarize``), in a worker, and filled in as it arrives.

"peak GPU" is the largest of (:func:`peak`): what a console sampled (the highest used memory of
one GPU, NVML / nvidia-smi MiB, while the run was current and alive, kept with the run on the
node by ``RunStore.note``), what PyTorch's OOM message says the process had in use when it
failed, and the budget its log reported allocated; the cell says which (``seen``, ``OOM msg``,
``log``): samples every few seconds miss the last allocations before an OOM. "budget" is what
the run's log said it allocated (weights + KV cache + Mamba cache + CUDA graphs). One unit on the
screen: GiB (SGLang's log says "GB" and means 2**30 bytes; PyTorch's message prints GiB)."""

from __future__ import annotations

import time

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Static

from mambaconsole.units import count
from mambaconsole.state import RunInfo, fmt_duration, state_label, status_word
from mambaconsole.sglang.argv_diff import diff_text
from mambaconsole.sglang.text import display_text
from mambaconsole.ui.footer import KeyFooter

#: runs summarised from their logs at most (newest first)
SUMMARISE = 30
COLUMNS = ("run", "started", "outcome", "to ready", "peak GPU", "budget (log)", "accept len",
           "argv change")  # from the previous run: the detail line under the table says so


class Summarised(Message):
    def __init__(self, run_id: str, summary: dict) -> None:
        super().__init__()
        self.run_id, self.summary = run_id, summary


#: where a peak came from: its word in the cell, its words in the detail line
PEAK_SOURCES = {"seen": "sampled by a console", "OOM msg": "PyTorch's OOM message: in use when the run failed",
                "log": "the log's budget: allocated by the run"}


def peak(sampled_mib: float | None, oom_in_use_gib: float | None = None,
         budget_gib: float | None = None) -> tuple[float, str] | None:
    """The run's peak GPU memory in GiB and its source (a key of :data:`PEAK_SOURCES`): the
    largest of the sampled MiB / 1024, the OOM message's in-use GiB and the log's budget GiB
    (each a lower bound of the true peak); None when none is known."""
    known = [(v, src) for v, src in ((sampled_mib / 1024 if sampled_mib is not None else None, "seen"),
                                     (oom_in_use_gib, "OOM msg"), (budget_gib, "log")) if v]
    return max(known, key=lambda x: x[0]) if known else None


def history_rows(runs: list[RunInfo], summaries: dict[str, dict] | None = None,
                 peaks: dict[str, float] | None = None, current: tuple[str, str] | None = None) -> list[tuple]:
    """One tuple of cell texts per run (the COLUMNS), newest first (``summaries``: run id ->
    run_summary(); ``peaks``: run id -> peak GPU MiB this console saw, merged with the run
    record's and the log's numbers by :func:`peak`; ``current``: (run id, status word) of the run the header
    shows, whose word wins). Outcomes in the header's words (:func:`state_label`)."""
    summaries = summaries or {}
    peaks = peaks or {}
    rows = []
    prev = None
    for r in runs:
        s = summaries.get(r.run_id, {})
        when = time.strftime("%m-%d %H:%M:%S", time.localtime(r.started)) if r.started else "?"
        word = current[1] if current and current[0] == r.run_id else status_word(r, r.outcome or s.get("outcome"))
        out = state_label(word, r.exit_code)
        ttr = r.time_to_ready if r.time_to_ready is not None else s.get("time_to_ready")
        seen = [v for v in (r.peak_mem_mib, peaks.get(r.run_id)) if v is not None]
        top = peak(max(seen) if seen else None, s.get("oom_in_use_gib"), s.get("budget_gb"))
        top_text = f"{top[0]:.1f} GiB {top[1]}" if top else "-"
        budget = f"{s['budget_gb']:.1f} GiB" if s.get("budget_gb") else "-"
        acc = r.mean_accept_len or s.get("mean_accept_len")
        d = diff_text(prev.argv, r.argv) if prev is not None else "first run"
        rows.append((r.run_id, when, out, fmt_duration(ttr) if ttr is not None else "-", top_text, budget,
                     f"{acc:.2f}" if acc else "-", d))
        prev = r
    return list(reversed(rows))


class HistoryScreen(Screen[str | None]):
    """The run history; Enter on a run shows its log in the log pane (dismisses with its id)."""

    BINDINGS = [Binding("escape,h,q", "close", "Back"), Binding("enter", "open_log", "Show its log")]
    DEFAULT_CSS = """
    HistoryScreen #hist-title { height: 1; background: $panel; padding: 0 1; }
    HistoryScreen DataTable { height: 1fr; }
    HistoryScreen #hist-detail { height: auto; max-height: 8; padding: 0 1; background: $panel; }
    """

    def __init__(self, runs: list[RunInfo], host: str, current: str | None, feed=None,
                 cache: dict[str, dict] | None = None, peaks: dict[str, float] | None = None,
                 current_word: str | None = None) -> None:
        super().__init__()
        self.runs, self.host, self.current, self.feed = runs, host, current, feed
        self.current_word = current_word
        self.cache = cache if cache is not None else {}
        self.peaks = peaks if peaks is not None else {}

    def compose(self) -> ComposeResult:
        yield Static(Text.assemble(("Run history", "bold"), f"  on {self.host}: {count(len(self.runs), 'run')}, newest first"),
                     id="hist-title")
        t = DataTable(cursor_type="row", id="hist-table")
        for c in COLUMNS:
            t.add_column(c, key=c)
        yield t
        yield Static("", id="hist-detail")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._fill()
        if self.feed is not None:
            todo = [r for r in reversed(self.runs) if r.run_id not in self.cache][:SUMMARISE]
            if todo:
                self._summarise(todo)

    def _fill(self) -> None:
        t = self.query_one(DataTable)
        t.clear()
        colors = self.app.theme_variables
        cur = (self.current, self.current_word) if self.current and self.current_word else None
        rows = history_rows(self.runs, self.cache, self.peaks, cur)
        for row in rows:
            outcome = row[2]
            ostyle = colors.get("success", "green") if outcome.startswith("READY") else (
                colors.get("error", "red") if outcome.split(" exit")[0] in ("OOM", "ARG ERROR", "CRASHED", "DEAD", "NEVER STARTED") else "")
            # every cell a Text: a str cell would be read as Rich markup, and an argv is the node's
            # text ("--chat-template '[INST] x [/INST]'" is not markup; an escape is not drawn)
            t.add_row(Text(row[0], style="bold" if row[0] == self.current else ""), Text(row[1]),
                      Text(outcome, style=ostyle), *(Text(c) for c in row[3:7]), Text(display_text(row[7])),
                      key=row[0])
        self._rows = {row[0]: row for row in rows}
        self._show_detail()

    def _show_detail(self) -> None:
        """The highlighted run in full under the table: its id, outcome and the whole argv
        change from the previous run (the table's last column cuts it)."""
        t = self.query_one(DataTable)
        rows = getattr(self, "_rows", {})
        if not t.row_count:
            self.query_one("#hist-detail", Static).update(Text("no runs on this node yet", style="dim"))
            return
        rid = t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value
        row = rows.get(rid)
        if row is None:
            return
        d = Text(no_wrap=False)
        d.append(f"run {rid}", "bold")
        d.append(f"  {row[2]}  started {row[1]}  to ready {row[3]}  peak {self._peak_detail(row[4])}  accept len {row[6]}\n")
        d.append("argv change from the previous run: ", "dim")
        d.append(display_text(row[7]) or "(none)")
        d.append("\nEnter: show its log in the log pane", "dim")
        self.query_one("#hist-detail", Static).update(d)

    @staticmethod
    def _peak_detail(cell: str) -> str:
        """``88.0 GiB OOM msg`` → ``88.0 GiB (PyTorch's OOM message: in use when the run failed)``."""
        for word, words in PEAK_SOURCES.items():
            if cell.endswith(" " + word):
                return f"{cell[: -len(word) - 1]} ({words})"
        return cell

    def on_data_table_row_highlighted(self, _ev: DataTable.RowHighlighted) -> None:
        self._show_detail()

    @work(exclusive=True, group="history", exit_on_error=False)
    async def _summarise(self, runs: list[RunInfo]) -> None:
        for r in runs:
            try:
                s = await self.feed.run_summary(r)
            except Exception:  # noqa: BLE001 - a run whose log cannot be read keeps its dashes
                continue
            self.post_message(Summarised(r.run_id, s))

    @on(Summarised)
    def _summarised(self, msg: Summarised) -> None:
        run = next((r for r in self.runs if r.run_id == msg.run_id), None)
        if run is not None and run.state in ("exited", "dead"):
            self.cache[msg.run_id] = msg.summary  # a finished run's log no longer changes
        else:
            self.cache = dict(self.cache, **{msg.run_id: msg.summary})
        self._fill()

    def action_close(self) -> None:
        self.dismiss(None)

    def action_open_log(self) -> None:
        t = self.query_one(DataTable)
        if t.row_count:
            self.dismiss(t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value)

    def on_data_table_row_selected(self, ev: DataTable.RowSelected) -> None:  # Enter (the table has focus) or a click
        ev.stop()
        self.dismiss(ev.row_key.value)
