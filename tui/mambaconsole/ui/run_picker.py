"""``r``: pick the run whose log the log pane shows (older runs' logs)."""

from __future__ import annotations

import time

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from mambaconsole.state import RunInfo


def run_label(r: RunInfo, current: str | None) -> str:
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started)) if r.started else "?"
    out = r.outcome or r.state
    if r.exit_code is not None:
        out += f" (exit {r.exit_code})"
    mark = " ← current" if r.run_id == current else ""
    return f"{r.run_id}  {when}  {out}{mark}"


class RunPicker(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    RunPicker { align: center middle; }
    RunPicker > Vertical { width: 90; height: auto; max-height: 80%; border: thick $primary; background: $surface; }
    RunPicker OptionList { height: auto; max-height: 20; }
    """

    def __init__(self, runs: list[RunInfo], current: str | None) -> None:
        super().__init__()
        self.runs, self.current = runs, current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("[b]Show the log of which run?[/b]  (Enter picks, Esc cancels)")
            yield OptionList(*[Option(run_label(r, self.current), id=r.run_id) for r in reversed(self.runs)])

    def on_option_list_option_selected(self, ev: OptionList.OptionSelected) -> None:
        self.dismiss(ev.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
