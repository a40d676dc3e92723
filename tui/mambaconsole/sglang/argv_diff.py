"""The difference between two SGLang argv lists, option by option, for the console's editor
and history and for ``mambaconsole report``. Both sides are read with
:class:`mambaconsole.sglang.argv.LaunchCommand` (the one flag splitter): options are matched by
the ServerArgs field they set, so ``--tp 2`` → ``--tp-size 4`` is one change, not an addition
and a removal. Pure code (no I/O)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from mambaconsole.sglang.argv import LaunchCommand, ParserSpec

#: ``(kind, flag, old, new)``: kind ``+`` added, ``-`` removed, ``~`` changed; ``flag`` as
#: written (the new side's for ``+``/``~``); ``old``/``new`` the values (None for a bare flag),
#: ``program`` as flag when the launcher itself changed.
Change = tuple[str, str, "str | None", "str | None"]


def command(argv: Sequence[str], spec: ParserSpec | None = None) -> LaunchCommand:
    """``argv`` (a whole launch command or the SGLang args alone) as a LaunchCommand; an empty
    argv is a command without args."""
    return LaunchCommand.parse(argv, spec) if argv else LaunchCommand(program=())


def split_launch(argv: Sequence[str], spec: ParserSpec | None = None) -> tuple[list[str], list[str]]:
    """``(prefix, sglang_args)``: the launcher (``python -m sglang.launch_server``, ``sglang
    serve``, ``python -m mambaconsole.sim``, with any ``VAR=value`` before it) and the items
    after it, exactly as written. An argv that starts with a flag is all SGLang args."""
    argv = list(argv)
    n = sum(len(a.tokens()) for a in command(argv, spec).args)
    return argv[:len(argv) - n], argv[len(argv) - n:]


def arg_tokens(cmd: LaunchCommand) -> list[str]:
    """The argv items of ``cmd``'s args (without env and program)."""
    return [t for a in cmd.args for t in a.tokens()]


def diff(old: Sequence[str], new: Sequence[str], spec: ParserSpec | None = None) -> list[Change]:
    """Option by option, in the order of ``new`` then the removed ones of ``old``. A bare flag
    (``--disable-radix-cache``) added or removed is ``+``/``-`` with value None; a boolean
    option switched (``--x`` → ``--no-x``) is ``~`` with the flags as values."""
    a, b = command(old, spec), command(new, spec)
    pa, pb = a.by_field(spec), b.by_field(spec)
    out: list[Change] = []
    if a.program and b.program and a.program != b.program:
        out.append(("~", "program", shlex.join(a.program), shlex.join(b.program)))
    for k, arg in pb.items():
        was = pa.get(k)
        if was is None:
            out.append(("+", arg.flag or k, None, arg.value))
        elif was.value != arg.value:
            out.append(("~", arg.flag or k, was.value, arg.value))
        elif arg.value is None and _negated(was.flag or "", arg.flag or ""):
            out.append(("~", arg.flag or k, was.flag, arg.flag))
    for k, arg in pa.items():
        if k not in pb:
            out.append(("-", arg.flag or k, arg.value, None))
    return out


def change_texts(old: Sequence[str], new: Sequence[str], spec: ParserSpec | None = None) -> list[str]:
    """One text per change, in :func:`diff`'s order: ``+ --flag v``, ``~ --flag a→b``,
    ``- --flag v`` (added, changed, removed with the value it had); empty when equal. The sign
    stands apart from the flag's own dashes."""
    parts = []
    for kind, k, o, n in diff(old, new, spec):
        if kind == "+":
            parts.append(f"+ {k}" + (f" {n}" if n is not None else ""))
        elif kind == "-":
            parts.append(f"- {k}" + (f" {o}" if o is not None else ""))
        else:
            parts.append(f"~ {k} {o}→{n}")
    return parts


def diff_text(old: Sequence[str], new: Sequence[str], spec: ParserSpec | None = None) -> str:
    """One line: ``+ --flag v  ~ --flag a→b  - --flag v`` (:func:`change_texts` two spaces
    apart; ``unchanged`` when equal)."""
    return "  ".join(change_texts(old, new, spec)) or "unchanged"


def _negated(a: str, b: str) -> bool:
    """``--x`` and ``--no-x`` (argparse's BooleanOptionalAction pair), either way round."""
    return a == "--no-" + b[2:] or b == "--no-" + a[2:]
