"""Server runs in tmux on a node, the run store and the relaunch lock (console side).

All the work happens on the node, in ``agent/runs_agent.py`` (stdlib only), sent on stdin to the
node's python for each request; the server itself is started by ``agent/run_wrapper.py`` in its
own tmux window (session ``sglang`` by default, ``remain-on-exit on``), which execs the argv
from ``argv.json`` without a shell and copies every byte of output to the run's ``log``. The
layout of ``$MAMBACONSOLE_HOME/runs/<run-id>/`` and the record fields are documented in
``runs_agent.py``.

Errors: :class:`RunError` (one line) for a failed request; :class:`LockHeld` when another
console holds the node's relaunch lock; :class:`~mambaconsole.node.base.NodeError` when the
node cannot be reached.
"""

from __future__ import annotations

import getpass
import json
import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mambaconsole.errors import ConsoleError
from mambaconsole.node.base import Node, NodeError

AGENT_DIR = Path(__file__).resolve().parent.parent / "agent"
DEFAULT_SESSION = "sglang"
DEFAULT_MODULE = "sglang.launch_server"
#: the python that runs the agent scripts on the node (stdlib only, any Python >= 3.8)
AGENT_PYTHON = "python3"


def agent_script(name: str) -> bytes:
    """The source of ``mambaconsole/agent/<name>`` (sent to the node's python)."""
    return (AGENT_DIR / name).read_bytes()


class RunError(ConsoleError):
    """A run request failed on the node (no such run, tmux missing, bad argv, ...)."""


class LockHeld(ConsoleError):
    """Another console holds the node's relaunch lock. ``lock``: the holder's lock as the node
    reports it (holder, pid, since, holder_alive, age_s, stale); ``breakable``: the holder's
    session is gone and the lock is older than the bound, so it may be broken, with the user's
    explicit confirmation (:meth:`RunStore.acquire_lock` ``break_stale=``)."""

    def __init__(self, lock: Mapping, node: str) -> None:
        import time

        from mambaconsole.units import fmt_duration

        self.lock = dict(lock)
        since = lock.get("since")
        if since:
            when = time.strftime("%H:%M:%S", time.localtime(float(since)))
            age = f"since {when}, {fmt_duration(time.time() - float(since))} ago"
        else:
            age = "since an unknown time"
        path = lock.get("path") or "relaunch.lock"
        if lock.get("unreadable"):
            super().__init__(
                f"{node}: the relaunch lock {path} is {lock['unreadable']} (a full disk?) and names no holder: "
                f"it is stale; break it with confirmation (launch --break-stale, or confirm in the console)")
            return
        if self.breakable:
            tail = ("its session is gone: it can be broken, with confirmation (launch --break-stale, or confirm "
                    "in the console)")
        elif lock.get("holder_alive") is False:
            left = float(lock.get("stale_after_s") or 0) - float(lock.get("age_s") or 0)
            tail = (f"its session is gone; it can be broken in {fmt_duration(left)} (then: launch --break-stale, "
                    f"or confirm in the console)")
        else:
            kind = {"ssh": "SSH session", "process": "console process"}.get(lock.get("session_kind"), "session")
            tail = (f"wait for it to finish (its {kind}, pid {lock.get('session_pid')} on the node, still runs; "
                    f"if it hangs, end that process and the lock goes stale)")
        super().__init__(
            f"{node}: relaunch lock held by {lock.get('holder', 'unknown')} (pid {lock.get('pid')}, {age}); {tail}")

    @property
    def breakable(self) -> bool:
        return bool(self.lock.get("stale"))


@dataclass(frozen=True)
class Run:
    """One run as the node's run store records it.

    ``state``: ``starting``, ``running``, ``exiting``, ``exited``, ``lost``, ``adopted``, ``gone``
    (see runs_agent.py); ``record`` also holds ``never_started`` (no server process ever ran),
    ``error`` and the log's ``log_size`` / ``log_mtime`` / ``log_idle_s``.
    Times are unix seconds (node clock); ``exit_code`` is 128+N for signal N.
    """

    run_id: str
    state: str
    argv: list[str]
    pid: int | None
    started: float | None
    ended: float | None
    exit_code: int | None
    adopted: bool
    session: str | None
    window: str | None
    pane: str | None
    run_dir: str
    log_path: str
    alive: bool
    record: dict = field(repr=False, compare=False, default_factory=dict)

    @classmethod
    def from_record(cls, rec: Mapping) -> "Run":
        return cls(
            run_id=rec["run_id"], state=rec.get("state", "unknown"), argv=list(rec.get("argv") or []),
            pid=rec.get("pid"), started=rec.get("started"), ended=rec.get("ended"),
            exit_code=rec.get("exit_code"), adopted=bool(rec.get("adopted")), session=rec.get("session"),
            window=rec.get("window"), pane=rec.get("pane"), run_dir=rec.get("run_dir", ""),
            log_path=rec.get("log_path") or os.path.join(rec.get("run_dir", ""), "log"),
            alive=bool(rec.get("alive")), record=dict(rec),
        )

    @property
    def group(self) -> dict | None:
        """This run's place in a run across nodes (``group.json``: ``id``, ``rank``, ``nnodes``,
        ``nodes``, ``runs``), or None for a run on one node."""
        g = self.record.get("group")
        return g if isinstance(g, dict) else None

    @property
    def state_text(self) -> str:
        """``running``, ``exited 0``, ``exited 137 (SIGKILL)``, ``exited 130 (SIGINT, stopped)``
        (a console stopped it), ``adopted``, ``gone (stopped)``, ...; followed by ``; log lost
        N bytes (why)`` when the log could not take all of the server's output (a full disk)."""
        return self._state_word() + self.log_loss_text

    @property
    def log_loss_text(self) -> str:
        """``; log lost 2.0 MiB (No space left on device)`` or "" (nothing lost)."""
        lost = self.record.get("log_lost_bytes")
        if not isinstance(lost, int) or lost <= 0:
            return ""
        size = (f"{lost / 2**20:.1f} MiB" if lost >= 2**20 else f"{lost / 2**10:.1f} KiB" if lost >= 2**10
                else f"{lost} bytes")
        why = self.record.get("log_error")
        return f"; log lost {size}" + (f" ({why})" if why else "")

    def _state_word(self) -> str:
        never = " (never started)" if self.record.get("never_started") else ""
        stopped = isinstance(self.record.get("stopped"), dict)
        if self.state == "exited":
            sig = self.record.get("signal")
            notes = [n for n in (sig, "stopped" if stopped else None) if n]
            return f"exited {self.exit_code}" + (f" ({', '.join(notes)})" if notes else "") + never
        if stopped and self.state in ("gone", "lost"):
            return f"{self.state} (stopped)"
        return self.state + never


def console_identity() -> str:
    """``user@host`` of this console (the relaunch lock's holder)."""
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in the environment
        user = str(os.getuid())
    return f"{user}@{socket.gethostname()}"


class RunStore:
    """The runs on one node. ``python``: the node's python for the agent scripts;
    ``home``: the store folder on the node (default: node's ``$MAMBACONSOLE_HOME`` or
    ``~/.mambaconsole``)."""

    def __init__(self, node: Node, *, python: str = AGENT_PYTHON, home: str | None = None) -> None:
        self.node = node
        self.python = python
        self.home = home

    def with_home(self, req: dict) -> dict:
        """``req`` with this store's ``home`` (when it has one)."""
        return dict(req, home=self.home) if self.home else dict(req)

    async def request(self, op: str, req: dict, timeout: float = 60.0):
        """The ``result`` of one request ``op`` (see runs_agent.py); raises RunError with the
        node's error, NodeError when the agent did not answer."""
        return await self._call(op, req, timeout)

    async def _call(self, op: str, req: dict, timeout: float = 60.0):
        req = self.with_home(req)
        res = await self.node.run([self.python, "-u", "-", op, json.dumps(req)],
                                  input=agent_script("runs_agent.py"), timeout=timeout)
        lines = res.out.strip().splitlines()
        try:
            answer = json.loads(lines[-1]) if lines else None
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            detail = (res.err.strip().splitlines() or ["no output"])[-1]
            if res.exit_status == 127:
                detail = f"{self.python} not found on the node"
            raise NodeError(f"{self.node.name}: run store agent failed (exit {res.exit_status}): {detail}")
        if not answer.get("ok"):
            raise RunError(f"{self.node.name}: {answer.get('error')}")
        return answer["result"]

    async def start(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None, cwd: str | None = None,
                    session: str = DEFAULT_SESSION, launched_by: str | None = None,
                    lock: Mapping | None = None, group: Mapping | None = None) -> Run:
        """Start ``argv`` in a new tmux window of ``session``; returns once the server's pid
        is recorded. Raises RunError (e.g. tmux missing). ``lock``: the relaunch lock this
        console holds (:meth:`acquire_lock`): the node then checks, under it, that the lock is
        still ours and that no server of the store is live, and refuses (RunError naming the
        live run) otherwise: of any number of launches at once, exactly one starts. ``group``:
        this run is a rank of a run across nodes (``group.json``, see runs_agent.py; the run's
        ``record["group"]``)."""
        argv = [str(a) for a in argv]
        if not argv:
            raise RunError("nothing to launch: empty argv")
        if not session or not all(c.isalnum() or c in "-_" for c in session):
            raise RunError(f"tmux session name must be letters, digits, '-' or '_': {session!r}")
        env = {str(k): str(v) for k, v in (env or {}).items()}
        for k in env:
            if not k.isidentifier():
                raise RunError(f"not an environment variable name: {k!r}")
        bad = [a for a in [*argv, *env.values()] if "\0" in a]
        if bad:
            raise RunError(f"a NUL byte cannot be passed to a process: {bad[0]!r}")
        rec = await self._call("start", {
            "argv": argv, "env": env, "cwd": cwd, "session": session,
            "wrapper": agent_script("run_wrapper.py").decode(),
            "launched_by": launched_by or console_identity(),
            **({"lock_token": lock.get("token")} if lock is not None else {}),
            **({"group": dict(group)} if group is not None else {}),
        })
        return Run.from_record(rec)

    async def set_group(self, run_id: str, group: Mapping) -> Run:
        """Replace the run's ``group.json`` (a rank of a run across nodes)."""
        return Run.from_record(await self._call("group", {"run_id": run_id, "group": dict(group)}))

    async def tail(self, run_id: str, nbytes: int = 65536) -> str:
        """The last ``nbytes`` (at most 1 MiB) of the run's log, from the start of a line."""
        return str((await self._call("tail", {"run_id": run_id, "bytes": int(nbytes)}))["text"])

    async def list(self, *, adopt: bool | str = False, session: str = DEFAULT_SESSION,
                   patterns: Sequence[Sequence[str]] | None = None) -> list[Run]:
        """All runs, oldest first. ``adopt``: ``False`` records nothing new; ``"session"``
        records a server this user started by hand in a pane of the tmux session ``session``
        (the one named for this host) as an adopted run first; ``True`` (the user asked for it)
        any server of this user (see runs_agent.py for how it is found). Another user's server
        is never adopted (:meth:`list_with_others` names them)."""
        req: dict = {"adopt": adopt, "session": session}
        if patterns:
            req["patterns"] = [list(p) for p in patterns]
        return [Run.from_record(r) for r in await self._call("list", req)]

    async def list_with_others(self, *, adopt: bool | str = True, session: str = DEFAULT_SESSION,
                               patterns: Sequence[Sequence[str]] | None = None
                               ) -> tuple[list[Run], list[dict], list[dict]]:
        """Like :meth:`list`, plus the servers that run as another user on the node (never
        adopted, so never stopped) and this user's servers ``adopt`` left alone (not in the
        tmux session), each ``{"pid", "uid", "user", "argv", "started"}`` (``started`` unix
        seconds, node clock; ``user`` None when the uid has no name; the left-alone ones also
        ``tmux_session``, None outside tmux)."""
        req: dict = {"adopt": adopt, "session": session, "others": True}
        if patterns:
            req["patterns"] = [list(p) for p in patterns]
        res = await self._call("list", req)
        return ([Run.from_record(r) for r in res["runs"]], list(res["others"]),
                list(res.get("not_adopted") or []))

    async def get(self, run_id: str) -> Run:
        return Run.from_record(await self._call("get", {"run_id": run_id}))

    async def note(self, run_id: str, *, peak_mem_mib: float) -> Run:
        """Keep what the console observed with the run (``runs/<id>/console.json``):
        ``peak_mem_mib``, the highest used memory of one GPU (MiB) seen while the run was
        current; the node keeps the larger of the stored and the new value. Returns the run,
        its ``record["peak_mem_mib"]`` updated. Raises RunError for an unknown run."""
        return Run.from_record(await self._call("note", {"run_id": run_id, "peak_mem_mib": float(peak_mem_mib)}))

    async def latest(self) -> Run | None:
        runs = await self.list(adopt="session")
        live = [r for r in runs if r.alive]
        return (live or runs or [None])[-1]

    async def stop(self, run_id: str, *, int_s: float = 30.0, term_s: float = 10.0, kill_s: float = 5.0) -> Run:
        """Stop a run's server: SIGINT, then SIGTERM, then SIGKILL, waiting ``int_s`` /
        ``term_s`` / ``kill_s`` seconds after each. Only the pid recorded for the run, checked
        against /proc/PID/cmdline and its start time. Returns the run after it ended."""
        rec = await self._call("stop", {"run_id": run_id, "int_s": int_s, "term_s": term_s, "kill_s": kill_s},
                               timeout=int_s + term_s + kill_s + 30)
        return Run.from_record(rec)

    async def acquire_lock(self, holder: str | None = None, *, stale_s: float = 900.0,
                           break_stale: Mapping | None = None) -> dict:
        """Take the node's relaunch lock; returns the lock (keep it for :meth:`release_lock`).
        Raises LockHeld naming the holder and since when while another console has it. A lock
        whose holder's session is gone and that is older than ``stale_s`` seconds is only
        taken over when ``break_stale`` is that very lock (``LockHeld.lock``, which the user
        confirmed breaking) and it is still stale; never silently."""
        req = {"holder": holder or console_identity(), "pid": os.getpid(), "stale_s": stale_s}
        from mambaconsole.node.local import LocalNode

        if isinstance(self.node, LocalNode):  # the console runs on the node: it is the holder's session
            req["console_pid"] = os.getpid()
        if break_stale is not None and break_stale.get("since") is not None:
            req["break_since"] = break_stale["since"]
        res = await self._call("lock", req)
        if not res["acquired"]:
            raise LockHeld(res["lock"], self.node.name)
        return res["lock"]

    async def release_lock(self, lock: Mapping) -> bool:
        return bool(await self._call("unlock", {"token": lock.get("token")}))
