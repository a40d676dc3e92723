"""Values SGLang's argument check lets through and its model load then refuses.

The pre-flight runs SGLang's own argument resolution (``ServerArgs``): what that accepts can
still stop the server minutes later, when the memory pools are sized after the weights loaded.
This module says, for such a value, what SGLang will do and where, read off SGLang's source of
the versions this console knows (0.5.11 and 0.5.23; for a version between them it names both).

``--max-mamba-cache-size`` (``type=int``, no bound in ``server_args.py`` of either version):

- ``<= 0``: 0.5.23 raises ``RuntimeError("Not enough GPU memory for hybrid (mamba/linear-attention)
  state cache. Computed max_mamba_cache_size=N ...")`` in ``_handle_max_mamba_cache``
  (``srt/mem_cache/kv_cache_configurator.py:3392``); 0.5.11 has no such check: it uses the value
  as the Mamba pool's size (``srt/model_executor/model_runner_kv_cache_mixin.py:94``) and caps the
  running requests at ``N // slots per request`` (same file, :713).
- a pool larger than the GPU: both versions take ``(N [+ 1]) x bytes per slot`` off the memory
  left for the KV cache (0.5.23 ``kv_cache_configurator.py:3404``, 0.5.11
  ``model_runner_kv_cache_mixin.py:125``), which goes below zero, and raise ``RuntimeError("Not
  enough memory. Please try to increase --mem-fraction-static.")``
  (``srt/model_executor/pool_configurator.py:95`` in 0.5.23, :40 in 0.5.11). Without the model's
  bytes per slot only the floor of one byte a slot is certain, so only a size above the GPU's
  whole memory in bytes is called out here (how much really fits is the memory pre-flight's
  question).

Pure: no I/O.
"""

from __future__ import annotations

from mambaconsole.sglang.load_errors import MAMBA_CACHE_NONPOSITIVE, NOT_ENOUGH_MEMORY
from mambaconsole.sglang.versions import in_range

__all__ = ["max_mamba_cache_size_at_load"]

_MIB = 1 << 20
_GIB = 1 << 30

_NONPOSITIVE_0523 = ("SGLang {v} accepts it and stops at model load, after loading the weights: "
                     + MAMBA_CACHE_NONPOSITIVE.exception + " '" + MAMBA_CACHE_NONPOSITIVE.message
                     + ". Computed max_mamba_cache_size={n}' (" + MAMBA_CACHE_NONPOSITIVE.site("0.5.23")
                     + ", _handle_max_mamba_cache)")
_NONPOSITIVE_0511 = ("SGLang {v} does not check it: it sizes the Mamba pool to {n} slots "
                     "(srt/model_executor/model_runner_kv_cache_mixin.py:94) and caps the running requests at "
                     "{n} // slots per request (:713); what the server does then is not known here")
_TOO_BIG = ("{n} Mamba slots per GPU need at least {need} even at one byte a slot, more than the GPU's {total}: "
            "SGLang takes the pool off the memory left for the KV cache and stops at model load with "
            + NOT_ENOUGH_MEMORY.exception + " '" + NOT_ENOUGH_MEMORY.message.replace("{", "{{") + ".' ({where})")


def _size(n_bytes: float) -> str:
    """GiB (2**30 bytes), or ``N.NNe+NN GiB`` past a trillion."""
    gib = n_bytes / _GIB
    return f"{gib:.3g} GiB" if gib >= 1e12 else f"{gib:,.1f} GiB"


def max_mamba_cache_size_at_load(value: str | int, version: str | None,
                                 gpu_total_mib: float | None = None, shards: int = 1) -> str | None:
    """What SGLang ``version`` will do at model load with ``--max-mamba-cache-size value``
    when that is a problem, else None. ``value``: the text as given (not an int: None);
    ``gpu_total_mib``: one GPU's whole memory in MiB (2**20 bytes, as nvidia-smi reports it),
    None when unknown; ``shards``: the attention-DP size the pool is split over (``dp_size``
    with ``--enable-dp-attention``; both versions divide the value by it)."""
    try:
        n = int(value)
    except (TypeError, ValueError):
        return None
    new, old = in_range(version, "0.5.23"), in_range(version, None, "0.5.11")
    v = version or "?"
    if n <= 0:
        if new:
            return _NONPOSITIVE_0523.format(v=v, n=n)
        if old:
            return _NONPOSITIVE_0511.format(v=v, n=n)
        return (f"SGLang {v} is between the versions known here: "
                + _NONPOSITIVE_0523.format(v="0.5.23", n=n) + "; " + _NONPOSITIVE_0511.format(v="0.5.11", n=n))
    per_gpu = n // max(1, shards)
    if gpu_total_mib and per_gpu > gpu_total_mib * _MIB:
        where = NOT_ENOUGH_MEMORY.site(version) or (
            f"{NOT_ENOUGH_MEMORY.site('0.5.23')} in 0.5.23, {NOT_ENOUGH_MEMORY.site('0.5.11')} in 0.5.11")
        return _TOO_BIG.format(n=per_gpu, need=_size(per_gpu), total=_size(gpu_total_mib * _MIB), where=where)
    return None
