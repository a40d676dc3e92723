"""The console app: wiring, bindings and commands. Panes and modals live in their own modules;
the data and the policy (what to poll, how often, when to back off, what a failure means) are
one :class:`~mambaconsole.session.session.Session` per server, headless: the app subscribes to
it (:class:`_Listener`), runs its answers in the message queue (:class:`M.SessionCall`, so keys
and answers keep their order), folds its waiting log lines in slices and redraws the panes.

Entry point: :func:`run` (what ``mambaconsole HOST`` / ``--demo`` / ``--read-only`` call)."""

from __future__ import annotations

import asyncio
import gc
import os
import re
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from textual import events, on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Grid
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Input

from mambaconsole import opening
from mambaconsole.errors import ConsoleError
from mambaconsole.opening import Opened
from mambaconsole.session import ui_state as ui_state_mod
from mambaconsole.session.feed import Feed
from mambaconsole.session.session import Listener, Session
from mambaconsole.state import ConsoleState, RunInfo
from mambaconsole.ui import messages as M
from mambaconsole.ui import release_collector, steady_collector, strip_cycles
from mambaconsole.ui.args_pane import ArgsPane
from mambaconsole.ui.footer import KeyFooter
from mambaconsole.ui.gpu_pane import GpuPane
from mambaconsole.ui.header import StatusBar
from mambaconsole.ui.log_pane import LogPane
from mambaconsole.ui.redraw import FramePacer
from mambaconsole.ui.screenshot import portable_svg
from mambaconsole.ui.spec_pane import SpecPane

# Start-up: what the first paint does not need (the modal screens, the argv diff, themes'
# TOML, httpx, SGLang knowledge's log parser) is imported when first used.

#: seconds from the mount after which a collector the command line held for the start-up runs
#: again even if the log's history is not read yet (no run, a slow node): only objects in
#: reference cycles wait for it meanwhile
COLLECTOR_HELD_S = 3.0

#: actions that change the node: hidden (footer, palette, keys) with --read-only
NODE_CHANGING = {"edit", "relaunch", "stop"}
#: seconds of log folding per turn of the app's message queue (keys go between turns)
LOG_SLICE_S = 0.012
#: while log lines are still waiting, the log pane and the header are redrawn at most this
#: often (seconds), the other panes at most every LOG_DRAW_ALL_S
LOG_DRAW_S = 0.25
LOG_DRAW_ALL_S = 2.0
#: the panes are redrawn from folded log lines as soon as they change, unless their redraws
#: would take more than LOG_DRAW_SHARE of the app's time, kept over time with a saved burst of
#: LOG_DRAW_SHARE * LOG_FRAME_S seconds (ui/redraw.py FramePacer: a redraw
#: takes the time until the screen update showing it is written, about 4-6 ms for a one-line
#: change at 120x40 on this project's 2-core box, more on a busy one); a redraw never waits more than
#: LOG_FRAME_S (seconds) after the last one: a flood, whose redraws are dear, is drawn 30 times
#: a second (at Textual's 60 frames a second a flood spent most of the CPU drawing and key
#: presses waited behind the frames)
LOG_FRAME_S = 1 / 30
LOG_DRAW_SHARE = 0.5
#: the panes that show folded log lines first, in a frame of their own (a frame's cost grows
#: with the widgets it repaints: the log pane's own frame is about half of one that also
#: repaints the spec stats and their sparklines); the other panes the same lines changed (spec
#: stats, header, GPU budget, ServerArgs) follow in the next frame, at most every
#: LOG_OTHERS_S seconds: they are never more than LOG_OTHERS_S (plus a frame) behind the log
#: pane, and a line 10 ms after the last does not wait behind their repaint. So does the log
#: pane's own title and status row (``log-status``: its line and new-line counts change with
#: every line; the log's lines go first as ``log-lines``): a log pane frame without it is about
#: 0.4 ms of CPU cheaper (compositor render p50 2.6-2.8 -> 2.2-2.3 ms at 120x40 on this
#: project's 2-core box, stage tool)
LOG_FIRST = frozenset({"log"})
LOG_OTHERS_S = 0.1
#: after a key press (or a mouse click or wheel turn) the log's folding waits this long
#: (seconds): the key travels the app, the screen, the focused widget and back to the app's
#: bindings, its action runs and its screen update is drawn, each step a turn of the event loop
#: that would otherwise wait behind a slice of a flood (under load the steps of one key took
#: 10 slices, 150 ms). The lines wait in the intake (bounded: the node's agent waits in turn).
#: A key whose binding ran ends the wait sooner: once the screen update after its action is
#: written (``ConsoleApp.run_action``)
INPUT_HOLD_S = 0.1
#: the command palette (ctrl+p): ``(title, help, action)``, one entry per action, keys as typed;
#: ``log.``/``args.`` actions run on the log pane / the ServerArgs pane
PALETTE = (
    ("Quit the console", "q · the server keeps running", "quit_console"),
    ("Keys: the whole key map", "?", "keys"),
    ("Edit the Mamba parameters and relaunch", "e · pre-flight with SGLang's own resolution first", "edit"),
    ("Relaunch the server unchanged", "R · stops the current run, starts the same argv", "relaunch"),
    ("Stop the server", "S · SIGINT, then SIGTERM, then SIGKILL", "stop"),
    ("History of the runs", "h", "history"),
    ("Zoom the focused pane (again: back)", "z", "zoom"),
    ("Next theme", "t", "cycle_theme"),
    ("Save a screenshot (SVG)", "ctrl+s · into the screenshots folder of the user data dir", "save_svg"),
    ("Go to the GPU memory pane", "1", "focus_pane('gpu')"),
    ("Go to the speculative decoding pane", "2", "focus_pane('spec')"),
    ("Go to the ServerArgs pane", "3", "focus_pane('args')"),
    ("Go to the log pane", "4", "focus_pane('log')"),
    ("Narrower ServerArgs pane", "[", "resize(-1)"),
    ("Wider ServerArgs pane", "]", "resize(1)"),
    ("Shorter top row", "-", "resize_top(-1)"),
    ("Taller top row", "+", "resize_top(1)"),
    ("Reset the pane sizes to the default layout", "0", "reset_layout"),
    ("Log: pick the run whose log is shown", "r in the log pane", "pick_run"),
    ("Log: jump to the first error", "E in the log pane", "log.first_error"),
    ("Log: follow the end", "End or G in the log pane", "log.follow"),
    ("Log: search", "/ in the log pane · n / N: next / previous match", "log.search"),
    ("Log: filter", "f in the log pane · regex, !regex keeps the others", "log.filter"),
    ("Log: poll access lines hidden / dimmed / shown", "a in the log pane", "log.cycle_access"),
    ("Log: wrap long lines on/off", "w in the log pane", "log.wrap"),
    ("Log: read earlier lines (the skipped middle of a long log)", "b in the log pane", "log.page_back"),
    ("ServerArgs: show all / non-default / changed", "a in the ServerArgs pane", "args.cycle_filter"),
    ("ServerArgs: search", "/ in the ServerArgs pane", "args.search"),
    ("ServerArgs: SGLang source of the selected row", "v in the ServerArgs pane", "args.view_source"),
)


#: a pane title's first word -> its word in the compact pane switcher (the short forms that fit
#: 80 columns); other titles' first words are used as they are
SWITCH_WORDS = {"speculative": "spec", "serverargs": "args"}


def screenshot_folder() -> Path:
    """Where ``ctrl+s`` saves: ``<platformdirs user data dir>/mambaconsole/screenshots``."""
    import platformdirs

    return Path(platformdirs.user_data_dir("mambaconsole")) / "screenshots"


def _pane_bindings():
    """The panes whose own keys work there only: (its name in words, its pane key, its class)."""
    return (("log", "4", LogPane), ("ServerArgs", "3", ArgsPane))


def _pane_only_keys() -> list[str]:
    """Every key a pane binds for itself (LogPane's and ArgsPane's BINDINGS: one place)."""
    keys: list[str] = []
    for _name, _num, cls in _pane_bindings():
        for b in cls.BINDINGS:
            keys += [k for k in b.key.split(",") if k not in keys]
    return keys


class ConsoleApp(App[int]):
    """``mambaconsole HOST``: the console on ``server``, a :class:`Session`, or a feed to make
    one with ``clock`` (frozen in snapshot tests), ``poll_s`` and ``prepare`` (a coroutine
    function run before the first poll: the demo starts its first run there); ``on_quit`` runs
    (awaited) when the app exits (the demo stops its processes there). ``start_workers=False``:
    the session is never started (tests feed the state by hand)."""

    TITLE = "mambaconsole"
    CSS_PATH = "app.tcss"
    ENABLE_COMMAND_PALETTE = True
    #: a zoomed pane keeps the header (the run's state) and the footer in sight
    ALLOW_IN_MAXIMIZED_VIEW = "StatusBar, Footer"

    BINDINGS = [
        Binding("q", "quit_console", "Quit", tooltip="quit; the server keeps running"),
        Binding("question_mark", "keys", "Keys"),
        Binding("e", "edit", "Edit args"),
        Binding("R", "relaunch", "Relaunch"),
        Binding("S", "stop", "Stop"),
        Binding("h", "history", "History"),
        Binding("z", "zoom", "Zoom"),
        Binding("t", "cycle_theme", "Theme", show=False),
        Binding("ctrl+s", "save_svg", "Screenshot", show=False),
        Binding("1", "focus_pane('gpu')", "GPU", show=False),
        Binding("2", "focus_pane('spec')", "Spec", show=False),
        Binding("3", "focus_pane('args')", "Args", show=False),
        Binding("4", "focus_pane('log')", "Log", show=False),
        Binding("left_square_bracket", "resize(-1)", "Narrower args", show=False),
        Binding("right_square_bracket", "resize(1)", "Wider args", show=False),
        Binding("minus", "resize_top(-1)", "Shorter top row", show=False),
        Binding("plus,equals_sign", "resize_top(1)", "Taller top row", show=False),
        Binding("0", "reset_layout", "Default pane sizes", show=False),
    ]

    #: the pane sizes of a first start and of ``0``: args : log = 5 : 5 tenths of the width, the
    #: top row 13 terminal rows; the resize keys keep them within these bounds
    DEFAULT_ARGS_COLS, ARGS_COLS_RANGE = 5, (2, 8)
    DEFAULT_TOP_ROWS, TOP_ROWS_RANGE = 13, (5, 30)

    def __init__(self, server: Session | Feed, *, read_only: bool = False, clock: Callable[[], float] = time.time,
                 poll_s: float = 2.0, theme: str | None = None, screenshot_dir: str | None = None,
                 on_quit=None, prepare=None, start_workers: bool = True,
                 ui_state: Path | None = None, held: Iterable[Callable[[], None]] = ()) -> None:
        super().__init__()
        strip_cycles.install()  # rendered rows freed when dropped (ui/strip_cycles.py)
        if not isinstance(server, Session):
            server = Session(server, poll_s=poll_s, clock=clock, prepare=prepare)
        self.session = server
        server.dispatch = lambda fn: self.post_message(M.SessionCall(fn))
        for fn in held:  # answers from before the app existed, first: handled in order, once mounted
            server.dispatch(fn)
        server.listener = _Listener(self)
        self.read_only = read_only
        self.clock = server.clock
        self.poll_s = server.poll_s
        self.screenshot_dir = screenshot_dir  # None: screenshot_folder()
        self.on_quit_hook = on_quit
        self.start_workers = start_workers
        self._wanted_theme = theme
        #: where the theme and pane sizes chosen are remembered (``session/ui_state.py``);
        #: None: nothing is read or written (tests, screenshots)
        self.ui_state_path = ui_state
        saved = ui_state_mod.load(ui_state) if ui_state is not None else ui_state_mod.UiState()
        self._ui_state_error = False
        self._themes: list[str] = []
        self._load_themes(saved.theme)
        self._args_cols = self.DEFAULT_ARGS_COLS  # args : log = _args_cols : 10 - _args_cols
        self._top_rows = self.DEFAULT_TOP_ROWS
        self._set_sizes(saved.args_cols, saved.top_rows)
        #: one pane at a time (a small terminal: on_resize); which one
        self.compact = False
        self._compact_pane = "log"
        self._layout_done = False
        self._summaries = server.summaries  # run id -> what its log says (history, run picker)
        self._closing = False
        self._log_changed: set[str] = set()  # panes the folded lines changed, not redrawn yet
        self._drawn_at = self._drawn_all_at = 0.0
        self._input_at = -1.0  # the last key press or click (perf_counter)
        self._fold_paused = False  # _log_pending waits for input (INPUT_HOLD_S)
        self._frozen_after_log = False  # gc.freeze() again once the log's history is read
        self._gc_thresholds = None  # the collector's thresholds before steady_collector(), to put back
        self._log_frame_timer = None  # a Timer: draws what the last fold changed once the pacer lets it
        self._reading_all_timer = None  # a Timer: draws what a redraw left while the history is read
        self._others_changed: set[str] = set()  # panes besides LOG_FIRST the folded lines changed
        self._others_at = float("-inf")  # perf_counter: they were last redrawn
        self._others_timer = None  # a Timer: redraws them once LOG_OTHERS_S has passed
        self._pacer = FramePacer(LOG_DRAW_SHARE, LOG_FRAME_S)  # when the log's next redraw may start

    @property
    def state(self) -> ConsoleState:
        return self.session.state

    @property
    def feed(self) -> Feed:
        return self.session.feed

    @property
    def relaunching(self) -> bool:
        return self.session.relaunching

    @relaunching.setter
    def relaunching(self, value: bool) -> None:
        self.session.relaunching = value

    # ----------------------------------------------------------------- layout
    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        with Grid(id="panes"):
            yield GpuPane(id="gpu", classes="pane")
            yield SpecPane(id="spec", classes="pane")
            yield ArgsPane(id="args", classes="pane")
            yield LogPane(id="log", classes="pane")
        yield KeyFooter()

    def _load_themes(self, saved: str | None = None) -> None:
        """Register the themes (``themes/``) and pick ``theme`` (else the ``saved`` one, else
        ``mamba-dark``) before the first paint: the stylesheet is then built once, in that theme
        (setting it once mounted re-parses and re-applies every style: ~30 ms of start-up).
        A given theme that does not exist is an error; a saved one (since deleted) is ignored."""
        from mambaconsole.ui.themes import load_themes

        for th in load_themes():
            self.register_theme(th)
            self._themes.append(th.name)
        if saved not in self.available_themes:
            saved = None
        want = self._wanted_theme or saved or ("mamba-dark" if "mamba-dark" in self._themes else None)
        if want:
            if want not in self.available_themes:
                raise ConsoleError(f"unknown theme {want!r} (known: {', '.join(self._themes)})")
            self.theme = want

    async def on_load(self) -> None:
        """Start the session before the panes are built, and let its connection open first (at
        most :data:`~mambaconsole.session.session.OPEN_WAIT_S`, :meth:`Session.link_opened`): the
        node's first command then runs while compose and mount do (its answers wait in the
        message queue, handled once mounted, in order with the keys). Meanwhile
        :func:`opening.preload` imports what the console needs right after its first view, and
        the panes are built once both are done (under the command line, :func:`opening.open_host`
        did the imports already; the demo waits for them, about 0.1 s)."""
        if self.start_workers:
            self.session.start()
            # what the first view's next second needs, imported meanwhile in a worker thread
            # (done already when opening.open_host opened the session): frozen with start-up
            await asyncio.gather(self.session.link_opened(), asyncio.to_thread(opening.preload))

    def on_mount(self) -> None:
        titles = {"gpu": "GPU memory [1]", "spec": "Speculative decoding [2]", "args": "ServerArgs [3]", "log": "Log [4]"}
        for pid, title in titles.items():
            pane = self.query_one(f"#{pid}")
            pane.border_title = title
            pane.ALLOW_MAXIMIZE = True
        self.bar = self.query_one(StatusBar)
        self.gpu_pane = self.query_one(GpuPane)
        self.spec_pane = self.query_one(SpecPane)
        self.args_pane = self.query_one(ArgsPane)
        self.log_pane = self.query_one(LogPane)
        # the sizes (app.tcss's 5fr 5fr, 13 1fr, or the saved ones): _fit_layout applies them
        self.refresh_panes({"header", "gpu", "spec", "args", "log"})
        self.set_interval(1.0, self._tick)
        self.query_one("#log-view").focus()
        self._fit_layout(self.size.width, self.size.height)
        # what startup built (Textual, the panes, SGLang knowledge) lives as long as the app:
        # out of the collector's full passes, which otherwise rescan it all (~50 ms, a dropped
        # frame) every few seconds while a log floods in
        gc.freeze()
        # a collector the command line held for the start-up (ui/__init__.py) runs again once
        # the log's history is read (_log_pending), at the latest COLLECTOR_HELD_S from here
        self.set_timer(COLLECTOR_HELD_S, release_collector)

    @property
    def main_screen(self) -> Screen:
        return self.screen_stack[0]

    def _apply_sizes(self) -> None:
        g = self.main_screen.query_one("#panes", Grid)
        if self.compact:
            g.styles.grid_size_columns, g.styles.grid_size_rows = 1, 1
            g.styles.grid_columns = g.styles.grid_rows = "1fr"
        else:
            g.styles.grid_size_columns, g.styles.grid_size_rows = 2, 2
            g.styles.grid_columns = f"{self._args_cols}fr {10 - self._args_cols}fr"
            g.styles.grid_rows = f"{self._top_rows} 1fr"

    #: below this many columns or rows the screen shows one pane at a time (``compact``)
    COMPACT_BELOW = (100, 30)
    PANES = ("gpu", "spec", "args", "log")

    def on_resize(self, event) -> None:
        """Below :data:`COMPACT_BELOW` (a laptop's 80x24 SSH window): one pane at a time, the
        pane keys 1-4 switch it (like btop's presets); the app gets the ``-compact`` class, which
        app.tcss also uses to tighten the editor."""
        self._fit_layout(event.size.width, event.size.height)

    def _fit_layout(self, w: int, h: int) -> None:
        compact = w < self.COMPACT_BELOW[0] or h < self.COMPACT_BELOW[1]
        if compact == self.compact and self._layout_done:
            return
        if not hasattr(self, "log_pane"):
            return  # not mounted yet: on_mount fits it
        self.compact = compact
        self._layout_done = True
        self.set_class(compact, "-compact")
        self._apply_sizes()
        self._show_compact_pane()

    def _show_compact_pane(self) -> None:
        """In compact mode only the chosen pane is displayed, its title naming the pane keys."""
        for name in self.PANES:
            pane = self.main_screen.query_one(f"#{name}")
            shown = not self.compact or name == self._compact_pane
            pane.display = shown
            pane.border_subtitle = self.pane_switcher() if self.compact and shown else ""
        if self.compact:
            self.refresh_panes({self._compact_pane})

    def pane_switcher(self) -> str:
        """``1 gpu · 2 failure · 3 args · 4 log``: each pane key with the first word of its
        pane's current title (the spec pane's turns ``Failure (no decode batch)``), lower case;
        ``GPU memory`` is ``gpu``, ``Speculative decoding`` ``spec``, ``ServerArgs`` ``args``
        (:data:`SWITCH_WORDS`: the words the compact subtitle had to fit 80 columns)."""
        words = []
        for b in Binding.make_bindings(self.BINDINGS):
            m = re.match(r"^focus_pane\('(\w+)'\)$", b.action)
            if m:
                title = str(self.main_screen.query_one(f"#{m.group(1)}").border_title or m.group(1))
                first = re.sub(r"\s*\[\d+\]$", "", title).split()[0].lower() if title.strip() else m.group(1)
                words.append(f"{b.key} {SWITCH_WORDS.get(first, first)}")
        return " · ".join(words)

    def _tick(self) -> None:
        """Once a second: the header's clocks, the GPU reading's age once it is stale (and the
        spec pane's "last seen" of a run that is over); a log that went idle completes its last
        record."""
        changed = self.session.tick()
        if changed:
            self.refresh_panes(changed)
        self.bar.refresh_from(self.state)
        self.gpu_pane.refresh_age(self.state)
        if self.state.batch_t is not None and not self.state.live:
            self.refresh_panes({"spec"})

    def refresh_panes(self, changed: Iterable[str]) -> None:
        """Redraw the panes named in ``changed`` from the state: ``header``, ``gpu``, ``spec``,
        ``args``, ``log``; or the log pane's part: ``log-lines`` (its view) or ``log-status``
        (its title and status row; :data:`LOG_FIRST`)."""
        changed = set(changed)
        if {"log-lines", "log-status"} <= changed:
            changed.add("log")
        for name, pane in (("header", self.bar), ("gpu", self.gpu_pane), ("spec", self.spec_pane),
                           ("args", self.args_pane), ("log", self.log_pane),
                           ("log-lines", self.log_pane), ("log-status", self.log_pane)):
            if name in changed and not (name.startswith("log-") and "log" in changed):
                try:
                    if name == "log-lines":
                        pane.refresh_from(self.state, status=False)
                    elif name == "log-status":
                        pane.refresh_status(self.state)
                    else:
                        pane.refresh_from(self.state)
                except NoMatches:  # the pane's children are not mounted yet: the next event redraws it
                    pass
        if "spec" in changed and self.compact:  # its title may have changed: the switcher names it
            shown = self.main_screen.query_one(f"#{self._compact_pane}")
            if shown.border_subtitle != (words := self.pane_switcher()):
                shown.border_subtitle = words

    def watch_theme(self, theme: str) -> None:
        """A theme chosen once running (``t``, the palette) is redrawn and remembered."""
        if self.is_mounted and hasattr(self, "bar"):
            self.call_later(self.refresh_panes, {"header", "gpu", "spec", "args", "log"})
            self._save_ui_state()

    # ----------------------------------------------------------------- the session
    @on(M.SessionCall)
    def _session_call(self, msg: M.SessionCall) -> None:
        """An answer of the session's, run in order with the keys."""
        if not self._closing:
            msg.fn()

    def action_page_back(self) -> str | None:
        """The log pane's ``b``: the page before the first kept line, read from the node;
        returns the note when there is nothing to read (the pane says it in its status line)."""
        if not self.start_workers:
            return None
        return self.session.page_back()

    @on(M.LogPending)
    def _log_pending(self, _msg: M.LogPending) -> None:
        """Fold the waiting log lines in for at most LOG_SLICE_S seconds; with more waiting, go
        again after the messages queued meanwhile (key presses first). While lines wait, the
        panes are redrawn every LOG_DRAW_S seconds, not after every slice; once none wait, at
        once, or when the pacer lets the next redraw start (:data:`LOG_DRAW_SHARE`)."""
        if self._closing:
            return
        t0 = time.perf_counter()
        if t0 - self._input_at < INPUT_HOLD_S:  # input first
            if not self._fold_paused:
                self._fold_paused = True
                self.set_timer(max(0.001, self._input_at + INPUT_HOLD_S - t0), self._resume_fold)
            return
        changed = self._log_changed
        changed |= self.session.fold_log(t0 + LOG_SLICE_S)
        more = self.session.intake.pending
        now = time.perf_counter()
        if not more and not self._frozen_after_log and self.state.reading_left() is None:
            # what the first read of the log built to last (SGLang knowledge, imported on first
            # use; the fold; the panes' caches) joins startup's out of the collector's full
            # passes, which from now on run rarely (ui/__init__.py FULL_AFTER)
            self._frozen_after_log = True
            gc.freeze()
            release_collector()
            if self._gc_thresholds is None:
                self._gc_thresholds = steady_collector()
        reading = self.state.reading_left() is not None
        if not more and not reading:
            self._draw_when_due(now)
        elif now - self._drawn_at >= LOG_DRAW_S:
            self._draw_behind(now, reading)
        elif not more and changed and self._log_frame_timer is None:
            # the history's next records are on their way: the header is drawn LOG_DRAW_S
            # after its last redraw, as while lines wait
            self._log_frame_timer = self.set_timer(self._drawn_at + LOG_DRAW_S - now, self._reading_due)
        if more:
            # not straight back into the queue: Textual's message loop takes a queued message
            # without a turn of the event loop, so keys (from the driver's thread), the screen's
            # refresh timer and the node's stream would wait for the whole backlog
            asyncio.get_running_loop().call_soon(self.post_message, M.LogPending())

    def _reading_due(self) -> None:
        """LOG_DRAW_S after the last redraw while the log's history is read and no line waits:
        draw as :meth:`_log_pending` does (everything, once the history is read)."""
        self._log_frame_timer = None
        self._draw_reading()

    def _draw_reading(self) -> None:
        """Draw what is due while the history is read (:meth:`_draw_behind`), unless lines wait
        (:meth:`_log_pending` draws then); everything due once it is read."""
        if self.session.intake.pending or self._closing:
            return
        if self.state.reading_left() is None:
            self._draw_when_due(time.perf_counter())
            return
        self._draw_behind(time.perf_counter(), reading=True)

    def _draw_behind(self, now: float, reading: bool) -> None:
        """Lines wait, or the log's history is being read: the log pane and the header every
        LOG_DRAW_S, the other panes (a new layout each, as their text changes height) every
        LOG_DRAW_ALL_S. While the history is read (``reading``) the log pane goes with the
        other panes (the header says how much is left): a redraw hands the pane at most its
        kept lines, so a long history's lines are mostly never classified or drawn."""
        changed = self._log_changed
        all_due = now - self._drawn_all_at >= LOG_DRAW_ALL_S
        every = set(changed) if all_due else changed & ({"header"} if reading else {"log", "header"})
        self._draw(every)
        changed -= every
        self._drawn_at = now
        if all_due:
            self._drawn_all_at = now
        if reading and changed and self._reading_all_timer is None:
            # what is left is drawn at the other panes' next turn, even if no more of the
            # history comes before it (a slow or stalled link)
            self._reading_all_timer = self.set_timer(max(0.001, self._drawn_all_at + LOG_DRAW_ALL_S - now),
                                                     self._reading_all_due)

    def _reading_all_due(self) -> None:
        """LOG_DRAW_ALL_S after the other panes' last redraw while the history is read: draw
        what the redraws since left for their turn."""
        self._reading_all_timer = None
        self._draw_reading()

    def _resume_fold(self) -> None:
        self._fold_paused = False
        if self.session.intake.pending and not self._closing:
            self.post_message(M.LogPending())  # (an input since: _log_pending waits again)

    async def on_event(self, event) -> None:
        if isinstance(event, (events.Key, events.MouseDown, events.MouseScrollDown, events.MouseScrollUp)):
            self._input_at = time.perf_counter()  # the log's folding waits for it (_log_pending)
        await super().on_event(event)

    async def run_action(self, action, default_namespace=None, namespaces=None) -> bool:
        """Textual's ``App.run_action`` (every binding's action goes through it); an action run
        for the last input ends the log's wait for that input once its screen update is written
        (a key that changed nothing: at once), not :data:`INPUT_HOLD_S` after the key."""
        handled = await super().run_action(action, default_namespace, namespaces)
        at = self._input_at
        if handled and time.perf_counter() - at < INPUT_HOLD_S:
            self.call_after_refresh(self._input_answered, at)
        return handled

    def _input_answered(self, at: float) -> None:
        if self._input_at == at:  # no input since: the lines need not wait any longer
            self._input_at = -1.0
            if self._fold_paused:
                self._resume_fold()

    def _draw_log_changes(self) -> None:
        """Redraw the panes the folded log lines changed (paced: :data:`LOG_DRAW_SHARE`)."""
        if self._log_frame_timer is not None:
            self._log_frame_timer.stop()
            self._log_frame_timer = None
        if self._closing:
            return
        changed = self._log_changed
        now = time.perf_counter()
        if self.session.first_log_shown:
            first = changed & LOG_FIRST
            self._others_changed |= changed - first
            if "log" in first:  # its lines now, its title and status row with the other panes
                first = (first - {"log"}) | {"log-lines"}
                self._others_changed.add("log-status")
            changed = first
        elif changed - LOG_FIRST:  # the first view: every pane in one frame
            self._others_at = now
        self._draw(changed)
        self._log_changed = set()
        self._drawn_at = self._drawn_all_at = now
        if not self.session.first_log_shown and self.state.reading_left() is None:
            self.call_after_refresh(self.session.log_shown)  # the log's history is read and drawn
        self._draw_others_when_due()

    def _draw_others_when_due(self) -> None:
        """Redraw the other panes the folded lines changed, once the log pane's redraw is on
        screen (or counts as shown: the pacer's ``unshown``) and :data:`LOG_OTHERS_S` has
        passed since they were last redrawn; else when that is (a timer; :meth:`_shown` asks
        again sooner)."""
        if self._others_timer is not None:
            self._others_timer.stop()
            self._others_timer = None
        if not self._others_changed or self._closing:
            return
        now = time.perf_counter()
        due = self._others_at + LOG_OTHERS_S
        if self._pacer.in_flight:
            due = max(due, self._pacer.started + self._pacer.unshown)
        if now < due:
            self._others_timer = self.set_timer(due - now, self._draw_others_when_due)
            return
        self._others_at = now
        panes, self._others_changed = self._others_changed, set()
        self.refresh_panes(panes)

    def _draw_when_due(self, now: float) -> None:
        """Draw the log's changes now if the pacer lets a redraw start, else once it does (a
        timer; while the last redraw is not on screen yet, :meth:`_shown` asks again sooner)."""
        due = self._pacer.due()
        if now >= due:
            self._draw_log_changes()
        elif self._log_changed:
            if self._log_frame_timer is not None and not self._pacer.in_flight:
                self._log_frame_timer.stop()  # set while the last redraw was unshown: now sooner
                self._log_frame_timer = None
            if self._log_frame_timer is None:
                self._log_frame_timer = self.set_timer(due - now, self._draw_log_changes)

    def _draw(self, panes: set[str]) -> None:
        """Redraw ``panes`` from the log's changes, timed for the pacer until the screen update
        that shows it is written."""
        if not panes:
            return
        self._pacer.begin(time.perf_counter())
        self.refresh_panes(panes)
        self.call_after_refresh(self._shown)

    def _shown(self) -> None:
        """The last redraw is on screen; what the log changed meanwhile is drawn when the
        pacer lets it (unless lines still wait, or the log's history is still being read:
        :meth:`_log_pending` and :meth:`_reading_due` draw then)."""
        self._pacer.shown(time.perf_counter())
        if self._log_changed and not self._closing and not self.session.intake.pending \
                and self.state.reading_left() is None:
            self._draw_when_due(time.perf_counter())
        self._draw_others_when_due()

    # ----------------------------------------------------------------- actions
    def check_action(self, action: str, parameters) -> bool | None:
        if self.read_only and action in NODE_CHANGING:
            return False
        return True

    def on_key(self, event) -> None:
        """A key that one pane binds for itself, pressed where no binding takes it (another pane
        focused): say where it works."""
        if self.screen is not self.main_screen or isinstance(self.focused, Input):
            return  # a dialog, or typed text (the log's and ServerArgs' search boxes)
        if self.read_only and any(b.action in NODE_CHANGING and event.key in b.key.split(",") for b in self.BINDINGS):
            self.notify("read-only console (--read-only): e, R and S, which change the node, are off", timeout=4)
            return
        if event.key in _pane_only_keys() and event.key not in self.screen.active_bindings:
            self.action_elsewhere(event.key)

    def action_elsewhere(self, key: str) -> None:
        """A pane's key pressed where it does nothing (another pane focused): say where it works."""
        where = []
        for name, num, cls in _pane_bindings():
            for b in cls.BINDINGS:
                if key in b.key.split(","):
                    where.append(f"{b.description.lower()} in the {name} pane (press {num} first)")
        shown = {"slash": "/", "end": "End"}.get(key, key)
        if where:
            self.notify(f"{shown} does nothing here: " + "; ".join(where), timeout=4)

    async def action_quit_console(self) -> None:
        self.exit(0)

    def action_help_quit(self) -> None:
        """ctrl+c: quit (Textual's default only says which key quits); while a relaunch is in
        flight, ask first (quitting leaves the node wherever the relaunch got to)."""
        if not self.relaunching:
            self.exit(0)
            return
        from mambaconsole.ui.confirm import ConfirmScreen

        if isinstance(self.screen, ConfirmScreen):
            return
        self.push_screen(ConfirmScreen("A relaunch is in flight. Quit anyway?",
                                       "Quitting cancels it wherever it has got to (stopping the old run, "
                                       "starting the new one, or waiting for it).", "Quit"),
                         lambda yes: self.exit(0) if yes else None)

    def action_keys(self) -> None:
        from mambaconsole.ui.editor import EditorScreen
        from mambaconsole.ui.help import HelpScreen, key_groups

        self.push_screen(HelpScreen(key_groups(self, [] if self.read_only else [("editor (e)", EditorScreen)])))

    def action_zoom(self) -> None:
        """Zoom the focused pane, or un-zoom. A log that followed its end still does after
        either: the next size it gets pins it to the end (lines that arrive before that
        layout would otherwise be appended to a view whose end moved)."""
        screen = self.screen
        log = self.log_pane
        if log.following:
            log.view.pin_end = True
            self.call_after_refresh(self._end_pin)  # a pane whose size did not change gets no resize
        if screen.maximized is not None:
            screen.minimize()
            return
        node = self.focused
        while node is not None and "pane" not in node.classes:
            node = node.parent
        pane = node if node is not None else self.log_pane
        screen.maximize(pane, container=False)

    def _end_pin(self) -> None:
        view = self.log_pane.view
        if view.pin_end:
            view.pin_end = False
            view.scroll_end(animate=False, immediate=True, x_axis=False)

    def action_cycle_theme(self) -> None:
        names = self._themes or list(self.available_themes)
        i = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(i + 1) % len(names)]
        self.notify(f"theme {self.theme}", timeout=2, markup=False)

    def _save_ui_state(self) -> None:
        """Remember the theme and the pane sizes (``session/ui_state.py``); a failed write is
        said once, the console goes on."""
        if self.ui_state_path is None:
            return
        try:
            ui_state_mod.save(self.ui_state_path, ui_state_mod.UiState(
                theme=self.theme, args_cols=self._args_cols, top_rows=self._top_rows))
        except OSError as exc:
            if not self._ui_state_error:
                self._ui_state_error = True
                self.notify(f"theme and pane sizes not saved: {exc}", severity="warning", timeout=8, markup=False)

    @property
    def escape_to_minimize(self) -> bool:
        """Esc in an input box (log search/filter, ServerArgs search) closes the box, never
        un-zooms the pane."""
        if isinstance(self.focused, Input) or self.log_pane.takes_escape(self.focused) \
                or self.args_pane.takes_escape(self.focused):
            return False  # a pane's Esc first clears its search
        return super().escape_to_minimize

    def save_screenshot(self, filename: str | None = None, path: str | None = None,
                        time_format: str | None = None) -> str:
        """Textual's screenshot, made to render outside a browser (:func:`portable_svg`)."""
        saved = super().save_screenshot(filename, path, time_format)
        with open(saved, encoding="utf-8") as f:
            svg = portable_svg(f.read())
        with open(saved, "w", encoding="utf-8") as f:
            f.write(svg)
        return saved

    def action_save_svg(self) -> None:
        folder = Path(self.screenshot_dir) if self.screenshot_dir else screenshot_folder()
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = self.save_screenshot(path=str(folder))
        except OSError as exc:
            self.notify(f"screenshot not saved: {exc}", severity="error", timeout=8, markup=False)
            return
        self.notify(f"saved {os.path.abspath(path)}", timeout=6, markup=False)

    def action_focus_pane(self, which: str) -> None:
        """Focus pane ``which`` now (Screen.set_focus, not Widget.focus, which defers it to the
        next idle: ``1z`` typed quickly zoomed the pane focused before)."""
        target = {"gpu": "#gpu", "spec": "#spec", "args": "#args-table", "log": "#log-view"}[which]
        if self.compact and which != self._compact_pane:
            self._compact_pane = which
            self._show_compact_pane()
        w = self.query_one(target)
        self.screen.set_focus(w if w.can_focus else self.query_one(f"#{which}"))

    def _set_sizes(self, args_cols: int | None, top_rows: int | None) -> None:
        """Set the pane sizes (``None``: unchanged), each kept within its range."""
        if args_cols is not None:
            lo, hi = self.ARGS_COLS_RANGE
            self._args_cols = max(lo, min(hi, args_cols))
        if top_rows is not None:
            lo, hi = self.TOP_ROWS_RANGE
            self._top_rows = max(lo, min(hi, top_rows))

    def action_resize(self, step: int) -> None:
        self._set_sizes(self._args_cols + step, None)
        self._apply_sizes()
        self._save_ui_state()

    def action_resize_top(self, step: int) -> None:
        self._set_sizes(None, self._top_rows + 2 * step)
        self._apply_sizes()
        self._save_ui_state()

    def action_reset_layout(self) -> None:
        """``0``: the default pane sizes again (the theme stays)."""
        self._set_sizes(self.DEFAULT_ARGS_COLS, self.DEFAULT_TOP_ROWS)
        self._apply_sizes()
        self._save_ui_state()
        self.notify("default pane sizes", timeout=2, markup=False)

    def action_history(self) -> None:
        from mambaconsole.ui.history import HistoryScreen

        self.push_screen(HistoryScreen(self.state.runs, self.state.host,
                                       self.state.run.run_id if self.state.run else None,
                                       feed=self.feed if self.start_workers else None, cache=self._summaries,
                                       peaks=self.state.gpu_peak_mib, current_word=self._current_word()),
                         self._show_run_log)

    def _current_word(self) -> str | None:
        """The header's status word for the current run (history and run picker use it)."""
        return self.state.status if self.state.run is not None and self.state.connected else None

    def _show_run_log(self, run_id: str | None) -> None:
        """The log pane shows ``run_id``'s log (chosen in the run picker or the history); a
        rank of the run across nodes on another node (``rank:I``) opens its log there."""
        if run_id and run_id.startswith("rank:"):
            from mambaconsole.ui.run_picker import RankLogScreen

            ranks = self.session.ranks
            member = ranks.member(int(run_id[5:])) if ranks is not None else None
            if member is not None and member.run is not None:
                self.push_screen(RankLogScreen(member))
            return
        if run_id and self.session.show_log(run_id):
            self.refresh_panes({"log", "header"})

    def action_pick_run(self) -> None:
        from mambaconsole.ui.run_picker import RunPicker

        self.push_screen(RunPicker(self.state.runs, self.state.run.run_id if self.state.run else None,
                                   self._current_word(), feed=self.feed if self.start_workers else None,
                                   cache=self._summaries, ranks=self.state.slices.ranks.views,
                                   host=self.state.host), self._show_run_log)

    def action_view_source(self, row) -> None:
        if (why := self.state.live_explanation(row)) is not None:  # a value SGLang set at runtime
            from mambaconsole.ui.source_view import SourceScreen

            screen = SourceScreen(f"{row.flag} = {row.value!r} → {row.live!r} live  (set by SGLang at runtime)")
            screen.show_note(why)
            self.push_screen(screen)
            return
        if not row.writer_file or not row.writer_line:
            self.notify(f"{row.flag}: no SGLang code wrote this value ({row.source})", timeout=3, markup=False)
            return
        from mambaconsole.ui.source_view import SourceScreen

        screen = SourceScreen(f"{row.flag} = {row.value!r}  ({row.source})  written by {row.changed_by or row.writer_file}")
        self.push_screen(screen)
        if self.state.simulated:
            screen.show_simulated(row.writer_file, row.writer_line, self.state.sglang_version)
            return
        self._read_source(screen, row.writer_file, row.writer_line)

    @work(group="source", exit_on_error=False)
    async def _read_source(self, screen, file: str, line: int) -> None:
        try:
            screen.show(await self.session.read_source(file, line), None, line)
        except Exception as exc:
            screen.show(None, str(exc), line)

    def _stale_refusal(self) -> str | None:
        return self.session.refusal()

    def action_edit(self) -> None:
        if (why := self._stale_refusal() or self.session.group_refusal()) is not None:
            self.notify(why, severity="error", markup=False)
            return
        from mambaconsole.ui.editor import EditorScreen

        run = self.state.run
        screen = EditorScreen(self.feed, list(run.argv) if run else [], run_env=self.feed.run_environment(run))
        self.push_screen(screen, lambda argv: self._edited(argv, screen.edited_run_env()))

    def _edited(self, argv: list[str] | None, run_env: tuple[dict[str, str], str | None] | None = None) -> None:
        if argv:
            self.relaunch_loop(argv, run_env=run_env)

    def action_relaunch(self) -> None:
        if (why := self._stale_refusal() or self.session.group_refusal()) is not None:
            self.notify(why, severity="error", markup=False)
            return
        run = self.state.run
        if run is None or not run.argv:
            self.notify("no run to relaunch", severity="warning")
            return
        from mambaconsole.ui.confirm import ConfirmScreen

        # relaunch.relaunch stops the old run only while its process lives: say what it will do
        alive = run.state not in ("exited", "dead", "never_started")
        what = (f"Stops run {run.run_id} and starts a new run with the same argv." if alive else
                f"Run {run.run_id} is not live ({self.state.status_label()}): "
                "only starts a new run with the same argv.")
        self.push_screen(ConfirmScreen("Relaunch the server unchanged?", what, "Relaunch"),
                         lambda ok: self.relaunch_loop(list(run.argv)) if ok else None)

    def action_stop(self) -> None:
        if (why := self._stale_refusal()) is not None:
            self.notify(why, severity="error", markup=False)
            return
        run = self.state.run
        if run is None:
            self.notify("no run to stop", severity="warning")
            return
        from mambaconsole.ui.confirm import ConfirmScreen

        ranks = self.state.slices.ranks
        watch = self.session.ranks
        if ranks.views and watch is not None and watch.group is not None:
            nodes = ", ".join(f"rank {v.rank} on {v.node}" for v in ranks.views)
            self.push_screen(ConfirmScreen(
                f"Stop the run across nodes {ranks.group_id}?",
                f"Every rank, rank 0 first ({nodes}), under the relaunch lock of every node (all or none): "
                "SIGINT, then SIGTERM, then SIGKILL.", "Stop all ranks"),
                lambda ok: self.session.stop_group() if ok else None)
            return
        self.push_screen(ConfirmScreen(f"Stop run {run.run_id}?", "SIGINT, then SIGTERM, then SIGKILL.", "Stop"),
                         lambda ok: self.stop_run(run) if ok else None)

    def relaunch_loop(self, argv: list[str], break_stale: dict | None = None,
                      run_env: tuple[dict[str, str], str | None] | None = None) -> None:
        self.session.relaunch(argv, break_stale, run_env)

    def stop_run(self, run: RunInfo) -> None:
        self.session.stop(run)

    @on(M.RelaunchDone)
    def _relaunched(self, msg: M.RelaunchDone) -> None:
        self.session.relaunch_done(msg.run_id, msg.error, lock=msg.lock, argv=msg.argv, run_env=msg.run_env)

    def offer_lock_break(self, error: str, lock: dict, argv: list[str],
                         run_env: tuple[dict[str, str], str | None] | None) -> None:
        """The holder of the relaunch lock that refused us is gone: offer to break it, never
        silently (not with ``--read-only``)."""
        if self.read_only or self._closing:
            return
        from mambaconsole.ui.confirm import ConfirmScreen

        self.push_screen(ConfirmScreen(
            f"Break the stale relaunch lock of {lock.get('holder', 'unknown')}?",
            f"{error}\nBreaking it takes the lock over and relaunches.", "Break and relaunch"),
            lambda ok: self.relaunch_loop(argv, lock, run_env=run_env) if ok else None)

    # ----------------------------------------------------------------- palette
    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The palette: :data:`PALETTE` (Textual's own entries would twin ours: Keys,
        Screenshot, Maximize, Quit, Theme)."""
        for title, help_text, action in PALETTE:
            if self.read_only and action in NODE_CHANGING:
                continue
            # the key first, said as one ("h" alone read as a stray letter)
            yield SystemCommand(title, f"key {help_text}", lambda a=action: self._palette_run(a))

    def _palette_run(self, action: str) -> None:
        pane, _, name = action.rpartition(".")
        target = {"log": self.log_pane, "args": self.args_pane}.get(pane)
        self.call_later(self.run_action, name if target is not None else action, target)

    async def on_unmount(self) -> None:
        """Stop the session and our workers first (their node commands end with them), then the
        quit hook (closing the feed), each bounded so that quitting never hangs on a dead node."""
        self._closing = True
        gc.unfreeze()  # frozen in on_mount; collectable again (many apps in one process: tests)
        if self._gc_thresholds is not None:
            gc.set_threshold(*self._gc_thresholds)
            self._gc_thresholds = None
        await self.session.close()
        self.workers.cancel_all()
        pending = [w._task for w in self.workers if getattr(w, "_task", None) is not None]
        if pending:
            await asyncio.wait(pending, timeout=5)
        if self.on_quit_hook is not None:
            try:
                await asyncio.wait_for(self.on_quit_hook(), timeout=15)
            except asyncio.TimeoutError:
                pass


def run(args, opened: Opened | None = None) -> int:
    """``mambaconsole HOST`` / ``--demo``: run the app on the host's session (``opened``, as
    :func:`~mambaconsole.opening.open_host` opened it while this module was imported; None:
    opened here) or on the demo. Returns the exit status."""
    read_only = bool(getattr(args, "read_only", False))
    if getattr(args, "demo", False):
        from mambaconsole.session.demo import Demo

        demo = Demo()
        app = ConsoleApp(demo.make_feed(), read_only=read_only, poll_s=1.0, prepare=demo.start, on_quit=demo.stop,
                         theme=getattr(args, "theme", None), ui_state=ui_state_mod.state_path())
        return int(app.run() or 0)
    if opened is None:
        opened = opening.open_host(args.host, opening.host_overrides(args))
    try:
        return run_session(opened.session, read_only=read_only, loop=opened.loop, held=opened.held)
    finally:
        opening.close_loop(opened.loop)


def run_session(session: Session, *, read_only: bool = False, loop: asyncio.AbstractEventLoop | None = None,
                held: Iterable[Callable[[], None]] = ()) -> int:
    """The console on ``session`` (its host's theme, the remembered pane sizes) until quit;
    the session's feed is closed on the way out. ``loop``: the event loop to run on (the one
    :func:`~mambaconsole.session.session.for_host` connected the node in); ``held``: the
    session's answers that came before the app existed (:attr:`Opened.held
    <mambaconsole.opening.Opened.held>`). Returns the exit status."""
    app = ConsoleApp(session, read_only=read_only, theme=session.feed.settings.theme, on_quit=session.feed.close,
                     ui_state=ui_state_mod.state_path(), held=held)
    return int(app.run(loop=loop) or 0)


class _Listener(Listener):
    """What the session tells the app: redraw these panes, log lines wait, a note for the user,
    earlier lines came in, a stale lock could be broken. Called on the app's loop."""

    def __init__(self, app: ConsoleApp) -> None:
        self.app = app

    def changed(self, panes: set[str]) -> None:
        if panes and not self.app._closing:
            self.app.refresh_panes(panes)

    def log_waiting(self) -> None:
        self.app.post_message(M.LogPending())

    def notify(self, text: str, severity: str = "information", timeout: float = 4.0) -> None:
        if not self.app._closing:
            self.app.notify(text, severity=severity, timeout=timeout, markup=False)

    def earlier_lines(self, end: int) -> None:
        self.app.log_pane.show_earlier(self.app.state, end)

    def lock_breakable(self, error, lock, argv, run_env) -> None:
        self.app.offer_lock_break(error, lock, argv, run_env)
