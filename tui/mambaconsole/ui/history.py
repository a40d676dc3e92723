"""``h``: the run history kept on the node, newest first: per run the argv diff from the
previous run, outcome, time to ready, peak GPU memory, the log's memory budget, mean accept
length. What the run record does not hold is read from each run's log on the node (SGLang
knowledge's ``summarize``), in a worker, and filled in as it arrives.

The table fits its screen: the argv change column takes the width the other columns leave. Where
the screen is too narrow for every column and :data:`ARGV_MIN` cells of the argv change, columns
give way, whole, in the order of :data:`GIVE_WAY` (the title says which, :func:`left_out_note`); the detail line under
the table holds every column of the highlighted run, the argv change whole. The argv change
cell shows the changes that fit whole and says how many it left out (``… 1 more``,
:func:`fit_changes`).

"peak GPU" is the largest of (:func:`peak`): what a console sampled (the highest used memory of
one GPU, NVML / nvidia-smi MiB, while the run was current and alive, kept with the run on the
node by ``RunStore.note``), what PyTorch's OOM message says the process had in use when it
failed, and the budget its log reported allocated; the cell says which (``seen``, ``OOM msg``,
``log``): samples every few seconds miss the last allocations before an OOM. "budget" is what
the run's log said it allocated (weights + KV cache + Mamba cache + CUDA graphs). One unit on the
screen: GiB (SGLang's log says "GB" and means 2**30 bytes; PyTorch's message prints GiB)."""

from __future__ import annotations

import time
from collections.abc import Sequence

from rich.cells import cell_len, set_cell_size
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Static

from mambaconsole.units import count
from mambaconsole.state import RunInfo, fmt_duration, state_label, status_word
from mambaconsole.sglang.argv_diff import change_texts
from mambaconsole.sglang.text import display_text
from mambaconsole.ui.footer import KeyFooter

#: runs summarised from their logs at most (newest first)
SUMMARISE = 30
COLUMNS = ("run", "started", "outcome", "to ready", "peak GPU", "budget (log)", "accept len",
           "argv change")  # from the previous run: the detail line under the table says so
#: the columns left out of a table too narrow for all of them, the first to go first (each is in
#: the detail line under the table): "started" (a run id begins with its UTC start), the
#: log's budget is a lower bound of the peak, then the numbers; run, outcome and argv change stay
GIVE_WAY = ("started", "budget (log)", "accept len", "to ready", "peak GPU")
#: cells the argv change column keeps before other columns give way: one change of a long SGLang
#: flag whole (``+ --mamba-full-memory-ratio 0.4`` is 31 cells, ``~ --mem-fraction-static 0.85→0.8`` 33)
ARGV_MIN = 36
#: DataTable's cell padding: blank cells each side of a column
PAD = 1


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


def fit_changes(changes: Sequence[str], width: int) -> str:
    """``changes`` (one text each, :func:`~mambaconsole.sglang.argv_diff.change_texts`) in
    ``width`` cells, two spaces apart: all where they fit; else those that fit whole, in order,
    then ``… N more``; a first change too long alone cut, its end ``…`` (``+ --speculative-dra…
    2 more``). What is left out is in the detail line under the table."""
    whole = "  ".join(changes)
    if cell_len(whole) <= width:
        return whole
    for k in range(len(changes) - 1, 0, -1):
        text = "  ".join(changes[:k]) + f" … {len(changes) - k} more"
        if cell_len(text) <= width:
            return text
    more = f" {len(changes) - 1} more" if len(changes) > 1 else ""
    room = width - cell_len(more)
    if room < 2:  # not even a cell of the first change and its ellipsis beside the count
        return set_cell_size(whole, max(width - 1, 0)) + "…" if width else ""
    return set_cell_size(changes[0], room - 1) + "…" + more


def column_layout(rows: Sequence[tuple], width: int) -> tuple[list[str], int]:
    """``(columns shown, argv change width)``: the :data:`COLUMNS` a table ``width`` cells wide
    shows for ``rows`` (:func:`history_rows`) and the cells its argv change column gets. Each
    other column is as wide as its widest cell or header; while they and ``min(the widest argv
    change, ARGV_MIN)`` do not fit, the next of :data:`GIVE_WAY` is left out; the argv change
    then takes what the others leave (at least that minimum: the table scrolls sideways where
    even run and outcome leave less)."""
    need = {c: max([cell_len(c)] + [cell_len(row[i]) for row in rows]) + 2 * PAD
            for i, c in enumerate(COLUMNS[:-1])}
    widest = max([cell_len(COLUMNS[-1])] + [cell_len("  ".join(row[-1])) for row in rows])
    floor = min(widest, ARGV_MIN)
    shown = list(COLUMNS[:-1])
    for c in GIVE_WAY:
        if sum(need[x] for x in shown) + floor + 2 * PAD <= width:
            break
        shown.remove(c)
    return shown + [COLUMNS[-1]], max(floor, width - sum(need[x] for x in shown) - 2 * PAD)


def left_out_note(left: Sequence[str], room: int) -> str:
    """What the title says of the columns the table left out (``left``; the detail line under
    the table holds them), in ``room`` cells: their names and where they are, else their count
    and where, else their count (``  · started, budget (log) in the details below``)."""
    where = " in the details below"
    notes = (f"  · {', '.join(left)}{where}", f"  · {count(len(left), 'column')}{where}",
             f"  · {count(len(left), 'column')} left out")
    return next((n for n in notes if cell_len(n) <= room), notes[-1])


def history_rows(runs: list[RunInfo], summaries: dict[str, dict] | None = None,
                 peaks: dict[str, float] | None = None, current: tuple[str, str] | None = None) -> list[tuple]:
    """One tuple of cell texts per run (the COLUMNS; the argv change a tuple of one text per
    change, ``("first run",)``, ``("unchanged",)``), newest first (``summaries``: run id ->
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
        if prev is None:
            d = ("first run",)
        else:  # each change drawable: the node's text, its control characters made visible
            d = tuple(display_text(c) for c in change_texts(prev.argv, r.argv)) or ("unchanged",)
        rows.append((r.run_id, when, out, fmt_duration(ttr) if ttr is not None else "-", top_text, budget,
                     f"{acc:.2f}" if acc else "-", d))
        prev = r
    return list(reversed(rows))


class _HistoryTable(DataTable):
    """The history's table: a new size (the detail line under it grew or shrank) fits it again."""

    def on_resize(self) -> None:
        screen = self.screen
        if isinstance(screen, HistoryScreen):
            screen.refit()


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
        yield Static("", id="hist-title")
        yield _HistoryTable(cursor_type="row", id="hist-table")
        yield Static("", id="hist-detail")
        yield KeyFooter()

    def on_mount(self) -> None:
        self._fill()
        if self.feed is not None:
            todo = [r for r in reversed(self.runs) if r.run_id not in self.cache][:SUMMARISE]
            if todo:
                self._summarise(todo)

    def _room(self, t: DataTable, n_rows: int) -> int:
        """Cells across the table's rows: its width (the screen's before its first layout), less
        the vertical scrollbar where the rows and the header overflow its height."""
        width, height = t.size if t.size.width else (self.size.width, self.size.height - 3)
        return width - (t.styles.scrollbar_size_vertical if n_rows + t.header_height > height else 0)

    def _fill(self) -> None:
        """The table anew from the runs and the summaries, fitted to its width (:func:`column_layout`);
        the highlighted run stays highlighted."""
        t = self.query_one(DataTable)
        colors = self.app.theme_variables
        cur = (self.current, self.current_word) if self.current and self.current_word else None
        rows = history_rows(self.runs, self.cache, self.peaks, cur)
        room = self._room(t, len(rows))
        shown, argv_width = column_layout(rows, room)
        self._fitted_to = room
        keep = t.coordinate_to_cell_key(t.cursor_coordinate).row_key.value if t.row_count else None
        t.clear(columns=True)
        for c in shown:
            t.add_column(c, key=c, width=argv_width if c == COLUMNS[-1] else None)
        for row in rows:
            outcome = row[2]
            ostyle = colors.get("success", "green") if outcome.startswith("READY") else (
                colors.get("error", "red") if outcome.split(" exit")[0] in ("OOM", "ARG ERROR", "CRASHED", "DEAD", "NEVER STARTED") else "")
            # every cell a Text: a str cell would be read as Rich markup, and an argv is the node's
            # text ("--chat-template '[INST] x [/INST]'" is not markup; an escape is not drawn)
            cells = {c: Text(v) for c, v in zip(COLUMNS, row[:-1])}
            cells[COLUMNS[0]].stylize("bold" if row[0] == self.current else "")
            cells["outcome"].stylize(ostyle)
            cells[COLUMNS[-1]] = Text(fit_changes(row[-1], argv_width))
            t.add_row(*(cells[c] for c in shown), key=row[0])
        if keep is not None and keep in {row[0] for row in rows}:
            t.move_cursor(row=t.get_row_index(keep), animate=False)
        self._rows = {row[0]: row for row in rows}
        title = Text.assemble(("Run history", "bold"), f"  on {self.host}: {count(len(self.runs), 'run')}, newest first")
        left = [c for c in COLUMNS if c not in shown]
        if left:
            title.append(left_out_note(left, self.size.width - 2 - title.cell_len), "dim")
        self.query_one("#hist-title", Static).update(title)
        self._show_detail()

    def refit(self) -> None:
        """The table's room changed (a new screen size, the detail line's height, the vertical
        scrollbar): fit it again where the room across its rows changed."""
        t = self.query_one(DataTable)
        rows = getattr(self, "_rows", None)
        if rows is not None and self._room(t, len(rows)) != self._fitted_to:
            self._fill()

    def on_resize(self) -> None:
        self.refit()

    def _show_detail(self) -> None:
        """The highlighted run in full under the table: every column (the table may leave some
        out) and the whole argv change from the previous run (the table's column may cut it)."""
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
        d.append(f"  {row[2]}  started {row[1]}  to ready {row[3]}  peak {self._peak_detail(row[4])}"
                 f"  budget (log) {row[5]}  accept len {row[6]}\n")
        d.append("argv change from the previous run: ", "dim")
        d.append("  ".join(row[-1]))
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
