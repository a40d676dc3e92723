"""An engine's own ``GET /v1/loads`` (JSON form) → :class:`EngineLoads`. Pure: no I/O.

As SGLang 0.5.23 serves it (``srt/entrypoints/v1_loads.py:97`` ``get_loads``; each rank is
``LoadSnapshot.to_dict``, ``srt/managers/load_snapshot.py:196``). 0.5.11 serves an earlier
shape (``srt/managers/io_struct.py:2010`` ``GetLoadsReqOutput``: ``dp_rank_count`` and
``aggregate`` at the top, no ``accelerator``); the keys read here are in both. A recorded real
0.5.23 answer: ``tests/data/loads/``. Shape (0.5.23)::

    {"timestamp": ISO-8601, "version": "0.5.23", "accelerator": "NVIDIA H100" | null,
     "num_accelerators": int,
     "loads": [{"dp_rank", "num_running_reqs", "num_waiting_reqs", "num_used_tokens",
                "max_total_num_tokens", "max_running_requests", "token_usage",
                "gen_throughput", "cache_hit_rate", "utilization", ...,
                "memory": {"weight_gb", "kv_cache_gb", "graph_gb", "token_capacity"},
                "speculative": {"accept_length", "accept_rate"},
                "disaggregation": {...}, "queues": {...}}]}

Sections are present only when the server has them (``memory`` after start-up, ``speculative``
with speculative decoding). GB is SGLang's GB (bytes / 2**30, i.e. GiB).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mambaconsole.errors import ConsoleError

__all__ = ["EngineLoads", "parse_v1_loads"]

#: the path and the sections the fleet asks for
PATH = "/v1/loads"


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    return float(v) if isinstance(v, (int, float)) else None


@dataclass(frozen=True)
class EngineLoads:
    """``/v1/loads`` summed over DP ranks: ``running``/``waiting`` requests, ``token_usage``
    (0..1, highest rank), ``accept_length`` (mean over the ranks that report it),
    ``weight_gib``/``kv_cache_gib``/``graph_gib`` (summed over ranks, GiB), ``version``,
    ``accelerator`` and ``dp_ranks``."""

    version: str | None
    accelerator: str | None
    dp_ranks: int
    running: int | None
    waiting: int | None
    token_usage: float | None
    gen_throughput: float | None
    accept_length: float | None
    weight_gib: float | None
    kv_cache_gib: float | None
    graph_gib: float | None


def parse_v1_loads(body: str | bytes | dict) -> EngineLoads:
    """Parse the JSON body. Raises :class:`~mambaconsole.errors.ConsoleError` when it is not
    the shape above (no ``loads`` list)."""
    if isinstance(body, (str, bytes)):
        try:
            obj = json.loads(body)
        except ValueError as exc:
            raise ConsoleError(f"/v1/loads is not JSON: {exc}") from None
    else:
        obj = body
    rows = obj.get("loads") if isinstance(obj, dict) else None
    if not isinstance(rows, list):
        raise ConsoleError("/v1/loads: no 'loads' list")
    rows = [r for r in rows if isinstance(r, dict)]

    def total(key: str, section: str | None = None) -> float | None:
        vals = [_num((r.get(section) or {}).get(key) if section else r.get(key)) for r in rows]
        vals = [v for v in vals if v is not None]
        return sum(vals) if vals else None

    def highest(key: str) -> float | None:
        vals = [v for v in (_num(r.get(key)) for r in rows) if v is not None]
        return max(vals) if vals else None

    accept = [v for v in (_num((r.get("speculative") or {}).get("accept_length")) for r in rows) if v is not None]
    running, waiting = total("num_running_reqs"), total("num_waiting_reqs")
    return EngineLoads(
        version=obj.get("version") if isinstance(obj.get("version"), str) else None,
        accelerator=obj.get("accelerator") if isinstance(obj.get("accelerator"), str) else None,
        dp_ranks=len(rows),
        running=int(running) if running is not None else None,
        waiting=int(waiting) if waiting is not None else None,
        token_usage=highest("token_usage"), gen_throughput=total("gen_throughput"),
        accept_length=sum(accept) / len(accept) if accept else None,
        weight_gib=total("weight_gb", "memory"), kv_cache_gib=total("kv_cache_gb", "memory"),
        graph_gib=total("graph_gb", "memory"),
    )
