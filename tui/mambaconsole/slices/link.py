"""The ``link`` slice: the connection to the node and what the session learned about the node
(host, SGLang version, its python, simulated). Fed by :class:`~mambaconsole.state.Connection`
and :class:`~mambaconsole.state.NodeFacts`; the live server's ``/server_info`` version and a
simulated GPU reading also land here (:meth:`LinkSlice.on_server_info`, :meth:`note_simulated`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mambaconsole.state_events import Connection, NodeFacts, ServerInfo


class LinkSlice:
    """The link to the node. ``lost_since``/``retry_at`` are Unix seconds (console clock)."""

    def __init__(self, host: str, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.host = host
        self.sglang_version: str | None = None
        self.simulated = False
        self.python: str | None = None
        #: the node's python (``python``) cannot import sglang: the console can watch, but
        #: launch / relaunch / pre-flight need SGLang's python
        self.no_sglang = False
        self.connected = True
        self.lost_since: float | None = None
        self.connection_detail = ""
        self.reconnect_attempts = 0
        self.retry_at: float | None = None

    def on_node_facts(self, ev: NodeFacts) -> set[str]:
        # the facts probe found no importable sglang for the node's python (not the simulated node)
        self.no_sglang = bool(ev.python) and not ev.simulated and not self.simulated and ev.sglang_version is None
        self.host = ev.host
        self.sglang_version = ev.sglang_version or self.sglang_version
        self.simulated = ev.simulated or self.simulated
        self.python = ev.python or self.python
        return set()

    def on_connection(self, ev: Connection) -> set[str]:
        if ev.up:
            self.connected, self.lost_since = True, None
        elif self.connected:
            self.connected, self.lost_since = False, ev.since
        self.connection_detail = ev.detail
        self.reconnect_attempts, self.retry_at = ev.attempts, ev.retry_at
        return set()

    def on_server_info(self, ev: ServerInfo) -> set[str]:
        """The live server's ``/server_info`` names its SGLang version (``version``)."""
        if ev.data is not None:
            self.note_version(ev.data.get("version"))
        return set()

    def note_version(self, version: object) -> None:
        """The live server reported its SGLang version (``/server_info`` ``version``)."""
        if isinstance(version, str):
            self.sglang_version = version

    def note_simulated(self) -> None:
        """A reading came from the simulated node."""
        self.simulated = True

    def lost_for(self) -> float | None:
        """Seconds the link has been down; None while it is up."""
        if self.connected or self.lost_since is None:
            return None
        return max(0.0, self.clock() - self.lost_since)
