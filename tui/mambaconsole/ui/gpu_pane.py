"""GPU memory pane: a bar per GPU (split by the run's memory budget once the log told us),
utilisation, a short history of used memory, and the processes holding memory.

One unit in the pane: GiB (1024³ bytes). The readings come from NVML / nvidia-smi in MiB
(:class:`~mambaconsole.state.GpuReading`) and are divided by 1024. The budget (weights, KV cache,
Mamba, graphs) comes from SGLang's log, which prints "GB" but computes bytes / 1024³ (SGLang
0.5.23: ``GB = 1024 * 1024 * 1024`` in ``srt/mem_cache/memory_pool.py``,
``free_gpu_memory / (1 << 30)`` in ``srt/utils/common.py:get_available_gpu_memory``): those
numbers are GiB already and are shown as such, with a legend line saying so. The percentage on a
bar line is memory used / total, the same division that sizes the bar and prints used/total
(:func:`gpu_memory`); utilisation is labelled ``util`` on the name line.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from mambaconsole.state import ConsoleState
from mambaconsole.units import SGLANG_GB, fmt_duration
from mambaconsole.ui.fit import MEASURE, item_lines, wrapped_lines
from mambaconsole.ui.redraw import update_static

_SPARK = "▁▂▃▄▅▆▇█"
#: budget items in drawing order, with their theme colour variable and legend letter
BUDGET = (("weights", "primary", "W"), ("kv", "secondary", "K"), ("mamba conv", "accent", "c"),
          ("mamba ssm", "accent", "M"), ("mamba spec", "error", "s"), ("graphs", "warning", "G"))
MIB_PER_GIB = 1024
#: the legend's word on SGLang's "GB"
GB_NOTE = f"budget GiB ({SGLANG_GB}):"


def gpu_memory(used_mib: float, total_mib: float) -> tuple[float, float, float | None]:
    """``(used_gib, total_gib, used_fraction)`` from a reading in MiB; the fraction is None
    when the total is unknown (0). One computation for the bar, used/total and the percent."""
    frac = min(1.0, max(0.0, used_mib / total_mib)) if total_mib > 0 else None
    return used_mib / MIB_PER_GIB, total_mib / MIB_PER_GIB, frac


def sparkline(values, width: int) -> str:
    """The last ``width`` values, one column each, from 0 (``▁``) to the highest of them (``█``)."""
    vals = list(values)[-width:]
    if not vals:
        return ""
    hi = max(vals) or 1.0
    return "".join(_SPARK[min(len(_SPARK) - 1, int(v / hi * (len(_SPARK) - 1)))] for v in vals)


def stale_note(state: ConsoleState) -> str | None:
    """``GPU reading 23 s old: none newer from the node`` once the shown reading is stale
    (:meth:`ConsoleState.gpu_stale_age`); None while it is fresh."""
    age = state.gpu_stale_age()
    return None if age is None else f"GPU reading {fmt_duration(age)} old: none newer from the node"


def gpu_renderable(state: ConsoleState, width: int, colors: dict[str, str]):
    snap = state.gpu
    out = Table.grid(expand=True)
    out.add_column()
    note = stale_note(state)
    if note is not None:  # first: the numbers below are that old
        out.add_row(Text(note, style=f"bold {colors.get('warning', 'yellow')}", no_wrap=True, overflow="ellipsis"))
    if snap is None or not snap.available:
        why = "waiting for the first GPU sample…" if snap is None else f"no GPU reading: {snap.reason or 'no GPU on this node'}"
        out.add_row(Text(why, style="dim"))
        if state.budget_gb:
            out.add_row(Text("memory budget from the run's log:", style="bold"))
            out.add_row(_legend(state, colors, width))
        _add_oom_row(out, state, colors)
        return out
    pids = state.server_pids()
    for g in snap.gpus:
        used_gib, total_gib, frac = gpu_memory(g.used_mib, g.total_mib)
        numbers = (f" {used_gib:5.1f} GiB used, total unknown" if frac is None
                   else f" {used_gib:5.1f}/{total_gib:.1f} GiB {frac * 100:3.0f}%")
        bar_w = max(10, width - len(numbers) - 1)  # the bar fills the line; the numbers stay whole
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f"GPU{g.index} ", "bold")
        line.append(g.name[:40])
        if g.simulated or snap.simulated:
            line.append(" (simulated)", colors.get("warning", "yellow"))
        line.append(f"  util {g.util:.0f}%" if g.util is not None else "  util -")
        out.add_row(line)
        bar = Text(no_wrap=True)
        cells_left = bar_w
        budget = state.budget_gb if len(snap.gpus) == 1 or state.budget_gb else {}
        used_cells = round((frac or 0.0) * bar_w)
        drawn = 0
        if budget:
            for key, var, letter in BUDGET:
                gib = budget.get(key)
                if not gib or not total_gib:
                    continue
                n = min(used_cells - drawn, round(gib / total_gib * bar_w))
                if n <= 0:
                    continue
                label = letter.ljust(n, " ")[:n] if n >= 1 else ""
                bar.append(label, f"black on {colors.get(var, 'blue')}")
                drawn += n
            other = used_cells - drawn
            if other > 0:
                bar.append("o".ljust(other)[:other], f"black on {_other_colour(colors)}")
                drawn += other
        else:
            bar.append(" " * used_cells, f"on {colors.get('primary', 'blue')}")
            drawn = used_cells
        bar.append("·" * max(0, cells_left - drawn), "dim")
        bar.append(numbers)
        out.add_row(bar)
        hist = state.gpu_history.get(g.index)
        if hist:
            out.add_row(history_row(list(hist), state.gpu_interval_s, width, colors))
    missed = missed_peak_note(state)
    if missed is not None:  # under the sampled range it qualifies: above the OOM's lines, seen at 120x40
        out.add_row(Text(missed, style=colors.get("warning", "yellow")))
    if state.budget_gb:
        out.add_row(_legend(state, colors, width))
    _add_oom_row(out, state, colors)
    procs = [p for p in snap.processes]
    if procs:
        out.add_row(Text("PID      GPU    GiB  command", style="bold"))
        for p in sorted(procs, key=lambda p: -p.used_mib)[:6]:
            mark = "★" if p.pid in pids else " "
            cmd = p.command if p.resolved else "(PID not visible on the node: container?)"
            style = "bold" if p.pid in pids else ("italic dim" if not p.resolved else "")
            out.add_row(Text(f"{mark}{p.pid:<7} {p.gpu:>3} {p.used_mib / MIB_PER_GIB:>6.1f}  {cmd}", style=style,
                             no_wrap=True, overflow="ellipsis"))
    elif snap.gpus:
        out.add_row(Text("no process holds GPU memory", style="dim"))
    return out


def history_row(hist_mib: list[float], interval_s: float, width: int, colors: dict[str, str]) -> Text:
    """``used 51.7–88.5 GiB sampled, last 2 min ▁▂▅█████``: the used-memory history of one GPU,
    one column per sample (MiB in, GiB said). The range is the lowest and highest of the samples
    the line shows, and only those (one value when they agree); the span is the time those
    samples cover (samples × ``interval_s``, the GPU stream's interval: once a run's memory is
    steady the line is flat, and the span says how far back it reaches). The bars rise from 0
    to the highest sample shown. "sampled": memory between two samples is not seen (a peak
    just before an OOM is often missed: :func:`missed_peak_note` says so under this line)."""
    def label(n: int) -> str:
        shown = hist_mib[-n:]
        lo, hi = f"{min(shown) / MIB_PER_GIB:.1f}", f"{max(shown) / MIB_PER_GIB:.1f}"
        span = "1 sample" if n == 1 else f"last {fmt_duration(n * interval_s)}"
        return f"used {hi if lo == hi else lo + '–' + hi} GiB sampled, {span} "

    n = min(len(hist_mib), width)
    while n > 1 and n + len(label(n)) > width:  # the label's length depends on the samples it covers
        n -= 1
    t = Text(no_wrap=True, overflow="ellipsis")
    t.append(label(n), "dim")
    t.append(sparkline(hist_mib, n), colors.get("primary", "blue"))
    return t


def missed_peak_note(state: ConsoleState) -> str | None:
    """``the OOM's 88.02 GiB fell between samples (highest 9.1)``: said under the history when
    PyTorch's OOM message (:class:`TorchOom <mambaconsole.sglang.events.TorchOom>`, GiB) says
    the process had more memory in use than any GPU held in the samples this console took while
    the run was alive (the ``gpu`` slice's peak, MiB, shown in GiB): a GPU's used memory
    includes its processes', so the samples missed the peak, and the sampled range is not it.
    None when either is unknown or a sample reached it."""
    oom, run = state.oom_numbers, state.run
    seen = state.gpu_peak_mib.get(run.run_id) if run is not None else None
    if oom is None or oom.in_use_gib is None or seen is None or seen / MIB_PER_GIB >= oom.in_use_gib:
        return None
    return f"the OOM's {oom.in_use_gib:.2f} GiB fell between samples (highest {seen / MIB_PER_GIB:.1f})"


def _add_oom_row(out: Table, state: ConsoleState, colors: dict[str, str]) -> None:
    """What PyTorch said at the failing allocation of a run that died of an OOM (the log's
    budget may stop short of it); nothing otherwise."""
    oom = state.oom_numbers
    if oom is not None:
        out.add_row(Text("at the OOM: " + oom.describe(), style=colors.get("error", "red")))


#: GiB below which PyTorch's allocated memory and the log's budget are taken to agree (the two
#: are measured differently: SGLang's "mem usage" is the drop in free device memory)
UNNAMED_MIN_GIB = 0.5


def unnamed_at_oom(state: ConsoleState) -> float | None:
    """GiB PyTorch had allocated at the OOM (its message) beyond what the log's memory lines
    name (:attr:`ConsoleState.budget_gb`: weights, pools, graphs, one rank's): what was taken
    after the last such line, e.g. the first buffers of a pool whose allocation then failed.
    None when either is unknown or the gap is under :data:`UNNAMED_MIN_GIB`."""
    oom = state.oom_numbers
    if oom is None or oom.allocated_gib is None or not state.budget_gb:
        return None
    gap = oom.allocated_gib - sum(state.budget_gb.values())
    return gap if gap >= UNNAMED_MIN_GIB else None


def _other_colour(colors: dict[str, str]) -> str:
    """The theme's muted foreground as Rich takes it (``#RRGGBB``: its ``#RRGGBBAA`` has an alpha)."""
    c = colors.get("foreground-muted", "grey50")
    return c[:7] if c.startswith("#") and len(c) == 9 else c


def other_gib(state: ConsoleState) -> list[float]:
    """Per GPU with a reading: GiB used minus the sum of the log's budget parts (what the
    budget does not name: the CUDA context, NCCL, the allocator's cache). Empty when either the
    GPU reading or the budget is unknown."""
    snap = state.gpu
    if snap is None or not snap.available or not state.budget_gb:
        return []
    parts = sum(state.budget_gb.get(key, 0.0) for key, _, _ in BUDGET)
    return [gpu_memory(g.used_mib, g.total_mib)[0] - parts for g in snap.gpus]


def _legend(state: ConsoleState, colors: dict[str, str], width: int = 0) -> Text:
    """``budget GiB (SGLang logs "GB" = bytes/1024³): W weights 51.20  K kv 22.08 ... o other 3.10``,
    on lines of ``width`` cells broken between items, never inside one (a swatch stays with its
    label), and evenly (:func:`~mambaconsole.ui.fit.item_lines`: no item alone on the last line
    where it need not be)."""
    items: list[Text] = [Text(GB_NOTE if not width or len(GB_NOTE) <= width else "budget GiB:", "dim")]
    for key, var, letter in BUDGET:
        if key in state.budget_gb:
            item = Text(no_wrap=True)
            item.append(letter, f"black on {colors.get(var, 'blue')}")
            item.append(f" {key} {state.budget_gb[key]:.2f}")
            items.append(item)
    gap = unnamed_at_oom(state)
    if gap is not None:
        # what PyTorch held at the OOM beyond the log's lines (the first buffers of the pool
        # being built, ...): the log does not say by what
        item = Text(no_wrap=True)
        item.append("+", f"black on {colors.get('error', 'red')}")
        item.append(f" unnamed before the OOM {gap:.2f}")
        items.append(item)
    other = other_gib(state)
    if other:
        item = Text(no_wrap=True)
        item.append("o", f"black on {_other_colour(colors)}")
        # below zero: the reading is older or newer than the budget (start-up, a stop): no value
        item.append(" other " + "/".join(f"{v:.2f}" if v >= 0 else "—" for v in other))
        items.append(item)
    leg = Text(no_wrap=True, overflow="ellipsis")
    widths = [item.cell_len for item in items]
    for n, line in enumerate(item_lines(widths, width) if width else [list(range(len(items)))]):
        if n:
            leg.append("\n")
        for k, i in enumerate(line):
            leg.append("  " if k else "")
            leg.append_text(items[i])
    return leg


class GpuBody(Static):
    """The GPU pane's text, as many rows as it takes or as the pane has, whichever is more (the
    pane scrolls it), drawn for its own width: the pane's content width less the vertical
    scrollbar while one shows."""

    DEFAULT_CSS = "GpuBody { height: auto; }"

    def set_rows(self, rows: int) -> None:
        """Its height: the ``rows`` its text takes, as the pane measured them. Set, not left to
        ``height: auto``: Textual keeps a widget's box model per width until the widget asks
        for a layout, and a restyle's pending layout (the pane focused right after a resize)
        swallowed that ask: the text kept the height of the one before, its last row out of
        reach (or blank rows under it, and a scrollbar for them)."""
        height = self.styles.height
        if height is None or height.cells != rows:
            self.styles.height = rows

    def on_resize(self, _ev) -> None:
        # zoom, un-zoom, a terminal resize, the scrollbar shown or gone: the bar drawn for the
        # old width would push the used/total numbers off the pane (or leave half of it empty)
        pane = self.parent
        if isinstance(pane, GpuPane) and pane._state is not None:
            pane.refresh_from(pane._state)


class GpuPane(VerticalScroll, can_focus=True):
    """The GPU memory pane (reads :class:`ConsoleState` only). Its text may be taller than the
    pane (an OOM's lines under the bar at 120x40): the pane scrolls, with a scrollbar, by the
    keyboard (up/down, page up/down, home/end) while focused and by the mouse wheel."""

    DEFAULT_CSS = "GpuPane { overflow-x: hidden; scrollbar-size-vertical: 1; }"

    _state: ConsoleState | None = None
    _note_shown: str | None = None  # the stale reading's age line last drawn

    def compose(self) -> ComposeResult:
        self._body = GpuBody(id="gpu-body")
        yield self._body

    @property
    def body(self) -> GpuBody:
        return self._body

    def refresh_age(self, state: ConsoleState) -> None:
        """The app's once-a-second tick: redraw only when the age line would change (the
        reading turned stale, aged by a second, or a fresh one replaced it)."""
        if self._state is not None and stale_note(state) != self._note_shown:
            self.refresh_from(state)

    def refresh_from(self, state: ConsoleState) -> None:
        # called only when the GPU data changed (ConsoleState skips equal samples), and on a
        # resize of the text (GpuBody.on_resize: the bar and the legend are sized to its
        # width); a layout only when the number of rows it takes changed
        self._state = state
        self._note_shown = note = stale_note(state)
        body = self.body
        view = self.scrollable_content_region
        width, colors = body.size.width or view.width or 60, self.app.theme_variables
        # what gpu_renderable reads: the same again (a flood of startup lines in the log asks
        # for this pane at each batch) leaves the pane as it is, no repaint
        key = (state.gpu, tuple((i, tuple(h)) for i, h in state.gpu_history.items()), note,
               tuple(state.budget_gb.items()), frozenset(state.server_pids()), state.oom_numbers,
               missed_peak_note(state), width, view.height,
               tuple(colors.items()))
        if key == getattr(body, "_mc_shown_key", None):
            return
        table = gpu_renderable(state, width, colors)
        # at least the pane's height: a text that fits changes its rows (a legend wrapping as a
        # number grows) with no layout, which Textual does for the whole screen (under a flood of
        # startup lines, one every few frames: 30 ms each on 2 cores)
        rows = max(rendered_rows(table, width), view.height)
        if update_static(body, table, key=key, lines=rows):
            body.set_rows(rows)

    def on_resize(self, _ev) -> None:
        # the pane's height changed (zoom, a terminal resize): the text's height follows it
        if self._state is not None:
            self.refresh_from(self._state)


def rendered_rows(renderable, width: int) -> int:
    """Rows ``renderable`` takes at ``width`` cells (its wrapped lines included). For the
    pane's one-column grid (:func:`gpu_renderable`), row by row: a ``no_wrap`` Text is one
    row, another Text its lines as ``Text.wrap`` breaks them (what the grid's column, as wide
    as the pane, draws); so a change of the budget's numbers costs a wrap of the few texts
    that wrap, not a render of the whole table (~2 ms a change under a log flood)."""
    if isinstance(renderable, Table) and len(renderable.columns) == 1 and renderable.padding == (0, 0, 0, 0) \
            and not renderable.show_edge and renderable.expand:
        rows = 0
        for cell in renderable.columns[0].cells:
            if isinstance(cell, Text):
                rows += cell.plain.count("\n") + 1 if cell.no_wrap else wrapped_lines(cell, width)
            else:
                rows += rendered_rows(cell, width)
        return rows
    return len(MEASURE.render_lines(renderable, MEASURE.options.update_width(width), pad=False))
