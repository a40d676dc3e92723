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
