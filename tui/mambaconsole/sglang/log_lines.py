"""What a server log line is, for display: its severity (``error`` / ``warning`` / ``ready`` /
``info``) and whether it is an HTTP access line of a poll. SGLang's envelope carries no level
(0.5.5-0.5.23 ``srt/utils/common.py:configure_logger`` prints ``[time rank] message``), so the
message is read: tracebacks, exception names, OOM, SGLang's SIGQUIT messages, warnings' usual
words; the ready line. Access lines are uvicorn's (``uvicorn.logging.AccessFormatter``).

Pure (no I/O). The console's log pane, the run fold (first error line) and ``inspect`` use
these; one rule each.
"""

from __future__ import annotations

import re

__all__ = ["classify", "first_error", "severity", "severities", "is_poll_access", "poll_access_flags",
           "POLL_PATHS"]

# SIGQUIT: SGLang's two messages (sglang-observables: "Received sigquit from a child process",
# "SIGQUIT received. signum=..."), not any mention (every ServerArgs dump holds
# custom_sigquit_handler=None: `E` used to land on the dump instead of the traceback)
_ERR = re.compile(r"Traceback \(most recent call last\)|(^|\s)[\w.]*(Error|Exception)(:|$)|hit an exception|"
                  r"out of memory|Not enough memory|\bERROR\b|^Killed|SIGQUIT received|Received sigquit")
_WARN = re.compile(r"\bWARNING\b|\bwarn(ing)?\b|[Dd]eprecat|Disabling|Falling back|Automatically")
_READY = re.compile(r"The server is fired up and ready to roll!")


# words one of which every match of _ERR / _WARN contains: a line with none of them skips the
# regex (most lines; _ERR's exception-name branch is slow on long lines)
_ERR_HINTS = ("Error", "Exception", "Traceback", "exception", "memory", "ERROR", "Killed", "SIGQUIT", "sigquit")
_WARN_HINTS = ("WARN", "warn", "eprecat", "Disabling", "Falling back", "Automatically")


_HINTS = ("fired up",) + _ERR_HINTS + _WARN_HINTS
_ACCESS_HINTS = ('- "GET /', "\x1b")


def _hit_lines(joined: str, words: tuple[str, ...]) -> list[int]:
    """The indexes (ascending) of the lines of ``joined`` (lines joined by ``\\n``) that hold
    one of ``words``: a substring scan of the batch per word (C speed), the next scan from the
    next line; lines without one are never looked at."""
    find = joined.find
    starts: list[int] = []
    for w in words:
        p = find(w)
        while p >= 0:
            starts.append(p)
            nl = find("\n", p)
            if nl < 0:
                break
            p = find(w, nl + 1)
    if not starts:
        return []
    starts.sort()
    out: list[int] = []
    line = pos = 0
    count = joined.count
    for start in starts:
        line += count("\n", pos, start)
        pos = start
        if not out or out[-1] != line:
            out.append(line)
    return out


def _batch_hits(texts: list[str], joined: str | None, words: tuple[str, ...]) -> list[int] | range:
    """The indexes of ``texts`` worth a closer look: one scan of the joined batch, or every
    index when a text holds a newline itself (the joined text's lines would not be the texts)."""
    if joined is None:
        joined = "\n".join(texts)
    if joined.count("\n") != max(0, len(texts) - 1):
        return range(len(texts))
    return _hit_lines(joined, words)


def severities(texts: list[str], joined: str | None = None) -> list[str]:
    """:func:`severity` of each line of a batch: one scan of the joined text (``joined``, when
    the caller has it) finds the lines holding a hint word; only those are read further."""
    out = ["info"] * len(texts)
    for i in _batch_hits(texts, joined, _HINTS):
        out[i] = severity(texts[i])
    return out


def first_error(texts: list[str]) -> int | None:
    """The index of the first of ``texts`` whose :func:`severity` is ``error``, else None: one
    scan of the joined batch for the error hints; only the lines holding one are read further."""
    for i in _batch_hits(texts, None, _ERR_HINTS):
        if severity(texts[i]) == "error":
            return i
    return None


def poll_access_flags(texts: list[str], joined: str | None = None) -> list[bool]:
    """:func:`is_poll_access` of each line of a batch (one scan of the joined text)."""
    out = [False] * len(texts)
    for i in _batch_hits(texts, joined, _ACCESS_HINTS):
        out[i] = is_poll_access(texts[i])
    return out


def classify(texts: list[str]) -> tuple[list[str], list[bool]]:
    """(:func:`severities`, :func:`poll_access_flags`) of a batch, joined once."""
    joined = "\n".join(texts)
    return severities(texts, joined), poll_access_flags(texts, joined)


def severity(text: str) -> str:
    """``error``/``warning``/``ready``/``info`` for a log line (SGLang's envelope carries no level,
    so this reads the message: tracebacks, exception names, OOM, warnings' usual words)."""
    if "fired up" in text and _READY.search(text):
        return "ready"
    if any(h in text for h in _ERR_HINTS) and _ERR.search(text):
        return "error"
    if any(h in text for h in _WARN_HINTS) and _WARN.search(text):
        return "warning"
    return "info"


#: the endpoints the console itself polls (session/feed.py) or that health checks hit
POLL_PATHS = frozenset({"/health", "/health_generate", "/metrics", "/server_info", "/get_server_info",
                        "/model_info", "/get_model_info", "/v1/models"})
# uvicorn's access line (uvicorn.logging.AccessFormatter, default fmt
# '%(levelprefix)s %(client_addr)s - "%(request_line)s" %(status_code)s'; SGLang's http_server
# keeps uvicorn's LOGGING_CONFIG for it): 'INFO:     127.0.0.1:52344 - "GET /metrics HTTP/1.1" 200 OK'
_ACCESS = re.compile(r'^(?:\[[^\]]*\]\s*)?INFO:\s+\S+ - "GET (?P<path>/[^\s?"]*)[^"]*" \d{3}\b')
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def is_poll_access(text: str) -> bool:
    """An HTTP access line of a poll (``GET`` of one of :data:`POLL_PATHS`), as uvicorn prints it
    (with or without its colours)."""
    if '- "GET /' not in text and "\x1b" not in text:
        return False
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    m = _ACCESS.match(text)
    return bool(m) and m.group("path") in POLL_PATHS
