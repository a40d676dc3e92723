"""The ServerArgs of several servers side by side, the differences that matter first. Pure.

Input: per worker its role (``regular`` / ``prefill`` / ``decode``, the router's
``worker_type`` or the server's ``disaggregation_mode``) and its ServerArgs as the server
reports them (``/server_info``'s arguments overlaid with the scheduler's copy:
:attr:`mambaconsole.sglang.server_info.ServerInfo.effective_args`, any version).

Two comparisons:

- **prefill vs decode** (a PD pair; SGLang does not check that the two sides agree): the Mamba
  SSM state dtype first (a prefill server that writes bfloat16 SSM state into a decode server
  that reads float32 corrupts the state silently, sgl-project/sglang#36371), then page size and
  KV cache dtype (the KV transfer's layout), TP/DP/PP sizes, the Mamba radix cache strategy and
  the Mamba cache caps (the decode side ignoring ``--max-mamba-cache-size``,
  sgl-project/sglang#19002), the model. Other differing fields follow, marked as not known to
  matter.
- **replica vs replica** (workers of the same role): any difference.

Fields that differ by design between instances (:data:`PER_INSTANCE`: host, port, bootstrap
port, the disaggregation mode itself, ...) are left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["ArgDifference", "diff_server_args", "PD_MATTERS", "PER_INSTANCE"]

#: field → why it matters between the prefill and the decode side, in the order shown
PD_MATTERS: dict[str, str] = {
    "mamba_ssm_dtype": "SSM state is handed from prefill to decode: a dtype mismatch corrupts it silently (sglang#36371)",
    "page_size": "KV transfer layout: pages must match",
    "kv_cache_dtype": "KV transfer: both sides must store the same KV dtype",
    "tp_size": "TP sizes of the pair (KV heads are split per TP rank)",
    "dp_size": "DP sizes of the pair",
    "pp_size": "PP sizes of the pair",
    "mamba_radix_cache_strategy": "Mamba state tracking differs between the sides (0.5.14+ flag)",
    "mamba_scheduler_strategy": "Mamba state tracking differs between the sides (up to 0.5.12)",
    "max_mamba_cache_size": "Mamba slot caps differ (the decode side has ignored it: sglang#19002)",
    "mamba_full_memory_ratio": "Mamba vs KV memory split differs",
    "model_path": "not the same model",
    "dtype": "model dtype differs",
}

#: fields that differ between instances by design
PER_INSTANCE = frozenset({
    "host", "port", "disaggregation_mode", "disaggregation_bootstrap_port", "base_gpu_id",
    "nccl_port", "dist_init_addr", "node_rank", "random_seed", "metrics_http_port",
    "grpc_port", "file_storage_path", "served_model_name_port", "gpu_id_step",
})


@dataclass(frozen=True)
class ArgDifference:
    """One ServerArgs field that differs. ``values``: worker name → value (``MISSING`` when
    the server does not report the field); ``between``: ``prefill/decode`` or ``ROLE
    replicas``; ``matters``: a known consequence (``why``) or, for replicas, always True."""

    field: str
    between: str
    values: tuple[tuple[str, Any], ...]
    matters: bool
    why: str = ""


MISSING = "(not reported)"


def _differs(values: list[Any]) -> bool:
    first = values[0]
    return any(v != first for v in values[1:])


def diff_server_args(workers: list[tuple[str, str, dict[str, Any] | None]]) -> list[ArgDifference]:
    """``workers``: (name, role, args or None when unknown). Returns the differences, the ones
    that matter first: prefill/decode fields in :data:`PD_MATTERS` order, then replica
    differences, then the other prefill/decode differences."""
    known = [(n, r, a) for n, r, a in workers if a is not None]
    pd_rows: list[ArgDifference] = []
    pd_other: list[ArgDifference] = []
    rep_rows: list[ArgDifference] = []

    pd = [(n, a) for n, r, a in known if r in ("prefill", "decode")]
    has_pair = {r for _, r, _ in known} >= {"prefill", "decode"}
    if has_pair:
        # order the prefill side first
        pd.sort(key=lambda na: next(r for n, r, _ in known if n == na[0]) != "prefill")
        fields = sorted({f for _, a in pd for f in a} - PER_INSTANCE)
        for f in fields:
            vals = [a.get(f, MISSING) for _, a in pd]
            if not _differs(vals):
                continue
            row = ArgDifference(f, "prefill/decode", tuple((n, a.get(f, MISSING)) for n, a in pd),
                                f in PD_MATTERS, PD_MATTERS.get(f, ""))
            (pd_rows if row.matters else pd_other).append(row)
        order = list(PD_MATTERS)
        pd_rows.sort(key=lambda d: order.index(d.field))

    for role in ("regular", "prefill", "decode"):
        group = [(n, a) for n, r, a in known if r == role]
        if len(group) < 2:
            continue
        for f in sorted({f for _, a in group for f in a} - PER_INSTANCE):
            vals = [a.get(f, MISSING) for _, a in group]
            if _differs(vals):
                rep_rows.append(ArgDifference(f, f"{role} replicas", tuple((n, a.get(f, MISSING)) for n, a in group),
                                              True, "replicas behind one router should be launched alike"))
    return pd_rows + rep_rows + pd_other
