"""SGLang's memory budget of one server start, predicted before the model loads.

Pure arithmetic (no I/O): from the resolved ServerArgs fields (the real resolver's output, a
``dict`` of field -> value), the model's ``config.json`` (:class:`ModelShape`), the weights'
bytes and the GPU's total and free memory (:class:`NodeFacts`), :func:`predict` computes per
rank what SGLang will allocate and whether it fits; :func:`advise` searches the largest caps that
fit. The simulator (``mambaconsole.sim.memory``) runs the same :func:`predict`.

**Units.** Everything is bytes unless a name says ``_gib``. SGLang's "GB" is bytes / 1024³
(``get_available_gpu_memory`` divides by ``1 << 30``; ``GB = 1024 * 1024 * 1024`` in
``srt/mem_cache/memory_pool.py``), i.e. GiB; SGLang computes its budget in that float unit,
and so does this module where SGLang does (the same rounding).

**The steps**, per rank, each after SGLang's function (file:line under ``sglang/srt/``):

1. ``pre`` = free memory before the weights load (the "Load weight begin. avail mem" value);
   ``post`` = ``pre`` − this rank's weights (an even split over ``tp_size × pp_size`` is
   assumed; 0.5.23 counts draft weights too, loaded before sizing).
2. The reserve left by ``--mem-fraction-static``: ``rest = post − pre × (1 − frac)``
   (0.5.11 ``model_executor/model_runner_kv_cache_mixin.py:56 _profile_available_bytes``;
   0.5.23 ``mem_cache/kv_cache_configurator.py:2990 _profile_available_bytes``, which raises
   "Loaded weights leave no GPU memory for the KV cache" when nothing is left).
3. The Mamba pool (hybrid models): 0.5.11 ``model_runner_kv_cache_mixin.py:72
   handle_max_mamba_cache``: speculative decoding first reserves
   ``max_running_requests × draft tokens`` slots of intermediate state; then
   ``--max-mamba-cache-size``, else (radix cache off and ``--max-running-requests``) that
   count, else ``⌊rest × r / (1 + r) / slot⌋`` with r = ``--mamba-full-memory-ratio``.
   0.5.23 ``kv_cache_configurator.py:3229 _handle_max_mamba_cache``: the same three branches,
   but the intermediate reserve is ``(min(max_running_requests, size // ratio) + 1) × draft``
   slots, the ratio branch solves main and intermediate state jointly
   (``⌊(budget − slot × (1 + D)) / (slot × (1 + D / ratio))⌋``) or, without speculative
   decoding, ``⌊(budget − slot) / slot⌋``, and the padding slot is charged (``size + 1``); a
   size ≤ 0 raises "Not enough GPU memory for hybrid ... state cache".
4. KV tokens = ``(rest − Mamba) // cell`` aligned down to ``page_size`` (0.5.11
   ``model_executor/pool_configurator.py:170 DefaultPoolConfigurator.calculate_pool_sizes``;
   0.5.23 ``model_executor/pool_configurator.py:637``), ``cell`` = KV heads per rank ×
   (head_dim + v_head_dim) × full-attention layers × dtype bytes (``_compute_cell_size``);
   0.5.23 adds the EAGLE/MTP draft's layers to the cell (``DefaultPoolConfigurator.__init__``).
   Then ``min(tokens, --max-total-tokens)`` (``_apply_token_constraints``); ≤ 0 tokens is
   0.5.11's "Not enough memory. Please try to increase --mem-fraction-static"
   (``pool_configurator.py:40 MemoryPoolConfig.__post_init__``; every refusal's text and line:
   :mod:`mambaconsole.sglang.load_errors`).
5. ``max_running_requests`` (0.5.11 ``model_runner_kv_cache_mixin.py:698
   _resolve_max_num_reqs``; 0.5.23 ``kv_cache_configurator.py:3119 resolve_max_num_reqs``):
   configured (0.5.11: bounded by the token estimate ``max(min(tokens / context × 512, 4096),
   2048)``; 0.5.23: by ``tokens // 2``) or ``min(estimate, tokens // 2)``, then
   ``min(…, size // slots per request)`` (:func:`mambaconsole.sglang.capacity.slots_per_request_rule`);
   0 is 0.5.23's "state cache is too small to serve any requests".
6. Allocations in SGLang's order (``_init_pools``: the request pool with the Mamba pool, then
   the KV pool): conv and SSM state of ``size + 1`` slots (``mem_cache/memory_pool.py``
   ``MambaPool.__init__``: 0.5.11 line 225, 0.5.23 line 638), the speculative intermediate
   caches of ``(max_running_requests + 1) × draft`` slots, K and V of ``tokens + page`` rows.
7. What SGLang does not budget comes out of the reserve ``pre × (1 − frac)``: CUDA graphs,
   activations and (0.5.11) the draft model's weights and KV pool. Only a boot measures them
   ("Capture cuda graph end ... mem usage"), so the graph reserve is a range
   (:func:`graph_range`): at least :data:`GRAPH_MIN_BYTES`, at most SGLang's own pre-capture
   activation reserve (0.5.23 ``runtime_context.py:1797 pre_capture_activation_reserve_mb``:
   512 MiB + 1.5 MiB × max(chunked prefill, 2048) + tp × pp / 8 GiB, at least 10 GiB on
   GPUs over 60 GiB).

The verdict (:class:`Budget`): the first of weights, Mamba pool, KV cache that does not fit,
else ``cuda_graph`` when what is left is under the range's low end; left under its high end is
a risk, said, but ``fits`` stays true.

Not modelled (said in :attr:`Budget.notes` where they apply): data-parallel attention,
hybrid SWA and MLA pools, 0.5.23's post-capture KV resize (``SGLANG_ENABLE_POST_CAPTURE_KV_SIZING``,
off by default), LoRA and multimodal reservations.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Mapping

from mambaconsole.units import count
from mambaconsole.sglang.capacity import slots_per_request_rule
from mambaconsole.sglang.load_errors import (MAMBA_CACHE_NONPOSITIVE, NO_REQUEST_FITS, NOT_ENOUGH_MEMORY,
                                           WEIGHTS_LEAVE_NO_KV)
from mambaconsole.sglang.versions import parse_version

GIB = 1 << 30  # SGLang's "GB"
MIB = 1 << 20

#: the least a CUDA graph capture took in the logs we have (case-18: "mem usage=0.09 GB")
GRAPH_MIN_BYTES = int(0.09 * GIB)

#: free memory the CUDA context and NCCL take before the weights load when the node did not
#: measure it (``--gpu-memory-gib`` planning); the simulator uses the same figure
CONTEXT_BYTES = int(0.55 * GIB)

_DTYPE_BYTES = {
    "float32": 4, "float": 4, "fp32": 4,
    "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2, "auto": 2,
    "fp8_e4m3": 1, "fp8_e5m2": 1, "float8_e4m3fn": 1, "fp8": 1, "int8": 1,
    "fp4_e2m1": 0.5,
}

#: speculative algorithms whose draft KV layers share the target's token pool (0.5.23
#: ``spec_algorithm.is_eagle()``/``is_standalone()``; NEXTN and MTP resolve to EAGLE)
_EAGLE_LIKE = {"EAGLE", "EAGLE3", "NEXTN", "MTP", "STANDALONE"}

FAILS_AT = ("weights", "mamba_pool", "kv_cache", "cuda_graph")


class BudgetError(ValueError):
    """Input the model cannot use (a config without the fields it needs, a bad number)."""


def _dtype_bytes(name: Any, default: float = 2) -> float:
    if name in (None, ""):
        return default
    return _DTYPE_BYTES.get(str(name).lower().replace("torch.", ""), default)


@dataclass(frozen=True)
class ModelShape:
    """What SGLang's sizing reads from a model's ``config.json`` (``text_config`` for
    multimodal wrappers such as ``Qwen3_5ForConditionalGeneration``). Layer lists are layer
    indices; bytes are per element."""

    architecture: str
    model_type: str
    num_hidden_layers: int
    full_layer_ids: tuple[int, ...]
    linear_layer_ids: tuple[int, ...]
    num_key_value_heads: int
    head_dim: int
    v_head_dim: int
    context_len: int
    dtype_bytes: float = 2
    #: GDN (Qwen3-Next / Qwen3.5 linear attention) geometry; 0 on plain models
    linear_num_key_heads: int = 0
    linear_key_head_dim: int = 0
    linear_num_value_heads: int = 0
    linear_value_head_dim: int = 0
    linear_conv_kernel_dim: int = 4
    ssm_dtype_bytes: float = 4  # SGLang's default mamba_ssm_dtype float32 (configs/mamba_utils.py)
    conv_dtype_bytes: float = 2  # SGLANG_MAMBA_CONV_DTYPE default bfloat16
    num_nextn_predict_layers: int = 0
    #: for the weights estimate where no checkpoint is on the node
    hidden_size: int = 0
    intermediate_size: int = 0
    vocab_size: int = 0
    num_attention_heads: int = 0
    num_experts: int = 0
    moe_intermediate_size: int = 0
    shared_expert_intermediate_size: int = 0
    tie_word_embeddings: bool = False

    @property
    def hybrid(self) -> bool:
        """A Mamba pool is sized (SGLang's ``mambaish_config`` is set)."""
        return bool(self.linear_layer_ids)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> "ModelShape":
        """Read a ``config.json`` dict (transformers' format; SGLang 0.5.11/0.5.23 read it
        through ``srt/configs/model_config.py`` and, for GDN models, ``srt/configs/qwen3_next.py``
        / ``qwen3_5.py``). Linear layers come from ``layer_types`` (``"linear_attention"``)
        or, without it, ``full_attention_interval`` (layer i is full when ``(i + 1) %
        interval == 0``). Raises :class:`BudgetError` when a needed field is missing."""
        if not isinstance(config, Mapping):
            raise BudgetError("config.json is not a JSON object")
        archs = config.get("architectures") or ["?"]
        text = config.get("text_config")
        c: Mapping[str, Any] = {**config, **text} if isinstance(text, Mapping) else config
        try:
            n = int(c["num_hidden_layers"])
            heads = int(c.get("num_attention_heads") or 0)
            kv_heads = int(c.get("num_key_value_heads") or heads)
            hidden = int(c.get("hidden_size") or 0)
            head_dim = int(c.get("head_dim") or (hidden // heads if heads else 0))
        except (KeyError, TypeError, ValueError) as e:
            raise BudgetError(f"config.json lacks a usable {e} for the KV cache size") from None
        if not kv_heads or not head_dim:
            raise BudgetError("config.json gives no num_key_value_heads/head_dim for the KV cache size")
        types = c.get("layer_types")
        linear_heads = c.get("linear_num_value_heads")
        if isinstance(types, list) and len(types) == n and any(t == "linear_attention" for t in types):
            linear = tuple(i for i, t in enumerate(types) if t == "linear_attention")
        elif linear_heads and c.get("full_attention_interval"):
            k = int(c["full_attention_interval"])
            linear = tuple(i for i in range(n) if (i + 1) % k != 0)
        else:
            linear = ()
        full = tuple(i for i in range(n) if i not in set(linear))
        ctx = c.get("max_position_embeddings") or config.get("max_position_embeddings") or 0
        return cls(
            architecture=str(archs[0]),
            model_type=str(c.get("model_type") or config.get("model_type") or "?"),
            num_hidden_layers=n,
            full_layer_ids=full,
            linear_layer_ids=linear,
            num_key_value_heads=kv_heads,
            head_dim=head_dim,
            v_head_dim=int(c.get("v_head_dim") or head_dim),
            context_len=int(ctx),
            dtype_bytes=_dtype_bytes(c.get("torch_dtype") or c.get("dtype") or config.get("torch_dtype")),
            linear_num_key_heads=int(c.get("linear_num_key_heads") or 0),
            linear_key_head_dim=int(c.get("linear_key_head_dim") or 0),
            linear_num_value_heads=int(linear_heads or 0),
            linear_value_head_dim=int(c.get("linear_value_head_dim") or 0),
            linear_conv_kernel_dim=int(c.get("linear_conv_kernel_dim") or 4),
            ssm_dtype_bytes=_dtype_bytes(c.get("mamba_ssm_dtype"), 4),
            num_nextn_predict_layers=int(c.get("num_nextn_predict_layers") or c.get("mtp_num_hidden_layers") or 0),
            hidden_size=hidden,
            intermediate_size=int(c.get("intermediate_size") or 0),
            vocab_size=int(c.get("vocab_size") or config.get("vocab_size") or 0),
            num_attention_heads=heads,
            num_experts=int(c.get("num_experts") or 0),
            moe_intermediate_size=int(c.get("moe_intermediate_size") or 0),
            shared_expert_intermediate_size=int(c.get("shared_expert_intermediate_size") or 0),
            tie_word_embeddings=bool(config.get("tie_word_embeddings", c.get("tie_word_embeddings", False))),
        )

    # --- per-rank sizes (SGLang's shapes at attention TP size ``tp``) ---

    def kv_heads(self, tp: int) -> int:
        """``ModelConfig.get_num_kv_heads``: ``max(1, total // tp)`` (replicated below tp)."""
        return max(1, self.num_key_value_heads // max(1, tp))

    def kv_cell_bytes(self, tp: int = 1, kv_dtype_bytes: float | None = None, layers: int | None = None) -> int:
        """K + V bytes per token over the full-attention layers (SGLang's ``cell_size``)."""
        b = self.dtype_bytes if kv_dtype_bytes is None else kv_dtype_bytes
        n = len(self.full_layer_ids) if layers is None else layers
        return int(self.kv_heads(tp) * (self.head_dim + self.v_head_dim) * n * b)

    def conv_bytes_per_slot(self, tp: int = 1) -> int:
        """Conv state of one slot, all linear layers: ``Mamba2StateShape.create`` conv_dim =
        value heads × value dim + 2 × key heads × key dim, sharded over tp, × (kernel − 1)."""
        conv_dim = self.linear_num_value_heads * self.linear_value_head_dim + 2 * self.linear_num_key_heads * self.linear_key_head_dim
        return int(conv_dim // max(1, tp) * (self.linear_conv_kernel_dim - 1) * self.conv_dtype_bytes) * len(self.linear_layer_ids)

    def ssm_bytes_per_slot(self, tp: int = 1) -> int:
        """SSM (temporal) state of one slot: (value heads / tp, value dim, key dim) × ssm dtype."""
        heads = self.linear_num_value_heads // max(1, tp)
        return int(heads * self.linear_value_head_dim * self.linear_key_head_dim * self.ssm_dtype_bytes) * len(self.linear_layer_ids)

    def mamba_slot_bytes(self, tp: int = 1) -> int:
        """SGLang's ``mamba_cache_per_req`` (``Mamba2CacheParams``): conv + SSM of one slot."""
        return self.conv_bytes_per_slot(tp) + self.ssm_bytes_per_slot(tp)

    def estimated_weight_bytes(self) -> int:
        """Parameter bytes from the config alone (no checkpoint on the node): embeddings (×2
        unless tied), per layer the attention projections (full layers: q, k, v, o; linear
        layers: the GDN in/out projections) and the MLP (dense, or experts + shared expert),
        plus MTP layers; norms and biases ignored. An estimate, said so wherever shown."""
        h = self.hidden_size
        if not h:
            raise BudgetError("config.json gives no hidden_size to estimate the weights from")
        emb = self.vocab_size * h * (1 if self.tie_word_embeddings else 2)
        q = self.num_attention_heads * self.head_dim
        kv = self.num_key_value_heads * self.head_dim
        full_attn = h * (q * 2 + kv * 2) + q * h  # q (with gate in Qwen3-Next-style) approximated
        key = self.linear_num_key_heads * self.linear_key_head_dim
        val = self.linear_num_value_heads * self.linear_value_head_dim
        lin_attn = h * (2 * key + 2 * val + 2 * self.linear_num_value_heads) + val * h
        if self.num_experts:
            mlp = self.num_experts * 3 * h * self.moe_intermediate_size + 3 * h * self.shared_expert_intermediate_size + h * self.num_experts
        else:
            mlp = 3 * h * self.intermediate_size
        layers = len(self.full_layer_ids) * (full_attn + mlp) + len(self.linear_layer_ids) * (lin_attn + mlp)
        mtp = self.num_nextn_predict_layers * (full_attn + mlp + 2 * h * h)
        return int((emb + layers + mtp) * self.dtype_bytes)


@dataclass(frozen=True)
class NodeFacts:
    """What the node said (or the user gave): bytes, per GPU."""

    gpu_total_bytes: int
    #: free before the weights load; None: total − :data:`CONTEXT_BYTES`
    gpu_free_bytes: int | None
    weight_bytes: int
    #: "safetensors" (headers summed), "index" (``model.safetensors.index.json``
    #: ``metadata.total_size``) or "estimated" (from the config)
    weights_source: str = "safetensors"
    gpu_name: str | None = None
    #: the GPU is not there (``--gpu-memory-gib``)
    planned: bool = False

    @property
    def pre_load_free_bytes(self) -> int:
        return self.gpu_free_bytes if self.gpu_free_bytes is not None else self.gpu_total_bytes - CONTEXT_BYTES


@dataclass(frozen=True)
class Rules:
    """Which SGLang's sizing rules apply: ``"0.5.11"`` or ``"0.5.23"`` (see :func:`rules_for`).
    ``tracking_slots_allocated``: the ``extra_buffer`` ping-pong tracking slots get their own
    rows in the conv/SSM tensors (size × 2 with the overlap scheduler, × 1 without). Real
    SGLang 0.5.11 and 0.5.23 do not (their ``MambaPool`` holds ``size + 1`` rows and the
    tracking slots come from them); the simulated node does, as its model of the seed
    scenario's OOM (``mambaconsole.sim.memory``), and says so (``--sim-resolve`` gives
    ``"implementation": "mambaconsole.sim"``)."""

    version: str
    tracking_slots_allocated: bool = False

    @property
    def new(self) -> bool:
        return self.version != "0.5.11"


def rules_for(version: str | None, *, simulated: bool = False) -> Rules:
    """0.5.11's rules up to 0.5.19 (the ``_calculate_mamba_ratio`` mixin era), 0.5.23's from
    0.5.20 (``KVCacheConfigurator``); unknown versions get the newest."""
    v = parse_version(version)
    old = v is not None and v < (0, 5, 20)
    return Rules(version="0.5.11" if old else "0.5.23", tracking_slots_allocated=simulated)


@dataclass
class Allocation:
    """One device allocation in SGLang's order: ``name`` (the tensor), bytes, ``phase``
    (``"mamba_pool"``, ``"kv_cache"``)."""

    name: str
    nbytes: int
    phase: str


@dataclass
class Budget:
    """The prediction for one rank. Bytes unless ``_gib``; ``None`` where not applicable."""

    rules: str
    tp_size: int
    total_bytes: int
    pre_load_free: int
    weight_bytes: int  # this rank's
    weights_source: str
    mem_fraction_static: float
    #: ``pre × (1 − frac)``: left for what SGLang does not budget
    reserve_bytes: int
    #: ``post − reserve`` before the Mamba pool (SGLang's ``rest_memory``)
    rest_bytes: int
    spec_reserve_bytes: int
    max_mamba_cache_size: int | None
    mamba_slot_bytes: int
    slots_per_request: int | None
    kv_tokens: int
    kv_cell_bytes: int
    max_running_requests: int
    capped_by_mamba: bool
    draft_tokens: int | None
    conv_state_bytes: int = 0
    ssm_state_bytes: int = 0
    intermediate_ssm_bytes: int = 0
    intermediate_conv_bytes: int = 0
    tracking_slots: int = 0
    k_bytes: int = 0
    v_bytes: int = 0
    #: CUDA graphs + activations (+ 0.5.11's draft), measurable only at boot: (low, high)
    graph_range: tuple[int, int] = (0, 0)
    allocations: list[Allocation] = field(default_factory=list)
    #: None (fits) or one of :data:`FAILS_AT`
    fails_at: str | None = None
    #: what failed needed / had, bytes
    need_bytes: int = 0
    free_bytes: int = 0
    #: SGLang's error for this outcome (type: message start), None for a CUDA OOM
    error: str | None = None
    #: free after the pools (what graphs and activations get)
    left_bytes: int = 0
    risk: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return self.fails_at is None

    @property
    def mamba_bytes(self) -> int:
        return self.conv_state_bytes + self.ssm_state_bytes + self.intermediate_ssm_bytes + self.intermediate_conv_bytes

    @property
    def kv_bytes(self) -> int:
        return self.k_bytes + self.v_bytes

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["fits"] = self.fits
        return d

    def verdict(self) -> str:
        """One line: ``fits: …`` or ``out of memory allocating the Mamba pool: needs 9.6 GiB,
        8.0 free``."""
        what = {"weights": "loading the weights", "mamba_pool": "allocating the Mamba pool",
                "kv_cache": "allocating the KV cache", "cuda_graph": "capturing CUDA graphs"}
        if self.fits:
            s = (f"fits: {self.kv_tokens:,} KV tokens"
                 + (f", {self.max_mamba_cache_size} Mamba slots" if self.max_mamba_cache_size is not None else "")
                 + f", {count(self.max_running_requests, 'request')}")
            return s + (f" ({self.risk})" if self.risk else "")
        if self.error is None:
            lead = "out of memory"
        else:
            lead = self.error.split(":")[0]
            what = {**what, "kv_cache": "sizing the KV cache", "mamba_pool": "sizing the Mamba pool",
                    "weights": "sizing the pools after the weights"}
        return (f"{lead} {what[self.fails_at or '']}: needs {self.need_bytes / GIB:.1f} GiB, "
                f"{max(self.free_bytes, 0) / GIB:.1f} free")


def _field(f: Mapping[str, Any], name: str, default: Any = None) -> Any:
    v = f.get(name)
    return default if v is None else v


def strategy_of(f: Mapping[str, Any]) -> str | None:
    """The resolved Mamba strategy (``mamba_radix_cache_strategy`` 0.5.14+, else
    ``mamba_scheduler_strategy``)."""
    s = f.get("mamba_radix_cache_strategy")
    if s in (None, "auto"):
        s = f.get("mamba_scheduler_strategy", s)
    return s if isinstance(s, str) else None


def graph_range(f: Mapping[str, Any], total_bytes: int, *, spec: bool) -> tuple[int, int]:
    """(low, high) bytes for CUDA graphs and activations; (0, high) with graphs disabled.
    High: SGLang 0.5.23 ``runtime_context.py:1797 pre_capture_activation_reserve_mb``."""
    chunk = _field(f, "chunked_prefill_size", 0) or 0
    tokens = max(chunk if chunk > 0 else _field(f, "max_prefill_tokens", 2048), 2048)
    tp = int(_field(f, "tp_size", 1)); pp = int(_field(f, "pp_size", 1))
    high_mib = 512 + tokens * 1.5 + tp * pp / 8 * 1024
    if total_bytes / MIB > 60 * 1024:
        high_mib = max(high_mib, 10 * 1024)
    low = 0 if f.get("disable_cuda_graph") else GRAPH_MIN_BYTES * (2 if spec else 1)
    return low, int(high_mib * MIB)


def _estimate_reqs(tokens: int, context_len: int) -> int:
    return max(min(int(tokens / max(context_len, 1) * 512), 4096), 2048)


def predict(fields: Mapping[str, Any], model: ModelShape, facts: NodeFacts, rules: Rules) -> Budget:
    """Budget of one rank for the resolved ServerArgs ``fields`` (see the module docstring).
    Raises :class:`BudgetError` on fields it cannot use."""
    f = fields
    try:
        frac = float(f["mem_fraction_static"])
    except (KeyError, TypeError, ValueError):
        raise BudgetError("the resolved ServerArgs have no mem_fraction_static") from None
    tp = int(_field(f, "tp_size", 1)); pp = int(_field(f, "pp_size", 1))
    dp_attn = bool(f.get("enable_dp_attention"))
    notes: list[str] = []
    if dp_attn:
        notes.append("data-parallel attention is not modelled: per-rank numbers assume tp attention")
    if pp > 1:
        notes.append("pipeline stages assumed to hold equal shares of the weights and layers")
    algo = f.get("speculative_algorithm")
    spec = algo not in (None, "", "NONE")
    draft = int(f["speculative_num_draft_tokens"]) if spec and f.get("speculative_num_draft_tokens") else None
    mrr_cfg = f.get("max_running_requests")
    page = int(_field(f, "page_size", 1)) or 1
    kv_b = _dtype_bytes(f.get("kv_cache_dtype"), model.dtype_bytes) if f.get("kv_cache_dtype") not in (None, "auto") else model.dtype_bytes
    layers_rank = max(1, len(model.full_layer_ids) // pp) if pp > 1 else None
    cell = model.kv_cell_bytes(tp, kv_b, layers_rank)
    eagle_like = spec and str(algo).upper() in _EAGLE_LIKE
    if rules.new and eagle_like and model.num_nextn_predict_layers and len(model.full_layer_ids):
        cell += int(cell * model.num_nextn_predict_layers / len(model.full_layer_ids))
    slot = model.mamba_slot_bytes(tp) if model.hybrid else 0
    ratio = (slots_per_request_rule(strategy_of(f), disable_radix_cache=f.get("disable_radix_cache") is True,
                                    overlap=f.get("disable_overlap_schedule") is not True)
             if model.hybrid else None)
    if model.hybrid and ratio is None:
        ratio = 3
        notes.append(f"Mamba strategy {strategy_of(f)!r} unresolved: 3 slots per request assumed")
    if model.hybrid and strategy_of(f) == "extra_buffer" and f.get("disable_radix_cache") is not True:
        track = 2 if f.get("disable_overlap_schedule") is not True else 1
        if rules.tracking_slots_allocated:
            notes.append(f"simulator rule: extra_buffer allocates {track} tracking rows per Mamba slot on top of the "
                         "pool; real SGLang does not (its MambaPool holds size + 1 rows)")
        else:
            notes.append(f"extra_buffer: each request's {track} tracking slots come out of the Mamba slots counted "
                         "here (SGLang's MambaPool holds size + 1 rows whatever the strategy: 0.5.11 "
                         "mem_cache/memory_pool.py:260, 0.5.23 :724); they cost slots, not extra memory")

    pre_b = facts.pre_load_free_bytes
    w_rank = facts.weight_bytes // (tp * pp)
    pre = pre_b / GIB
    post = (pre_b - w_rank) / GIB
    reserve = pre * (1 - frac)
    rest = post - reserve
    b = Budget(rules=rules.version, tp_size=tp, total_bytes=facts.gpu_total_bytes, pre_load_free=pre_b,
               weight_bytes=w_rank, weights_source=facts.weights_source, mem_fraction_static=frac,
               reserve_bytes=int(reserve * GIB), rest_bytes=int(rest * GIB), spec_reserve_bytes=0,
               max_mamba_cache_size=None, mamba_slot_bytes=slot, slots_per_request=ratio, kv_tokens=0,
               kv_cell_bytes=cell, max_running_requests=0, capped_by_mamba=False, draft_tokens=draft,
               notes=notes)
    b.graph_range = graph_range(f, facts.gpu_total_bytes, spec=spec)
    if w_rank > pre_b:
        b.fails_at, b.need_bytes, b.free_bytes = "weights", w_rank, pre_b
        return b
    if rules.new and rest <= 0:
        # the weights exceed the static share pre × frac
        b.fails_at, b.need_bytes, b.free_bytes = "weights", w_rank, int(pre * frac * GIB)
        b.error = WEIGHTS_LEAVE_NO_KV.text
        return b

    size: int | None = None
    if model.hybrid:
        ratio_r = float(_field(f, "mamba_full_memory_ratio", 0.9))
        if not rules.new:
            if draft:
                if mrr_cfg is None:
                    raise BudgetError("speculative decoding without a resolved max_running_requests")
                sr = slot * int(mrr_cfg) * draft
                b.spec_reserve_bytes = sr
                rest -= sr / GIB
            if f.get("max_mamba_cache_size") is not None:
                size = int(f["max_mamba_cache_size"])
            elif f.get("disable_radix_cache") and mrr_cfg is not None:
                size = int(mrr_cfg)
            else:
                size = int((rest * ratio_r / (1 + ratio_r) * GIB) // slot)
            before = rest
            rest -= size * slot / GIB
            if rest <= 0 < before:
                # MemoryPoolConfig raises before any pool is allocated: the Mamba pool took it all
                b.max_mamba_cache_size = size
                b.fails_at, b.need_bytes, b.free_bytes = "mamba_pool", size * slot, int(before * GIB)
                b.error = NOT_ENOUGH_MEMORY.text
                return b
        else:
            if f.get("max_mamba_cache_size") is not None:
                size = int(f["max_mamba_cache_size"])
                if draft:
                    capped = min(max(1, int(mrr_cfg)), size // ratio)
                    b.spec_reserve_bytes = slot * (capped + 1) * draft
            elif f.get("disable_radix_cache") and mrr_cfg is not None:
                size = max(1, int(mrr_cfg))
                if draft:
                    b.spec_reserve_bytes = slot * (size + 1) * draft
            else:
                budget_b = rest * ratio_r / (1 + ratio_r) * GIB
                if draft:
                    size = int((budget_b - slot * (1 + draft)) // (slot * (1 + draft / ratio)))
                    capped = min(max(1, int(mrr_cfg)), size // ratio)
                    b.spec_reserve_bytes = slot * (capped + 1) * draft
                else:
                    size = int((budget_b - slot) // slot)
            rest -= b.spec_reserve_bytes / GIB
            if size <= 0:
                b.max_mamba_cache_size = size
                b.fails_at, b.need_bytes, b.free_bytes = "mamba_pool", slot * 2, int(max(rest, 0) * GIB)
                b.error = MAMBA_CACHE_NONPOSITIVE.text
                return b
            rest -= (size + 1) * slot / GIB
        b.max_mamba_cache_size = size
        if rules.new and rest <= 0:
            b.fails_at = "mamba_pool"
            b.need_bytes = (size + 1) * slot + b.spec_reserve_bytes
            b.free_bytes = int((post - reserve) * GIB)
            b.error = WEIGHTS_LEAVE_NO_KV.text
            return b

    avail = int(rest * GIB)
    tokens = (avail // cell) // page * page if avail > 0 and cell else 0
    context_len = int(f.get("context_length") or model.context_len)  # ModelConfig.context_len
    user_cap = f.get("max_total_tokens")
    if user_cap is not None and tokens > 0:
        tokens = min(tokens, int(user_cap)) // page * page
    b.kv_tokens = tokens

    if tokens > 0:
        if mrr_cfg is not None and not rules.new:
            mrr = min(int(mrr_cfg), _estimate_reqs(tokens, context_len))
        elif mrr_cfg is not None:
            mrr = min(max(1, int(mrr_cfg)), tokens // 2)
        else:
            mrr = min(_estimate_reqs(tokens, context_len), tokens // 2)
        if model.hybrid and size is not None:
            cap = size // ratio
            b.capped_by_mamba = cap < mrr
            mrr = min(mrr, cap)
        b.max_running_requests = mrr

    # SGLang raises these while sizing, before it allocates anything
    if tokens <= 0:
        b.fails_at, b.need_bytes, b.free_bytes = "kv_cache", cell * page, max(avail, 0)
        b.error = NOT_ENOUGH_MEMORY.text
        return b
    if model.hybrid and b.max_running_requests <= 0 and rules.new:
        b.fails_at, b.need_bytes, b.free_bytes = "mamba_pool", (ratio or 1) * slot, (size or 0) * slot
        b.error = NO_REQUEST_FITS.text
        return b

    # allocations, in SGLang's order
    allocs: list[Allocation] = []
    if model.hybrid and size is not None and size > 0:
        track = 0
        if rules.tracking_slots_allocated and strategy_of(f) == "extra_buffer":
            track = (2 if f.get("disable_overlap_schedule") is not True else 1) * size
        b.tracking_slots = track
        rows = size + 1 + track
        b.conv_state_bytes = model.conv_bytes_per_slot(tp) * rows
        b.ssm_state_bytes = model.ssm_bytes_per_slot(tp) * rows
        allocs += [Allocation("conv_state", b.conv_state_bytes, "mamba_pool"),
                   Allocation("temporal_state", b.ssm_state_bytes, "mamba_pool")]
        if draft:
            spec_rows = (max(b.max_running_requests, 0) + 1) * draft
            b.intermediate_ssm_bytes = model.ssm_bytes_per_slot(tp) * spec_rows
            b.intermediate_conv_bytes = model.conv_bytes_per_slot(tp) * spec_rows
            allocs += [Allocation("intermediate_ssm_state_cache", b.intermediate_ssm_bytes, "mamba_pool"),
                       Allocation("intermediate_conv_window_cache", b.intermediate_conv_bytes, "mamba_pool")]
    if tokens > 0:
        b.k_bytes = b.v_bytes = (tokens + page) * cell // 2
        allocs += [Allocation("k_buffer", b.k_bytes, "kv_cache"), Allocation("v_buffer", b.v_bytes, "kv_cache")]
    b.allocations = allocs

    free = pre_b - w_rank
    for a in allocs:
        if a.nbytes > free:
            b.fails_at, b.need_bytes, b.free_bytes = a.phase, a.nbytes, free
            return b
        free -= a.nbytes
    if model.hybrid and b.max_running_requests <= 0:
        # 0.5.11 starts, with no request it can admit
        b.fails_at, b.need_bytes, b.free_bytes = "mamba_pool", (ratio or 1) * slot, (size or 0) * slot
        b.notes.append("0.5.11 starts with max_running_requests 0: it cannot serve a request")
        return b
    b.left_bytes = free
    low, high = b.graph_range
    if not rules.new and spec:
        b.notes.append("0.5.11 loads the draft model and its KV pool after sizing: they come out of the same reserve")
    if free < low:
        b.fails_at, b.need_bytes, b.free_bytes = "cuda_graph", low, free
    elif free < high:
        b.risk = (f"{free / GIB:.1f} GiB left for CUDA graphs and activations; SGLang's own default "
                  f"reserve here is {high / GIB:.1f} GiB: capture may run out")
    return b


@dataclass(frozen=True)
class Advice:
    """A change that fits: the flags (``{"--max-mamba-cache-size": "24"}``), the requests it
    serves and the slots each reserves."""

    flags: dict[str, str]
    max_running_requests: int
    max_mamba_cache_size: int | None
    slots_per_request: int | None
    kv_tokens: int
    #: set when the change fits only by leaving the graphs less than SGLang's default reserve
    risk: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"flags": self.flags, "max_running_requests": self.max_running_requests,
                "max_mamba_cache_size": self.max_mamba_cache_size,
                "slots_per_request": self.slots_per_request, "kv_tokens": self.kv_tokens, "risk": self.risk}

    def line(self) -> str:
        flags = " ".join(f"{k} {v}" for k, v in self.flags.items())
        per = f" ({self.slots_per_request} slots each)" if self.slots_per_request else ""
        fits = "fits only if graph capture takes little" if self.risk else "fits"
        return f"{flags} {fits}, {count(self.max_running_requests, 'request')}{per}"


def _fits_clean(b: Budget) -> bool:
    return b.fits and b.max_running_requests > 0


def advise(fields: Mapping[str, Any], model: ModelShape, facts: NodeFacts, rules: Rules,
           accepted: set[str] | None = None) -> list[Advice]:
    """The largest ``--max-mamba-cache-size`` that fits (hybrid models), the largest
    ``--mamba-full-memory-ratio`` (steps of 0.05) with the size left to SGLang, and the largest
    ``--mem-fraction-static`` (steps of 0.01), each alone on top of ``fields``. Advice leaves
    the graphs SGLang's default reserve (no :attr:`Budget.risk`): a change that only fits the
    least graph capture seen can fail at capture. Where no Mamba cap leaves that reserve, the
    largest that fits the least capture is offered with its risk said (:attr:`Advice.risk`).
    Flags outside ``accepted`` (the node's parser's options, when known) are not offered."""
    out: list[Advice] = []

    def fits(b: Budget) -> bool:
        return _fits_clean(b) and b.risk is None

    def ok(flag: str) -> bool:
        return accepted is None or flag in accepted

    def adv(flags: dict[str, str], b: Budget) -> Advice:
        return Advice(flags, b.max_running_requests, b.max_mamba_cache_size, b.slots_per_request, b.kv_tokens,
                      b.risk)

    if model.hybrid and ok("--max-mamba-cache-size"):
        slot = model.mamba_slot_bytes(int(_field(fields, "tp_size", 1))) or 1
        top = min(1 << 20, facts.gpu_total_bytes // slot + 1)
        for ok_size in (fits, _fits_clean):  # without a graph risk first
            lo, hi = 0, top
            while lo < hi:  # largest size that fits
                mid = (lo + hi + 1) // 2
                if ok_size(predict({**fields, "max_mamba_cache_size": mid}, model, facts, rules)):
                    lo = mid
                else:
                    hi = mid - 1
            if lo > 0:
                b = predict({**fields, "max_mamba_cache_size": lo}, model, facts, rules)
                out.append(adv({"--max-mamba-cache-size": str(lo)}, b))
                break
    if model.hybrid and ok("--mamba-full-memory-ratio") and fields.get("max_mamba_cache_size") is None:
        for r in [round(0.95 - 0.05 * i, 2) for i in range(19)]:
            b = predict({**fields, "mamba_full_memory_ratio": r}, model, facts, rules)
            if fits(b):
                out.append(adv({"--mamba-full-memory-ratio": f"{r:g}"}, b))
                break
    if ok("--mem-fraction-static"):
        for i in range(95, 9, -1):
            fr = i / 100
            b = predict({**fields, "mem_fraction_static": fr}, model, facts, rules)
            if _fits_clean(b) and b.risk is None:
                out.append(adv({"--mem-fraction-static": f"{fr:g}"}, b))
                break
    return out


def plan_json(b: Budget, advice: list[Advice], facts: NodeFacts) -> dict[str, Any]:
    """``mambaconsole plan --json``: fits, fails_at, need_gib, free_gib, budget_gib (weights,
    kv_cache, mamba, cuda_graph as [low, high]), max_mamba_cache_size, max_running_requests,
    advice, plus the whole budget under ``detail``."""
    g = lambda n: round(n / GIB, 3)  # noqa: E731
    return {
        "fits": b.fits,
        "fails_at": b.fails_at,
        "need_gib": g(b.need_bytes) if not b.fits else None,
        "free_gib": g(b.free_bytes) if not b.fits else g(b.left_bytes),
        "budget_gib": {"weights": g(b.weight_bytes), "kv_cache": g(b.kv_bytes), "mamba": g(b.mamba_bytes),
                       "cuda_graph": [g(b.graph_range[0]), g(b.graph_range[1])]},
        "weights_source": facts.weights_source,
        "gpu_total_gib": g(facts.gpu_total_bytes),
        "gpu_planned": facts.planned,
        "max_mamba_cache_size": b.max_mamba_cache_size,
        "hybrid": b.mamba_slot_bytes > 0,
        "max_running_requests": b.max_running_requests,
        "kv_tokens": b.kv_tokens,
        "verdict": b.verdict(),
        "error": b.error,
        "risk": b.risk,
        "rules": b.rules,
        "notes": b.notes,
        "advice": [a.as_dict() for a in advice],
    }


#: the flags advice may offer -> the ServerArgs field that must exist on the node's SGLang
ADVICE_FLAGS = {"--max-mamba-cache-size": "max_mamba_cache_size",
                "--mamba-full-memory-ratio": "mamba_full_memory_ratio",
                "--mem-fraction-static": "mem_fraction_static"}


def plan_from_node(resolved: dict, facts: dict, *, gpu_memory_gib: float | None = None,
              gpu_name: str | None = None) -> dict:
    """The plan (``mambaconsole plan --json``'s object: :func:`plan_json` plus
    ``sglang_version``, ``model_path``, ``gpu_name``, ``config_path``, ``architecture``) from a
    resolve result (the resolver's JSON: ``sglang_version``, ``fields`` name -> {value, source},
    ``simulated``) and the node's facts (``mambaconsole.agent.node_facts``' JSON). The GPU's
    free memory before the load is NVML's free minus :data:`CONTEXT_BYTES` (SGLang measures it
    after creating its CUDA context). Raises :class:`BudgetError` (no config, no GPU)."""
    fields = {name: f["value"] for name, f in resolved["fields"].items()}
    config = facts.get("config")
    if not config:
        raise BudgetError(f"no config.json for --model-path {facts.get('model_path')!r} on the node"
                        + (f" ({'; '.join(facts.get('errors') or [])})" if facts.get("errors") else ""))
    try:
        shape = ModelShape.from_config(config)
    except BudgetError as exc:
        raise BudgetError(f"{facts.get('config_path')}: {exc}") from None
    if facts.get("weights_bytes"):
        weights, source = int(facts["weights_bytes"]), str(facts["weights_source"])
    else:
        weights, source = shape.estimated_weight_bytes(), "estimated"
    if gpu_memory_gib is not None:
        total, free, name, planned = int(gpu_memory_gib * GIB), None, gpu_name or f"{gpu_memory_gib:g} GiB GPU", True
    else:
        gpus = facts.get("gpus") or []
        idx = int(fields.get("base_gpu_id") or 0)
        gpu = next((g for g in gpus if g.get("index") == idx), gpus[0] if gpus else None)
        if gpu is None:
            raise BudgetError("no GPU readable on the node (NVML, nvidia-smi): plan for one with --gpu-memory-gib N")
        total, name, planned = int(gpu["total_bytes"]), gpu["name"], False
        free = max(int(gpu["free_bytes"]) - CONTEXT_BYTES, 0)
    node = NodeFacts(gpu_total_bytes=total, gpu_free_bytes=free, weight_bytes=weights, weights_source=source,
                       gpu_name=name, planned=planned)
    rules = rules_for(resolved.get("sglang_version"), simulated=bool(resolved.get("simulated")))
    b = predict(fields, shape, node, rules)
    accepted = {flag for flag, field in ADVICE_FLAGS.items() if field in fields}
    advice = [] if b.fits and b.risk is None else advise(fields, shape, node, rules, accepted)
    out = plan_json(b, advice, node)
    # the simulated node's own sizing rule applied (:class:`Rules`, extra_buffer only): the
    # verdict is the simulator's, which real SGLang's sizing need not share
    out["simulator_rule"] = rules.tracking_slots_allocated and strategy_of(fields) == "extra_buffer"
    # what the resolver said of its own work (the planned device it presented, config quirks) first
    out["notes"][:0] = [m["message"] for m in resolved.get("messages") or [] if m.get("logger") == "mambaconsole.resolver"]
    device = fields.get("device")
    if planned and device not in (None, "cuda"):
        src = resolved["fields"].get("mem_fraction_static", {}).get("source")
        out["notes"].append(f"SGLang resolved these arguments for device {device!r}, not the planned GPU"
                            + ("" if src in ("cli", "config") else
                               f": mem_fraction_static={fields.get('mem_fraction_static')} is its default there; "
                               "give --mem-fraction-static to plan with the GPU's"))
    out.update({"sglang_version": resolved.get("sglang_version"), "model_path": facts.get("model_path"),
                "config_path": facts.get("config_path"), "gpu_name": name, "architecture": shape.architecture})
    return out



def versus_log(report: Mapping[str, Any], config: Mapping[str, Any], *, version: str | None = None,
               simulated: bool = False) -> dict[str, Any]:
    """What the budget predicts for a boot a log records, side by side with what the log said.

    ``report``: ``mambaconsole inspect --json``'s object for the log (``server_args`` = the
    ServerArgs dump, ``memory_gb.weights`` and ``avail_after_load`` = the "Load weight end"
    line, ``failure.oom`` = the CUDA OOM message's numbers, ``mamba_slots``, ``concurrency``,
    ``capacity.kv_tokens``); ``config``: the model's config.json. The prediction's facts are
    the log's own (free memory before the weights = after + weights; the GPU's total from the
    OOM message, else that free memory), so a difference is the sizing rules', not the node's.
    Returns ``{"prediction": plan_json(...), "rows": [[what, predicted, logged], ...],
    "rules", "version"}``; raises :class:`BudgetError` when the log lacks the ServerArgs dump or
    the weights line."""
    fields = report.get("server_args")
    mem = report.get("memory_gb") or {}
    if not isinstance(fields, Mapping) or not fields:
        raise BudgetError("the log has no ServerArgs dump to predict from")
    if mem.get("weights") is None or mem.get("avail_after_load") is None:
        raise BudgetError("the log has no 'Load weight end' line (weights, free memory) to predict from")
    shape = ModelShape.from_config(config)
    tp = int(fields.get("tp_size") or 1) * int(fields.get("pp_size") or 1)
    pre = float(mem["avail_after_load"]) + float(mem["weights"])
    oom = ((report.get("failure") or {}).get("oom") or {})
    total = float(oom.get("capacity_gib") or pre)
    facts = NodeFacts(gpu_total_bytes=int(total * GIB), gpu_free_bytes=int(pre * GIB),
                      weight_bytes=int(float(mem["weights"]) * GIB) * tp, weights_source="log")
    v = version or report.get("sglang_version")
    rules = rules_for(v, simulated=simulated)
    b = predict(fields, shape, facts, rules)
    logged_fail = None
    if report.get("outcome") in ("oom", "crashed") and (report.get("failure") or {}).get("exception"):
        f = report["failure"]
        logged_fail = f["exception"] + (f": tried {oom['tried_gib']} GiB, {oom['free_gib']} free" if oom else "")
    cap = report.get("capacity") or {}
    conc = report.get("concurrency") or {}
    g = lambda n: round(n / GIB, 2)  # noqa: E731
    rows = [
        ["outcome", "fits" if b.fits else f"fails at {b.fails_at}", report.get("outcome")],
        ["failure", None if b.fits else (b.error or f"CUDA OOM: needs {g(b.need_bytes)} GiB, {g(b.free_bytes)} free"),
         logged_fail],
        ["max_mamba_cache_size", b.max_mamba_cache_size, report.get("mamba_slots")],
        ["KV #tokens", b.kv_tokens or None, cap.get("kv_tokens")],
        ["max_running_requests", b.max_running_requests or None, conc.get("effective")],
        ["Mamba GiB (conv + ssm + intermediate)", g(b.mamba_bytes) if b.max_mamba_cache_size is not None else None,
         mem.get("mamba_total")],
        ["KV cache GiB", g(b.kv_bytes) if b.kv_tokens else None, mem.get("kv_cache")],
        ["CUDA graphs GiB", [g(b.graph_range[0]), g(b.graph_range[1])], mem.get("cuda_graph")],
    ]
    return {"prediction": plan_json(b, [], facts), "rows": rows, "rules": rules.version, "version": v,
            "simulated_rules": simulated}


def one_line(p: Mapping[str, Any]) -> str:
    """A plan in one line: ``predicted: out of memory allocating the Mamba pool: needs 9.6 GiB,
    8.0 free; --max-mamba-cache-size 24 fits, 4 requests``."""
    s = f"predicted: {p['verdict']}"
    if p.get("weights_source") == "estimated":
        s += " (weights estimated from config.json)"
    for a in p.get("advice") or []:
        flags = " ".join(f"{k} {v}" for k, v in a["flags"].items())
        s += f"; {flags} fits, {count(a['max_running_requests'], 'request')}"
        break
    return s


def with_fields(fields: Mapping[str, Any], **changes: Any) -> dict[str, Any]:
    """A copy of ``fields`` with ``changes`` (for what-ifs)."""
    return {**fields, **changes}


__all__ = ["GIB", "ModelShape", "NodeFacts", "Rules", "Budget", "Advice", "BudgetError", "rules_for",
           "predict", "advise", "plan_json", "plan_from_node", "one_line", "versus_log", "graph_range", "strategy_of",
           "CONTEXT_BYTES", "FAILS_AT", "ADVICE_FLAGS"]
