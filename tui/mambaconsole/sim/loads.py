"""The simulated server's ``GET /v1/loads``: SGLang 0.5.23's answer built from per-rank snapshots.

As 0.5.23 defines it (``sglang/srt/entrypoints/v1_loads.py``: ``get_loads`` and
``_format_loads_prometheus``; the per-rank dict is ``LoadSnapshot.to_dict``,
``sglang/srt/managers/load_snapshot.py:196-258``; the snapshot is filled by
``sglang/srt/managers/scheduler_components/load_inquirer.py:109`` ``get_loads``):

JSON (``application/json``)::

    {"timestamp": ISO-8601 with +00:00, "version": "0.5.23", "accelerator": str | null,
     "num_accelerators": int,
     "loads": [{<core keys, CORE_KEYS order>, "memory": {...}, "speculative": {...},
                "lora": {...}, "disaggregation": {...}, "queues": {...}}, ...]}

Sections appear only when the rank has them (``memory`` when the scheduler can read its pools,
``speculative`` with speculative decoding once a step was verified, ``lora`` with LoRA);
``include`` (comma-separated ``core, memory, spec, lora, disagg, queues, all``) keeps the core
keys and the named sections; ``core`` alone: the core keys only. ``dp_rank`` keeps one rank; a
rank outside ``[0, dp_size)`` gives an empty ``loads`` list. ``format=prometheus``: one gauge
per numeric core key (``sglang_KEY``) and per numeric section key (``sglang_PREFIX_KEY``, the
prefix ``spec`` for ``speculative``, ``disagg`` for ``disaggregation``, else the section's
name), one sample per rank labelled ``dp_rank``; lists and strings are left out.

Errors as 0.5.23 answers them: an unknown ``include`` section raises ``ValueError`` in
``to_dict``, outside the endpoint's ``try``, so the server answers 500 ``Internal Server Error``
(text) whenever there is a rank to format; a ``dp_rank`` that is no integer is FastAPI's
validation error as SGLang's handler rewrites it: 400, ``{"object": "error", "message":
"1 validation error: ...", "type": "Bad Request", "param": null, "code": 400}``. All checked
against a real 0.5.23 server's answers (tests/data/loads/, tests/test_sim_vs_real.py).

Units: ``memory.*_gb`` are SGLang's "GB", bytes / 2**30 (GiB).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from urllib.parse import parse_qs

__all__ = ["CORE_KEYS", "SECTIONS", "VALID_INCLUDE", "loads_answer", "rank_dict"]

#: LoadSnapshot's flat fields, in its order (load_snapshot.py:199-220): every rank has them all
CORE_KEYS = (
    "timestamp", "dp_rank", "num_running_reqs", "num_waiting_reqs", "num_waiting_uncached_tokens",
    "num_used_tokens", "num_total_tokens", "num_active_tokens", "num_prealloc_ready_tokens",
    "max_total_num_tokens", "max_running_requests", "token_usage", "gen_throughput", "cache_hit_rate",
    "utilization", "total_prefill_uncached_tokens", "total_prefill_busy_us", "decode_moments",
)
#: (section field, its ``include`` name), in to_dict's order (load_snapshot.py:247-253)
SECTIONS = (("memory", "memory"), ("speculative", "spec"), ("lora", "lora"),
            ("disaggregation", "disagg"), ("queues", "queues"))
#: LoadSnapshot.VALID_SECTIONS (load_snapshot.py:228)
VALID_INCLUDE = frozenset({"core", "memory", "spec", "lora", "disagg", "queues", "all"})
#: _format_loads_prometheus's section prefixes (v1_loads.py)
PROM_PREFIX = {"speculative": "spec", "disaggregation": "disagg"}
PROM_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def rank_dict(snapshot: dict, include: set[str] | None) -> dict:
    """``LoadSnapshot.to_dict(include)`` for one rank. ``snapshot``: every core key plus the
    sections the rank has (a missing or ``None`` section is left out). Raises ``ValueError``
    (SGLang's message) for an unknown section."""
    load = {k: snapshot[k] for k in CORE_KEYS}
    if include is None or "all" in include:
        include_all = True
    else:
        if not include <= VALID_INCLUDE:
            raise ValueError(f"Invalid include sections: {include - VALID_INCLUDE}. "
                             f"Valid options: {sorted(VALID_INCLUDE)}")
        if include == {"core"}:
            return load
        include_all = False
    for field, name in SECTIONS:
        section = snapshot.get(field)
        if section is None or (not include_all and name not in include):
            continue
        load[field] = dict(section)
    return load


def _prometheus(dicts: list[dict]) -> bytes:
    samples: dict[str, list[tuple[int, float]]] = {}
    for d in dicts:
        d = dict(d)
        rank = d.pop("dp_rank")
        for key, value in d.items():
            if isinstance(value, dict):
                prefix = PROM_PREFIX.get(key, key)
                for sub, v in value.items():
                    if isinstance(v, (int, float)):
                        samples.setdefault(f"sglang_{prefix}_{sub}", []).append((rank, v))
            elif isinstance(value, (int, float)):
                samples.setdefault(f"sglang_{key}", []).append((rank, value))
    lines = []
    for name, rows in samples.items():
        lines.append(f"# TYPE {name} gauge")
        lines += [f'{name}{{dp_rank="{rank}"}} {v}' for rank, v in rows]
    return ("\n".join(lines) + "\n").encode()


def loads_answer(snapshots: list[dict], query: str, *, version: str, accelerator: str | None,
                 num_accelerators: int, site: str) -> tuple[int, bytes, str]:
    """The whole endpoint: ``snapshots`` (one per DP rank, rank order), the request's query
    string → (HTTP status, body, content type). ``site``: the site-packages folder SGLang's
    validation message names."""
    params = {k: v[-1] for k, v in parse_qs(query, keep_blank_values=True).items()}
    dp_rank = None
    if params.get("dp_rank") is not None:
        raw = params["dp_rank"]
        try:
            dp_rank = int(raw)
        except ValueError:
            error = {"type": "int_parsing", "loc": ("query", "dp_rank"),
                     "msg": "Input should be a valid integer, unable to parse string as an integer", "input": raw}
            message = (f"1 validation error:\n  {error}\n\n  File \"{site}/sglang/srt/entrypoints/v1_loads.py\", "
                       f"line 96, in get_loads\n    GET /v1/loads [{error}]")
            body = {"object": "error", "message": message, "type": "Bad Request", "param": None, "code": 400}
            return 400, json.dumps(body).encode(), "application/json"
    include = params.get("include")
    include_set = {s.strip() for s in include.split(",")} if include else None
    if dp_rank is not None:
        chosen = [s for s in snapshots if s["dp_rank"] == dp_rank] if 0 <= dp_rank < len(snapshots) else []
    else:
        chosen = list(snapshots)
    try:
        dicts = [rank_dict(s, include_set) for s in chosen]
    except ValueError:
        return 500, b"Internal Server Error", "text/plain; charset=utf-8"
    if params.get("format") == "prometheus":
        return 200, _prometheus(dicts), PROM_TYPE
    body = {"timestamp": datetime.now(timezone.utc).isoformat(), "version": version, "accelerator": accelerator,
            "num_accelerators": num_accelerators, "loads": dicts}
    return 200, json.dumps(body).encode(), "application/json"
