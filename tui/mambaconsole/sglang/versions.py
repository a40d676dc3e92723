"""SGLang version strings and the version ranges that knowledge in this package is tagged with.

Versions inspected for ``shared/reference/sglang-observables.md``: 0.5.5, 0.5.9, 0.5.10(.post1),
0.5.11–0.5.15, 0.5.18, 0.5.20, 0.5.23. A change "from X" means first seen in that set.
"""

from __future__ import annotations

import re

__all__ = ["Version", "parse_version", "in_range"]

Version = tuple[int, int, int]

_VERSION_RE = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


def parse_version(text: str | None) -> Version | None:
    """``"0.5.13.post1"`` → ``(0, 5, 13)``; ``"v0.5.19"`` → ``(0, 5, 19)``; None when no
    ``X.Y.Z`` is found (``"main"``, ``"latest"``, None). Post/dev suffixes are dropped:
    formats never changed in a post release of the inspected set."""
    if not text:
        return None
    m = _VERSION_RE.search(str(text))
    if not m:
        return None
    return (int(m.group(1)), int(m.group(2)), int(m.group(3)))


def in_range(version: Version | str | None, first: str | None = None, last: str | None = None) -> bool | None:
    """Whether ``version`` lies in ``[first, last]`` (either bound optional); None when the
    version is unknown."""
    v = parse_version(version) if isinstance(version, str) or version is None else version
    if v is None:
        return None
    if first is not None and v < parse_version(first):  # type: ignore[operator]
        return False
    if last is not None and v > parse_version(last):  # type: ignore[operator]
        return False
    return True
