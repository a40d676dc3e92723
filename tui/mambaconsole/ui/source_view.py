"""``v`` on a ServerArgs row: the SGLang source lines around the writer, read from the node."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static


class SourceScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,v", "close", "Close")]
    DEFAULT_CSS = """
    SourceScreen { align: center middle; }
    SourceScreen > VerticalScroll { width: 90%; height: 80%; border: thick $accent; background: $surface; }
    SourceScreen #src-title { height: auto; padding: 0 1; }
    """

    def __init__(self, title: str) -> None:
        super().__init__()
        self.title_text = title
        self._simulated: Text | None = None

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text(self.title_text, style="bold"), id="src-title")
            yield Static("reading from the node…", id="src-body")

    def show(self, text: str | None, error: str | None, line: int) -> None:
        body = self.query_one("#src-body", Static)
        if error:
            body.update(Text(error, style="bold red"))
            return
        body.update(Text(text or "", no_wrap=True))
        # lines are "> NNNNN  code" / "  NNNNN  code"; mark the writer line
        rich_text = Text()
        for ln in (text or "").splitlines():
            rich_text.append(ln + "\n", style="bold reverse" if ln.startswith(">") else "")
        body.update(rich_text)

    def show_note(self, note: str) -> None:
        """Show ``note`` (plain text, wrapped) instead of source lines (callable before the screen
        is mounted): why a value has no writer in SGLang's argument code."""
        self._simulated = Text(note)
        if self.is_mounted:
            self.query_one("#src-body", Static).update(self._simulated)

    def show_simulated(self, file: str | None, line: int | None, version: str | None) -> None:
        """The simulated node has no SGLang source: say so, and what ``file:line`` refers to
        (callable before the screen is mounted)."""
        self._simulated = Text.assemble(
            ("SIMULATED node: it has no SGLang source to show.\n", "bold"),
            f"{file}:{line} refers to the real SGLang{' ' + version if version else ''} that the "
            "simulator's spec was taken from; on a real node this key shows the lines around it, "
            "read from the server's python.")
        if self.is_mounted:
            self.query_one("#src-body", Static).update(self._simulated)

    def on_mount(self) -> None:
        if self._simulated is not None:
            self.query_one("#src-body", Static).update(self._simulated)

    def action_close(self) -> None:
        self.dismiss(None)
