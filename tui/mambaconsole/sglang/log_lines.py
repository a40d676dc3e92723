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

__all__ = ["severity", "severities", "is_poll_access", "poll_access_flags", "POLL_PATHS"]

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


def severities(texts: list[str]) -> list[str]:
    """:func:`severity` of each line of a batch; a batch in which no line can be more than
    ``info`` (the usual flood of decode lines) is told by one scan of the joined text."""
    joined = "\n".join(texts)
    if ("fired up" in joined or any(h in joined for h in _ERR_HINTS)
            or any(h in joined for h in _WARN_HINTS)):
        return [severity(t) for t in texts]
    return ["info"] * len(texts)


def poll_access_flags(texts: list[str]) -> list[bool]:
    """:func:`is_poll_access` of each line of a batch (one scan when none can be)."""
    joined = "\n".join(texts)
    if '- "GET /' not in joined and "\x1b" not in joined:
        return [False] * len(texts)
    return [is_poll_access(t) for t in texts]


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


#: the endpoints the console itself polls (ui/feed.py) or that health checks hit
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
