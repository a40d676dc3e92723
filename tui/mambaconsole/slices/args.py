"""The ``args`` slice: the resolved ServerArgs (:class:`~mambaconsole.state.Resolution`, the
resolver's JSON, ``mambaconsole.agent.resolver``) as :class:`ArgRow` rows, and what the live
server runs with, to mark the rows that differ: the log's ``server_args=`` dump and the runtime
caps SGLang logged (:mod:`mambaconsole.sglang.events` ``ServerArgsDump``; ``ReadySummary``,
the ``max_total_num_tokens=..., max_running_requests=N`` line of ``managers/scheduler.py``;
``ConcurrencyCapped``, 0.5.18+ ``kv_cache_configurator.py``'s ``max_running_requests is capped
to N by the mamba state cache``), and the server's ``/server_info`` (the ``server`` slice)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mambaconsole.slices.server import ServerSlice
    from mambaconsole.slices.spec import SpecSlice
    from mambaconsole.state_events import Resolution, ServerInfo


@dataclass
class ArgRow:
    """One ServerArgs field for the table: ``flag`` is the CLI option (or the field name)."""

    field: str
    flag: str
    value: Any
    default: Any
    source: str
    changed_by: str = ""  # "function file:line" of the last writer, when SGLang changed it
    writer_file: str | None = None
    writer_line: int | None = None
    live: Any = None  # the value the live server reports (/server_info, its scheduler, the log)
    disagrees: bool = False
    live_from: str = ""  # where ``live`` was read: "/server_info", "scheduler", "log"
    #: False when the resolution failed (SGLang's error or a usage error): ``value`` is then the
    #: argv's or the default as parsed, not what SGLang resolved, so nothing "differs" from it
    resolved: bool = True


class ArgsSlice:
    """The ServerArgs table and the live values it is compared with; reads ``/server_info``
    from ``server`` and the Mamba pool from ``spec`` (for :meth:`live_explanation`)."""

    def __init__(self, server: ServerSlice, spec: SpecSlice) -> None:
        self._server = server
        self._spec = spec
        #: the resolver's answer for the current run's argv (issue-4 JSON shape); None before one
        self.resolution: dict | None = None
        #: one row per ServerArgs field a flag sets, in the resolver's order
        self.rows: list[ArgRow] = []
        #: the log's ``server_args=`` dump (ServerArgs field -> value); None before one
        self.dumped_args: dict | None = None
        #: runtime values SGLang logged after resolution (the ready summary, the Mamba cap)
        self.runtime_caps: dict[str, Any] = {}
        #: the log event each runtime cap was read from (its line: ``v``'s explanation)
        self.runtime_cap_events: dict[str, Any] = {}

    # --------------------------------------------------------------- events
    def on_server_info(self, ev: ServerInfo) -> set[str]:
        """A ``/server_info`` answer (kept by the server slice, which takes it first): compare
        the rows again when it is a new answer (the server slice kept this very object), not
        when the same answer came again."""
        if ev.data is not None and ev.data is self._server.server_info:
            self._compare_live()
        return set()

    def on_args_dump(self, e: Any) -> set[str]:
        """The log's ``server_args=ServerArgs(...)`` line (``ServerArgsDump``)."""
        self.dumped_args = dict(e.args)
        self._compare_live()
        return {"args"}

    def on_capped(self, e: Any) -> set[str]:
        """``max_running_requests is capped to N by the mamba state cache`` (``ConcurrencyCapped``)."""
        if e.effective is None:
            return set()
        self.runtime_caps["max_running_requests"] = e.effective
        self.runtime_cap_events["max_running_requests"] = e
        if e.max_mamba_cache_size is not None:
            self.runtime_caps["max_mamba_cache_size"] = e.max_mamba_cache_size
            self.runtime_cap_events["max_mamba_cache_size"] = e
        self._compare_live()
        return {"args"}

    def on_ready_summary(self, e: Any) -> set[str]:
        """The start-up summary's ``max_running_requests=N`` (``ReadySummary``); a cap logged
        before it wins."""
        if e.max_running_requests is None:
            return set()
        if "max_running_requests" not in self.runtime_caps:
            self.runtime_caps["max_running_requests"] = e.max_running_requests
            self.runtime_cap_events["max_running_requests"] = e
        self._compare_live()
        return {"args"}

    def new_boot(self) -> None:
        """A new boot: its runtime caps are its own."""
        self.runtime_caps = {}

    def new_run(self) -> None:
        """Another run: what the previous run's log said is not this one's (the resolution
        stays until the new run's arrives)."""
        self.dumped_args = None
        self.runtime_caps, self.runtime_cap_events = {}, {}

    # --------------------------------------------------------------- selectors
    @property
    def memory_plan(self) -> dict | None:
        """The current run's memory budget as predicted from its resolved arguments before it
        loaded (``mambaconsole plan --json``'s object, :func:`mambaconsole.sglang.budget.plan_from_node`),
        carried by its :class:`Resolution`; None when none could be made."""
        return (self.resolution or {}).get("memory_plan")

    def flag_values(self, flags) -> list[tuple[str, Any]]:
        """``(flag, resolved value)`` for each of ``flags`` the resolution has (its order)."""
        by_flag = {r.flag: r.value for r in self.rows}
        return [(f, by_flag[f]) for f in flags if f in by_flag]

    def on_resolution(self, ev: Resolution) -> set[str]:
        self.resolution = ev.result
        rows = []
        resolved = not (ev.result.get("error") or ev.result.get("usage_error"))
        for name, f in (ev.result.get("fields") or {}).items():
            if "option" in f and not f["option"]:
                continue  # a ServerArgs field no command-line flag sets (internal state): not a flag
            writes = f.get("writes") or []
            last = writes[-1] if writes else None
            src = f.get("source", "default")
            changed_by = ""
            if last and src in ("derived", "overridden", "env") or (last and src != "default"):
                fn = last.get("declared_as") or last.get("function") or ""
                changed_by = f"{fn} {last.get('file', '')}:{last.get('line', '')}".strip()
            rows.append(ArgRow(
                field=name, flag=f.get("option") or "--" + name.replace("_", "-"),
                value=f.get("value"), default=f.get("default"), source=src,
                changed_by=changed_by if src in ("derived", "overridden") else "",
                writer_file=(last or {}).get("file"), writer_line=(last or {}).get("line"),
                resolved=resolved,
            ))
        self.rows = rows
        self._compare_live()
        return {"args", "spec"}  # the spec pane names a failed run's sizing flags with their values

    def _compare_live(self) -> None:
        """Mark rows where the live server disagrees with the resolution. The live value is, last
        one wins: the log's ``server_args=`` dump, ``/server_info``'s top-level fields, its
        ``internal_states[0]`` (the scheduler's own copy, with values computed inside the
        scheduler such as ``max_mamba_cache_size``), ``effective_max_running_requests_per_dp``
        (× :func:`dp_ranks`; SGLang 0.5.9+, sglang-observables §5.3), and the caps SGLang logged at
        start-up (``max_running_requests=N`` of the ready summary, ``max_running_requests is
        capped to N by the mamba state cache``)."""
        live = self.live_values()
        for row in self.rows:
            if row.field in live:
                row.live, row.live_from = live[row.field]
                # no resolution, no difference: the live value is shown as live, not against a guess
                row.disagrees = row.resolved and _norm(row.live) != _norm(row.value)
            else:
                row.live, row.live_from, row.disagrees = None, "", False

    def live_explanation(self, row: ArgRow) -> str | None:
        """Why the live server runs ``row`` with another value than the resolution, when SGLang
        set it at runtime (no ServerArgs writer did): the log line the value was read from and
        the SGLang source that prints it, or ``/server_info``'s scheduler field; None when the
        live value is not such a runtime value."""
        if not row.disagrees:
            return None
        e = self.runtime_cap_events.get(row.field)
        if row.live_from == "log" and e is not None and self.runtime_caps.get(row.field) == row.live:
            out = (f"{row.flag}: {row.value!r} as resolved ({row.source}), {row.live!r} live. SGLang applied "
                   f"{row.live!r} at runtime, after resolving the arguments (no ServerArgs code wrote it); "
                   f"the run's log says so, in a line SGLang's {e.SOURCE} prints:\n\n  {e.text.strip()}")
            if row.field == "max_running_requests" and self._spec.mamba_pool_slots:
                per = f", {self._spec.mamba_slots_per_request} slots per request" if self._spec.mamba_slots_per_request else ""
                out += (f"\n\nThe Mamba pool has {self._spec.mamba_pool_slots} slots (the log's 'Mamba Cache is "
                        f"allocated' line){per}: SGLang caps the running requests to what the pool can hold "
                        f"(max_mamba_cache_size // slots per request, in _resolve_max_num_reqs).")
            return out
        if row.live_from == "scheduler" and row.field == "max_running_requests":
            info = self._server.server_info or {}
            return (f"{row.flag}: {row.value!r} as resolved ({row.source}), {row.live!r} live: /server_info's "
                    f"internal_states[0].effective_max_running_requests_per_dp × {dp_ranks(info)} DP rank(s), the "
                    f"cap the scheduler applied at runtime (no ServerArgs code wrote it).")
        return None

    def live_values(self) -> dict[str, tuple[Any, str]]:
        """ServerArgs field → (value the live server reports, where it was read), merged as
        :meth:`_compare_live` describes (last one wins)."""
        live: dict[str, tuple[Any, str]] = {}
        for k, v in (self.dumped_args or {}).items():
            live[k] = (v, "log")
        info = self._server.server_info or {}
        for k, v in info.items():
            live[k] = (v, "/server_info")
        states = info.get("internal_states")
        sched = states[0] if isinstance(states, list) and states and isinstance(states[0], dict) else {}
        for k, v in sched.items():
            live[k] = (v, "scheduler")
        eff = _count(sched.get("effective_max_running_requests_per_dp"))
        if eff is not None:
            live["max_running_requests"] = (eff * dp_ranks(info), "scheduler")
        for k, v in self.runtime_caps.items():
            live[k] = (v, "log")
        return live


def _count(v: Any) -> int | None:
    """``v`` when it is a positive int (not a bool), else None."""
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def dp_ranks(info: dict) -> int:
    """How many schedulers share the server's requests, read off a ``/server_info`` answer:
    the scheduler's ``dp_size`` (else the top-level one) × its ``attn_dp_size`` (absent before
    0.5.23: 1). SGLang's own benchmarks count the server's running-request cap this way:
    ``effective_max_running_requests_per_dp * dp_size`` (0.5.11
    ``test/bench_one_batch_server_internal.py``) and ``* num_dp_ranks`` = ``dp_size *
    attn_dp_size``, "replicas times attention-DP groups" (0.5.23
    ``benchmark/one_batch_server.py``, ``srt/runtime_context.py:num_dp_ranks_of``)."""
    states = info.get("internal_states")
    sched = states[0] if isinstance(states, list) and states and isinstance(states[0], dict) else {}
    dp = _count(sched.get("dp_size")) or _count(info.get("dp_size")) or 1
    return dp * (_count(sched.get("attn_dp_size")) or 1)


def _norm(v: Any) -> Any:
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    return v
