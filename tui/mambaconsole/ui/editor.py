"""``e``: the Mamba parameter editor. A modal form built from the node's own SGLang parser
(option metadata from the resolver: option_strings, dest, default, choices, type, nargs, help):
every option whose name contains ``mamba``, ``--mem-fraction-static``,
``--max-running-requests``, ``--disable-radix-cache``, ``--speculative-*``,
``--chunked-prefill-size``, ``--page-size``. Fields are typed (choices as a select, numbers
validated, switches for flags without a value), prefilled from the current run, with the
parser's help text. It shows the argv diff and the pre-flight verdict (the resolver run on the
node with the edited argv) and only lets the user confirm a verdict without error. The pre-flight
checks the arguments, not memory: an OK verdict says so, and warns when a run with the same
arguments (as the parser reads them) ended OOM or crashed.

Boolean options show their state: a store_true/store_false flag is a switch with ``on``/``off``
beside it (on = the bare flag is in the argv), a ``--x/--no-x`` pair (BooleanOptionalAction) a
select of the two flags. Focus starts at the first field and Tab/Shift-Tab follow the form's
visual order. Esc closes at once when nothing was changed, else asks ``discard N changed
fields?`` (Esc again or ``y`` discards, ``n`` keeps editing); a discarded draft is gone: the
editor always opens prefilled from the current run.

The run's own environment (its ``env.json``: ``NAME=VALUE`` words, shell quoting) and working
folder are fields at the end of the form, prefilled with the run's (``Feed.run_environment``):
the parser options, the pre-flight and the relaunch use what they say.

The argv is read and edited with :class:`mambaconsole.sglang.argv.LaunchCommand` and the
node's parser (:class:`~mambaconsole.sglang.argv.ParserSpec` built from the same options).

Values never pass through a shell: each field becomes exactly one argv element, and values
with control characters (newlines included) are refused."""

from __future__ import annotations

import re
import shlex
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.validation import ValidationResult, Validator
from textual.widgets import Button, Input, Label, Select, Static, Switch

from mambaconsole.sglang.budget import one_line
from mambaconsole.sglang.load_checks import max_mamba_cache_size_at_load
from mambaconsole.sglang.argv import LaunchArg, LaunchCommand, OptionSpec, ParserSpec
from mambaconsole.ui import messages as M
from mambaconsole.sglang.argv_diff import arg_tokens, command, diff, split_launch
from mambaconsole.ui.confirm import ConfirmScreen
from mambaconsole.ui.fit import Part, parts_text
from mambaconsole.ui.footer import KeyFooter

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


class EnvWords(Validator):
    """``NAME=VALUE`` words (shell quoting), NAME an environment variable name."""

    def validate(self, value: str) -> ValidationResult:
        try:
            env_from_text(value)
        except ValueError as exc:
            return self.failure(str(exc))
        return self.success()


def env_from_text(text: str) -> dict[str, str]:
    """``{NAME: VALUE}`` from ``NAME=VALUE`` words (shlex quoting); ValueError names a bad word."""
    env = {}
    for word in shlex.split(text):
        name, sep, value = word.partition("=")
        if not sep or not name.isidentifier():
            raise ValueError(f"not NAME=VALUE: {word!r}")
        env[name] = value
    return env


def env_text(env: dict[str, str]) -> str:
    return " ".join(shlex.quote(f"{k}={v}") for k, v in env.items())


class ParserType(Validator):
    """The value as the node's argparse reads it: ``kind(value)`` (``int`` or ``float``), else
    argparse's own message, ``invalid int value: '24.5'`` (``argparse._get_value``). The text is
    taken as typed: Textual's ``type="integer"`` Input dropped the characters it did not allow
    (``24.5`` became ``245``, ``24; rm -rf /`` became ``24``); this refuses the value instead."""

    def __init__(self, kind: type) -> None:
        super().__init__()
        self.kind = kind

    def validate(self, value: str) -> ValidationResult:
        if value == "":
            return self.success()
        try:
            self.kind(value)
        except (TypeError, ValueError):
            return self.failure(f"invalid {self.kind.__name__} value: {value!r}")
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


def _is_pair(opt: dict) -> bool:
    """``--x`` / ``--no-x`` (argparse's BooleanOptionalAction): given on, given off, or absent."""
    names = opt.get("option_strings", [])
    return "BooleanOptional" in str(opt.get("action", "")) or any("--no-" + n[2:] in names for n in names)


def _deprecated(opt: dict) -> bool:
    return bool(opt.get("deprecated")) or "Deprecated" in str(opt.get("action", ""))


class _Form(VerticalScroll, can_focus=False):
    """The fields' scroll area: not a stop of its own in the focus chain (Tab goes from
    field to field; focusing a field scrolls it into view)."""


class DiscardScreen(ConfirmScreen, inherit_bindings=False):
    """``Discard N changed fields?``: ``y`` or Esc (a second Esc) discards, ``n`` keeps editing."""

    BINDINGS = [Binding("y,escape", "yes", "Discard"), Binding("n", "no", "Keep editing")]
    YES_BUTTON = "{yes} (y / Esc)"
    NO_BUTTON = "Keep editing (n)"


def not_given(p: dict) -> str:
    """The one wording for a field the argv does not give: ``not given · default 'triton'``."""
    return f"not given · default {p.get('default')!r}"


#: run outcomes the pre-flight warns about when a run had the same arguments
FAILED_OUTCOMES = ("oom", "crashed")


def same_args_runs(args: list[str], runs, spec: ParserSpec | None) -> list:
    """The runs in ``runs`` (:class:`mambaconsole.state.RunInfo`) whose SGLang args equal
    ``args`` as the parser reads them (:func:`mambaconsole.sglang.argv_diff.diff` finds no
    change), newest first."""
    out = []
    for r in reversed(list(runs or [])):
        try:
            if not diff(split_launch(list(r.argv))[1], args, spec):
                out.append(r)
        except ValueError:
            continue
    return out


def failure_line(run, outcome: str | None) -> str | None:
    """``run <id> with these arguments ended: OOM exit 137`` when ``outcome`` is ``oom`` or
    ``crashed``; else None."""
    if outcome not in FAILED_OUTCOMES:
        return None
    how = "OOM" if outcome == "oom" else outcome
    return f"run {run.run_id} with these arguments ended: {how}" + (
        f" exit {run.exit_code}" if run.exit_code is not None else "")


def _fid(flag: str) -> str:
    return "f-" + flag.lstrip("-").replace("-", "_").replace(".", "_")


#: the widest the flag column gets (cells, with one of space after the flag)
LABEL_MAX = 40


def mid_cut(flag: str, width: int) -> str:
    """``flag`` within ``width`` cells, cut in its middle (``--speculative-draf…window-size``):
    SGLang's long flags differ at their ends (``…-threshold-acc`` / ``…-threshold-single``)."""
    if cell_len(flag) <= width:
        return flag
    head = (width - 1) // 2
    return flag[:head] + "…" + flag[len(flag) - (width - 1 - head):]


class EditorScreen(ModalScreen[list[str] | None]):
    BINDINGS = [
        Binding("escape", "cancel", "Close (asks before discarding edits)"),
        Binding("ctrl+r", "preflight", "Pre-flight"),
        Binding("ctrl+y", "confirm", "Relaunch"),
        # a modal screen hides the app's own bindings: the screenshot key is repeated here, so
        # the pre-flight verdict can be captured
        Binding("ctrl+s", "app.save_svg", "Screenshot", show=False),
        Binding("tab", "focus_step(1)", "Next field", show=False),
        Binding("shift+tab", "focus_step(-1)", "Previous field", show=False),
    ]
    DEFAULT_CSS = """
    EditorScreen { align: center middle; }
    EditorScreen > Vertical { width: 96%; height: 94%; border: thick $primary; background: $surface; }
    EditorScreen #ed-title { height: 1; padding: 0 1; background: $panel; }
    EditorScreen #ed-form { height: 1fr; }
    EditorScreen .row { height: auto; margin: 0 1; }
    EditorScreen .row Label { width: LABEL_MAX; }
    EditorScreen .row Input { width: 1fr; height: 1; border: none; padding: 0 1; background: $boost; }
    EditorScreen .row Input:focus { background: $primary 30%; }
    EditorScreen .row Input.-invalid, EditorScreen .row Input.-invalid:focus { background: $error 30%; border: none; }
    EditorScreen .row Select { width: 1fr; }
    EditorScreen .row Select > SelectCurrent { border: none; height: 1; padding: 0 1; background: $boost; }
    EditorScreen .row Select:focus > SelectCurrent { background: $primary 30%; }
    EditorScreen .row Switch { border: none; height: 1; padding: 0; width: 6; }
    EditorScreen .row Switch:focus { background: $primary 30%; }
    EditorScreen .row .state { width: 1fr; height: 1; padding: 0 1; }
    EditorScreen .row .state.-on { text-style: bold; color: $success; }
    EditorScreen .help { color: $text-muted; margin: 0 1 0 42; height: auto; }
    EditorScreen .field-error { color: $error; text-style: bold; margin: 0 1 0 42; height: auto; display: none; }
    EditorScreen .field-error.-shown { display: block; }
    EditorScreen #ed-diff { height: auto; max-height: 6; padding: 0 1; border-top: solid $panel-lighten-2; }
    EditorScreen #ed-verdict { height: auto; max-height: 10; padding: 0 1; border-top: solid $panel-lighten-2; }
    EditorScreen #ed-buttons { height: 3; padding: 0 1; }
    EditorScreen #ed-buttons Button { margin-right: 2; }
    """.replace("LABEL_MAX", str(LABEL_MAX))

    def __init__(self, feed, argv: list[str], params: list[dict] | None = None,
                 run_env: tuple[dict[str, str], str | None] | None = None) -> None:
        super().__init__()
        self.feed = feed
        #: the run's own extra environment and working folder (the fields start from them)
        self.env0, self.cwd0 = (dict(run_env[0]), run_env[1] or None) if run_env is not None else ({}, None)
        self.prefix, self.args = split_launch(argv)
        #: the node's parser (None until the options arrive, or when they cannot be read)
        self.spec: ParserSpec | None = None
        #: the current run's SGLang args, as read with the node's parser
        self.cmd: LaunchCommand = command(self.args)
        self.params: list[dict] = []
        self._given_params = params
        self.verdict: dict | None = None
        self.verdict_for: list[str] | None = None
        self.verdict_error: str | None = None
        #: "run <id> with these arguments ended: OOM exit 137" lines for the pre-flighted args
        self.same_args_warnings: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self._title(None), id="ed-title")
            yield _Form(Static("reading the parser from the node…", id="ed-wait"), id="ed-form")
            yield Static("", id="ed-diff")
            yield Static("", id="ed-verdict")
            with Horizontal(id="ed-buttons"):
                yield Button("Pre-flight (ctrl+r)", id="ed-check", variant="primary")
                yield Button("Relaunch with these args (ctrl+y)", id="ed-go", variant="warning", disabled=True)
                yield Button("Cancel (Esc)", id="ed-cancel")
        yield KeyFooter()

    @staticmethod
    def _title(width: int | None) -> Text:
        """The title row within ``width`` cells: the keys give way whole, Tab first, then Esc
        (both in the footer too); at 80x24 it was cut at ``ctrl+y``."""
        return parts_text([Part("Edit the Mamba parameters  ", "bold"),
                           Part("·  Tab next field  ", give_way=0),
                           Part("·  ctrl+r pre-flight  ", give_way=3),
                           Part("·  ctrl+y relaunch  ", give_way=2),
                           Part("·  Esc close", give_way=1)], width)

    def on_resize(self) -> None:
        title = self.query_one("#ed-title", Static)
        title.update(self._title(title.content_region.width or None))

    def on_mount(self) -> None:
        if self._given_params is not None:
            self.post_message(M.ParamsRead(self._given_params))
        else:
            self._load_params()

    @work(exclusive=True, group="params", exit_on_error=False)
    async def _load_params(self) -> None:
        try:
            self.post_message(M.ParamsRead(await self.feed.params(self.args, env=self.env0, cwd=self.cwd0)))
        except Exception as exc:
            self.post_message(M.ParamsRead(None, str(exc)))

    @on(M.ParamsRead)
    async def _params(self, msg: M.ParamsRead) -> None:
        form = self.query_one("#ed-form", VerticalScroll)
        await form.remove_children()
        if msg.params is None:
            await form.mount(Static(Text(f"cannot read the node's parser: {msg.error}\nEdit the whole argv instead:",
                                         style="bold")))
            raw = Input(shlex.join(self.args), id="f-raw", validators=[NoControl()])
            await form.mount(raw)
            raw.focus()
            self._refresh_diff()
            return
        self.spec = ParserSpec.from_json({"sglang_version": None, "actions": list(msg.params)})
        self.cmd = command(self.args, self.spec)
        shown = [p for p in msg.params if wanted(p)]
        # a deprecated alias is left out where the current flag for its field is in the form
        current_fields = {self._option(p).field for p in shown if not _deprecated(p) and self._option(p)}
        shown = [p for p in shown if not (_deprecated(p) and self._option(p) and self._option(p).field in current_fields)]
        self.params = sorted(shown, key=lambda p: (0 if "mamba" in _flag(p) else 1 if _flag(p) in EXTRA else 2, _flag(p)))
        rows = []
        for p in self.params:
            flag = _flag(p)
            arg = self._current(p)
            given = arg is not None
            cur = arg.value if arg is not None else None
            label = Label(Text(mid_cut(flag, LABEL_MAX - 1), style="bold" if given else ""))
            state = None
            if p.get("choices"):
                opts = [(str(c), str(c)) for c in p["choices"]]
                w = Select(opts, value=str(cur) if given and cur is not None else Select.NULL,
                           prompt=not_given(p), id=_fid(flag), allow_blank=True)
            elif _is_pair(p):
                names = [n for n in p.get("option_strings", []) if n.startswith("--")]
                opts = [(f"off ({n})" if n.startswith("--no-") else f"on ({n})", n) for n in names]
                w = Select(opts, value=arg.flag if given and arg.flag in names else Select.NULL,
                           prompt=not_given(p), id=_fid(flag), allow_blank=True)
            elif _is_switch(p):
                w = Switch(value=given, id=_fid(flag))
                state = Static(self._switch_state(p, given), id=_fid(flag) + "-state",
                               classes="state -on" if given else "state")
            else:
                validators: list[Validator] = [NoControl()]
                if _is_int_type(p.get("type")):
                    validators.append(ParserType(int))
                elif _is_float_type(p.get("type")):
                    validators.append(ParserType(float))
                # type "text": every character stays as typed (a refused value is said at the field)
                w = Input(value="" if cur is None else str(cur), placeholder=not_given(p),
                          id=_fid(flag), validators=validators, valid_empty=True)
            rows.append(Horizontal(label, w, *([state] if state is not None else []), classes="row"))
            if isinstance(w, Input):
                rows.append(Static("", id=_fid(flag) + "-error", classes="field-error"))
            help_text = (p.get("help") or "").strip()
            if help_text:
                rows.append(Static(Text(help_text), classes="help"))
        if not rows:
            rows.append(Static("the node's parser has no Mamba options"))
        rows += [
            Horizontal(Label(Text("environment", style="bold" if self.env0 else "")),
                       Input(value=env_text(self.env0), placeholder="not given · default none (NAME=VALUE words)", id="f-env",
                             validators=[NoControl(), EnvWords()], valid_empty=True), classes="row"),
            Static("", id="f-env-error", classes="field-error"),
            Static(Text("the server's extra environment (the run's env.json); the pre-flight runs with it"),
                   classes="help"),
            Horizontal(Label(Text("working folder", style="bold" if self.cwd0 else "")),
                       Input(value=self.cwd0 or "", placeholder="not given · default the login folder", id="f-cwd",
                             validators=[NoControl()], valid_empty=True), classes="row"),
            Static("", id="f-cwd-error", classes="field-error"),
        ]
        await form.mount_all(rows)
        # the flag column as wide as its longest flag, up to LABEL_MAX cells: at 80x24 (30 cells)
        # --speculative-accept-threshold-acc wrapped into two rows, its end on a row of its own;
        # a longer flag is cut in its middle (:func:`mid_cut`) so that its end still tells it apart
        longest = max((cell_len(_flag(p)) for p in self.params), default=0)
        for label in form.query(".row Label"):
            label.styles.min_width = min(longest + 1, LABEL_MAX)
        first = next(iter(form.query("Input, Select, Switch")), None)
        if first is not None:
            first.focus()
        self._refresh_diff()

    # --------------------------------------------------------------- argv
    def _option(self, p: dict) -> OptionSpec | None:
        return self.spec.lookup(_flag(p))[0] if self.spec is not None else None

    def _current(self, p: dict) -> LaunchArg | None:
        """The current run's item for option ``p`` (any of its flags; the last one wins)."""
        o = self._option(p)
        return self.cmd.by_field(self.spec).get(o.field if o is not None else _flag(p))

    @staticmethod
    def _switch_state(p: dict, on: bool) -> Text:
        if on:
            return Text.assemble(("on  ", "bold"), f"· {_flag(p)} given")
        return Text.assemble(("off  ", "bold"), (f"· {not_given(p)}", "dim"))

    def _wanted(self, p: dict) -> LaunchArg | None:
        """The item the form asks for option ``p`` (None: not given)."""
        flag = _flag(p)
        w = self.query_one("#" + _fid(flag))
        if isinstance(w, Switch):
            cur = self._current(p)
            return (cur if cur is not None and cur.value is None else LaunchArg(flag)) if w.value else None
        if isinstance(w, Select):
            v = w.value
            if v is Select.NULL or v is None:
                return None
            return LaunchArg(str(v)) if _is_pair(p) else LaunchArg(flag, str(v))
        assert isinstance(w, Input)
        return LaunchArg(flag, w.value) if w.value != "" else None

    def _unchanged(self, p: dict) -> bool:
        want, cur = self._wanted(p), self._current(p)
        if want is None or cur is None:
            return want is cur
        if want.value is None and cur.value is None:  # bare flags: the same side of a --x/--no-x pair
            return want.flag == cur.flag or not _is_pair(p)
        return want.value == cur.value

    def edited_run_env(self) -> tuple[dict[str, str], str | None]:
        """The environment and working folder after the edit (the run's when the fields are
        not there or not valid)."""
        env_in, cwd_in = self.query("#f-env"), self.query("#f-cwd")
        try:
            env = env_from_text(env_in.first(Input).value) if env_in else self.env0
        except ValueError:
            env = self.env0
        cwd = (cwd_in.first(Input).value or None) if cwd_in else self.cwd0
        return env, cwd

    def _env_changes(self) -> list[str]:
        env, cwd = self.edited_run_env()
        out = [f"+ env {k}={v}" for k, v in env.items() if k not in self.env0]
        out += [f"~ env {k}={v}" for k, v in env.items() if k in self.env0 and self.env0[k] != v]
        out += [f"- env {k}" for k in self.env0 if k not in env]
        if cwd != self.cwd0:
            out.append(f"~ folder {cwd or 'the default'}")
        return out

    def changed_fields(self) -> list[str]:
        """The flags whose field differs from the current run (the raw argv editor: the
        changed options of the argv diff), then ``environment`` / ``working folder``."""
        env, cwd = self.edited_run_env()
        extra = (["environment"] if env != self.env0 else []) + (["working folder"] if cwd != self.cwd0 else [])
        return self._changed_flags() + extra

    def _changed_flags(self) -> list[str]:
        raw = self.query("#f-raw")
        if raw:
            try:
                return [k for _, k, _, _ in diff(self.args, self.edited_args(), self.spec)]
            except ValueError:
                return ["argv"]
        return [_flag(p) for p in self.params if not self._unchanged(p)]

    def invalid_fields(self) -> list[str]:
        bad = []
        for inp in self.query(Input):
            res = inp.validate(inp.value)
            if res is not None and not res.is_valid:
                bad.append(f"{inp.id[2:].replace('_', '-')}: {'; '.join(res.failure_descriptions)}")
        return bad

    def edited_args(self) -> list[str]:
        """The SGLang args after the edit. Untouched fields keep their text and place; an edited
        option is rewritten in place (:meth:`LaunchCommand.set`, keeping its spelling unless
        the node's parser calls it deprecated), a new one is appended, a cleared one removed; each
        value is exactly one argv element (``--flag=value`` when the value itself starts with
        ``-``); a switched-on flag is the bare flag. Raises ValueError for an unbalanced raw argv."""
        raw = self.query("#f-raw")
        if raw:
            return shlex.split(raw.first(Input).value)
        cmd = self.cmd
        for p in self.params:
            if self._unchanged(p):
                continue
            flag, want = _flag(p), self._wanted(p)
            if want is None:
                cmd = cmd.remove(flag, self.spec)
            elif want.value is not None:
                cmd = cmd.set(flag, want.value, self.spec)
            else:
                if _is_pair(p):  # --x ↔ --no-x: the other flag of the pair
                    cmd = cmd.remove(flag, self.spec)
                cmd = cmd.set(want.flag or flag, True, self.spec)
        return arg_tokens(cmd)

    def edited_argv(self) -> list[str]:
        return self.prefix + self.edited_args()

    def _refresh_diff(self) -> None:
        t = Text()
        try:
            new = self.edited_args()
        except ValueError as exc:
            self.query_one("#ed-diff", Static).update(Text(f"argv: {exc}", style="bold red"))
            return
        d = diff(self.args, new, self.spec)
        envd = self._env_changes()
        if envd:
            t.append("environment: ", "bold")
            for line in envd:
                t.append(line, {"+": "green", "-": "red", "~": "yellow"}[line[0]])
                t.append("   ")
            t.append("\n")
        if not d:
            t.append("argv unchanged", "dim")
        else:
            t.append("argv change: ", "bold")
            for kind, k, o, n in d:
                style = {"+": "green", "-": "red", "~": "yellow"}[kind]
                if kind == "~":
                    t.append(f"{k} {o} → {n}", style)
                elif kind == "+":
                    t.append(f"+ {k}" + (f" {n}" if n is not None else ""), style)
                else:
                    t.append(f"- {k}" + (f" {o}" if o is not None else ""), style)
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
                t.append("ARGUMENTS OK", "bold reverse green")
                plan = res.get("memory_plan")
                if plan is None:
                    why = res.get("memory_plan_error")
                    t.append("  — SGLang accepts them; memory is not checked" + (f" ({why})" if why else ""), "bold")
                else:
                    t.append("  — SGLang accepts them", "bold")
                t.append(f"  ·  SGLang {res.get('sglang_version', '?')} will use:\n")
                if plan is not None:
                    warn = self.app.theme_variables.get("error" if not plan["fits"] else "success", "yellow")
                    t.append(("  ⚠ " if not plan["fits"] or plan.get("risk") else "  ") + one_line(plan) + "\n",
                             f"bold {warn}" if not plan["fits"] else "")
                    if plan.get("simulator_rule"):
                        t.append("    (the simulator's sizing rule: extra_buffer's tracking rows allocated on top;"
                                 " real SGLang's sizing: mambaconsole plan)\n", "dim")
                fields = res.get("fields") or {}
                for warn in self.same_args_warnings + self._load_warnings(res):
                    t.append(f"  ⚠ {warn}\n", f"bold {self.app.theme_variables.get('warning', 'yellow')}")
                edited = {k for _, k, _, _ in diff(self.args, new or [], self.spec)}
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

    def _field_error(self, inp: Input) -> None:
        """Say under the field why its value is refused (argparse's words), or nothing."""
        if not inp.id:
            return
        shown = self.query(f"#{inp.id}-error")
        if not shown:
            return
        res = inp.validate(inp.value)
        bad = res is not None and not res.is_valid
        msg = shown.first(Static)
        msg.update(Text("refused: " + "; ".join(res.failure_descriptions)) if bad else "")
        msg.set_class(bad, "-shown")

    def _load_warnings(self, res: dict) -> list[str]:
        """What SGLang will do at model load with resolved values its argument check accepted
        (:mod:`mambaconsole.sglang.load_checks`), from the pre-flight's resolved fields and the
        node's GPU readings."""
        fields = res.get("fields") or {}

        def val(name: str):
            return (fields.get(name) or {}).get("value")

        size = val("max_mamba_cache_size")
        if size is None:
            return []
        gpu = getattr(getattr(self.app, "state", None), "gpu", None)
        total = max((g.total_mib for g in gpu.gpus), default=None) if gpu is not None and gpu.available else None
        shards = int(val("dp_size") or 1) if val("enable_dp_attention") else 1
        line = max_mamba_cache_size_at_load(size, res.get("sglang_version"), total, shards)
        return [f"--max-mamba-cache-size {size}: {line}"] if line else []

    @on(Input.Changed)
    @on(Select.Changed)
    @on(Switch.Changed)
    def _changed(self, ev) -> None:
        if isinstance(ev, Input.Changed):
            self._field_error(ev.input)
            if ev.input.id in ("f-env", "f-cwd"):  # a verdict holds for the environment it ran in
                self.verdict = self.verdict_for = self.verdict_error = None
        if isinstance(ev, Switch.Changed) and ev.switch.id:
            p = next((p for p in self.params if _fid(_flag(p)) == ev.switch.id), None)
            state = self.query(f"#{ev.switch.id}-state")
            if p is not None and state:
                st = state.first(Static)
                st.update(self._switch_state(p, ev.value))
                st.set_class(ev.value, "-on")
        self._refresh_diff()

    # --------------------------------------------------------------- actions
    def action_preflight(self) -> None:
        if self.invalid_fields():
            self._refresh_verdict()
            return
        try:
            args = self.edited_args()
        except ValueError as exc:
            self.notify(str(exc), severity="error", markup=False)
            return
        self.query_one("#ed-verdict", Static).update(Text("pre-flight: resolving on the node…", style="italic"))
        self._preflight(args)

    @work(exclusive=True, group="preflight", exit_on_error=False)
    async def _preflight(self, args: list[str]) -> None:
        try:
            env, cwd = self.edited_run_env()
            res = await self.feed.resolve(args, env=env, cwd=cwd)
            if res.get("ok"):
                res = {**res, **await self.feed.memory_plan(res, self.prefix + self.args, env=env, cwd=cwd)}
            self.same_args_warnings = await self._same_args_failures(args)
            self.post_message(M.PreflightDone(args, res))
        except Exception as exc:
            self.post_message(M.PreflightDone(args, None, str(exc)))

    async def _same_args_failures(self, args: list[str]) -> list[str]:
        """Warnings for earlier runs of these args that ended OOM or crashed. A run's outcome:
        the run store's, else the console's (the current run's state, the history's summaries),
        else read from its log (:meth:`Feed.run_summary`, kept in the history's cache)."""
        state = getattr(self.app, "state", None)
        cache = getattr(self.app, "_summaries", None)
        cache = cache if isinstance(cache, dict) else {}
        out = []
        for r in same_args_runs(args, getattr(state, "runs", None), self.spec)[:5]:
            outcome = r.outcome or (cache.get(r.run_id) or {}).get("outcome")
            if outcome is None and state is not None and state.run is not None and state.run.run_id == r.run_id \
                    and state.status in FAILED_OUTCOMES:
                outcome = state.status
            if outcome is None and r.state not in ("running", "starting", "ready", "adopted"):
                try:
                    cache[r.run_id] = await self.feed.run_summary(r)
                    outcome = cache[r.run_id].get("outcome")
                except Exception:  # noqa: BLE001 - a log that cannot be read gives no warning
                    outcome = None
            if (line := failure_line(r, outcome)) is not None:
                out.append(line)
        return out

    @on(M.PreflightDone)
    def _preflight_done(self, msg: M.PreflightDone) -> None:
        self.verdict, self.verdict_for, self.verdict_error = msg.result, msg.argv, msg.error
        self._refresh_verdict()

    def action_focus_step(self, step: int) -> None:
        """Tab / Shift-Tab in the form's order; from inside an open Select menu, the menu
        closes and focus moves on from its Select (Textual's own step would go back to it)."""
        node = self.focused
        sel = next((a for a in node.ancestors_with_self if isinstance(a, Select)), None) if node is not None else None
        if sel is not None and sel is not node:
            sel.expanded = False
            self.set_focus(sel, scroll_visible=False)
        if step > 0:
            self.focus_next()
        else:
            self.focus_previous()

    def action_confirm(self) -> None:
        go = self.query_one("#ed-go", Button)
        if go.disabled:
            self.notify("run a pre-flight without error first (ctrl+r)", severity="warning")
            return
        self.dismiss(self.edited_argv())

    def action_cancel(self) -> None:
        """Esc: close; with changed fields, ask first (the draft is dropped either way it closes)."""
        changed = self.changed_fields()
        if not changed:
            self.dismiss(None)
            return
        n = len(changed)
        shown = ", ".join(changed[:6]) + (f" and {n - 6} more" if n > 6 else "")
        self.app.push_screen(DiscardScreen(f"Discard {n} changed field{'s' if n != 1 else ''}?", shown, "Discard"),
                             lambda yes: self.dismiss(None) if yes else None)

    def on_button_pressed(self, ev: Button.Pressed) -> None:
        {"ed-check": self.action_preflight, "ed-go": self.action_confirm, "ed-cancel": self.action_cancel}[ev.button.id]()

