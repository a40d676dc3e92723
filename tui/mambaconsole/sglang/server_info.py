"""``/server_info`` (0.5.9+) and ``/get_server_info`` JSON → :class:`ServerInfo`.

Prefer ``/server_info`` where it exists: from 0.5.9 the old path logs
``Endpoint '/get_server_info' is deprecated ...`` on every call (reference §5.1).

Shape (reference §5.2–5.3): every ServerArgs field at the top level (``dataclasses.asdict``
0.5.5–0.5.18, ``resolved_dict()`` 0.5.20+), plus ``status``, ``max_total_num_tokens``,
``max_req_input_len``, ``startup_time`` (0.5.18+), ``launch_command`` (0.5.20+), ``version``,
``kv_events`` (0.5.13+), ``frontend`` (0.5.23), and ``internal_states``: one dict per DP rank
holding that scheduler's copy of the arguments (which includes values changed inside the
scheduler, e.g. a computed ``max_mamba_cache_size``) and ``last_gen_throughput``,
``memory_usage`` (``graph`` a float ≤0.5.15, a per-phase dict 0.5.18+),
``effective_max_running_requests_per_dp`` (0.5.9+), ``avg_spec_accept_length`` (only with
speculation and after a decode line). The scheduler's copy wins where the two disagree; the
disagreements are listed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mambaconsole.bounded import json_loads
from mambaconsole.errors import ConsoleError

__all__ = ["ServerInfo", "MemoryUsage", "parse_server_info", "ENDPOINTS", "endpoints_for", "looks_like_server_info"]

#: preferred first
ENDPOINTS = ("/server_info", "/get_server_info")

#: top-level keys that are not ServerArgs fields
_NOT_ARGS = frozenset({
    "status", "max_total_num_tokens", "max_req_input_len", "startup_time", "launch_command",
    "internal_states", "version", "kv_events", "frontend", "scheduler_pids", "tokenizer_info",
})
#: internal_states keys that are not ServerArgs fields
_INTERNAL_ONLY = frozenset({
    "last_gen_throughput", "memory_usage", "effective_max_running_requests_per_dp",
    "avg_spec_accept_length", "step_time_dict", "startup_time", "world_size",
    "dspark_info_record", "disaggregation_mode", "decode_cuda_graph_bs",
    "decode_cuda_graph_memory_gb", "env_vars", "is_scaling_elastic_ep",
})


def endpoints_for(version: str | None) -> tuple[str, ...]:
    """Endpoints to try in order: ``/server_info`` first (0.5.9+), ``/get_server_info``
    for 0.5.5 and as the fallback."""
    from mambaconsole.sglang.versions import parse_version

    v = parse_version(version)
    if v is not None and v < (0, 5, 9):
        return ("/get_server_info",)
    return ENDPOINTS


@dataclass(frozen=True)
class MemoryUsage:
    """``internal_states[i].memory_usage`` in GB (SGLang's GB, rounded to 2 decimals ≤0.5.15,
    3 from 0.5.18). ``graph_gb`` is the total; ``graph_by_phase`` the 0.5.18+ dict."""

    weight_gb: float | None = None
    kvcache_gb: float | None = None
    graph_gb: float | None = None
    graph_by_phase: dict[str, float] | None = None
    startup_available_gb: float | None = None
    token_capacity: int | None = None
    token_capacity_swa: int | None = None


@dataclass(frozen=True)
class ServerInfo:
    """Parsed server info. ``args``: the top-level ServerArgs view (tokenizer side);
    ``internal``: ``internal_states[0]``; ``effective_args``: top level overlaid with the
    scheduler's values; ``disagreements``: (field, top-level value, internal value)."""

    raw: dict[str, Any]
    version: str | None
    status: str | None
    args: dict[str, Any]
    internal: dict[str, Any]
    internal_states: tuple[dict[str, Any], ...]
    effective_args: dict[str, Any]
    disagreements: tuple[tuple[str, Any, Any], ...]
    max_total_num_tokens: int | None
    memory: MemoryUsage
    effective_max_running_requests_per_dp: int | None
    avg_spec_accept_length: float | None
    last_gen_throughput: float | None
    startup_time: dict[str, Any] | float | None = None
    launch_command: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def spec_enabled(self) -> bool | None:
        """False when ``speculative_algorithm`` is null (acceptance "off"), True when set,
        None when the field is absent."""
        if "speculative_algorithm" not in self.effective_args:
            return True if self.avg_spec_accept_length is not None else None
        return self.effective_args.get("speculative_algorithm") is not None

    @property
    def requested_max_running_requests(self) -> int | None:
        v = self.args.get("max_running_requests")
        return v if isinstance(v, int) else None


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    return None


def _memory(mu: Any) -> MemoryUsage:
    if not isinstance(mu, dict):
        return MemoryUsage()
    g = mu.get("graph")
    by_phase = None
    if isinstance(g, dict):
        by_phase = {str(k): float(v) for k, v in g.items() if _num(v) is not None}
        graph = round(sum(by_phase.values()), 6)
    else:
        graph = _num(g)
    tc = mu.get("token_capacity")
    tcs = mu.get("token_capacity_swa")
    return MemoryUsage(
        weight_gb=_num(mu.get("weight")), kvcache_gb=_num(mu.get("kvcache")), graph_gb=graph,
        graph_by_phase=by_phase, startup_available_gb=_num(mu.get("startup_available")),
        token_capacity=tc if isinstance(tc, int) else None,
        token_capacity_swa=tcs if isinstance(tcs, int) else None)


def looks_like_server_info(obj: Any) -> bool:
    return isinstance(obj, dict) and ("internal_states" in obj or ("model_path" in obj and "tp_size" in obj))


def parse_server_info(data: str | bytes | dict) -> ServerInfo:
    """Parse the JSON body. Raises :class:`~mambaconsole.errors.ConsoleError` when it is
    not JSON (nested deeper than :data:`mambaconsole.bounded.MAX_JSON_DEPTH`, a number out of
    range included) or not an object."""
    if isinstance(data, (str, bytes)):
        try:
            obj = json_loads(data)
        except ValueError as exc:
            raise ConsoleError(f"server info is not JSON: {exc}") from None
    else:
        obj = data
    if not isinstance(obj, dict):
        raise ConsoleError("server info is not a JSON object")
    states = obj.get("internal_states")
    states_t = tuple(s for s in states if isinstance(s, dict)) if isinstance(states, list) else ()
    internal = states_t[0] if states_t else {}
    args = {k: v for k, v in obj.items() if k not in _NOT_ARGS}
    effective = dict(args)
    disagreements = []
    for k, v in internal.items():
        if k in _INTERNAL_ONLY:
            continue
        if k in args and args[k] != v:
            disagreements.append((k, args[k], v))
        effective[k] = v
    emr = internal.get("effective_max_running_requests_per_dp")
    mt = obj.get("max_total_num_tokens")
    return ServerInfo(
        raw=obj, version=obj.get("version") if isinstance(obj.get("version"), str) else None,
        status=obj.get("status") if isinstance(obj.get("status"), str) else None,
        args=args, internal=internal, internal_states=states_t, effective_args=effective,
        disagreements=tuple(disagreements),
        max_total_num_tokens=mt if isinstance(mt, int) else None,
        memory=_memory(internal.get("memory_usage")),
        effective_max_running_requests_per_dp=emr if isinstance(emr, int) and not isinstance(emr, bool) else None,
        avg_spec_accept_length=_num(internal.get("avg_spec_accept_length")),
        last_gen_throughput=_num(internal.get("last_gen_throughput")),
        startup_time=obj.get("startup_time"),
        launch_command=obj.get("launch_command") if isinstance(obj.get("launch_command"), str) else None,
    )
