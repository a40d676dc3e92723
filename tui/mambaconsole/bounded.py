"""Readers that bound what they take in: JSON from a server or a file, and files named on the
command line. Everything a node or a user hands the console goes through one of these, so odd
input (50,000 nested brackets, ``1e400``, ``/dev/zero``, a FIFO) gets a one-line error, never a
traceback, a hang or an unbounded read.
"""

from __future__ import annotations

import json
import os
import stat
from typing import Any

__all__ = ["MAX_JSON_DEPTH", "JsonTooDeep", "json_loads", "regular_file"]

#: nesting levels a JSON document may have (SGLang's /server_info: 4; ServerArgs dicts: 3)
MAX_JSON_DEPTH = 64


class JsonTooDeep(ValueError):
    """JSON nested deeper than the bound."""


def _finite_float(text: str) -> float:
    x = float(text)
    if x - x != 0.0:
        raise ValueError(f"number {text[:40]} is out of range")
    return x


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def json_loads(data: str | bytes, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` that raises ValueError (one line) instead of RecursionError for deep
    nesting (:class:`JsonTooDeep` beyond ``max_depth`` levels), and for numbers that are not
    finite (``1e400``, ``NaN``, ``Infinity``: JSON has none)."""
    try:
        obj = json.loads(data, parse_float=_finite_float, parse_constant=_no_constant)
    except RecursionError:
        raise JsonTooDeep(f"JSON nested deeper than {max_depth} levels") from None
    depth, stack = 0, [(obj, 1)]
    while stack:  # iterative: the check itself never recurses
        node, d = stack.pop()
        if isinstance(node, (dict, list)):
            depth = max(depth, d)
            if depth > max_depth:
                raise JsonTooDeep(f"JSON nested deeper than {max_depth} levels")
            stack.extend((v, d + 1) for v in (node.values() if isinstance(node, dict) else node))
    return obj


def regular_file(path: str) -> os.stat_result:
    """The stat of ``path`` when it is a regular file; ValueError (one line) for a FIFO, a
    socket, a device (``/dev/zero``) or a folder, before anything opens it (opening a FIFO
    waits for a writer). OSError passes (no such file, permission)."""
    st = os.stat(path)
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return st
    what = ("a folder" if stat.S_ISDIR(mode) else "a FIFO (named pipe)" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "not a regular file")
    raise ValueError(f"{path}: is {what}, not a file (to read a stream, pipe it in: ... | mambaconsole inspect -)")
