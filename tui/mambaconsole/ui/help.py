"""The ``?`` key map: the console's own keys first, grouped by where they act (global, each pane,
the editor), then the generic scroll/cursor keys of Textual's widgets in one short group.

Built from the bindings themselves, never from a list kept here: :func:`key_groups` walks the
main screen's panes (every widget inside each ``.pane``, every class of its MRO that declares
``BINDINGS``). Bindings declared by our classes belong to that pane's group; those
declared by Textual's own classes (RichLog/ScrollView, DataTable, ...) are folded into the last
group. A key the app hides (``check_action`` says False, e.g. ``--read-only``) is left out."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.dom import DOMNode
from textual.screen import ModalScreen
from textual.widgets import Input, Static, TextArea

#: ``(group title, [(keys, description)])``
Groups = list[tuple[str, list[tuple[str, str]]]]

GENERIC = "scrolling and cursor (any pane)"
#: the generic actions, folded into one row per family: action pattern → row text
_FAMILIES = (
    (r"^(scroll|cursor)_(up|down)$", "scroll / move one line"),
    (r"^(page|cursor_page)_(up|down)$", "one page up / down"),
    (r"^(scroll|cursor)_(left|right)$", "scroll / move sideways"),
    (r"^(page|cursor_page)_(left|right)$", "one page sideways"),
    (r"^(scroll_(home|end|top|bottom)|cursor_(top|bottom)|scroll_to_(start|end))$", "top / bottom"),
    (r"^select_cursor$", "select the row"),
)


def _own(cls: type) -> bool:
    """Declared by the console (any class not from Textual itself)."""
    return cls.__module__.split(".")[0] != "textual"


def _declared(classes: Iterable[type]) -> Iterable[tuple[type, Binding]]:
    seen: set[type] = set()
    for cls in classes:
        for klass in cls.__mro__:
            if klass in seen or "BINDINGS" not in klass.__dict__:
                continue
            seen.add(klass)
            for b in Binding.make_bindings(klass.__dict__["BINDINGS"]):
                yield klass, b


def _rows(app: App, bindings: Iterable[Binding], owner: DOMNode | None) -> list[tuple[str, str]]:
    """One row per action and description, its keys joined with `` / ``; the actions
    ``owner`` hides (its ``check_action`` says False) left out."""
    merged: dict[tuple[str, str], list[str]] = {}
    for b in bindings:
        if owner is not None and owner.check_action(b.action, ()) is False:
            continue
        keys = merged.setdefault((b.action, b.description or b.action.replace("_", " ")), [])
        if (key := app.get_key_display(b)) not in keys:
            keys.append(key)
    return [(" / ".join(keys), desc) for (_, desc), keys in merged.items()]


def key_groups(app: App, extra_screens: Iterable[tuple[str, type]] = ()) -> Groups:
    """The key map of ``app`` (its bindings: "global"), of each pane of its main screen (the
    widgets with class ``pane``), of ``extra_screens`` (``(title, screen class)``, e.g. the
    editor), then the generic scroll/cursor keys of Textual's widgets in the panes."""
    groups: Groups = []
    screen = app.screen_stack[0] if app.screen_stack else app.screen
    # the panes in the order of the keys that focus them (1 gpu, 2 spec, ...; others follow in
    # screen order)
    order = {m.group(1): b.key for klass, b in _declared([type(app)])
             if (m := re.match(r"^focus_pane\(['\"]([\w-]+)['\"]\)$", b.action))}
    panes = [p for _, p in sorted(enumerate(screen.query(".pane")),
                                  key=lambda ip: (order.get(ip[1].id or "", "\uffff"), ip[0]))]
    # the app's own keys; one whose action names a pane (focus_pane('gpu')) goes to that pane
    for_pane: dict[str, list[Binding]] = {}
    global_keys = []
    for klass, b in _declared([type(app)]):
        if not _own(klass):
            continue
        m = re.match(r"^\w+\(['\"]([\w-]+)['\"]\)$", b.action)
        if m and any(p.id == m.group(1) for p in panes):
            if b.action.startswith("focus"):
                b = dataclasses.replace(b, description="focus this pane")
            for_pane.setdefault(m.group(1), []).append(b)
        else:
            global_keys.append(b)
    app_rows = _rows(app, global_keys, app)
    app_rows.append((app.get_key_display(Binding("ctrl+p", "command_palette", "")), "command palette (every action)"))
    groups.append(("global", app_rows))
    generic: list[Binding] = []
    for pane in panes:
        own: list[Binding] = list(for_pane.get(pane.id or "", []))
        for w in pane.walk_children(with_self=True):
            for klass, b in _declared([type(w)]):
                if _own(klass):
                    own.append(b)
                elif not isinstance(w, (Input, TextArea)):  # text editing keys are not the pane's
                    generic.append(b)
        rows = _rows(app, own, pane)
        if rows:
            title = re.sub(r"\s*\[\d+\]$", "", str(pane.border_title or pane.id or type(pane).__name__))
            groups.append((title, rows))
    for title, cls in extra_screens:
        rows = _rows(app, [b for klass, b in _declared([cls]) if _own(klass)], None)
        if rows:
            groups.append((title, rows))
    own_keys = {k for _, rows in groups for keys, _ in rows for k in keys.split(" / ")}
    families: dict[str, list[str]] = {text: [] for _, text in _FAMILIES}
    for b in generic:
        row = next((text for pat, text in _FAMILIES if re.match(pat, b.action)), None)
        key = app.get_key_display(b)
        if row is None or key in own_keys:
            continue
        if key not in families[row]:
            families[row].append(key)
    if any(families.values()):
        groups.append((GENERIC, [(" ".join(keys), row) for row, keys in families.items() if keys]))
    return groups


class HelpScreen(ModalScreen[None]):
    """The key map: one compact table, a heading row per group."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 72; height: 90%; border: thick $primary; background: $surface; padding: 0 1; }
    """

    def __init__(self, groups: Groups) -> None:
        super().__init__()
        self.groups = groups

    def table(self) -> Group:
        width = max([len(k) for _, rows in self.groups for k, _ in rows] + [8])
        parts: list = [Text.assemble(("Keys", "bold underline"), ("   Esc closes · ctrl+p lists every action", "dim"))]
        for title, rows in self.groups:
            t = Table.grid(padding=(0, 2))
            t.add_column(width=width, style="bold")
            t.add_column()
            for key, desc in rows:
                t.add_row(key, desc)
            parts += [Text(""), Text(f" {title} ", style="bold reverse"), t]
        return Group(*parts)

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(self.table(), id="keys")

    async def action_dismiss(self, result=None) -> None:
        self.dismiss(None)
