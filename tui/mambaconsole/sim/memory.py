"""The simulated GPU memory of one server start: SGLang's budget, then the allocations.

The budget is :func:`mambaconsole.sglang.budget.predict`, the same model ``mambaconsole plan``
and the editor's pre-flight use, on the simulated node's facts: the CUDA context takes
:data:`~mambaconsole.sglang.budget.CONTEXT_BYTES` before the weights load, the weights are the
model's :attr:`~mambaconsole.sim.model.HybridModel.weight_bytes`, and the rules are the
simulated version's with one difference the simulator adds on purpose
(:attr:`~mambaconsole.sglang.budget.Rules.tracking_slots_allocated`): with ``extra_buffer``
the radix cache's ping-pong track slots get their own rows in the conv/SSM tensors
(``2 × max_mamba_cache_size`` with the overlap scheduler, 1 × without) that the ratio budget
does not count. That is the simulator's model of why ``extra_buffer`` "roughly doubles" the
Mamba cache and runs out of memory in the seed scenario; real SGLang 0.5.11/0.5.23 allocate
``max_mamba_cache_size + 1`` rows.

Allocations (in SGLang's order; each fails with a CUDA OOM when it is larger than the memory
still free): conv and SSM state, the speculative intermediate caches, K and V, then the CUDA
graphs, which the simulator takes as :data:`GRAPH_BYTES` (+ :data:`GRAPH_SPEC_BYTES` with
speculative decoding) where a real boot measures them.

Outcomes: ``oom`` (which allocation and its size), ``not_enough_memory`` (no KV tokens, or
another sizing error of the budget: :attr:`MemoryPlan.error`), ``mamba_too_small`` (0.5.23:
the Mamba cache fits no request), or ``ready``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from mambaconsole.sglang import budget as B
from mambaconsole.sim.model import GiB, HybridModel, SimGPU
from mambaconsole.sim.resolve import Resolved

#: bytes the CUDA context and NCCL hold after distributed init
CONTEXT_BYTES = B.CONTEXT_BYTES
GRAPH_BYTES = int(0.9 * GiB)
GRAPH_SPEC_BYTES = int(0.4 * GiB)

_PHASE = {"mamba_pool": "mamba", "kv_cache": "kv"}


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
    #: tracking rows per Mamba slot the simulator allocates (2 overlap, 1 without, 0)
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
    #: "ready", "oom", "not_enough_memory" or "mamba_too_small"
    outcome: str = "ready"
    #: the allocation that failed (outcome "oom")
    failed: Allocation | None = None
    #: free bytes when it failed
    free_at_failure: int = 0
    #: SGLang's error for a sizing failure ("RuntimeError: ...", "ValueError: ...")
    error: str | None = None

    def as_dict(self) -> dict:
        return asdict(self)


def sim_facts(model: HybridModel, gpu: SimGPU) -> B.NodeFacts:
    """The simulated node's facts: the context takes :data:`CONTEXT_BYTES` before loading."""
    return B.NodeFacts(gpu_total_bytes=gpu.total_bytes, gpu_free_bytes=gpu.total_bytes - CONTEXT_BYTES,
                       weight_bytes=model.weight_bytes, weights_source="safetensors", gpu_name=gpu.name)


def shape_of(model: HybridModel) -> B.ModelShape:
    return B.ModelShape.from_config(model.config_json())


def plan_memory(r: Resolved, model: HybridModel, gpu: SimGPU) -> MemoryPlan:
    """Budget (:func:`mambaconsole.sglang.budget.predict`) and allocations for ``r``."""
    b = B.predict(r.fields, shape_of(model), sim_facts(model, gpu), B.rules_for(r.version, simulated=True))
    size = b.max_mamba_cache_size or 0
    graph = GRAPH_BYTES + (GRAPH_SPEC_BYTES if b.draft_tokens else 0)
    plan = MemoryPlan(
        total_bytes=gpu.total_bytes, context_bytes=CONTEXT_BYTES, weight_bytes=b.weight_bytes,
        mem_fraction_static=b.mem_fraction_static, pre_load_free=b.pre_load_free, rest_bytes=b.rest_bytes,
        spec_reserve_bytes=b.spec_reserve_bytes, max_mamba_cache_size=size, mamba_slot_bytes=b.mamba_slot_bytes,
        ping_pong=b.tracking_slots // size if size > 0 else 0, slot_ratio=b.slots_per_request or 1,
        kv_tokens=b.kv_tokens, kv_cell_bytes=b.kv_cell_bytes, max_running_requests=b.max_running_requests,
        capped_by_mamba=b.capped_by_mamba, draft_tokens=b.draft_tokens, conv_state_bytes=b.conv_state_bytes,
        ssm_state_bytes=b.ssm_state_bytes, intermediate_ssm_bytes=b.intermediate_ssm_bytes,
        intermediate_conv_bytes=b.intermediate_conv_bytes, k_bytes=b.k_bytes, v_bytes=b.v_bytes, graph_bytes=graph,
        error=b.error,
    )
    if b.error is not None:
        plan.outcome = "mamba_too_small" if "too small to serve" in b.error else "not_enough_memory"
        return plan
    plan.allocations = [Allocation(a.name, a.nbytes, _PHASE[a.phase]) for a in b.allocations]
    plan.allocations.append(Allocation("cuda_graph", graph, "graph"))
    free = b.pre_load_free - b.weight_bytes
    for a in plan.allocations:
        if a.nbytes > free:
            plan.outcome = "oom"
            plan.failed = a
            plan.free_at_failure = free
            break
        free -= a.nbytes
    return plan
