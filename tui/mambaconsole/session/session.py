"""One server's console session, without Textual: :class:`Session`.

A session holds what the console knows of one SGLang server on one node and decides how it
learns more: the node (through its :class:`~mambaconsole.session.feed.Feed`), the run it follows,
the feeds it keeps open (the link watch, the log tail, the GPU stream) and the polls it runs
(the runs listing, ``/metrics`` and ``/server_info``, the ranks of a run across nodes), the
relaunch, and the :class:`~mambaconsole.state.ConsoleState` all of that folds into. The policy lives here: what
to poll, how often, when to back off (:mod:`mambaconsole.backoff`), what a failure means (a
failed runs listing makes the supervisor look at the link; a failed resolution is the
ServerArgs pane's error), when a run change is worth a warning.

A UI subscribes (:attr:`Session.listener`, a :class:`Listener`) and draws; it may drive the
session's once-a-second :meth:`Session.tick` from its own timer. N servers are N sessions.

Ordering: every answer from the node is applied to the state through :attr:`Session.dispatch`
(default: the event loop's ``call_soon``; the console passes its message queue, so answers and
key presses are handled in the order they came). The log tail is the exception on purpose (the
hot path): its lines wait in :attr:`Session.intake` and the listener is told once
(:meth:`Listener.log_waiting`); the owner folds them in (:meth:`Session.fold_log`) when it has
time: the console in slices between keys.

::

    session = Session(feed, poll_s=2.0)
    session.listener = my_listener      # changed(panes), notify(text, ...), ...
    session.start()                     # in a running event loop
    ...                                 # session.state fills in
    await session.close()
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from typing import Any

from mambaconsole.backoff import STREAM, Backoff
from mambaconsole.errors import ConsoleError
from mambaconsole.session.feed import Feed, RunStatus, flag_value
from mambaconsole.session.intake import LogIntake
from mambaconsole.state import Connection, ConsoleState, LogLines, NodeFacts, Phase, Resolution, RunInfo, ServerInfo

#: bytes of the log read per page back (the log pane's ``b``)
PAGE_BYTES = 1 << 20
#: the runs listing backs off up to this many poll intervals while nothing changes (the
#: current run's own status changes reach us at once through its log stream)
RUNS_IDLE_FACTOR = 5
#: /metrics backs off up to this many poll intervals while its values do not change
METRICS_IDLE_FACTOR = 4
#: seconds between /server_info reads once one answered for the current run (it holds the
#: server's arguments, which do not change while it runs)
SERVER_INFO_S = 60.0
#: seconds between two notes of a run's GPU peak to the node (the last one is always sent)
PEAK_NOTE_S = 5.0
#: seconds between two reads of the ranks of a run across nodes
RANKS_POLL_S = 3.0
#: seconds the polls the first view does not need wait for the log's history at most
FIRST_LOG_WAIT_S = 1.5
#: seconds the owner's first paint waits for the node's connection at most (:meth:`Session.link_opened`)
OPEN_WAIT_S = 0.25
#: seconds to wait for the session's tasks to end when it closes
CLOSE_WAIT_S = 5.0

#: the polls that re-arm themselves, with how long they may slow down while nothing changes
POLLS = {"runs": RUNS_IDLE_FACTOR, "http": METRICS_IDLE_FACTOR}
#: polls whose failure may mean the link is gone (the supervisor looks at the connection)
LINK_POLLS = ("runs", "gpu", "tail", "facts")


class Listener:
    """What a session tells its owner (a UI, a test). Every method is called on the event
    loop, after the state changed; the defaults do nothing."""

    def changed(self, panes: set[str]) -> None:
        """The state changed; ``panes`` names what to redraw (``header``, ``gpu``, ``spec``,
        ``args``, ``log``)."""

    def log_waiting(self) -> None:
        """Log lines wait in :attr:`Session.intake` (said once until it is empty again)."""

    def notify(self, text: str, severity: str = "information", timeout: float = 4.0) -> None:
        """A one-line note for the user (``severity``: information / warning / error)."""

    def earlier_lines(self, end: int) -> None:
        """Lines paged back (``b``) were added to the state's log, up to byte ``end``."""

    def lock_breakable(self, error: str, lock: dict, argv: list[str],
                       run_env: tuple[dict[str, str], str | None] | None) -> None:
        """A relaunch was refused by another console's relaunch lock whose holder is gone
        (``lock["stale"]``): the owner may offer to break it (:meth:`Session.relaunch` with
        ``break_stale=lock``). Never broken without being asked."""


def _call_soon(fn: Callable[[], None]) -> None:
    asyncio.get_running_loop().call_soon(fn)


class Session:
    """One server: ``feed`` reaches its node; ``poll_s`` is the poll interval (seconds);
    ``clock`` gives unix seconds (frozen in tests); ``prepare`` (a coroutine function) runs
    before the first poll (the demo starts its first run there); ``dispatch`` runs a callback
    on the owner's loop in order (see the module docstring)."""

    def __init__(self, feed: Feed, *, poll_s: float = 2.0, clock: Callable[[], float] = time.time,
                 prepare: Callable[[], Awaitable[Any]] | None = None,
                 dispatch: Callable[[Callable[[], None]], None] | None = None) -> None:
        self.feed = feed
        self.poll_s = poll_s
        self.clock = clock
        self.prepare = prepare
        self.dispatch = dispatch or _call_soon
        self.listener: Listener = Listener()
        self.state = ConsoleState(feed.host, clock=clock)
        self.state.gpu_interval_s = poll_s
        self.state.simulated = feed.simulated
        #: log lines received, not folded in yet (:meth:`fold_log`; the owner is told:
        #: :meth:`Listener.log_waiting`)
        self.intake = LogIntake()
        #: run id -> what its log says (:meth:`Feed.run_summary`), for the history, the run picker
        #: and the editor's warnings
        self.summaries: dict[str, dict] = {}
        self.started = False
        self.closing = False
        self.relaunching = False
        #: the current run's ranks on every node, when it is a rank of a run across nodes
        #: (:class:`~mambaconsole.node.run_group.GroupWatch`, made by the ranks watch)
        self.ranks = None
        self.ranks_poll_s = RANKS_POLL_S
        #: the first view is drawn, its log's history and its first GPU answer (:meth:`log_shown`):
        #: polls no longer wait
        self.first_log_shown = False
        self._log_drawn = False
        self._gpu_failed = False
        self._deferred: list[Callable[[], None]] = []
        self._tasks: dict[str, asyncio.Task] = {}
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._fails: dict[str, int] = {}  # poll -> failures in a row
        self._idle: dict[str, int] = {}  # poll -> answers in a row that changed nothing
        self._runs_key: tuple | None = None
        self._info_at: dict[str, float] = {}  # run id -> when /server_info last answered (monotonic)
        self._noted_peak: dict[str, float] = {}  # run id -> peak GPU MiB last written to the node
        self._tail_run: str | None = None
        self._resolved_for: tuple | None = None
        self._following_run: str | None = None
        self._idle_offset = -1
        #: (run id, the node agent's record batches on its log) from the first look, until
        #: :meth:`_follow` reads them (or they are closed)
        self._first_tail: tuple[str, AsyncIterator[list[dict]]] | None = None
        #: the first look's GPU sample (a GpuSnapshot, or None when none comes), which the GPU
        #: watch shows before it starts its stream (made by :meth:`start`)
        self._first_gpu: asyncio.Future | None = None

    @property
    def host(self) -> str:
        return self.feed.host

    # ----------------------------------------------------------------- tasks
    def _spawn(self, group: str, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` as the one task of ``group`` (a running one is cancelled first: its
        answer would be stale); none once the session is closing."""
        if self.closing:
            coro.close()  # type: ignore[attr-defined]
            return
        old = self._tasks.get(group)
        if old is not None and not old.done() and old is not asyncio.current_task():
            old.cancel()
        task = asyncio.ensure_future(coro)
        self._tasks[group] = task
        task.add_done_callback(lambda t, g=group: self._tasks.get(g) is t and self._tasks.pop(g))

    def _later(self, name: str, delay: float, fn: Callable[[], None]) -> None:
        """Call ``fn`` in ``delay`` seconds, replacing the timer of that name."""
        old = self._timers.pop(name, None)
        if old is not None:
            old.cancel()

        def fire() -> None:
            self._timers.pop(name, None)
            if not self.closing:
                fn()

        self._timers[name] = asyncio.get_running_loop().call_later(delay, fire)

    def _post(self, event: Any, poll: str | None = None) -> None:
        self.dispatch(lambda: self.fed(event, poll))

    def _lost(self, poll: str, exc: BaseException) -> None:
        """``poll`` failed with ``exc``: say so (one line) in order with the answers."""
        error = str(exc) if isinstance(exc, ConsoleError) else f"{type(exc).__name__}: {exc}"
        self.dispatch(lambda: self.poll_failed(poll, error))

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> None:
        """Start the feeds (in a running event loop): ``prepare`` first, then the link watch,
        the runs listing, the GPU stream and the ranks watch; the node's facts once the log's
        history is shown (:meth:`after_first_log`). The rest follows the current run."""
        if self.started or self.closing:
            return
        self.started = True
        self._spawn("start", self._start())

    async def _start(self) -> None:
        if self.prepare is not None:
            try:
                await self.prepare()
            except Exception as exc:  # noqa: BLE001 - said, and the console still shows the node
                self.listener.notify(f"could not start: {exc}", "error", 15)
        self._spawn("link", self._watch_link())
        self._first_gpu = asyncio.get_running_loop().create_future()
        self._spawn("runs", self._first_look())
        self._spawn("gpu", self._watch_gpu())
        self._spawn("ranks", self._watch_ranks())
        self.after_first_log(lambda: self._spawn("facts", self._load_facts()))

    async def link_opened(self, limit: float | None = None) -> None:
        """Once :meth:`start` ran: wait until the node's connection has opened (or failed to),
        at most ``limit`` seconds (default OPEN_WAIT_S; not at all with a ``prepare``, which runs
        first). For the owner's start-up: a console that builds its panes after this lets the
        connection's handshake and the first look's command go out first; on one event loop
        their round trips would otherwise wait behind compose, mount and the first paint
        (~100 ms on a loaded 2-core machine), and the node's answer, which the first view
        waits for, with them."""
        if not self.started or self.closing or self.prepare is not None:
            return
        await self.feed.link.wait_opened(OPEN_WAIT_S if limit is None else limit)

    def after_first_log(self, start: Callable[[], None]) -> None:
        """Call ``start`` (a poll the first view does not need: the node's SGLang version, the
        server's HTTP polls, the resolution) once the owner has shown the log's history
        (:meth:`log_shown`), or FIRST_LOG_WAIT_S after it was asked for: on a busy node the
        run list and the log's agent, which the first view waits for, start first."""
        if self.first_log_shown:
            start()
            return
        self._deferred.append(start)
        if "deferred" not in self._timers:
            self._later("deferred", FIRST_LOG_WAIT_S, self._first_view_done)

    def log_shown(self) -> None:
        """The owner has shown the log's history: start what waited, once the GPU stream's
        first answer came too (the first view's other part: a node command started now would
        compete with the GPU reader's start for the node and this machine)."""
        self._log_drawn = True
        if self.started and "gpu" in self._tasks and self.state.gpu is None and not self._gpu_failed:
            return  # _gpu_answered starts them
        self._first_view_done()

    def _gpu_answered(self) -> None:
        if self._log_drawn and not self.first_log_shown:
            self._first_view_done()

    def _first_view_done(self) -> None:
        """The first view is drawn (or the wait is over): start what waited."""
        self.first_log_shown = True
        timer = self._timers.pop("deferred", None)
        if timer is not None:
            timer.cancel()
        todo, self._deferred = self._deferred, []
        if not self.closing:
            for start in todo:
                start()

    async def close(self) -> None:
        """Stop every timer and task (their node commands end with them); bounded, so that
        closing never hangs on a dead node. The feed stays open (its owner closes it)."""
        self.closing = True
        await self._close_first_tail()
        for t in self._timers.values():
            t.cancel()
        self._timers.clear()
        tasks = [t for t in self._tasks.values() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=CLOSE_WAIT_S)

    # ----------------------------------------------------------------- feeds
    async def _watch_link(self) -> None:
        """The connection's status as the node layer's supervisor sees it."""
        link = self.feed.link
        await link.start()
        async for st in link.watch():
            self._post(st)  # the supervisor's Connection is the state's event

    async def _watch_ranks(self) -> None:
        """The current run's ranks on every node, every ``ranks_poll_s`` seconds (backing off
        while this node cannot be read), when it is a rank of a run across nodes (one request
        for a plain run)."""
        from mambaconsole.node import connect
        from mambaconsole.node.run_group import GroupWatch
        from mambaconsole.state import RanksRead

        try:
            watch = self.ranks = GroupWatch(self.feed.host, self.feed.node, self.feed.store, connect)
        except AttributeError:  # a feed without a run store (a stand-in): no ranks to read
            return
        fails = 0
        try:
            while not self.closing:
                run_id = self.state.run.run_id if self.state.run is not None else None
                try:
                    gid, views = await watch.read(run_id)
                    self._post(RanksRead(run_id, gid, tuple(views)))
                    fails = 0
                except Exception:  # noqa: BLE001 - this node unreachable now: read the group again later
                    watch.run_id = None
                    fails += 1
                await asyncio.sleep(Backoff.poll(self.ranks_poll_s).next_in(fails=fails))
        finally:
            await asyncio.wait_for(watch.close(), timeout=5)

    async def _load_facts(self) -> None:
        try:
            self._post(await self.feed.facts())
        except Exception as exc:  # noqa: BLE001 - reported as a failed poll
            self._lost("facts", exc)

    async def _first_look(self) -> None:
        """The first runs listing, and in the same node command the current run's log from its
        start and the first GPU sample (:meth:`Feed.first_look`): the first view waits for one
        command, not two or three at once. The log's agent waits in :attr:`_first_tail` for
        :meth:`_follow`; the sample goes to the GPU watch (:attr:`_first_gpu`)."""
        try:
            listed, batches = await self.feed.first_look(on_gpu=self._first_gpu_sampled)
        except Exception as exc:  # noqa: BLE001 - as a failed runs poll: read again after its backoff
            self._first_gpu_sampled(None)
            self._lost("runs", exc)
            return
        if batches is not None:
            await self._close_first_tail()
            self._first_tail = (listed.current, batches)
        else:
            self._first_gpu_sampled(None)
        self._post(listed, "runs")

    def _first_gpu_sampled(self, snap) -> None:
        """The first look's GPU sample arrived (a GpuSnapshot), or none will (None)."""
        fut = self._first_gpu
        if fut is not None and not fut.done():
            fut.set_result(snap)

    async def _close_first_tail(self) -> None:
        first, self._first_tail = self._first_tail, None
        if first is not None:
            self._first_gpu_sampled(None)
            await first[1].aclose()

    def poll_runs(self) -> None:
        """Read the node's runs now (the next read is armed once this one is handled)."""
        if self.started and not self.closing:
            self._spawn("runs", self._poll_runs())

    async def _poll_runs(self) -> None:
        try:
            self._post(await self.feed.runs(), "runs")
        except Exception as exc:  # noqa: BLE001
            self._lost("runs", exc)

    async def _watch_gpu(self) -> None:
        """GPU samples every ``poll_s`` seconds from one long-lived node agent
        (:meth:`Feed.gpu_stream`); when the stream breaks, it starts again once the link is up,
        after :data:`~mambaconsole.backoff.STREAM`. The first look's sample (:attr:`_first_gpu`)
        is shown first, and the stream then waits for the first view (:meth:`after_first_log`):
        its node command would compete with the first view's. Without that sample (it failed,
        no current run, or it is later than the first view) the stream starts at once."""
        first = self._first_gpu
        if first is not None:
            drawn = asyncio.Event()
            self.after_first_log(drawn.set)
            shown = asyncio.ensure_future(drawn.wait())
            try:
                await asyncio.wait({first, shown}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                shown.cancel()
            if first.done() and first.result() is not None:
                self._post(first.result(), "gpu")
                await drawn.wait()

        async def samples():
            await self.feed.link.wait_up()
            async for snap in self.feed.gpu_stream(self.poll_s):
                yield snap

        await self._keep_reading("gpu", samples, lambda snap: self._post(snap, "gpu"), again=True)

    async def _keep_reading(self, poll: str, open_stream: Callable[[], AsyncIterator],
                            handle: Callable[[Any], Any], *, again: bool, backoff: Backoff = STREAM) -> None:
        """``handle`` each item of ``open_stream()``; when ``handle`` returns an awaitable (the
        log intake's room), the next item is read once it is done, and anything else it returns
        is ignored (a returned bool once made every GPU sample "break" the stream: samples then
        came only at each restart, 1, 2, 4 ... 30 s apart). When the stream breaks (raises), say
        so (:meth:`_lost`) and open it again after ``backoff`` (back to its first wait at each
        item); when it ends, return, or with ``again`` open it again after the same backoff.
        Stops when the session closes."""
        attempt = 0
        while not self.closing:
            try:
                async for item in open_stream():
                    waiting = handle(item)
                    if inspect.isawaitable(waiting):
                        await waiting
                    attempt = 0
                if not again:
                    return
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - said, then opened again
                self._lost(poll, exc)
            attempt += 1
            await asyncio.sleep(backoff.delay(attempt))

    def _tail(self, run: RunInfo, offset: int) -> None:
        """Follow ``run``'s log from ``offset``; :meth:`Feed.tail` resumes across dropped
        connections by byte offset. Should it fail anyway, it starts again where the state
        stopped (nothing lost or repeated). From offset 0, the first look's agent on this
        run's log (:attr:`_first_tail`) is read instead of starting one."""
        opened = [offset]  # the first open starts at `offset`, the next ones where the state stopped
        first = None
        if self._first_tail is not None:
            (rid, batches), self._first_tail = self._first_tail, None
            if rid == run.run_id and offset == 0:
                first = batches
            else:
                self._first_gpu_sampled(None)
                asyncio.ensure_future(batches.aclose())

        def open_tail():
            nonlocal first
            st = self.state
            start = opened.pop() if opened else (st.log_offset if st.log_run_id == run.run_id else 0)
            given, first = first, None
            listed_status[:] = [given is not None]
            return self.feed.tail(run, start, first=given) if given is not None else self.feed.tail(run, start)

        # the first look's agent says the run's status as it starts: what the listing read in
        # the same process a moment before, not a change to re-read the runs for
        listed_status: list[bool] = []

        def handle(batch):
            if isinstance(batch, RunStatus):
                if listed_status and listed_status.pop():
                    return None
                self.dispatch(self._run_status_changed)
                return None
            if self.intake.put(batch):
                self.listener.log_waiting()
            return self.intake.room()  # read on once the owner has folded enough in

        self._spawn("tail", self._keep_reading("tail", open_tail, handle, again=False))

    def poll_http(self) -> None:
        """``/metrics`` (and ``/server_info`` when due) of the current run's server, now."""
        if self.started and not self.closing:
            self._spawn("http", self._poll_http())

    async def _poll_http(self) -> None:
        """``/metrics`` at each poll; ``/server_info`` until it answered for the current run,
        then every SERVER_INFO_S seconds."""
        run = self.state.run
        port = self.feed.port_of(run)
        try:
            rid = run.run_id if run is not None else ""
            last = self._info_at.get(rid)
            if last is None or time.monotonic() - last >= SERVER_INFO_S:
                info = await self.feed.server_info(port)
                if info.data is not None:
                    self._info_at[rid] = time.monotonic()
                self._post(info)
        except Exception as exc:  # noqa: BLE001 - a failing /server_info never stops /metrics
            self._post(ServerInfo(None, error=f"{type(exc).__name__}: {exc}"[:200]))
        try:
            self._post(await self.feed.metrics(port, run.run_id if run is not None else None), "http")
        except Exception as exc:  # noqa: BLE001
            self._lost("http", exc)

    def _resolve(self, argv: tuple[str, ...], run: RunInfo | None) -> None:
        self._spawn("resolve", self._resolve_run(argv, run))

    async def _resolve_run(self, argv: tuple[str, ...], run: RunInfo | None) -> None:
        """SGLang's own resolution of the run's arguments (in the run's environment), with the
        memory the arguments predict when SGLang accepts them (the OOM screen's)."""
        from mambaconsole.sglang.argv_diff import split_launch

        env, cwd = self.feed.run_environment(run)
        try:
            res = await self.feed.resolve(split_launch(list(argv))[1], env=env, cwd=cwd)
            if res.get("ok"):
                res = {**res, **await self.feed.memory_plan(res, list(argv), env=env, cwd=cwd)}
            self._post(Resolution(res, argv))
        except Exception as exc:  # noqa: BLE001
            self._lost("resolve", exc)

    # ----------------------------------------------------------------- GPU peaks
    def _peak_unsaved(self) -> bool:
        for rid, peak in self.state.gpu_peak_mib.items():
            if peak > self._noted_peak.get(rid, -1.0):
                run = next((r for r in self.state.runs if r.run_id == rid), None)
                if run is None or run.peak_mem_mib is None or peak > run.peak_mem_mib:
                    return True
        return False

    def _peak_changed(self) -> None:
        """A run's GPU peak rose: note it to the node at most every PEAK_NOTE_S seconds."""
        if "peak" not in self._timers and self.started and not self.closing:
            self._later("peak", PEAK_NOTE_S, lambda: self._spawn("peak", self._note_peak()))

    async def _note_peak(self) -> None:
        """Write the runs' GPU peaks seen since the last note to their records on the node."""
        for rid, peak in list(self.state.gpu_peak_mib.items()):
            if peak > self._noted_peak.get(rid, -1.0):
                try:
                    await self.feed.store.note(rid, peak_mem_mib=peak)
                    self._noted_peak[rid] = peak
                except Exception as exc:  # noqa: BLE001 - tried again at the next new peak
                    self._lost("peak", exc)

    # ----------------------------------------------------------------- answers
    def fed(self, event: Any, poll: str | None = None) -> set[str]:
        """Apply one answer from the node (any event of :mod:`mambaconsole.state`; ``poll``:
        the poll that produced it, re-armed now that it is handled) and act on what it means;
        returns the panes it changed (also told to the listener)."""
        if self.closing:
            return set()
        st = self.state
        if isinstance(event, LogLines) and event.earlier is not None:
            if event.run_id == st.log_run_id:
                st.apply(event)
                self.listener.earlier_lines(event.earlier[1])
            return set()
        prev_run = st.run
        was_up = st.connected
        if isinstance(event, Phase) and event.run_id:
            self._following_run = event.run_id
        if poll in POLLS:
            self._count_idle(poll, event)
        changed = set(st.apply(event))
        if poll is not None:
            self._fails.pop(poll, None)
            if not st.connected and poll in ("runs", "gpu"):
                self.feed.link.check()  # the node answered: let the supervisor reconnect now
        if isinstance(event, Connection) and event.up and not was_up:
            self.poll_runs()  # re-read the node before anything acts on it (a pair may have relaunched)
        if poll == "gpu":
            self._gpu_answered()
            if self._peak_unsaved():
                self._peak_changed()
        run = st.run
        if prev_run is not None and run is not None and prev_run.run_id != run.run_id \
                and run.run_id != self._following_run and not self.relaunching:
            who = f" by {run.launched_by}" if run.launched_by else ""
            note = (f"run changed: now following run {run.run_id} (started{who}); "
                    f"run {prev_run.run_id} is no longer current")
            st.notice = note
            changed.add("header")
            self.listener.notify(note, "warning", 10)
        changed |= self.check_follow()
        if run is not None and (prev_run is None or prev_run.run_id != run.run_id or self._tail_run is None):
            self._follow(run)
        self.listener.changed(changed)
        self._arm(poll)
        return changed

    def poll_failed(self, poll: str, error: str) -> None:
        """``poll`` failed (``error``: one line): count it (its next run backs off), let the
        supervisor judge the link, and show a failed resolution in the ServerArgs pane."""
        if self.closing:
            return
        self._fails[poll] = self._fails.get(poll, 0) + 1
        if poll == "gpu":
            self._gpu_failed = True
            self._gpu_answered()
        if poll in LINK_POLLS:
            self.feed.link.check(error)  # the supervisor decides whether the link is down
        if poll == "resolve":
            self.state.resolution = {"error": {"type": "resolver", "message": error}}
            self.listener.changed({"args"})
        self._arm(poll)

    def _run_status_changed(self) -> None:
        """The followed run's status changed on the node: re-read the runs now."""
        if self.closing or not self.started:
            return
        self._idle["runs"] = 0
        self.poll_runs()

    def fold_log(self, until: float | None = None) -> set[str]:
        """Fold the waiting log lines (:attr:`intake`) into the state (in the intake's pieces: its
        larger ones while the log's history is read), until ``time.perf_counter()``
        passes ``until`` (None: all of them; the rest waits for the next call), and end a
        relaunch's follow phase the lines completed; returns the panes that changed."""
        changed: set[str] = set()
        st = self.state
        intake, apply = self.intake, st.apply
        while (ev := intake.take(st.reading_left() is not None)) is not None:
            changed |= apply(ev)
            if until is not None and time.perf_counter() > until:
                break
        return changed | self.check_follow()

    def check_follow(self) -> set[str]:
        """End the relaunch's "follow" phase once the new run is ready or has failed (the
        panes it changed)."""
        st = self.state
        ph, run = st.phase, st.run
        if ph is not None and ph.name == "follow" and run is not None and run.run_id == self._following_run \
                and st.status not in ("starting", "no run", "connection lost") and st.reading_left() is None:
            changed = set(st.apply(Phase("done", "")))
            self.listener.notify(f"run {run.run_id}: {st.status}", "information" if st.status == "ready" else "error", 6)
            return changed | {"header"}
        return set()

    def _follow(self, run: RunInfo) -> None:
        """``run`` is current: tail its log (unless the user picked another run's), read its
        server and resolve its arguments."""
        st = self.state
        if self.feed.is_sim and not st.sglang_version:
            st.apply(NodeFacts(st.host, flag_value(run.argv, "--sim-version"), simulated=True))
        if st.log_run_id not in (None, run.run_id) and self._tail_run is not None:
            return  # the user picked an older run's log
        if not self.started:
            return
        if run.log_path and self._tail_run != run.run_id:
            self._tail_run = run.run_id
            st.show_log_of(run.run_id)
            self._tail(run, 0)
            self.after_first_log(self.poll_http)
        if run.argv and self._resolved_for != run.argv:
            self._resolved_for = run.argv
            self.after_first_log(lambda argv=run.argv: self._resolve(argv, run))

    def show_log(self, run_id: str) -> bool:
        """Show ``run_id``'s log (picked in the run picker or the history): False when no such
        run is known."""
        run = next((r for r in self.state.runs if r.run_id == run_id), None)
        if run is None:
            return False
        self.state.show_log_of(run_id)
        self._tail_run = run_id
        if self.started:
            self._tail(run, 0)
        return True

    def page_back(self, page_bytes: int = PAGE_BYTES) -> str | None:
        """The log pane's ``b``: read the page before the first kept line (a long log's
        skipped middle, or lines the bounded buffer let go) from the node; returns a note when
        there is nothing to read."""
        st = self.state
        run = next((r for r in st.runs if r.run_id == st.log_run_id), None)
        rng = st.page_back_range(page_bytes)
        if run is None or not run.log_path or not self.started:
            return None
        if rng is None:
            return "the log's first line is shown"
        self._spawn("page", self._read_page(run, *rng))
        return None

    async def _read_page(self, run: RunInfo, offset: int, end: int, aligned: bool) -> None:
        try:
            self._post(await self.feed.read_page(run, offset, end, aligned))
        except Exception as exc:  # noqa: BLE001
            self.listener.notify(f"could not read the earlier lines: {exc}", "error", 8)

    async def read_source(self, file: str, line: int) -> str:
        """Lines around ``line`` of SGLang's ``file`` as the current run's python and
        environment find it (:meth:`Feed.read_source`; raises ConsoleError when not found)."""
        env, cwd = self.feed.run_environment(self.state.run)
        return await self.feed.read_source(file, line, env=env, cwd=cwd)

    def tick(self) -> set[str]:
        """Once a second (the owner's timer): a log that went idle completes its last record;
        returns the panes that changed."""
        st = self.state
        changed: set[str] = set()
        if st.log_offset == self._idle_offset:
            changed = set(st.flush_log())
        self._idle_offset = st.log_offset
        return changed

    # ----------------------------------------------------------------- poll schedule
    def _count_idle(self, poll: str, event) -> None:
        """Before ``event`` is applied: count answers in a row that changed nothing (the poll
        then backs off)."""
        if poll == "runs":
            key = (event.current, tuple((r.run_id, r.state, r.outcome, r.exit_code, r.pid, r.ended, r.argv)
                                        for r in event.runs))
            same = key == self._runs_key
            self._runs_key = key
        else:  # MetricsSnapshot
            same = event.error is None and event.values == self.state.metrics
        self._idle[poll] = self._idle.get(poll, 0) + 1 if same else 0

    def next_poll_in(self, poll: str) -> float:
        """Seconds until ``poll`` runs again: every ``poll_s``, slowed while its answers change
        nothing and while it fails (:meth:`Backoff.poll`)."""
        return Backoff.poll(self.poll_s, idle_factor=POLLS.get(poll, 1)).next_in(
            fails=self._fails.get(poll, 0), idle=self._idle.get(poll, 0))

    def _arm(self, poll: str | None) -> None:
        """Arm ``poll``'s next run now that its last one has been handled (one chain of polls,
        however often a poll was started by hand). ``/metrics`` only while a server may answer:
        following a new run starts it again."""
        if poll not in POLLS or not self.started or self.closing:
            return
        if poll == "http":
            run = self.state.run
            if run is None or run.state not in ("starting", "running", "adopted"):
                return
        self._later(poll, self.next_poll_in(poll), self.poll_runs if poll == "runs" else self.poll_http)

    # ----------------------------------------------------------------- acting on the node
    def refusal(self) -> str | None:
        """Why the node must not be changed now (never act on stale data), or None."""
        if not self.state.connected:
            return "the node is unreachable: refusing to act on stale data"
        if self.relaunching:
            return "a relaunch is already running"
        return None

    def group_refusal(self) -> str | None:
        """Why a relaunch from here is refused for a rank of a run across nodes (it would
        restart this node's rank alone: its peers keep the old run, or it waits for them for
        good), or None."""
        st = self.state
        ranks = st.slices.ranks
        if not ranks.views:
            return None
        nodes = " ".join(v.node for v in ranks.views)
        return (f"run {ranks.group_id} spans {len(ranks.views)} nodes: a relaunch here would restart rank "
                f"{next((v.rank for v in ranks.views if v.node == st.host), 0)} alone; stop it (S stops "
                f"every rank) and start it again with mambaconsole launch {nodes} -- ARGS")

    def relaunch(self, argv: list[str], break_stale: dict | None = None,
                 run_env: tuple[dict[str, str], str | None] | None = None) -> None:
        """Relaunch with ``argv`` (:func:`mambaconsole.session.relaunch.relaunch`: lock, stop,
        GPU free, start, follow), each step shown as the state's phase; ``run_env``: the
        editor's environment and folder (None: the old run's)."""
        if self.closing:
            return
        self.relaunching = True
        self._spawn("relaunch", self._relaunch(list(argv), break_stale, run_env))

    async def _relaunch(self, argv, break_stale, run_env) -> None:
        from mambaconsole.node.runs import LockHeld
        from mambaconsole.session import relaunch

        try:
            run_id = await relaunch.relaunch(
                self.feed, self.state.run, argv,
                lambda name, text, run_id=None: self._post(Phase(name, text, run_id)),
                break_stale=break_stale, run_env=run_env)
            self.dispatch(lambda: self.relaunch_done(run_id))
        except LockHeld as exc:
            self.dispatch(lambda e=str(exc), lk=exc.lock: self.relaunch_done(None, e, lock=lk, argv=argv,
                                                                             run_env=run_env))
        except Exception as exc:  # noqa: BLE001 - a failed relaunch is said, the console goes on
            error = str(exc) if isinstance(exc, ConsoleError) else f"{type(exc).__name__}: {exc}"
            self.dispatch(lambda: self.relaunch_done(None, error))
        finally:
            self.relaunching = False

    def stop(self, run: RunInfo) -> None:
        """Stop ``run`` (SIGINT, then SIGTERM, then SIGKILL), shown as the state's phase."""
        self._spawn("relaunch", self._stop(run))

    async def _stop(self, run: RunInfo) -> None:
        from mambaconsole.session import relaunch

        try:
            await relaunch.stop(self.feed, run, lambda name, text: self._post(Phase(name, text)))
            self._post(Phase("done", ""))
        except Exception as exc:  # noqa: BLE001
            self.dispatch(lambda e=str(exc): self.relaunch_done(None, e))

    def stop_group(self) -> None:
        """Stop every rank of the current run across nodes, rank 0 first
        (:func:`mambaconsole.node.run_group.stop`), shown as the state's phase."""
        self._spawn("relaunch", self._stop_group())

    async def _stop_group(self) -> None:
        from mambaconsole.node import run_group

        group = self.ranks.group if self.ranks is not None else None
        if group is None:
            return
        self._post(Phase("stop", f"stopping {len(group.members)} ranks, rank 0 first"))
        try:
            await run_group.stop(group.members)
            self._post(Phase("done", ""))
        except Exception as exc:  # noqa: BLE001
            self.dispatch(lambda e=str(exc): self.relaunch_done(None, e))

    def relaunch_done(self, run_id: str | None, error: str | None = None, *, lock: dict | None = None,
                      argv: list[str] | None = None,
                      run_env: tuple[dict[str, str], str | None] | None = None) -> None:
        """The relaunch (or stop) ended: follow the new run ``run_id``, or show ``error``; a
        stale lock held by a console that is gone is offered to the listener to break."""
        if self.closing:
            return
        st = self.state
        if error:
            st.apply(Phase("failed", ""))
            st.notice = f"relaunch refused: {error}"
            self.listener.notify(f"relaunch failed: {error}", "error", 10)
            lk = lock or {}
            if lk.get("stale") and argv:
                self.listener.lock_breakable(error, dict(lk), list(argv), run_env)
        else:
            self._following_run = run_id
            st.notice = None
            self.listener.notify(f"started run {run_id}", "information", 4)
            self.check_follow()
        self.listener.changed({"header"})
        self.poll_runs()


def for_host(host: str, overrides: dict[str, Any] | None = None, *,
             loop: asyncio.AbstractEventLoop | None = None) -> Session:
    """The session of ``mambaconsole HOST`` (and of the fleet screen's Enter on a worker): the
    host's settings (``config.toml``'s ``[hosts.HOST]``, then ``overrides``, the command line's),
    its node (``local``: this machine, with this process's ``MAMBACONSOLE_HOME``), polled every
    ``poll_s`` of the settings. A host that cannot be reached at all (a typo, a refused key)
    raises here, one line, instead of becoming a console that keeps reconnecting to nothing.

    ``loop``: the event loop the console will run on (not running yet): the session's own node
    connects there, and the console goes on with that connection (one SSH handshake and login
    before the first paint, not two). Without it, a connection of its own is opened and closed
    (in a loop of its own), and the node connects on first use, in the caller's event loop."""
    import os

    from mambaconsole.node import connect, node_for
    from mambaconsole.session import settings as cfg

    if not host:
        raise ConsoleError("give a HOST (ssh alias, user@host[:port] or 'local'), or --demo", exit_code=2)
    s = cfg.load(host, dict(overrides or {}))
    node = node_for(host)
    if host != "local":
        if loop is not None:
            connect_now = getattr(node, "connect", None)
            if connect_now is not None:
                loop.run_until_complete(connect_now())
        else:
            async def probe() -> None:
                await (await connect(host)).close()

            asyncio.run(probe())
    feed = Feed(node, s, home=os.environ.get("MAMBACONSOLE_HOME", "") if host == "local" else "")
    return Session(feed, poll_s=s.poll_s)
