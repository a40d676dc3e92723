"""The simulated GPU memory of one server start: SGLang's budget, then the allocations.

Budget (what SGLang computes before allocating; 0.5.11
``ModelRunnerKVCacheMixin._profile_available_bytes`` and ``handle_max_mamba_cache``), all in
GiB as SGLang's "GB":

* ``pre`` = free memory before loading weights (total minus the CUDA context);
* ``rest`` = free after weights − ``pre`` × (1 − mem_fraction_static);
* with speculative decoding: ``rest`` −= max_running_requests × draft_tokens × slot bytes
  (the intermediate SSM/conv caches of the target-verify step);
* ``max_mamba_cache_size`` = ``--max-mamba-cache-size``; else (radix cache off and
  ``--max-running-requests`` given) that count; else ⌊rest × r / (1 + r) / slot bytes⌋ with
  r = ``--mamba-full-memory-ratio``;
* KV cache bytes = rest − max_mamba_cache_size × slot bytes; tokens = bytes // cell bytes;
  no tokens → ``RuntimeError: Not enough memory...`` (0.5.11 ``MemoryPoolConfig``);
* max_running_requests = min(configured or the token estimate, max_mamba_cache_size // k) with
  k = 1 (radix cache off), 3 (no_buffer), 3 + 2 (extra_buffer with overlap), 3 + 1 (extra_buffer
  without overlap) (``_calculate_mamba_ratio``).

Allocations (the simulated device, in SGLang's order; each fails with a CUDA OOM when it is
larger than the memory still free):

1. Mamba cache conv and SSM state: ``max_mamba_cache_size`` + 1 slots (slot 0 is padding).
   With ``extra_buffer`` the radix cache's state checkpoints add ping-pong track slots that
   the ratio budget above does not count: ``ping_pong`` × max_mamba_cache_size more slots in
   the same tensors, ping_pong = 2 with the overlap scheduler, 1 without (SGLang's
   ``MAMBA_CACHE_V2_ADDITIONAL_RATIO_*``). This is the simulator's model of why extra_buffer
   "roughly doubles" the Mamba cache and runs out of memory.
2. Speculative intermediate caches (fixed size): (max_running_requests + 1) × draft tokens ×
   the per-layer SSM state (``intermediate_ssm_state_cache``) and conv window
   (``intermediate_conv_window_cache``).
3. KV cache: K and V, tokens + page of padding each.
4. CUDA graphs: 0.9 GiB plus 0.4 GiB for the target-verify graphs with speculative decoding.

Outcomes fall out of these numbers: ``oom`` (which allocation and its size), ``not_enough_memory``
(no KV tokens), ``mamba_too_small`` (0.5.23: the Mamba cache fits no request), or ``ready``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from mambaconsole.sim.model import GiB, HybridModel, SimGPU
from mambaconsole.sim.resolve import Resolved

#: bytes the CUDA context and NCCL hold after distributed init
CONTEXT_BYTES = int(0.55 * GiB)
GRAPH_BYTES = int(0.9 * GiB)
GRAPH_SPEC_BYTES = int(0.4 * GiB)


@dataclass
class Allocation:
    """One device allocation: ``name`` (the tensor as SGLang names it) and its bytes."""

    name: str
    nbytes: int
    phase: str  # "mamba", "kv", "graph"


@dataclass
class MemoryPlan:
    """The budget SGLang computes and the allocations that follow, in bytes unless noted."""

    total_bytes: int
    context_bytes: int
    weight_bytes: int
    mem_fraction_static: float
    pre_load_free: int
    rest_bytes: int
    spec_reserve_bytes: int
    max_mamba_cache_size: int
    mamba_slot_bytes: int
    ping_pong: int
    slot_ratio: int
    kv_tokens: int
    kv_cell_bytes: int
    max_running_requests: int
    #: the Mamba cache allowed fewer requests than configured (0.5.18+ logs a warning)
    capped_by_mamba: bool
    draft_tokens: int | None
    conv_state_bytes: int
    ssm_state_bytes: int
    intermediate_ssm_bytes: int
    intermediate_conv_bytes: int
    k_bytes: int
    v_bytes: int
    graph_bytes: int
    allocations: list[Allocation] = field(default_factory=list)
    #: "ready", "oom" or "not_enough_memory"
    outcome: str = "ready"
    #: the allocation that failed (outcome "oom")
    failed: Allocation | None = None
    #: free bytes when it failed
    free_at_failure: int = 0

    def as_dict(self) -> dict:
        return asdict(self)


def _estimate_max_reqs(tokens: int, context_len: int) -> int:
    return max(min(int(tokens / context_len * 512), 4096), 2048)


def plan_memory(r: Resolved, model: HybridModel, gpu: SimGPU) -> MemoryPlan:
    """Budget and allocations for the resolved args ``r`` (see the module docstring)."""
    f = r.fields
    slot = model.mamba_bytes_per_slot
    pre = gpu.total_bytes - CONTEXT_BYTES
    after_weights = pre - model.weight_bytes
    frac = float(f["mem_fraction_static"])
    rest = after_weights - pre * (1 - frac)
    draft = f.get("speculative_num_draft_tokens") if r.spec_on else None
    mrr_cfg = f.get("max_running_requests")
    spec_reserve = 0
    if draft:
        spec_reserve = int(mrr_cfg * draft * slot)
        rest -= spec_reserve
    ratio = float(f["mamba_full_memory_ratio"])
    if f.get("max_mamba_cache_size") is not None:
        size = int(f["max_mamba_cache_size"])
    elif f["disable_radix_cache"] and mrr_cfg is not None:
        size = int(mrr_cfg)
    else:
        size = int((rest * ratio / (1 + ratio)) // slot)
    kv_bytes = rest - size * slot
    cell = model.kv_cell_bytes
    page = int(f.get("page_size") or 1)
    tokens = int(kv_bytes // cell) // page * page if kv_bytes > 0 else 0
    if f["disable_radix_cache"]:
        slot_ratio = 1
    elif r.extra_buffer:
        slot_ratio = 3 + (2 if r.overlap else 1)
    else:
        slot_ratio = 3
    ping_pong = (2 if r.overlap else 1) if r.extra_buffer else 0
    if mrr_cfg is not None and r.version == "0.5.11":
        mrr = min(int(mrr_cfg), _estimate_max_reqs(tokens, model.context_len))
    elif mrr_cfg is not None:  # 0.5.23 KVCacheConfigurator.resolve_max_num_reqs
        mrr = min(max(1, int(mrr_cfg)), tokens // 2)
    else:
        mrr = min(_estimate_max_reqs(tokens, model.context_len), tokens // 2)
    mamba_cap = max(size, 0) // slot_ratio
    capped = mamba_cap < mrr
    mrr = min(mrr, mamba_cap)
    slots = size + 1 + ping_pong * size
    conv = model.conv_bytes_per_slot * slots
    ssm = model.ssm_bytes_per_slot * slots
    inter_ssm = inter_conv = 0
    if draft:
        spec_slots = (int(mrr_cfg) + 1) * draft
        inter_ssm = model.ssm_bytes_per_slot * spec_slots
        inter_conv = model.conv_bytes_per_slot * spec_slots
    k = v = (tokens + page) * model.kv_bytes_per_token_one_side
    graph = GRAPH_BYTES + (GRAPH_SPEC_BYTES if draft else 0)
    plan = MemoryPlan(
        total_bytes=gpu.total_bytes,
        context_bytes=CONTEXT_BYTES,
        weight_bytes=model.weight_bytes,
        mem_fraction_static=frac,
        pre_load_free=pre,
        rest_bytes=int(rest),
        spec_reserve_bytes=spec_reserve,
        max_mamba_cache_size=size,
        mamba_slot_bytes=slot,
        ping_pong=ping_pong,
        slot_ratio=slot_ratio,
        kv_tokens=tokens,
        kv_cell_bytes=cell,
        max_running_requests=mrr,
        capped_by_mamba=capped,
        draft_tokens=draft,
        conv_state_bytes=conv,
        ssm_state_bytes=ssm,
        intermediate_ssm_bytes=inter_ssm,
        intermediate_conv_bytes=inter_conv,
        k_bytes=k,
        v_bytes=v,
        graph_bytes=graph,
    )
    if tokens <= 0:
        plan.outcome = "not_enough_memory"
        return plan
    if mrr <= 0 and r.version != "0.5.11":
        plan.outcome = "mamba_too_small"  # 0.5.13+ RuntimeError in resolve_max_num_reqs
        return plan
    plan.allocations = [Allocation("conv_state", conv, "mamba"), Allocation("temporal_state", ssm, "mamba")]
    if draft:
        plan.allocations += [
            Allocation("intermediate_ssm_state_cache", inter_ssm, "mamba"),
            Allocation("intermediate_conv_window_cache", inter_conv, "mamba"),
        ]
    plan.allocations += [Allocation("k_buffer", k, "kv"), Allocation("v_buffer", v, "kv"), Allocation("cuda_graph", graph, "graph")]
    free = after_weights
    for a in plan.allocations:
        if a.nbytes > free:
            plan.outcome = "oom"
            plan.failed = a
            plan.free_at_failure = free
            break
        free -= a.nbytes
    return plan
