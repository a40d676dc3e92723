"""GPU memory pane: a bar per GPU (split by the run's memory budget once the log told us),
utilisation, a short history of used memory, and the processes holding memory."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from mambaconsole.state import ConsoleState

_SPARK = "▁▂▃▄▅▆▇█"
#: budget items in drawing order, with their theme colour variable and legend letter
BUDGET = (("weights", "primary", "W"), ("kv", "secondary", "K"), ("mamba conv", "accent", "c"),
          ("mamba ssm", "accent", "M"), ("mamba spec", "error", "s"), ("graphs", "warning", "G"))
_GIB_PER_MIB = 1 / 1024


def sparkline(values, width: int) -> str:
    vals = list(values)[-width:]
    if not vals:
        return ""
    hi = max(vals) or 1.0
    return "".join(_SPARK[min(len(_SPARK) - 1, int(v / hi * (len(_SPARK) - 1)))] for v in vals)


def gpu_renderable(state: ConsoleState, width: int, colors: dict[str, str]):
    snap = state.gpu
    out = Table.grid(expand=True)
    out.add_column()
    if snap is None or not snap.available:
        why = "waiting for the first GPU sample…" if snap is None else f"no GPU reading: {snap.reason or 'no GPU on this node'}"
        out.add_row(Text(why, style="dim"))
        if state.budget_gb:
            out.add_row(Text("memory budget from the run's log:", style="bold"))
            out.add_row(_legend(state, colors))
        return out
    bar_w = max(10, width - 26)
    pids = state.server_pids()
    for g in snap.gpus:
        used, total = g.used_mib, g.total_mib or 1.0
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(f"GPU{g.index} ", "bold")
        line.append(g.name[:40])
        if g.simulated or snap.simulated:
            line.append(" (simulated)", colors.get("warning", "yellow"))
        out.add_row(line)
        bar = Text(no_wrap=True)
        cells_left = bar_w
        budget = state.budget_gb if len(snap.gpus) == 1 or state.budget_gb else {}
        used_cells = round(used / total * bar_w)
        drawn = 0
        if budget:
            for key, var, letter in BUDGET:
                gb = budget.get(key)
                if not gb:
                    continue
                n = min(used_cells - drawn, round(gb * 1024 / total * bar_w))
                if n <= 0:
                    continue
                label = letter.ljust(n, " ")[:n] if n >= 1 else ""
                bar.append(label, f"black on {colors.get(var, 'blue')}")
                drawn += n
            other = used_cells - drawn
            if other > 0:
                bar.append("o".ljust(other)[:other], f"black on {colors.get('foreground-muted', 'grey50')}")
                drawn += other
        else:
            bar.append(" " * used_cells, f"on {colors.get('primary', 'blue')}")
            drawn = used_cells
        bar.append("·" * max(0, cells_left - drawn), "dim")
        util = f"{g.util:3.0f}%" if g.util is not None else "  -%"
        bar.append(f" {used * _GIB_PER_MIB:5.1f}/{total * _GIB_PER_MIB:5.1f} GiB {util}")
        out.add_row(bar)
        hist = state.gpu_history.get(g.index)
        if hist:
            out.add_row(Text("used " + sparkline(hist, bar_w), style=colors.get("primary", "blue")))
    if state.budget_gb:
        out.add_row(_legend(state, colors))
    procs = [p for p in snap.processes]
    if procs:
        out.add_row(Text("PID      GPU   MiB  command", style="bold"))
        for p in sorted(procs, key=lambda p: -p.used_mib)[:6]:
            mark = "★" if p.pid in pids else " "
            cmd = p.command if p.resolved else "(PID not visible on the node: container?)"
            style = "bold" if p.pid in pids else ("italic dim" if not p.resolved else "")
            out.add_row(Text(f"{mark}{p.pid:<7} {p.gpu:>3} {p.used_mib:>6.0f}  {cmd}", style=style,
                             no_wrap=True, overflow="ellipsis"))
    elif snap.gpus:
        out.add_row(Text("no process holds GPU memory", style="dim"))
    return out


def _legend(state: ConsoleState, colors: dict[str, str]) -> Text:
    leg = Text("", no_wrap=False)
    for key, var, letter in BUDGET:
        if key in state.budget_gb:
            leg.append(f"{letter}", f"black on {colors.get(var, 'blue')}")
            leg.append(f" {key} {state.budget_gb[key]:.2f} GB  ")
    leg.append("o", f"black on {colors.get('foreground-muted', 'grey50')}")
    leg.append(" other")
    return leg


class GpuPane(Static, can_focus=True):
    """The GPU memory pane (reads :class:`ConsoleState` only)."""

    def refresh_from(self, state: ConsoleState) -> None:
        self.update(gpu_renderable(state, self.size.width or 60, self.app.theme_variables))
