"""The difference between two SGLang argv lists, flag by flag, for the editor and history."""

from __future__ import annotations


def flags(argv) -> dict[str, str | None]:
    """``--flag value`` / ``--flag=value`` / bare ``--switch`` -> {flag: value or None}.
    Positional words before the first flag are ignored (the program and module)."""
    out: dict[str, str | None] = {}
    i = 0
    argv = list(argv)
    while i < len(argv):
        a = argv[i]
        if a.startswith("--"):
            if "=" in a:
                k, v = a.split("=", 1)
                out[k] = v
            elif i + 1 < len(argv) and not argv[i + 1].startswith("--"):
                out[a] = argv[i + 1]
                i += 1
            else:
                out[a] = None
        i += 1
    return out


def diff(old, new) -> list[tuple[str, str, str | None, str | None]]:
    """``[(kind, flag, old, new)]`` with kind ``+`` added, ``-`` removed, ``~`` changed."""
    a, b = flags(old), flags(new)
    out = []
    for k in b:
        if k not in a:
            out.append(("+", k, None, b[k]))
        elif a[k] != b[k]:
            out.append(("~", k, a[k], b[k]))
    for k in a:
        if k not in b:
            out.append(("-", k, a[k], None))
    return out


def diff_text(old, new) -> str:
    """One line: ``+--flag v  ~--flag a→b  ---flag`` (``unchanged`` when equal)."""
    parts = []
    for kind, k, o, n in diff(old, new):
        if kind == "+":
            parts.append(f"+{k}" + (f" {n}" if n is not None else ""))
        elif kind == "-":
            parts.append(f"-{k}")
        else:
            parts.append(f"~{k} {o}→{n}")
    return "  ".join(parts) or "unchanged"


def split_launch(argv: list[str]) -> tuple[list[str], list[str]]:
    """``(prefix, sglang_args)``: ``python -m sglang.launch_server`` (or ``sglang serve``) and
    the flags after it. An argv that starts with a flag is all SGLang args."""
    if not argv or argv[0].startswith("--"):
        return [], list(argv)
    for i, a in enumerate(argv):
        if a.startswith("--"):
            return list(argv[:i]), list(argv[i:])
    return list(argv), []
