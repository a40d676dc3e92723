"""Units shown to people, one formatter each (stdlib only: the node layer uses them too)."""

from __future__ import annotations


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
