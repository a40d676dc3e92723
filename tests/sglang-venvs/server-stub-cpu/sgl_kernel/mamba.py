"""TEST-ONLY plain-torch stand-ins for ``sgl_kernel.mamba`` (the CPU build's linear-attention
entry points), for the real hybrid Qwen3-Next servers the tests launch. Never ship it.

Reached as a submodule of the import-only ``sgl_kernel`` stand-in
(``tests/sglang-venvs/server-stub/sgl_kernel``), whose ``__path__`` spans every ``sgl_kernel``
folder on ``PYTHONPATH`` (``pkgutil.extend_path``): this folder is on the hybrid servers'
``PYTHONPATH`` only. SGLang 0.5.23 imports these on any CPU (no AMX check):
``sglang/srt/layers/attention/linear/gdn_backend.py:184`` (``causal_conv1d_fn_cpu``,
``causal_conv1d_update_cpu``) and ``.../linear/kernels/gdn_triton.py:28``
(``chunk_gated_delta_rule_cpu``).

The weights are random (``--load-format dummy``), so the numbers mean nothing; what must be
right is what SGLang's scheduler and Mamba pool rely on: shapes, dtypes, output memory layout,
and the in-place writes of each request's conv and SSM state into its pool slot. Shapes (GDN
layer, TP 1; T = tokens in the batch, N = requests):

- conv state pool ``[slots, dim, width-1]`` (a strided view, ``amx_utils.py:110``), conv weight
  ``[dim, width]``;
- SSM state pool ``[slots, HV, V, K]`` (``sglang/srt/configs/mamba_utils.py:230``: heads,
  value head dim, key head dim);
- q, k ``[1, T, HK, K]``, v ``[1, T, HV, V]``, gates g (log decay) and beta ``[1, T, HV]``;
  output ``[1, T, HV, V]``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from sgl_kernel import record_call


def _silu_if(activation) -> bool:
    """SGLang passes the layer's activation: a name ("silu"/"swish") or a bool."""
    if activation in (None, False):
        return False
    if activation is True or activation in ("silu", "swish"):
        return True
    raise NotImplementedError(f"sgl_kernel CPU stand-in: conv activation {activation!r}")


def _conv(full: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, silu: bool) -> torch.Tensor:
    """Depthwise causal conv over ``full`` ``[dim, width-1+L]`` -> ``[dim, L]`` (float32)."""
    dim, width = weight.shape
    out = F.conv1d(full.unsqueeze(0), weight.float().unsqueeze(1),
                   None if bias is None else bias.float(), groups=dim).squeeze(0)
    return F.silu(out) if silu else out


def causal_conv1d_fn_cpu(x, weight, bias=None, *, activation="silu", conv_states=None, has_initial_state=None,
                         cache_indices=None, query_start_loc=None, seq_lens_cpu=None, pad_slot_id=-1):
    """Prefill conv: ``x`` ``[dim, T]`` (the batch's tokens, requests back to back as
    ``query_start_loc`` ``[N+1]`` says) -> ``[dim, T]`` laid out like ``x``. Each request starts
    from its pool slot's state when ``has_initial_state`` (else zeros) and leaves its last
    ``width-1`` inputs in ``conv_states[cache_indices[i]]``.

    Called at ``sglang/srt/layers/attention/linear/gdn_backend.py:929`` (``_convolve_prefill``)."""
    record_call("sgl_kernel.mamba.causal_conv1d_fn_cpu")
    dim, width = weight.shape
    out = torch.empty_like(x)
    starts = query_start_loc.tolist() if query_start_loc is not None else [0, x.shape[-1]]
    slots = cache_indices.tolist() if cache_indices is not None else [None] * (len(starts) - 1)
    has_init = has_initial_state.tolist() if has_initial_state is not None else [False] * len(slots)
    silu = _silu_if(activation)
    for i, slot in enumerate(slots):
        s, e = starts[i], starts[i + 1]
        if slot is None or slot == pad_slot_id or conv_states is None:
            init = x.new_zeros(dim, width - 1, dtype=torch.float32)
        else:
            init = conv_states[slot].float() if has_init[i] else x.new_zeros(dim, width - 1, dtype=torch.float32)
        full = torch.cat([init, x[:, s:e].float()], dim=-1)
        out[:, s:e] = _conv(full, weight, bias, silu).to(out.dtype)
        if conv_states is not None and slot is not None and slot != pad_slot_id:
            conv_states[slot].copy_(full[:, -(width - 1):])
    return out


def causal_conv1d_update_cpu(x, conv_state, weight, bias=None, activation=None, *, conv_state_indices=None,
                             pad_slot_id=-1, **spec_only):
    """Decode conv: ``x`` ``[B, dim]`` (one token per request) or ``[B, dim, L]`` -> same shape
    and layout; ``conv_state[conv_state_indices[b]]`` ``[dim, width-1]`` is read and shifted in
    place. The speculative-verify keywords (``intermediate_conv_window`` ...) are not stood in.

    Called at ``sglang/srt/layers/attention/linear/gdn_backend.py:855`` (decode) and ``:1047``
    (target verify)."""
    record_call("sgl_kernel.mamba.causal_conv1d_update_cpu")
    if any(v is not None for v in spec_only.values()):
        raise NotImplementedError(f"sgl_kernel CPU stand-in: causal_conv1d_update_cpu {sorted(spec_only)}")
    dim, width = weight.shape
    squeeze = x.dim() == 2
    xs = x.unsqueeze(-1) if squeeze else x
    out = torch.empty_like(xs)
    slots = conv_state_indices.tolist() if conv_state_indices is not None else list(range(xs.shape[0]))
    silu = _silu_if(activation)
    for b, slot in enumerate(slots):
        if slot == pad_slot_id:
            out[b] = 0
            continue
        full = torch.cat([conv_state[slot].float(), xs[b].float()], dim=-1)
        out[b] = _conv(full, weight, bias, silu).to(out.dtype)
        conv_state[slot].copy_(full[:, -(width - 1):])
    return out.squeeze(-1) if squeeze else out


def gated_delta_rule(q, k, v, g, beta, states, state_indices, cu_seqlens, *, l2norm: bool, scale: float | None,
                     update: bool = True) -> torch.Tensor:
    """The gated delta rule, token by token (float32), per request and value head h:
    ``S <- S * exp(g_t)``; ``S <- S + beta_t * (v_t - S k_t) k_t^T``; ``o_t = scale * S q_t``,
    with ``S`` ``[V, K]`` read from and (``update``) written back to
    ``states[state_indices[i]]``. q/k heads are shared by ``HV // HK`` value heads. Returns
    ``[1, T, HV, V]`` in ``q``'s dtype."""
    _, T, HK, K = q.shape
    HV, V = v.shape[2], v.shape[3]
    scale = K ** -0.5 if scale is None else scale
    qf, kf = q[0].float(), k[0].float()
    if l2norm:
        qf = qf * torch.rsqrt((qf * qf).sum(-1, keepdim=True) + 1e-6)
        kf = kf * torch.rsqrt((kf * kf).sum(-1, keepdim=True) + 1e-6)
    qf = qf.repeat_interleave(HV // HK, dim=1)  # [T, HV, K]
    kf = kf.repeat_interleave(HV // HK, dim=1)
    vf, gf, bf = v[0].float(), g.reshape(T, HV).float(), beta.reshape(T, HV).float()
    out = torch.empty(T, HV, V, dtype=torch.float32, device=q.device)
    starts = cu_seqlens.tolist()
    for i in range(len(starts) - 1):
        slot = int(state_indices[i])
        S = states[slot].float().clone() if slot >= 0 else q.new_zeros(HV, V, K, dtype=torch.float32)
        for t in range(starts[i], starts[i + 1]):
            S = S * gf[t].exp()[:, None, None]
            pred = torch.einsum("hvk,hk->hv", S, kf[t])
            S = S + torch.einsum("hv,hk->hvk", (vf[t] - pred) * bf[t][:, None], kf[t])
            out[t] = torch.einsum("hvk,hk->hv", S, qf[t]) * scale
        if update and slot >= 0:
            states[slot].copy_(S)
    return out.unsqueeze(0).to(q.dtype)


def chunk_gated_delta_rule_cpu(q, k, v, g, beta, initial_state, cu_seqlens, *, head_first=False,
                               use_qk_l2norm_in_kernel=False, initial_state_indices=None, scale=None):
    """Prefill (extend) of the gated delta rule: shapes as the module says; the requests' SSM
    states are read from and written back to ``initial_state`` (the pool) at
    ``initial_state_indices``. Returns ``(o [1, T, HV, V], None, None)``: SGLang unpacks three
    values and uses the last two only with a Mamba track mask (``extra_buffer``) or on NPU.

    Called at ``sglang/srt/layers/attention/linear/kernels/gdn_triton.py:203``."""
    record_call("sgl_kernel.mamba.chunk_gated_delta_rule_cpu")
    if head_first:
        raise NotImplementedError("sgl_kernel CPU stand-in: chunk_gated_delta_rule_cpu head_first")
    o = gated_delta_rule(q, k, v, g, beta, initial_state, initial_state_indices, cu_seqlens,
                         l2norm=use_qk_l2norm_in_kernel, scale=scale)
    return o, None, None
