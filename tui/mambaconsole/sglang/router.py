"""SGLang's router (the model gateway, PyPI ``smg``): ``/workers``, ``/get_loads`` and
``/engine_metrics`` → typed values. Pure: no I/O.

Formats of smg 1.13.0 (``lightseekorg/smg``, routes in ``model_gateway/src/server.rs``, worker
JSON in ``model_gateway/src/core/worker.rs``), as recorded from the installed router in
``tests/data/smg/``:

- ``GET /workers``: ``{"workers": [W...], "total": N, "stats": {"prefill_count", "decode_count",
  "regular_count"}}``; each W has ``url``, ``worker_type`` (``regular`` / ``prefill`` /
  ``decode``), ``is_healthy`` (bool: the router's health checker's verdict), ``status``
  (``ready`` ...), ``model_id``, ``labels`` (strings read from the engine at registration:
  ``version``, ``tp_size``, ``dp_size``, ``max_running_requests`` ...), ``load`` (the router's
  own in-flight count) and, while the router's load monitor has a reading, ``engine_load``
  (``{"loads": [{"dp_rank", "num_running_reqs", "num_waiting_reqs", "token_usage",
  "gen_throughput", ...}]}``).
- ``GET /get_loads``: ``{"timestamp", "version": "smg-1.13.0", "loads": [{"worker",
  "worker_type", "dp_rank", "num_running_reqs", "num_waiting_reqs", "token_usage", ...}],
  "aggregate": {...}}``; one entry per worker and DP rank the load monitor reached.
- ``GET /engine_metrics``: every worker's ``/metrics`` merged into one Prometheus text, each
  sample labelled ``worker_addr="URL"``.

A worker whose engine died keeps ``"is_healthy": true`` in ``/workers`` until the health
checker has failed it enough times (default thresholds: seen "healthy" 80 s after the kill in
the issue's measurement, and 172 s here with smg 1.13.0 and one regular worker, then
``"is_healthy": false, "status": "not_ready"``):
what the router says is kept apart from what the engine answers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from mambaconsole.errors import ConsoleError
from mambaconsole.sglang.metrics import MetricsSnapshot, parse_metrics

__all__ = ["RouterWorker", "WorkerLoad", "RouterFormatError", "parse_workers", "parse_loads",
           "split_engine_metrics", "ROLES"]

#: the router's ``worker_type`` values (smg 1.13.0); ``regular`` = neither side of a PD pair
ROLES = ("regular", "prefill", "decode")


class RouterFormatError(ConsoleError):
    """A router answer that is not the documented JSON shape."""


def _json(body: str | bytes | dict | list, what: str) -> Any:
    if isinstance(body, (dict, list)):
        return body
    try:
        return json.loads(body)
    except ValueError as exc:
        raise RouterFormatError(f"router {what} is not JSON: {exc}") from None


def _int(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            return None
    return None


def _float(v: Any) -> float | None:
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, float)):
        return float(v)
    return None


@dataclass(frozen=True)
class WorkerLoad:
    """One worker's load as the router last read it, summed over its DP ranks.

    ``running``/``waiting``: requests; ``token_usage``: 0..1, the highest over the ranks;
    ``dp_ranks``: how many ranks were reported."""

    running: int | None = None
    waiting: int | None = None
    token_usage: float | None = None
    gen_throughput: float | None = None
    dp_ranks: int = 0


def _sum_loads(rows: list[Any]) -> WorkerLoad:
    running = waiting = 0
    tput = 0.0
    usage: float | None = None
    n = 0
    seen_r = seen_w = seen_t = False
    for row in rows:
        if not isinstance(row, dict):
            continue
        n += 1
        r, w = _int(row.get("num_running_reqs")), _int(row.get("num_waiting_reqs"))
        if r is not None:
            running += r
            seen_r = True
        if w is not None:
            waiting += w
            seen_w = True
        u = _float(row.get("token_usage"))
        if u is not None:
            usage = u if usage is None else max(usage, u)
        t = _float(row.get("gen_throughput"))
        if t is not None:
            tput += t
            seen_t = True
    return WorkerLoad(running=running if seen_r else None, waiting=waiting if seen_w else None,
                      token_usage=usage, gen_throughput=tput if seen_t else None, dp_ranks=n)


@dataclass(frozen=True)
class RouterWorker:
    """One entry of the router's ``/workers``.

    ``role``: ``regular`` / ``prefill`` / ``decode`` (``worker_type``); ``healthy``: the
    router's ``is_healthy`` (None when absent); ``version``: the SGLang version the router read
    at registration (``labels.version``); ``load``: ``engine_load`` when present (None: the
    router has no reading of the engine, e.g. after it stopped answering)."""

    url: str
    role: str
    healthy: bool | None
    status: str | None
    model_id: str | None = None
    version: str | None = None
    tp_size: int | None = None
    dp_size: int | None = None
    load: WorkerLoad | None = None
    labels: dict[str, str] = field(default_factory=dict)


def parse_workers(body: str | bytes | dict) -> list[RouterWorker]:
    """``GET /workers`` → workers in the router's order. Raises :class:`RouterFormatError`
    when the body is not the router's shape (a ``workers`` list of objects with ``url``)."""
    obj = _json(body, "/workers")
    rows = obj.get("workers") if isinstance(obj, dict) else None
    if not isinstance(rows, list):
        raise RouterFormatError("router /workers: no 'workers' list (is this SGLang's router, smg?)")
    out = []
    for w in rows:
        if not isinstance(w, dict) or not isinstance(w.get("url"), str):
            raise RouterFormatError("router /workers: an entry without a 'url'")
        labels = w.get("labels") if isinstance(w.get("labels"), dict) else {}
        labels = {str(k): str(v) for k, v in labels.items()}
        el = w.get("engine_load")
        load = _sum_loads(el.get("loads") or []) if isinstance(el, dict) else None
        healthy = w.get("is_healthy")
        out.append(RouterWorker(
            url=w["url"], role=str(w.get("worker_type") or "regular"),
            healthy=healthy if isinstance(healthy, bool) else None,
            status=w.get("status") if isinstance(w.get("status"), str) else None,
            model_id=w.get("model_id") if isinstance(w.get("model_id"), str) else None,
            version=labels.get("version") or None,
            tp_size=_int(labels.get("tp_size")), dp_size=_int(labels.get("dp_size")),
            load=load, labels=labels))
    return out


def parse_loads(body: str | bytes | dict) -> dict[str, WorkerLoad]:
    """``GET /get_loads`` → worker URL → its load summed over DP ranks. A worker the load
    monitor has not reached (or no longer reaches) is absent."""
    obj = _json(body, "/get_loads")
    rows = obj.get("loads") if isinstance(obj, dict) else None
    if not isinstance(rows, list):
        raise RouterFormatError("router /get_loads: no 'loads' list")
    by_url: dict[str, list[Any]] = {}
    for row in rows:
        if isinstance(row, dict) and isinstance(row.get("worker"), str):
            by_url.setdefault(row["worker"], []).append(row)
    return {url: _sum_loads(rs) for url, rs in by_url.items()}


def split_engine_metrics(text: str | bytes) -> dict[str, MetricsSnapshot]:
    """``GET /engine_metrics`` → worker URL (the ``worker_addr`` label) → that worker's
    samples as a :class:`~mambaconsole.sglang.metrics.MetricsSnapshot` (label removed).
    Samples without ``worker_addr`` are dropped."""
    merged = parse_metrics(text)
    per: dict[str, dict[str, list[tuple[dict[str, str], float]]]] = {}
    for name, rows in merged.samples.items():
        for labels, value in rows:
            url = labels.get("worker_addr")
            if url is None:
                continue
            rest = {k: v for k, v in labels.items() if k != "worker_addr"}
            per.setdefault(url, {}).setdefault(name, []).append((rest, value))
    out = {}
    for url, samples in per.items():
        label_names = tuple(dict.fromkeys(k for rows in samples.values() for labels, _ in rows for k in labels))
        nan = tuple(sorted(n for n, rows in samples.items() if any(v != v for _, v in rows)))
        out[url] = MetricsSnapshot(enabled=True, samples=samples, types=dict(merged.types),
                                   label_names=label_names, nan=nan)
    return out
