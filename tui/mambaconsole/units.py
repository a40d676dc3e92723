"""Units shown to people, one formatter each (stdlib only: the node layer uses them too).

Memory is shown in GiB (2**30 bytes) on every screen and in every command's text. SGLang's log
prints its memory lines in "GB" but divides by 1024³ (SGLang 0.5.23: ``GB = 1024 * 1024 *
1024`` in ``srt/mem_cache/memory_pool.py``; ``get_available_gpu_memory`` in ``srt/utils/common.py``
divides by ``1 << 30``), so its numbers are GiB and are shown unchanged, labelled GiB; an
output that shows them says so once with :data:`SGLANG_GB`. PyTorch's OOM message prints GiB.
"""

from __future__ import annotations

#: said once wherever SGLang's "GB" numbers are shown as GiB (the log's own words say "GB")
SGLANG_GB = 'SGLang logs "GB" = bytes/1024³'


def fmt_duration(s: float | None) -> str:
    """A duration in seconds as the console writes every duration: ``32 s``, ``1 min 21 s``,
    ``2 h 03 min`` (``-`` when unknown; negative counts as 0)."""
    if s is None:
        return "-"
    s = max(0, int(s))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {(s % 3600) // 60:02d} min"


def fmt_bytes(n: int | float | None) -> str:
    """Bytes in binary units, one decimal from KiB on: ``512 B``, ``3.2 KiB``, ``41.0 MiB``,
    ``2.9 GiB`` (2**10, 2**20, 2**30 bytes); ``-`` for None."""
    if n is None:
        return "-"
    n = float(n)
    if abs(n) < 1024:
        return f"{n:.0f} B"
    for unit in ("KiB", "MiB", "GiB"):
        n /= 1024
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}"
    return f"{n:.1f} GiB"  # pragma: no cover


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 request``, ``2 requests``, ``0 runs``; ``plural`` for a noun that is not noun + "s"."""
    return f"{n:,} {noun if n == 1 else (plural or noun + 's')}"
