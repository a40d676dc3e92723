"""Where an out-of-memory traceback was allocating, and the flags that size that allocation.

PyTorch's message says how much was asked ("Tried to allocate 9.56 GiB"), not what for. The
traceback's deepest SGLang frame whose source line assigns a tensor names it: ``NAME =
torch.zeros(`` (or ``torch.empty``/``full``/...), e.g. ``intermediate_ssm_state_cache`` in
``MambaPool.__init__`` (``srt/mem_cache/memory_pool.py``). :data:`SITES` maps such names, in
SGLang's files, to what they are and the flags that size them, read off SGLang's source:

- ``srt/mem_cache/memory_pool.py`` ``MambaPool.__init__`` (0.5.11 :258-310, 0.5.23 likewise):
  ``conv_state`` / ``temporal_state`` have ``max_mamba_cache_size + 1`` slots (the flag, or
  ``--mamba-full-memory-ratio`` of what ``--mem-fraction-static`` leaves,
  ``model_runner_kv_cache_mixin.py:94-127`` in 0.5.11), in ``--mamba-ssm-dtype``;
  ``intermediate_ssm_state_cache`` / ``intermediate_conv_window_cache`` (speculative decoding)
  have ``spec_state_size + 1`` = max running requests + 1 slots (``mamba_spec_state_size=max_num_reqs``,
  0.5.11 ``model_runner_kv_cache_mixin.py:253``; the requests are capped by
  ``--max-running-requests`` and by ``--max-mamba-cache-size // slots per request``, which
  ``--mamba-scheduler-strategy extra_buffer`` raises) × ``--speculative-num-draft-tokens``.
- the KV cache pools (``k_buffer`` / ``v_buffer`` / ``kv_buffer`` in ``memory_pool.py``): sized
  by ``--mem-fraction-static`` or ``--max-total-tokens``, in ``--kv-cache-dtype``.

Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["OomSite", "oom_site", "SITES"]


@dataclass(frozen=True)
class OomSite:
    """``name``: the variable being allocated; ``what``: what it is, in words (``short``: in two
    or three, for a header); ``flags``: the
    SGLang flags that size it, most direct first; ``function`` / ``file`` / ``line``: the SGLang
    frame (``file`` from ``sglang/`` on)."""

    name: str
    what: str
    short: str
    flags: tuple[str, ...]
    function: str | None
    file: str
    line: int | None

    @property
    def where(self) -> str:
        return f"{self.function or '?'} ({self.file}:{self.line})" if self.line else f"{self.function or '?'} ({self.file})"


_MAMBA_SPEC = ("--max-running-requests", "--speculative-num-draft-tokens", "--max-mamba-cache-size",
               "--mamba-scheduler-strategy", "--mamba-ssm-dtype")
_MAMBA = ("--max-mamba-cache-size", "--mamba-full-memory-ratio", "--mem-fraction-static", "--mamba-ssm-dtype")
_KV = ("--mem-fraction-static", "--max-total-tokens", "--kv-cache-dtype")

#: (SGLang file suffix, variable-name pattern, what it is, in short, the flags that size it)
SITES: tuple[tuple[str, str, str, str, tuple[str, ...]], ...] = (
    ("srt/mem_cache/memory_pool.py", r"intermediate_(ssm_state|conv_window)_cache",
     "the Mamba pool's speculative state (one per running request and draft token)", "Mamba pool, speculative",
     _MAMBA_SPEC),
    ("srt/mem_cache/memory_pool.py", r"conv_state|temporal_state|ssm_state",
     "the Mamba pool (one state per slot)", "Mamba pool", _MAMBA),
    ("srt/mem_cache/memory_pool.py", r"[kv]_buffer|kv_buffer",
     "the KV cache pool", "KV cache", _KV),
)

#: ``NAME = torch.zeros(`` / ``self.NAME = torch.empty(`` / ``NAME = [torch.zeros(`` ...
_ASSIGN = re.compile(r"^(?:self\.)?([A-Za-z_]\w*)\s*(?::[^=]+)?=\s*\[?\s*torch\.(?:zeros|empty|full|ones|randn)\w*\(")


def _sglang_path(file: str) -> str | None:
    i = file.rfind("sglang/srt/")
    return file[i + len("sglang/"):] if i >= 0 else None


def oom_site(frames) -> OomSite | None:
    """The allocation an OOM traceback's ``frames`` (:class:`~mambaconsole.sglang.events.Frame`,
    outermost first, with their ``code`` lines) was making, when its deepest SGLang frame that
    assigns a torch tensor is one of :data:`SITES`; None otherwise (nothing is guessed)."""
    for f in reversed(tuple(frames)):
        path = _sglang_path(f.file or "")
        if path is None or not f.code:
            continue
        m = _ASSIGN.match(f.code)
        if m is None:
            continue
        name = m.group(1)
        for suffix, pattern, what, short, flags in SITES:
            if path.endswith(suffix) and re.fullmatch(pattern, name):
                return OomSite(name, what, short, flags, f.function, path, f.line)
        return None
    return None
