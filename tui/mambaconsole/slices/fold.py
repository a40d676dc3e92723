"""The ``fold`` slice: what the current run's log says, through SGLang knowledge. Lines of the
current run (handed over by the ``log`` slice, each byte once) go through the stateful
:class:`~mambaconsole.sglang.events.LogParser` into typed events and into the run fold
(:class:`~mambaconsole.sglang.run_fold.RunFold`, the same rules as ``inspect``, history and
``report``): readiness, the failure and its phase and root cause, request errors. Each event is
then shown by the slice that owns its numbers, through the ``{event type: (slice, handler)}``
table the state gives (:data:`mambaconsole.state.LOG_EVENTS`); a new boot in the same log is
passed on (``on_new_boot``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mambaconsole.sglang import events as E
from mambaconsole.sglang.block_fold import BlockFold
from mambaconsole.sglang.oom_site import oom_site
from mambaconsole.sglang.run_fold import Failure, RunFold, failure_line, failure_line_of, failure_outcome
from mambaconsole.sglang.run_fold import failure_is_final as fold_failure_is_final
from mambaconsole.sglang.text import envelope_seconds

if TYPE_CHECKING:
    from mambaconsole.slices.runs import RunsSlice

_UNSEEN = object()  # a log event type whose handler is not looked up yet
#: log events folded per parser call (a whole batch's events alive at once would outlive the
#: young generation)
CHUNK = 64
#: history's lines in one batch from which it is read a block at a time (fewer: line by line;
#: any batch: the intake hands a record's last lines over as a short piece, and a decode line
#: read one at a time makes the spec slice's pending runs events)
BULK_MIN = 1
#: live lines in one batch from which they are read a block at a time (a backlog: the console
#: fell behind a flood); a few lines at a time, as a server writes them, go line by line
LIVE_BULK_MIN = 64
#: the panes that show the fold's claims (the header; the spec pane shows a failure, ServerArgs
#: the flags that sized an OOM)
_CLAIMS = frozenset({"header", "spec", "args"})


class FoldSlice:
    """The run fold of the current run and the parser feeding it. ``runs`` says whether the
    process ended (a traceback then ends the run); ``handlers`` is the event table, ``slice_of``
    the slices its names stand for."""

    def __init__(self, clock: Callable[[], float], runs: RunsSlice, on_new_boot: Callable[[], None],
                 handlers: dict[type, tuple[tuple[str, Callable[[Any, Any], set[str]]], ...]],
                 slice_of: dict[str, Any],
                 run_handlers: tuple[tuple[str, Callable[[Any, Any, Any], set[str]]], ...] = ()) -> None:
        self.clock = clock
        self._runs = runs
        self._on_new_boot = on_new_boot
        self._handlers = handlers
        self._slice_of = slice_of
        self._view: dict[type, Callable[[Any], set[str]] | None] = {}  # handlers, bound
        #: what takes the decode lines of a run read in bulk (``handler(slice, run, dating)``,
        #: :class:`~mambaconsole.sglang.block_fold.DecodeRun`): what ``handlers`` gives
        #: ``DecodeBatch``, for a whole run
        self._run_handlers = run_handlers
        self._fold = RunFold()
        self._parser_obj: Any = None  # made on the run's first line
        self._block: BlockFold | None = None  # history's reader, a block at a time (made on first use)
        self._bulk_ok: bool | None = None  # whether no handler wants a simple line but a decode line
        self._bulk_changed: set[str] = set()
        #: the server is ready: SGLang's ready line, batches served, or startup complete + a 200
        self.ready_seen = False
        #: when it became ready (console clock; a replayed line's own time)
        self.ready_at: float | None = None
        self._shift: float | None = None  # while replaying history: envelope time + this = console clock
        self._when_text: str | None = None  # the last envelope time read (when) and its value
        self._when_at = 0.0

    @property
    def fold(self) -> RunFold:
        """What the current run's log says (outcome, failure, request errors): the run fold."""
        if self._block is not None and self._block.pending:
            self._block.settle()  # the boot's kept decode lines, as events
        return self._fold

    @fold.setter
    def fold(self, value: RunFold) -> None:
        self._fold = value
        self._block = None

    @property
    def _parser(self) -> Any:
        if self._parser_obj is None:
            self._parser_obj = E.LogParser()  # stateful: joins tracebacks, wrapped lines
        return self._parser_obj

    # --------------------------------------------------------------- lines
    def understand_many(self, texts: list[str], shift: float | None = None) -> set[str]:
        """Fold a batch of the current run's lines in, through the parser's batch entry
        (:meth:`~mambaconsole.sglang.events.LogParser.feed_many`; joined records such as
        tracebacks complete when the next record starts, or at :meth:`flush`). ``shift``: the
        lines are history read back, dated by their own timestamps + ``shift`` seconds; a batch
        of :data:`BULK_MIN` lines or more of it (of live lines, :data:`LIVE_BULK_MIN`) is read a
        block at a time (:meth:`_bulk`)."""
        if len(texts) >= (LIVE_BULK_MIN if shift is None else BULK_MIN) and self._bulk_allowed():
            block = "\n".join(["", *texts, ""])  # each line behind its newline (BlockFold.feed_lines)
            if block.count("\n") == len(texts) + 1:  # (a text holding a newline: line by line)
                return self._bulk(block, shift)
        changed: set[str] = set()
        feed_many = self._parser.feed_many
        self._shift = shift
        try:
            for i in range(0, len(texts), CHUNK):
                try:
                    events = feed_many(texts[i:i + CHUNK])
                except Exception:  # noqa: BLE001,S112 - the parser promises not to raise; never let a line break the UI
                    continue
                if events:
                    changed |= self._fold_events(events)
        finally:
            self._shift = None
        return changed

    def _bulk_allowed(self) -> bool:
        """No pane takes a line a simple run holds (:func:`~mambaconsole.sglang.events.
        simple_run_pattern`) one at a time but a decode line, which :attr:`_run_handlers` take
        a run at a time: else every line goes through the line path."""
        if self._bulk_ok is None:
            self._bulk_ok = bool(self._run_handlers) and all(
                self._handler(t) is None for t in (E.PrefillBatch, E.HttpAccess, E.Text))
        return self._bulk_ok

    def _bulk(self, block: str, shift: float | None) -> set[str]:
        """Lines (``block``: whole lines behind a newline; ``shift`` as :meth:`understand_many`
        has it) through the block fold (:class:`~mambaconsole.sglang.block_fold.BlockFold`,
        bound to this slice's parser and fold): each run of simple lines as a whole (its decode
        lines to :attr:`_run_handlers`), every other line as the line path takes it
        (:meth:`_fold_each`). The same state as line by line (``tests/test_bulk_state.py``)."""
        folder = self._block
        if folder is None:
            folder = self._block = BlockFold(self._parser, self._fold, on_events=self._bulk_events,
                                             on_run=self._bulk_run)
        b = self._fold.last
        before = (id(b), b.failure, len(b.request_errors), b.serving, b.pending_error)
        self._shift = shift
        self._bulk_changed = changed = set()
        try:
            folder.feed_lines(block)
        except Exception:  # noqa: BLE001 - the parser promises not to raise; never let a line break the UI
            pass
        finally:
            self._shift = None
            self._bulk_changed = set()
        b = self._fold.last
        if before != (id(b), b.failure, len(b.request_errors), b.serving, b.pending_error):
            changed |= _CLAIMS
        return changed

    def _bulk_events(self, events: list[Any]) -> None:
        """Events of the block fold's general path: as the line path folds and shows them."""
        shown = self._fold_each(events)
        if shown:
            self._bulk_changed |= shown

    def _bulk_run(self, b: Any, run: Any) -> None:
        """A run the block fold read in bulk (the fold has it): readiness, and its decode lines
        to the slices that show them."""
        if not self.ready_seen and b.serving:
            self.ready_seen = True  # its first batch line showed the server serving
            self.ready_at = self.when(run.served_line())
        if run.rows:
            dating = (self._shift, self.clock())
            for name, h in self._run_handlers:
                shown = h(self._slice_of[name], run, dating)
                if shown:
                    self._bulk_changed |= shown

    def flush(self) -> set[str]:
        """The log went idle: complete the pending record (a traceback at the end of the log)."""
        if self._parser_obj is None:
            return set()
        if self._block is not None and self._block.pending:
            self._block.settle()
        changed = self._fold_events(self._parser.flush())
        return changed | ({"header"} if changed else set())

    def when(self, e: Any, dating: tuple[float | None, float] | None = None) -> float:
        """When a log event happened on this console's clock: its own timestamp for a line
        replayed from history, else now. ``dating``: ``(shift, now)`` as they were when its
        line was read (a run read in bulk, made an event later), else as they are."""
        return self.when_time(e.time, dating)

    def when_time(self, t: str | None, dating: tuple[float | None, float] | None = None) -> float:
        """:meth:`when` of a line whose envelope timestamp is ``t`` (its event's ``time``)."""
        shift = self._shift if dating is None else dating[0]
        if shift is not None and t:
            if t == self._when_text:  # a flood's lines share their second: read it once
                return self._when_at + shift
            v = envelope_seconds(t)
            if v is not None:
                self._when_text, self._when_at = t, v
                return v + shift
        return self.clock() if dating is None else dating[1]

    def _fold_events(self, events: list[Any]) -> set[str]:
        """:meth:`_fold_each`, once the boot's decode lines the block fold kept are events
        (``events`` follow them)."""
        if self._block is not None and self._block.pending:
            self._block.settle()
        return self._fold_each(events)

    def _fold_each(self, events: list[Any]) -> set[str]:
        """Fold ``events`` (log order) into the run fold, then show each through its handlers
        (:meth:`_handler`; an event type without one costs a dict look-up); returns the panes
        to redraw. What the fold claims (failure, request errors, serving, pending error) is
        compared once for the events, not per event: a change in it redraws the header, the
        spec pane (it shows a failure) and ServerArgs (the flags that sized an OOM); so does
        a new boot (a ``server_args=`` dump after an earlier boot), which also voids what the
        earlier boot said (:meth:`new_boot`, ``on_new_boot``) before the next event is shown."""
        changed: set[str] = set()
        fold = self._fold
        feed, boots, view = fold.feed, fold.boots, self._view
        b = boots[-1]
        before = (b.failure, len(b.request_errors), b.serving, b.pending_error)
        for e in events:
            feed(e)
            if boots[-1] is not b:
                b = boots[-1]
                self.new_boot()
                self._on_new_boot()  # the server was launched again into the same log
                changed |= _CLAIMS
            if not self.ready_seen and b.serving:
                self.ready_seen = True  # SGLang's ready line, batches served, or startup complete + a 200
                self.ready_at = self.when(e)
            handler = view.get(type(e), _UNSEEN)
            if handler is _UNSEEN:
                handler = self._handler(type(e))
            if handler is not None:
                shown = handler(e)
                if shown:
                    changed |= shown
        if before != (b.failure, len(b.request_errors), b.serving, b.pending_error):
            changed |= _CLAIMS
        return changed

    def _handler(self, cls: type) -> Callable[[Any], set[str]] | None:
        """The handler of log event type ``cls`` bound to the slices (its entry in the table,
        found along its base classes), kept for the next event of it."""
        table = self._handlers
        entry = next((table[k] for k in cls.__mro__ if k in table), None)
        bound = [h.__get__(self._slice_of[name]) for name, h in entry] if entry else []
        if not bound:
            handler = None
        elif len(bound) == 1:
            handler = bound[0]
        else:
            def handler(e: Any, _hs: tuple = tuple(bound)) -> set[str]:
                out: set[str] = set()
                for h in _hs:
                    out |= h(e)
                return out
        self._view[cls] = handler
        return handler

    def on_ready(self, e: Any) -> set[str]:
        """SGLang's ready line (``ServerReady``): the header says so (the fold has it)."""
        return {"header"}

    def new_boot(self) -> None:
        """A new boot in the same log (a ``server_args=`` dump after an earlier one, or after a
        traceback): what the earlier boot said (its crash, readiness) is void."""
        self.ready_seen, self.ready_at = False, None

    def new_run(self) -> None:
        self.new_boot()
        self._fold = RunFold()
        self._parser_obj = None  # a fresh one on the new run's first line
        self._block = None

    # --------------------------------------------------------------- selectors
    def failure_record(self) -> Failure | None:
        """The fold's failure of the last boot (:class:`~mambaconsole.sglang.run_fold.Failure`)
        once it ended the run: SGLang's crash evidence (a ``<Process> hit an exception``
        traceback, crash lines, a scheduler death, ...), or any traceback no batch line
        followed once the process is gone with a non-zero or unknown exit code; None while the
        process lives after a traceback that is no crash evidence (a request error)."""
        b = self._fold.last
        f = b.failure
        r = self._runs.run
        ended_badly = self._runs.ended() and r is not None and r.exit_code != 0
        if f is not None:
            return f if (ended_badly or fold_failure_is_final(b)) else None
        ev = b.pending_error
        if ev is not None and ended_badly:
            return Failure(phase="runtime", exception=ev.exc_type, message=ev.exc_message, rank=ev.rank, event=ev)
        return None

    def outcome(self) -> str | None:
        """``oom`` / ``arg_error`` / ``crashed`` once a failure ended the run (the fold's rule), else None."""
        f = self.failure_record()
        return failure_outcome(f) if f is not None else None

    @property
    def failure(self) -> str | None:
        """One line naming what ended (or is ending) the run (:meth:`failure_record`): ``origin:
        ExcType: message`` or the crash line; None otherwise."""
        f = self.failure_record()
        return failure_line(f) if f is not None else None

    @property
    def failure_phase(self) -> str | None:
        """The phase the run failed in (``args``/``load``/``startup``/``runtime``, the fold's rule)."""
        f = self.failure_record()
        return f.phase if f is not None else None

    @property
    def failure_exception(self) -> str | None:
        """The root cause's exception type as printed (the fold's rule), None when not shown."""
        f = self.failure_record()
        return f.exception if f is not None else None

    def request_error_events(self) -> list:
        """The tracebacks the server kept serving after (or, before it served, while its
        process lives), oldest first."""
        b = self._fold.last
        errs = list(b.request_errors)
        f = b.failure
        ended = self.failure_record()
        if f is not None and isinstance(f.event, E.Traceback) and ended is None:
            errs.append(f.event)  # a traceback while the process lives: not (yet) what ended it
        elif ended is not None and b.pending_error is not None and b.pending_error in errs:
            errs.remove(b.pending_error)
        return errs

    @property
    def request_error(self) -> str | None:
        """The last of :meth:`request_error_events` as one line; None when none."""
        errs = self.request_error_events()
        return failure_line_of(errs[-1]) if errs else None

    @property
    def request_errors(self) -> int:
        return len(self.request_error_events())

    @property
    def oom_seen(self) -> bool:
        """The failure (:attr:`failure`) is an out-of-memory error."""
        f = self.failure_record()
        return f is not None and f.event is not None and bool(getattr(f.event, "oom", None))

    @property
    def oom_numbers(self):
        """PyTorch's numbers (:class:`mambaconsole.sglang.events.TorchOom`, GiB) of the OOM
        that ended the run (:attr:`oom_seen`), when its message gave them; else None."""
        f = self.failure_record()
        return f.oom if f is not None and self.oom_seen else None

    @property
    def oom_site(self):
        """Where the OOM that ended the run was allocating (:class:`mambaconsole.sglang.oom_site.OomSite`),
        when its traceback shows a known SGLang allocation; else None."""
        f = self.failure_record()
        if f is None or not self.oom_seen or not isinstance(f.event, E.Traceback):
            return None
        return oom_site(f.event.frames)
