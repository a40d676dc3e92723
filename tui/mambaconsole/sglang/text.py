"""Display-safe text from raw log bytes: decoding and terminal-control stripping.

A server log is written by SGLang, uvicorn, tqdm progress bars, warnings and whatever else
runs in the server's terminal, so it carries ANSI escape sequences (SGLang's own deprecation
warnings are wrapped in bold-yellow SGR codes from 0.5.14), carriage returns of progress bars
and, in a damaged file, arbitrary bytes. None of that may reach the screen raw:
:func:`display_text` turns one physical line into text that contains no control characters
(C0, DEL, C1) at all.
"""

from __future__ import annotations

import datetime as _dt
import functools
import re
import shlex

__all__ = ["decode_line", "display_text", "envelope_seconds", "has_controls", "shell_line"]

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST), DCS/SOS/PM/APC strings (ESC P/X/^/_ ... ST),
# other two-byte escapes (ESC + one char), and the 8-bit C1 forms of CSI/OSC.
_ANSI_RE = re.compile(
    r"""
    \x1b\[[0-?]*[ -/]*[@-~]?            # CSI ... final byte (final may be cut off)
  | \x9b[0-?]*[ -/]*[@-~]?              # 8-bit CSI
  | \x1b\][^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?   # OSC ... BEL / ST
  | \x9d[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?     # 8-bit OSC
  | \x1b[PX^_][^\x1b\x9c]*(?:\x1b\\|\x9c)?        # DCS / SOS / PM / APC ... ST
  | \x1b[ -/]*[0-~]?                     # other escapes (charset selection, ESC 7, ...)
    """,
    re.VERBOSE,
)
# Every remaining control character: C0 (tab included: replaced by a space), DEL, C1.
_CONTROL_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_MAP = {c: None for c in list(range(0x00, 0x20)) + list(range(0x7F, 0xA0))}
_CONTROL_MAP[0x09] = " "


def decode_line(raw: bytes | str) -> str:
    """``raw`` as text: bytes are decoded as UTF-8 with invalid sequences replaced by U+FFFD.

    Never raises."""
    if isinstance(raw, str):
        return raw
    return bytes(raw).decode("utf-8", "replace")


def has_controls(text: str) -> bool:
    """True when ``text`` holds any C0/C1 control character (escape, CR, tab, NUL, ...)."""
    return _CONTROL_RE.search(text) is not None


def _ansi_c(c: str) -> str:
    if c == "\\" or c == "'":
        return "\\" + c
    if c.isprintable():
        return c
    n = ord(c)
    return f"\\x{n:02x}" if n < 0x80 else f"\\u{n:04x}" if n <= 0xFFFF else f"\\U{n:08x}"


def shell_line(argv: list[str]) -> str:
    """``argv`` as ONE line of bash: :func:`shlex.quote` for each element, except an element
    holding a control character (a newline, an escape), which is written in bash's ANSI-C
    quoting ``$'...'`` with that character escaped (``\\n`` as ``\\x0a``): a listing keeps one
    row per run and no escape reaches the terminal, and the line pasted into bash gives back
    the same argv. Never raises."""
    return " ".join(f"$'{''.join(map(_ansi_c, a))}'" if has_controls(a) else shlex.quote(a) for a in argv)


def display_text(line: bytes | str) -> str:
    """The text of one physical log line as a terminal should show it.

    - bytes are decoded as UTF-8 (invalid sequences → U+FFFD);
    - a trailing ``\\n`` / ``\\r\\n`` is dropped;
    - carriage returns keep only what a terminal would finally show: the text after the last
      ``\\r`` that is followed by something (a tqdm bar captured by ``tee`` becomes its final
      state);
    - ANSI/VT escape sequences (CSI, OSC, DCS, ...) are removed, also when cut off;
    - tabs become one space; every other control character (C0, DEL, C1) is removed.

    The result contains no character in ``U+0000-U+001F`` or ``U+007F-U+009F``.
    Never raises.
    """
    text = decode_line(line)
    if text.endswith("\n"):
        text = text[:-1]
    if text.isprintable():
        return text
    if "\r" in text:
        parts = [p for p in text.split("\r") if p]
        text = parts[-1] if parts else ""
    if "\x1b" in text or "\x9b" in text or "\x9d" in text:
        text = _ANSI_RE.sub("", text)
    return text.translate(_CONTROL_MAP)


@functools.lru_cache(maxsize=4096)
def _envelope_second(text: str) -> float:
    return _dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=_dt.timezone.utc).timestamp()


def envelope_seconds(text: str | None) -> float | None:
    """Seconds since the epoch, read as if UTC, of an SGLang log envelope's timestamp
    (``"2026-10-01 12:34:56"`` or with ``".789"``: ``logging``'s asctime as SGLang's
    ``configure_logger`` formats it, ``[%(asctime)s...]``, sglang/srt/utils/common.py in 0.5.11-0.5.23;
    the node's local time, no zone): add the node's ``-utc_offset`` for unix seconds. Only
    differences of two values are meaningful without it. None when ``text`` is not such a time.
    Cached per second (a flood repeats each second's text thousands of times)."""
    if not text or len(text) < 19:
        return None
    try:
        base = _envelope_second(text[:19])
    except ValueError:
        return None
    frac = text[19:]
    if frac.startswith(".") and frac[1:].isdigit():
        return base + float("0" + frac)
    return base


def shorten(text: str, limit: int) -> str:
    """``text`` whole when it has at most ``limit`` characters, else cut at the last space
    before the limit (or at the limit, for one long word) with ``…`` said: a reader sees that
    the rest is not shown."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[:cut if cut > limit // 2 else limit - 1].rstrip() + "…"
