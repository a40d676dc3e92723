"""Input as people paste it: the wrappers around SGLang's log lines that other tools and
people add, removed line by line before the log parser reads the line.

Pure (no I/O). :func:`unwrap_line` takes one physical line and returns it without

- a Markdown code fence (```` ``` ```` / ```` ```log ````: the line becomes empty) or a
  Markdown quote marker (``> ``);
- an editor's or viewer's line number (``  12 | ``, ``12│``, ``12→``, ``12\\t``);
- a Kubernetes / containerd log prefix (``2026-01-02T03:04:05.123456789Z stdout F ``), a
  ``kubectl logs --timestamps`` / ``docker logs -t`` ISO timestamp (``2026-...Z ``), a
  ``--prefix`` pod tag (``[pod/sglang-0/server] ``);
- a docker compose service prefix (``sglang-1  | ``; one space after the bar is the
  separator, the rest of the indentation is the line's own);
- a journald prefix (``Dec 01 10:00:00 host unit[123]: ``);
- a Ray actor prefix (``(SchedulerActor pid=123, ip=10.0.0.1) ``, ``(raylet) ``).

Prefixes can stack (a pod tag before an ISO timestamp before a compose bar); up to four are
removed. A line already in SGLang's envelope (``[YYYY-MM-DD HH:MM:SS ...]``) is returned as
is. SGLang's own supervisor prefix handling (the envelope found later in the line) stays in
:mod:`mambaconsole.sglang.events`.
"""

from __future__ import annotations

import re

__all__ = ["unwrap_line", "is_fence"]

_FENCE = re.compile(r"^\s{0,3}(?:```|~~~)[\w+-]*\s*$")
_PREFIXES = (
    # Markdown quote
    re.compile(r"^> ?"),
    # kubectl --prefix / stern: [pod/NAME/CONTAINER]
    re.compile(r"^\[pod/[\w.-]+/[\w.-]+\] "),
    # containerd / CRI log file: ISO time, stream, partial flag
    re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d) (?:stdout|stderr) [FP] "),
    # kubectl logs --timestamps, docker logs -t
    re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d) "),
    # journald (short format)
    re.compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [\w.-]+ [\w.@-]+(?:\[\d+\])?: "),
    # Ray actor / worker output: (SchedulerActor pid=123, ip=10.0.0.1), (raylet), (pid=123)
    re.compile(r"^\((?:[\w.-]+ )?(?:pid=\d+(?:, ip=[\w.:-]+)?|raylet|autoscaler)\) "),
    # docker compose: service name padded, a bar, one space
    re.compile(r"^[A-Za-z0-9][\w.-]*\s+\| ?"),
    # an editor's / viewer's line number
    re.compile(r"^\s{0,6}\d{1,7}(?: ?[│|] ?|→|\t)"),
)
#: any of them, the first that matches (none matches empty): one look at a line that has none
_ANY_PREFIX = re.compile("|".join(f"(?:{rx.pattern})" for rx in _PREFIXES))


def is_fence(line: str) -> bool:
    """A Markdown code fence line (```` ``` ````, ```` ```log ````, ``~~~``)."""
    return _FENCE.match(line) is not None


def unwrap_line(line: str) -> str:
    """``line`` without the wrappers listed in the module doc (a fence becomes ``""``)."""
    if line[:3] == "[20":
        return line
    if line[:1].isspace() and not line.lstrip()[:1].isdecimal():
        return line  # indented, no line number: no prefix starts so (a traceback's body)
    if "`" in line[:6] or "~" in line[:6]:
        if _FENCE.match(line):
            return ""
    for _ in range(4):
        m = _ANY_PREFIX.match(line)
        if m is None or m.end() == 0:
            return line
        line = line[m.end():]
        if line[:3] == "[20":
            return line
    return line
