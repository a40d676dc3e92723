"""``r``: pick the run whose log the log pane shows (older runs' logs); for a rank of a run
across nodes, also the other ranks' logs on their nodes (:class:`RankLogScreen`)."""

from __future__ import annotations

import time

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from rich.markup import escape
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from mambaconsole.sglang.multinode import RankView, rank_fate
from mambaconsole.sglang.text import display_text
from mambaconsole.state import RunInfo, state_label, status_word

#: finished runs whose logs are read for their outcome, at most (newest first)
SUMMARISE = 30


def run_label(r: RunInfo, current: str | None, current_word: str | None = None, outcome: str | None = None) -> str:
    """``RUN_ID  STARTED  STATE[ ← current]``; STATE in the header's words (``current_word``:
    the header's status word for the current run, which knows its log; ``outcome``: what the
    run's log says, :meth:`Feed.run_summary`)."""
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started)) if r.started else "?"
    word = current_word if current_word and r.run_id == current else status_word(r, r.outcome or outcome)
    out = state_label(word, r.exit_code)
    mark = " ← current" if r.run_id == current else ""
    return f"{r.run_id}  {when}  {out}{mark}"


def rank_label(v: RankView) -> str:
    """``rank 1 on node-b  RUN_ID  rank 1 dead (exit 137, SIGKILL)``: another node's rank."""
    return f"rank {v.rank} on {v.node}  {v.run_id}  {rank_fate(v)}"


class RunPicker(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "cancel", "Cancel")]
    DEFAULT_CSS = """
    RunPicker { align: center middle; }
    RunPicker > Vertical { width: 90; height: auto; max-height: 80%; border: thick $primary; background: $surface; }
    RunPicker OptionList { height: auto; max-height: 20; }
    """

    def __init__(self, runs: list[RunInfo], current: str | None, current_word: str | None = None,
                 feed=None, cache: dict[str, dict] | None = None, ranks: tuple[RankView, ...] = (),
                 host: str | None = None) -> None:
        """``feed`` and ``cache`` (run id -> run_summary(), shared with the history): the
        outcomes of runs that are over are read from their logs, as the history does.
        ``ranks``: the current run's ranks when it is part of a run across nodes (the ones on
        other nodes than ``host`` are listed first, ``rank:I`` as their option id)."""
        super().__init__()
        self.runs, self.current, self.current_word = runs, current, current_word
        self.feed, self.cache = feed, (cache if cache is not None else {})
        self.ranks = tuple(v for v in ranks if v.run_id and v.node != host)

    def _label(self, r: RunInfo) -> str:
        return run_label(r, self.current, self.current_word, self.cache.get(r.run_id, {}).get("outcome"))

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("[b]Show the log of which run?[/b]  (Enter picks, Esc cancels)")
            others = [Option(rank_label(v), id=f"rank:{v.rank}") for v in self.ranks]
            yield OptionList(*others, *[Option(self._label(r), id=r.run_id) for r in reversed(self.runs)])

    def on_mount(self) -> None:
        todo = [r for r in reversed(self.runs) if r.run_id not in self.cache and r.run_id != self.current
                and r.state in ("exited", "dead") and r.log_path][:SUMMARISE]
        if self.feed is not None and todo:
            self._summarise(todo)

    @work(exclusive=True, group="picker", exit_on_error=False)
    async def _summarise(self, runs: list[RunInfo]) -> None:
        ol = self.query_one(OptionList)
        for r in runs:
            try:
                self.cache[r.run_id] = await self.feed.run_summary(r)  # a finished run's log no longer changes
            except Exception:  # noqa: BLE001 - a run whose log cannot be read keeps its run-store state
                continue
            ol.replace_option_prompt(r.run_id, self._label(r))

    def on_option_list_option_selected(self, ev: OptionList.OptionSelected) -> None:
        self.dismiss(ev.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class RankLogScreen(ModalScreen[None]):
    """Another node's rank of a run across nodes: the last :data:`RANK_TAIL_BYTES` of its log,
    read from its node every :data:`RANK_TAIL_S` seconds (``member``: a
    :class:`~mambaconsole.node.run_group.Member`). Esc closes."""

    BINDINGS = [Binding("escape", "close", "Close")]
    DEFAULT_CSS = """
    RankLogScreen { align: center middle; }
    RankLogScreen > Vertical { width: 95%; height: 90%; border: thick $primary; background: $surface; }
    RankLogScreen RichLog { height: 1fr; }
    """

    def __init__(self, member) -> None:
        super().__init__()
        self.member = member

    def compose(self) -> ComposeResult:
        from textual.widgets import RichLog

        m = self.member
        with Vertical():
            yield Static(f"[b]rank {m.rank} on {escape(m.host)}[/b]  run {escape(m.run.run_id)}  (its log on that node, "
                         f"the last {RANK_TAIL_BYTES // 1024} KiB, read every {RANK_TAIL_S:g} s; Esc closes)")
            yield RichLog(wrap=True, markup=False, highlight=False, id="rank-log")

    def on_mount(self) -> None:
        self._follow()

    @work(exclusive=True, group="rank-log", exit_on_error=False)
    async def _follow(self) -> None:
        import asyncio

        from textual.widgets import RichLog

        view = self.query_one("#rank-log", RichLog)
        last = None
        while True:
            try:
                text = await self.member.store.tail(self.member.run.run_id, RANK_TAIL_BYTES)
            except Exception as exc:  # noqa: BLE001 - the node went away: say so, try again
                text = f"cannot read the log on {self.member.host}: {exc}"
            if text != last:
                view.clear()
                view.write("\n".join(display_text(line) for line in text.splitlines()))
                last = text
            await asyncio.sleep(RANK_TAIL_S)

    def action_close(self) -> None:
        self.dismiss(None)


#: how much of another node's rank log the screen shows, and how often it reads it
RANK_TAIL_BYTES = 256 * 1024
RANK_TAIL_S = 2.0
