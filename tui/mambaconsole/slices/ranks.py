"""The ``ranks`` slice: the ranks of a run across nodes the current run belongs to, read from
every node (:class:`~mambaconsole.node.run_group.GroupWatch`). Fed by :class:`RanksRead`; the
header reads :attr:`RanksSlice.line` (the ranks' fates in one line) and :attr:`RanksSlice.bad`
(a rank died or cannot be read), the run picker :attr:`RanksSlice.views`."""

from __future__ import annotations

from dataclasses import dataclass

from mambaconsole.sglang.multinode import RankView, fates_line


@dataclass(frozen=True)
class RanksRead:
    """What the group watcher read: ``run_id`` (the console's current run, a rank of the group
    ``group_id``) and every rank's view in rank order; ``views`` empty: the current run is not
    part of a run across nodes."""

    run_id: str | None
    group_id: str | None = None
    views: tuple[RankView, ...] = ()


class RanksSlice:
    def __init__(self) -> None:
        self.group_id: str | None = None
        self.views: tuple[RankView, ...] = ()
        #: ``rank 1 dead (exit 137, SIGKILL) while rank 0 waits at distributed init`` (None: one node)
        self.line: str | None = None
        self.bad = False

    def new_run(self) -> None:
        """The node's current run became another: the previous run's ranks are not this one's
        (the watcher reads the new run's group, if any, on its next round)."""
        self.__init__()

    def on_ranks(self, ev: RanksRead) -> set[str]:
        self.group_id, self.views = ev.group_id, tuple(ev.views)
        self.line = fates_line(self.views) if self.views else None
        self.bad = any(v.state is None or (not v.alive and not v.stopped and v.state not in ("starting",)
                                           and v.exit_code != 0) for v in self.views)
        return {"header"}
