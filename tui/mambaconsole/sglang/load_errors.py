"""The errors SGLang raises while sizing its memory pools at model load, after the weights loaded.

One table for every module that predicts or explains them (the budget model, the editor's
value checks, the OOM advice): each error's exception type, the fixed head of its message as
SGLang writes it, and per version the file and line of the check that raises it (the ``if``
line; the ``raise`` follows within a few lines), read off SGLang 0.5.11 and 0.5.23's
installed sources (``tests/test_load_errors.py`` reads every line back).

Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from mambaconsole.sglang.versions import in_range, parse_version

__all__ = ["LoadError", "NOT_ENOUGH_MEMORY", "MAMBA_CACHE_NONPOSITIVE", "WEIGHTS_LEAVE_NO_KV",
           "NO_REQUEST_FITS", "LOAD_ERRORS"]


@dataclass(frozen=True)
class LoadError:
    """One refusal. ``sites``: ``{version: (path under sglang/, line of the check, function)}``
    for the versions read here, ``None`` for a version read and found not to raise it."""

    exception: str
    message: str
    sites: dict[str, tuple[str, int, str] | None]

    @property
    def text(self) -> str:
        """``"RuntimeError: Not enough memory. ..."``: the head of what the traceback shows."""
        return f"{self.exception}: {self.message}"

    def site(self, version: str | None) -> str | None:
        """``"srt/x.py:95"`` where ``version`` raises it: a version at or past the newest known
        one is taken as the newest, at or before the oldest as the oldest; None for a version
        between them (not read here), an unknown version, or one that does not raise it."""
        known = sorted(self.sites, key=parse_version)
        if version is None or parse_version(version) is None:
            return None
        if in_range(version, known[-1]):
            pick = known[-1]
        elif in_range(version, None, known[0]):
            pick = known[0]
        else:
            pick = version if version in self.sites else None
        where = self.sites.get(pick) if pick else None
        return f"{where[0]}:{where[1]}" if where else None


#: the KV pool gets no token: 0.5.11 and 0.5.23 ``MemoryPoolConfig.__post_init__``
NOT_ENOUGH_MEMORY = LoadError(
    "RuntimeError", "Not enough memory. Please try to increase --mem-fraction-static",
    {"0.5.11": ("srt/model_executor/pool_configurator.py", 40, "MemoryPoolConfig.__post_init__"),
     "0.5.23": ("srt/model_executor/pool_configurator.py", 95, "MemoryPoolConfig.__post_init__")})

#: the computed Mamba pool has no slot (0.5.23 only; 0.5.11 uses whatever size it computed)
MAMBA_CACHE_NONPOSITIVE = LoadError(
    "RuntimeError", "Not enough GPU memory for hybrid (mamba/linear-attention) state cache",
    {"0.5.11": None, "0.5.23": ("srt/mem_cache/kv_cache_configurator.py", 3392,
                                "KVCacheConfigurator._handle_max_mamba_cache")})

#: the weights (target and draft) use up the static share, or the Mamba pool takes the rest
WEIGHTS_LEAVE_NO_KV = LoadError(
    "ValueError", "Loaded weights leave no GPU memory for the KV cache",
    {"0.5.11": None, "0.5.23": ("srt/mem_cache/kv_cache_configurator.py", 3043,
                                "KVCacheConfigurator._profile_available_bytes")})

#: the Mamba pool cannot hold one request's slots (0.5.23 ``resolve_max_num_reqs``)
NO_REQUEST_FITS = LoadError(
    "RuntimeError", "Hybrid (mamba/linear-attention) state cache is too small to serve any requests",
    {"0.5.11": None, "0.5.23": ("srt/mem_cache/kv_cache_configurator.py", 3152,
                                "KVCacheConfigurator.resolve_max_num_reqs")})

LOAD_ERRORS = (NOT_ENOUGH_MEMORY, MAMBA_CACHE_NONPOSITIVE, WEIGHTS_LEAVE_NO_KV, NO_REQUEST_FITS)
