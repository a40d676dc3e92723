"""The ``?`` key map: every key of the app and of the pane that has focus."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Markdown


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 80; height: 80%; border: thick $primary; background: $surface; }
    """

    def __init__(self, rows: list[tuple[str, str, str]]) -> None:
        super().__init__()
        self.rows = rows

    def compose(self) -> ComposeResult:
        lines = ["# Keys", "", "| key | action | where |", "|---|---|---|"]
        for key, desc, where in self.rows:
            lines.append(f"| `{key}` | {desc} | {where} |")
        lines += ["", "Esc closes. `ctrl+p` opens the command palette with every action."]
        with VerticalScroll():
            yield Markdown("\n".join(lines))

    async def action_dismiss(self, result=None) -> None:
        self.dismiss(None)
