"""TEST-ONLY plain-torch stand-ins for the ``torch.ops.sgl_kernel.*`` CPU operators that SGLang
0.5.23's AMX path calls for the hybrid Qwen3-Next (and its plain layers), registered with
``torch.library``. Never ship it.

Imported by the import-only ``sgl_kernel`` stand-in (``tests/sglang-venvs/server-stub``) when
this folder is on ``PYTHONPATH`` (the hybrid servers only; ``sitecustomize.py`` next to this
folder makes SGLang see AMX). Registering ``convert_weight_packed`` is what makes
``sglang/srt/utils/common.py:358`` (``_is_intel_amx_backend_available``) true.

The weights are random (``--load-format dummy``), so no output means anything; each operator
keeps the contract SGLang relies on: its schema (argument names: several are called with
keywords), output shapes and dtypes, and its in-place writes. Every operator appends its name to
``$MAMBACONSOLE_SGL_KERNEL_CALLS`` on its first call in a process. Weights are never packed
(``convert_weight_packed`` is the identity), so every GEMM is ``F.linear`` on ``[out, in]``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from sgl_kernel import _missing, record_call
from sgl_kernel.mamba import gated_delta_rule

_lib = torch.library.Library("sgl_kernel", "FRAGMENT")


def _op(schema: str):
    """Define ``sgl_kernel::<schema>`` and register the decorated function as its implementation
    (every backend: ``CompositeExplicitAutograd``; SGLang runs these under inference mode)."""
    name = schema.split("(", 1)[0]

    def register(fn):
        def impl(*args, **kwargs):
            record_call(f"torch.ops.sgl_kernel.{name}")
            return fn(*args, **kwargs)

        impl.__name__ = name
        _lib.define(schema)
        _lib.impl(name, impl, "CompositeExplicitAutograd")
        return fn

    return register


def _rms(x: torch.Tensor, eps: float) -> torch.Tensor:
    xf = x.float()
    return xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)


# --- start-up -----------------------------------------------------------------------------------

@_op("init_cpu_threads_env(str cpu_ids) -> str")
def init_cpu_threads_env(cpu_ids):
    """``sglang/srt/distributed/bootstrap.py:285``: binds OpenMP threads to ``cpu_ids``; the
    stand-in binds nothing and returns the ids."""
    return str(cpu_ids)


@_op("initialize(int size, int rank) -> ()")
def initialize(size, rank):
    """``sglang/srt/distributed/bootstrap.py:296``: shared-memory all-reduce set-up (TP 1 here:
    never used)."""


@_op("convert_weight_packed(Tensor weight) -> Tensor")
def convert_weight_packed(weight):
    """``sglang/srt/layers/amx_utils.py:79``: packs a weight for AMX; the identity here, so
    ``weight_packed_linear`` below reads ``[out, in]``."""
    return weight


@_op("causal_conv1d_weight_pack(Tensor weight) -> Tensor")
def causal_conv1d_weight_pack(weight):
    """``sglang/srt/layers/amx_utils.py:76``: packs a conv1d weight ``[dim, width]`` (SGLang
    copies the result back into the weight, ``amx_utils.py:171``); the identity here, so the
    ``sgl_kernel.mamba`` convs read ``[dim, width]``."""
    return weight


# --- GEMM ---------------------------------------------------------------------------------------

@_op("weight_packed_linear(Tensor mat1, Tensor mat2, Tensor? bias, bool is_vnni) -> Tensor")
def weight_packed_linear(mat1, mat2, bias, is_vnni):
    """``sglang/srt/layers/quantization/unquant.py:582`` (every linear layer),
    ``sglang/srt/layers/logits_processor.py:1187`` (LM head): ``[M, in] x [out, in] -> [M, out]``."""
    return F.linear(mat1, mat2.to(mat1.dtype), None if bias is None else bias.to(mat1.dtype))


@_op("fused_linear_sigmoid_mul(Tensor hidden_states, Tensor weight, Tensor? bias, bool is_vnni, "
     "Tensor shared_output) -> Tensor")
def fused_linear_sigmoid_mul(hidden_states, weight, bias, is_vnni, shared_output):
    """``sglang/srt/models/qwen2_moe.py:525`` (shared-expert gate):
    ``sigmoid(hidden_states W^T + b) * shared_output``, W ``[1, hidden]`` -> ``[T, hidden]``."""
    gate = F.linear(hidden_states.float(), weight.float(), None if bias is None else bias.float())
    return (torch.sigmoid(gate) * shared_output.float()).to(shared_output.dtype)


# --- norms and activation -----------------------------------------------------------------------

@_op("rmsnorm_cpu(Tensor input, Tensor weight, float eps) -> Tensor")
def rmsnorm_cpu(input, weight, eps):
    """``sglang/srt/layers/layernorm.py:894``: ``x / rms(x) * w``, same shape and dtype."""
    return (_rms(input, eps) * weight.float()).to(input.dtype)


@_op("fused_add_rmsnorm_cpu(Tensor(a!) input, Tensor(b!) residual, Tensor weight, float eps) -> ()")
def fused_add_rmsnorm_cpu(input, residual, weight, eps):
    """``sglang/srt/layers/layernorm.py:890``, in place: ``residual += input``;
    ``input = rmsnorm(residual) * w``."""
    residual.add_(input)
    input.copy_(_rms(residual, eps) * weight.float())


@_op("gemma_rmsnorm_cpu(Tensor input, Tensor weight, float eps) -> Tensor")
def gemma_rmsnorm_cpu(input, weight, eps):
    """``sglang/srt/layers/layernorm.py:1235`` (Qwen3-Next's layer norms): ``x / rms(x) * (1 + w)``."""
    return (_rms(input, eps) * (1.0 + weight.float())).to(input.dtype)


@_op("gemma_fused_add_rmsnorm_cpu(Tensor(a!) input, Tensor(b!) residual, Tensor weight, float eps) -> ()")
def gemma_fused_add_rmsnorm_cpu(input, residual, weight, eps):
    """``sglang/srt/layers/layernorm.py:1231``, in place: ``residual += input``;
    ``input = rmsnorm(residual) * (1 + w)``."""
    residual.add_(input)
    input.copy_(_rms(residual, eps) * (1.0 + weight.float()))


@_op("fused_rmsnorm_gated_cpu(Tensor input, Tensor weight, Tensor gate, float eps) -> Tensor")
def fused_rmsnorm_gated_cpu(input, weight, gate, eps):
    """``sglang/kernels/ops/attention/fla/layernorm_gated.py:525`` and ``fused_norm_gate.py:447``
    (norm before gate, swish): ``rmsnorm(x) * w * silu(gate)``."""
    return (_rms(input, eps) * weight.float() * F.silu(gate.float())).to(input.dtype)


@_op("silu_and_mul_cpu(Tensor input) -> Tensor")
def silu_and_mul_cpu(input):
    """``sglang/srt/layers/activation.py:161``: ``[..., 2d] -> silu(x[..., :d]) * x[..., d:]``."""
    d = input.shape[-1] // 2
    return (F.silu(input[..., :d].float()) * input[..., d:].float()).to(input.dtype)


# --- rotary embedding and KV cache --------------------------------------------------------------

@_op("rotary_embedding_cpu(Tensor positions, Tensor query, Tensor? key, int head_size, Tensor cos_sin_cache, "
     "bool is_neox) -> (Tensor, Tensor?)")
def rotary_embedding_cpu(positions, query, key, head_size, cos_sin_cache, is_neox):
    """``sglang/srt/layers/rotary_embedding/base.py:440``: rotates the first ``rotary_dim``
    (``cos_sin_cache`` ``[max_position, rotary_dim]``: cos half then sin half) of every head of
    ``query``/``key`` (``[T, heads*head_size]`` or ``[T, heads, head_size]``) at ``positions``
    ``[T]``; returns new tensors of the same shapes (neox: halves; else interleaved pairs)."""
    cos, sin = cos_sin_cache.index_select(0, positions.flatten().long()).float().chunk(2, dim=-1)
    rot = cos_sin_cache.shape[-1]

    def apply(x):
        if x is None:
            return None
        xs = x.reshape(x.shape[0], -1, head_size).float()
        c, s = cos[:, None, :], sin[:, None, :]
        r = xs[..., :rot]
        if is_neox:
            x1, x2 = r.chunk(2, dim=-1)
            r = torch.cat([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1)
        else:
            x1, x2 = r[..., 0::2], r[..., 1::2]
            r = torch.stack([x1 * c - x2 * s, x2 * c + x1 * s], dim=-1).flatten(-2)
        return torch.cat([r, xs[..., rot:]], dim=-1).reshape(x.shape).to(x.dtype)

    return apply(query), apply(key)


@_op("store_cache_cpu(Tensor k, Tensor v, Tensor(a!) k_cache, Tensor(b!) v_cache, Tensor indices, "
     "int row_dim) -> ()")
def store_cache_cpu(k, v, k_cache, v_cache, indices, row_dim):
    """``sglang/srt/mem_cache/memory_pool.py:199``: writes the new tokens' K/V rows
    (``row_dim`` = heads x head_dim each) into the KV pool at ``indices`` ``[T]``, in place."""
    idx = indices.long()
    k_cache.view(-1, row_dim)[idx] = k.reshape(-1, row_dim).to(k_cache.dtype)
    v_cache.view(-1, row_dim)[idx] = v.reshape(-1, row_dim).to(v_cache.dtype)


# --- mixture of experts -------------------------------------------------------------------------

@_op("topk_softmax_cpu(Tensor hidden_states, Tensor gating_output, int topk, bool renormalize, "
     "Tensor? correction_bias=None) -> (Tensor, Tensor)")
def topk_softmax_cpu(hidden_states, gating_output, topk, renormalize, correction_bias=None):
    """``sglang/srt/layers/moe/topk.py:1195`` (called with keywords): router logits ``[T, E]`` ->
    weights ``[T, topk]`` float32 (softmax, renormalised to sum 1 if asked) and expert ids
    ``[T, topk]`` int32; a ``correction_bias`` ``[E]`` moves the choice, not the weights."""
    probs = torch.softmax(gating_output.float(), dim=-1)
    choice = probs if correction_bias is None else probs + correction_bias.float()
    ids = choice.topk(topk, dim=-1).indices
    weights = probs.gather(-1, ids)
    if renormalize:
        weights = weights / weights.sum(-1, keepdim=True)
    return weights, ids.to(torch.int32)


@_op("fused_experts_cpu(Tensor hidden_states, Tensor w1, Tensor w2, Tensor topk_weights, Tensor topk_ids, "
     "bool inplace, int moe_comp_method, Tensor? w1_scale, Tensor? w2_scale, Tensor? w1_zp, Tensor? w2_zp, "
     "int[]? block_size, Tensor? w1_bias, Tensor? w2_bias, float? alpha, float? limit, bool is_vnni, "
     "str activation) -> Tensor")
def fused_experts_cpu(hidden_states, w1, w2, topk_weights, topk_ids, inplace, moe_comp_method, w1_scale, w2_scale,
                      w1_zp, w2_zp, block_size, w1_bias, w2_bias, alpha, limit, is_vnni, activation):
    """``sglang/srt/layers/quantization/unquant.py:1361`` (unquantised only,
    ``CPUQuantMethod.UNQUANT`` = 0): ``x`` ``[T, H]``, ``w1`` ``[E, 2I, H]`` (gate and up),
    ``w2`` ``[E, H, I]``; ``out[t] = sum_j w_tj * W2_e (act(gate) * up)`` for the token's
    experts ``e = topk_ids[t, j]`` -> ``[T, H]`` in ``x``'s dtype."""
    if moe_comp_method != 0 or alpha is not None or limit is not None:
        raise NotImplementedError("sgl_kernel CPU stand-in: fused_experts_cpu only unquantised, no alpha/limit")
    act = {"silu": F.silu, "gelu": F.gelu}[activation]
    x = hidden_states.float()
    out = torch.zeros_like(x)
    ids = topk_ids.long()
    for e in ids.unique().tolist():
        tok, j = (ids == e).nonzero(as_tuple=True)
        h = F.linear(x[tok], w1[e].float(), None if w1_bias is None else w1_bias[e].float())
        gate, up = h.chunk(2, dim=-1)
        y = F.linear(act(gate) * up, w2[e].float(), None if w2_bias is None else w2_bias[e].float())
        out.index_add_(0, tok, y * topk_weights[tok, j].float()[:, None])
    out = out.to(hidden_states.dtype)
    if inplace:
        hidden_states.copy_(out)
        return hidden_states
    return out


# --- gated delta net (linear attention) ---------------------------------------------------------

@_op("fused_qkvzba_split_reshape_cat_cpu(Tensor mixed_qkvz, Tensor mixed_ba, int num_heads_qk, int num_heads_v, "
     "int head_qk, int head_v) -> (Tensor, Tensor, Tensor, Tensor)")
def fused_qkvzba_split_reshape_cat_cpu(mixed_qkvz, mixed_ba, num_heads_qk, num_heads_v, head_qk, head_v):
    """``sglang/srt/models/qwen3_next.py:465``: the projections, grouped per key head
    (``[T, HK * (2K + 2 (HV/HK) V)]`` and ``[T, HK * 2 (HV/HK)]``), regrouped as
    ``mixed_qkv`` ``[T, 2 HK K + HV V]`` (all q, all k, all v), ``z`` ``[T, HV, V]``, ``b`` and
    ``a`` ``[T, HV]`` (the same split as the model's own fallback, ``qwen3_next.py:475``)."""
    T, r = mixed_qkvz.shape[0], num_heads_v // num_heads_qk
    qkvz = mixed_qkvz.view(T, num_heads_qk, 2 * head_qk + 2 * r * head_v)
    q, k, v, z = torch.split(qkvz, [head_qk, head_qk, r * head_v, r * head_v], dim=-1)
    b, a = torch.split(mixed_ba.view(T, num_heads_qk, 2 * r), [r, r], dim=-1)
    mixed_qkv = torch.cat([q.reshape(T, -1), k.reshape(T, -1), v.reshape(T, -1)], dim=-1)
    return (mixed_qkv, z.reshape(T, num_heads_v, head_v).contiguous(), b.reshape(T, num_heads_v).contiguous(),
            a.reshape(T, num_heads_v).contiguous())


def _gating(A_log, a, dt_bias, beta: float = 1.0, threshold: float = 20.0) -> torch.Tensor:
    """The GDN decay in log space: ``-exp(A_log) * softplus(a + dt_bias)`` (float32)."""
    return -A_log.float().exp() * F.softplus(a.float() + dt_bias.float(), beta=beta, threshold=threshold)


@_op("fused_gdn_gating_cpu(Tensor A_log, Tensor a, Tensor b, Tensor dt_bias) -> (Tensor, Tensor)")
def fused_gdn_gating_cpu(A_log, a, b, dt_bias):
    """``sglang/srt/layers/attention/linear/gdn_backend.py:946``: ``a``, ``b`` ``[T, HV]`` ->
    ``g`` (log decay) and ``beta = sigmoid(b)``, both ``[1, T, HV]`` float32."""
    return _gating(A_log, a, dt_bias).unsqueeze(0), torch.sigmoid(b.float()).unsqueeze(0)


@_op("fused_sigmoid_gating_delta_rule_update_cpu(Tensor A_log, Tensor dt_bias, Tensor q, Tensor k, Tensor v, "
     "Tensor a, Tensor b, Tensor(a!) initial_state_source, Tensor initial_state_indices, Tensor? cu_seqlens=None, "
     "bool use_qk_l2norm_in_kernel=False, float softplus_beta=1.0, float softplus_threshold=20.0, "
     "float? scale=None, bool is_kda=False, bool disable_state_update=False, "
     "Tensor? intermediate_states_buffer=None, Tensor? intermediate_state_indices=None, int? cache_steps=None, "
     "Tensor? retrieve_parent_token=None) -> Tensor")
def fused_sigmoid_gating_delta_rule_update_cpu(A_log, dt_bias, q, k, v, a, b, initial_state_source,
                                               initial_state_indices, cu_seqlens=None,
                                               use_qk_l2norm_in_kernel=False, softplus_beta=1.0,
                                               softplus_threshold=20.0, scale=None, is_kda=False,
                                               disable_state_update=False, intermediate_states_buffer=None,
                                               intermediate_state_indices=None, cache_steps=None,
                                               retrieve_parent_token=None):
    """``sglang/srt/layers/attention/linear/kernels/gdn_triton.py:153`` (decode, keywords):
    gating (as ``fused_gdn_gating_cpu``) then the gated delta rule for q/k ``[1, T, HK, K]``,
    v ``[1, T, HV, V]``, ``a``/``b`` ``[T, HV]``, each request's SSM state
    ``initial_state_source[initial_state_indices[i]]`` updated in place -> ``[1, T, HV, V]``.
    The speculative target-verify form (``gdn_triton.py:236``) and KDA are not stood in."""
    if is_kda or disable_state_update or intermediate_states_buffer is not None:
        raise NotImplementedError("sgl_kernel CPU stand-in: fused_sigmoid_gating_delta_rule_update_cpu decode only")
    T = q.shape[1]
    g = _gating(A_log, a.reshape(T, -1), dt_bias, softplus_beta, softplus_threshold)
    beta = torch.sigmoid(b.reshape(T, -1).float())
    if cu_seqlens is None:
        cu_seqlens = torch.arange(T + 1)
    return gated_delta_rule(q, k, v, g, beta, initial_state_source, initial_state_indices, cu_seqlens,
                            l2norm=use_qk_l2norm_in_kernel, scale=scale)


# --- looked up when a module is imported, never called for these models --------------------------

#: ``torch.ops.sgl_kernel.<name>`` read at module level on the AMX path (an AttributeError there
#: stops the import); each is a placeholder that records its call and raises NotImplementedError.
LOOKED_UP_AT_IMPORT = {
    "apply_rotary_pos_emb_cpu": "sglang/srt/layers/rotary_embedding/utils.py:144",
    "conv3d_embed_cpu": "sglang/srt/layers/conv.py:24",
    "flash_attn_varlen_func": "sglang/srt/layers/attention/vision.py:73",
    # model modules SGLang imports while building its model registry (an error there is logged
    # as "Ignore import error when loading ...", which a real AMX build does not print)
    "fused_moe_router_cpu": "sglang/srt/models/grok.py:71",
    "fused_dual_residual_rmsnorm_cpu": "sglang/srt/models/grok.py:73",
    "fused_sigmoid_mul_cpu": "sglang/srt/models/qwen3_5.py:284",
    "fused_qk_gemma_rmsnorm_cpu": "sglang/srt/models/qwen3_5.py:292",
    "fused_qk_gemma_rmsnorm_with_gate_cpu": "sglang/srt/models/qwen3_5.py:294",
    "fused_qkvzba_split_reshape_cat_contiguous_cpu": "sglang/srt/models/qwen3_5.py:297",
}
for _name in LOOKED_UP_AT_IMPORT:
    setattr(torch.ops.sgl_kernel, _name, _missing(f"torch.ops.sgl_kernel.{_name}"))
