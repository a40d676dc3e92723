"""``e``: the Mamba parameter editor. A modal form built from the node's own SGLang parser
(option metadata from the resolver: option_strings, dest, default, choices, type, nargs, help):
every option whose name contains ``mamba``, ``--mem-fraction-static``,
``--max-running-requests``, ``--disable-radix-cache``, ``--speculative-*``,
``--chunked-prefill-size``, ``--page-size``. Fields are typed (choices as a select, numbers
validated, switches for flags without a value), prefilled from the current run, with the
parser's help text. It shows the argv diff and the pre-flight verdict (the resolver run on the
node with the edited argv) and only lets the user confirm a verdict without error.

Values never pass through a shell: each field becomes exactly one argv element, and values
with control characters (newlines included) are refused."""

from __future__ import annotations

import re
import shlex
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.validation import Function, Number, ValidationResult, Validator
from textual.widgets import Button, Input, Label, Select, Static, Switch

from mambaconsole.ui import messages as M
from mambaconsole.ui.argv_diff import diff, flags, split_launch

EXTRA = ("--mem-fraction-static", "--max-running-requests", "--disable-radix-cache",
         "--chunked-prefill-size", "--page-size")


def wanted(opt: dict) -> bool:
    """Whether the editor shows this parser option."""
    names = [s for s in opt.get("option_strings", []) if s.startswith("--")]
    return any("mamba" in n or n in EXTRA or n.startswith("--speculative-") for n in names)


class NoControl(Validator):
    def validate(self, value: str) -> ValidationResult:
        if any(ord(c) < 32 or ord(c) == 127 for c in value):
            return self.failure("control characters (newline, tab, escape) are not allowed")
        return self.success()


def _is_int_type(t: Any) -> bool:
    """``int``, ``"int"``, ``"<class 'int'>"``, ``"positive_int"`` ... (as the parser reports it)."""
    return t is int or bool(re.search(r"(^|[^a-z])int($|[^a-z])", str(t)))


def _is_float_type(t: Any) -> bool:
    return t is float or bool(re.search(r"(^|[^a-z])float($|[^a-z])", str(t)))


def _flag(opt: dict) -> str:
    longs = [s for s in opt.get("option_strings", []) if s.startswith("--")]
    return longs[0] if longs else opt.get("option_strings", ["?"])[0]


def _is_switch(opt: dict) -> bool:
    return opt.get("nargs") == 0 or str(opt.get("action", "")).lower().replace("_", "") in (
        "storetrue", "storefalse", "storetrueaction", "storefalseaction", "booleanoptionalaction")


def _fid(flag: str) -> str:
    return "f-" + flag.lstrip("-").replace("-", "_").replace(".", "_")


class EditorScreen(ModalScreen[list[str] | None]):
    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+r", "preflight", "Pre-flight"),
        Binding("ctrl+y", "confirm", "Relaunch"),
    ]
    DEFAULT_CSS = """
    EditorScreen { align: center middle; }
    EditorScreen > Vertical { width: 96%; height: 94%; border: thick $primary; background: $surface; }
    EditorScreen #ed-title { height: 1; padding: 0 1; background: $panel; }
    EditorScreen #ed-form { height: 1fr; }
    EditorScreen .row { height: auto; margin: 0 1; }
    EditorScreen .row Label { width: 40; }
    EditorScreen .row Input { width: 1fr; height: 1; border: none; padding: 0 1; background: $boost; }
    EditorScreen .row Input:focus { background: $primary 30%; }
    EditorScreen .row Input.-invalid { background: $error 30%; }
    EditorScreen .row Select { width: 1fr; }
    EditorScreen .row Select > SelectCurrent { border: none; height: 1; padding: 0 1; background: $boost; }
    EditorScreen .row Select:focus > SelectCurrent { background: $primary 30%; }
    EditorScreen .row Switch { border: none; height: 1; padding: 0; }
    EditorScreen .help { color: $text-muted; margin: 0 1 0 42; height: 1; }
    EditorScreen #ed-diff { height: auto; max-height: 6; padding: 0 1; border-top: solid $panel-lighten-2; }
    EditorScreen #ed-verdict { height: auto; max-height: 10; padding: 0 1; border-top: solid $panel-lighten-2; }
    EditorScreen #ed-buttons { height: 3; padding: 0 1; }
    EditorScreen #ed-buttons Button { margin-right: 2; }
    """

    def __init__(self, feed, argv: list[str], params: list[dict] | None = None) -> None:
        super().__init__()
        self.feed = feed
        self.prefix, self.args = split_launch(argv)
        self.current = flags(self.args)
        self.params: list[dict] = []
        self._given_params = params
        self.verdict: dict | None = None
        self.verdict_for: list[str] | None = None
        self.verdict_error: str | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(Text.assemble(("Edit the Mamba parameters", "bold"),
                                       "  ·  ctrl+r pre-flight  ·  ctrl+y relaunch  ·  Esc cancel"), id="ed-title")
            yield VerticalScroll(Static("reading the parser from the node…", id="ed-wait"), id="ed-form")
            yield Static("", id="ed-diff")
            yield Static("", id="ed-verdict")
            with Horizontal(id="ed-buttons"):
                yield Button("Pre-flight (ctrl+r)", id="ed-check", variant="primary")
                yield Button("Relaunch with these args (ctrl+y)", id="ed-go", variant="warning", disabled=True)
                yield Button("Cancel (Esc)", id="ed-cancel")

    def on_mount(self) -> None:
        if self._given_params is not None:
            self.post_message(M.ParamsRead(self._given_params))
        else:
            self._load_params()

    @work(exclusive=True, group="params", exit_on_error=False)
    async def _load_params(self) -> None:
        try:
            self.post_message(M.ParamsRead(await self.feed.params(self.args)))
        except Exception as exc:
            self.post_message(M.ParamsRead(None, str(exc)))

    @on(M.ParamsRead)
    async def _params(self, msg: M.ParamsRead) -> None:
        form = self.query_one("#ed-form", VerticalScroll)
        await form.remove_children()
        if msg.params is None:
            await form.mount(Static(Text(f"cannot read the node's parser: {msg.error}\nEdit the whole argv instead:",
                                         style="bold")))
            await form.mount(Input(shlex.join(self.args), id="f-raw", validators=[NoControl()]))
            self._refresh_diff()
            return
        self.params = sorted((p for p in msg.params if wanted(p)),
                             key=lambda p: (0 if "mamba" in _flag(p) else 1 if _flag(p) in EXTRA else 2, _flag(p)))
        rows = []
        for p in self.params:
            flag = _flag(p)
            cur = self.current.get(flag)
            given = flag in self.current
            label = Label(Text(flag, style="bold" if given else ""))
            if p.get("choices"):
                opts = [(str(c), str(c)) for c in p["choices"]]
                w = Select(opts, value=str(cur) if given and cur is not None else Select.NULL,
                           prompt=f"(not given: default {p.get('default')!r})", id=_fid(flag), allow_blank=True)
            elif _is_switch(p):
                w = Switch(value=given, id=_fid(flag))
            else:
                validators: list[Validator] = [NoControl()]
                kind = "text"
                if _is_int_type(p.get("type")):
                    kind = "integer"
                elif _is_float_type(p.get("type")):
                    kind = "number"
                    validators.append(Number())
                w = Input(value="" if cur is None else str(cur), placeholder=f"default {p.get('default')!r}",
                          type=kind, id=_fid(flag), validators=validators, valid_empty=True)
            rows.append(Horizontal(label, w, classes="row"))
            help_text = (p.get("help") or "").strip()
            if help_text:
                rows.append(Static(Text(help_text, no_wrap=True, overflow="ellipsis"), classes="help"))
        if not rows:
            rows.append(Static("the node's parser has no Mamba options"))
        await form.mount_all(rows)
        self._refresh_diff()

    # --------------------------------------------------------------- argv
    def _value_of(self, p: dict) -> tuple[bool, str | None]:
        """(given, value) from the form field for option ``p``."""
        flag = _flag(p)
        w = self.query_one("#" + _fid(flag))
        if isinstance(w, Switch):
            return w.value, None
        if isinstance(w, Select):
            v = w.value
            return (False, None) if v is Select.NULL or v is None else (True, str(v))
        assert isinstance(w, Input)
        return (w.value != "", w.value if w.value != "" else None)

    def invalid_fields(self) -> list[str]:
        bad = []
        for inp in self.query(Input):
            res = inp.validate(inp.value)
            if res is not None and not res.is_valid:
                bad.append(f"{inp.id[2:].replace('_', '-')}: {'; '.join(res.failure_descriptions)}")
        return bad

    def edited_args(self) -> list[str]:
        """The SGLang args after the edit. Untouched fields keep their text and place; an edited
        flag keeps its place (and spelling); a new one is appended; each value is exactly one
        argv element (``--flag=value`` when the value itself starts with ``-``)."""
        raw = self.query("#f-raw")
        if raw:
            return shlex.split(raw.first(Input).value)
        out = list(self.args)
        for p in self.params:
            flag = _flag(p)
            names = set(p.get("option_strings", []))
            switch = _is_switch(p)
            given, value = self._value_of(p)
            was_given = any(n in self.current for n in names)
            was = next((self.current[n] for n in names if n in self.current), None)
            if given == was_given and (switch or value == was):
                continue  # untouched
            res: list[str] = []
            placed = False
            i = 0
            while i < len(out):
                a = out[i]
                name = a.split("=", 1)[0]
                if name in names:
                    if "=" not in a and not switch and i + 1 < len(out) and not out[i + 1].startswith("--"):
                        i += 1
                    i += 1
                    if given and not placed:
                        res += _render(name, value)
                        placed = True
                    continue
                res.append(a)
                i += 1
            if given and not placed:
                res += _render(flag, value)
            out = res
        return out

    def edited_argv(self) -> list[str]:
        return self.prefix + self.edited_args()

    def _refresh_diff(self) -> None:
        t = Text()
        try:
            new = self.edited_args()
        except ValueError as exc:
            self.query_one("#ed-diff", Static).update(Text(f"argv: {exc}", style="bold red"))
            return
        d = diff(self.args, new)
        if not d:
            t.append("argv unchanged", "dim")
        else:
            t.append("argv change: ", "bold")
            for kind, k, o, n in d:
                style = {"+": "green", "-": "red", "~": "yellow"}[kind]
                if kind == "~":
                    t.append(f"{k} {o} → {n}", style)
                elif kind == "+":
                    t.append(f"+{k}" + (f" {n}" if n is not None else ""), style)
                else:
                    t.append(f"-{k}", style)
                t.append("   ")
        self.query_one("#ed-diff", Static).update(t)
        self._refresh_verdict()

    def _refresh_verdict(self) -> None:
        v = self.query_one("#ed-verdict", Static)
        go = self.query_one("#ed-go", Button)
        bad = self.invalid_fields()
        new = None
        try:
            new = self.edited_args()
        except ValueError:
            pass
        t = Text()
        go.disabled = True
        if bad:
            t.append("invalid: " + "; ".join(bad), "bold red")
        elif self.verdict_error and self.verdict_for == new:
            t.append(f"pre-flight could not run: {self.verdict_error}", "bold red")
        elif self.verdict is None or self.verdict_for != new:
            t.append("pre-flight: not checked for these args yet (ctrl+r)", "dim")
        else:
            res = self.verdict
            if res.get("usage_error"):
                ue = res["usage_error"]
                t.append("PRE-FLIGHT REFUSED (usage): ", "bold reverse red")
                t.append(str(ue.get("message")))
                for k, s in (ue.get("suggestions") or {}).items():
                    t.append(f"\n  {k}: {s}")
            elif res.get("error"):
                e = res["error"]
                t.append("PRE-FLIGHT REFUSED: ", "bold reverse red")
                t.append(f"{e.get('type')}: {e.get('message')}\n", "bold")
                t.append(f"  raised at {e.get('sglang_file') or e.get('file')}:{e.get('sglang_line') or e.get('line')}"
                         f" in {e.get('function')}", "dim")
            else:
                t.append("PRE-FLIGHT OK", "bold reverse green")
                t.append(f"  SGLang {res.get('sglang_version', '?')} will use:\n")
                fields = res.get("fields") or {}
                edited = {k for _, k, _, _ in diff(self.args, new or [])}
                shown = 0
                for name, f in fields.items():
                    opt = f.get("option") or "--" + name.replace("_", "-")
                    if opt in edited or f.get("source") == "overridden" or (
                            "mamba" in name and f.get("source") in ("derived", "overridden")):
                        style = "bold reverse red" if f.get("source") == "overridden" else ""
                        t.append(f"  {opt} = {f.get('value')!r} ({f.get('source')})\n", style)
                        shown += 1
                        if shown >= 8:
                            break
                go.disabled = False
        v.update(t)

    @on(Input.Changed)
    @on(Select.Changed)
    @on(Switch.Changed)
    def _changed(self, ev) -> None:
        self._refresh_diff()

    # --------------------------------------------------------------- actions
    def action_preflight(self) -> None:
        if self.invalid_fields():
            self._refresh_verdict()
            return
        try:
            args = self.edited_args()
        except ValueError as exc:
            self.notify(str(exc), severity="error")
            return
        self.query_one("#ed-verdict", Static).update(Text("pre-flight: resolving on the node…", style="italic"))
        self._preflight(args)

    @work(exclusive=True, group="preflight", exit_on_error=False)
    async def _preflight(self, args: list[str]) -> None:
        try:
            res = await self.feed.resolve(args)
            self.post_message(M.PreflightDone(args, res))
        except Exception as exc:
            self.post_message(M.PreflightDone(args, None, str(exc)))

    @on(M.PreflightDone)
    def _preflight_done(self, msg: M.PreflightDone) -> None:
        self.verdict, self.verdict_for, self.verdict_error = msg.result, msg.argv, msg.error
        self._refresh_verdict()

    def action_confirm(self) -> None:
        go = self.query_one("#ed-go", Button)
        if go.disabled:
            self.notify("run a pre-flight without error first (ctrl+r)", severity="warning")
            return
        self.dismiss(self.edited_argv())

    def action_cancel(self) -> None:
        self.dismiss(None)

    def on_button_pressed(self, ev: Button.Pressed) -> None:
        {"ed-check": self.action_preflight, "ed-go": self.action_confirm, "ed-cancel": self.action_cancel}[ev.button.id]()


def _render(flag: str, value: str | None) -> list[str]:
    if value is None:
        return [flag]
    if value.startswith("-"):
        return [f"{flag}={value}"]  # argparse would read "-x" as an option, not as the value
    return [flag, value]
