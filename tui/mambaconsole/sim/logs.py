"""Log text of the simulated server, in the exact formats of SGLang 0.5.11 / 0.5.23.

Formats are those of ``../shared/reference/sglang-observables.md`` (§1 envelope, §2 batch
lines, §3 startup lines, §4 failures); tracebacks are rendered like CPython 3.11 renders them
(carets under a call that is only part of its line).
"""

from __future__ import annotations

import re
import sys
import time
from typing import TextIO

from mambaconsole.sim.model import GiB


def envelope(message: str, prefix: str = "", when: float | None = None) -> str:
    """``[%Y-%m-%d %H:%M:%S{prefix}] message`` (SGLang ``configure_logger``; no ms)."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(time.time() if when is None else when))
    return f"[{stamp}{prefix}] {message}"


def gb(n_bytes: float) -> str:
    """SGLang's ``GB`` figures: bytes / 2**30 with two decimals."""
    return f"{n_bytes / GiB:.2f}"


def torch_size(n_bytes: float) -> str:
    """PyTorch's allocator size text (``format_size``): ``12.00 MiB`` / ``9.56 GiB``."""
    if n_bytes < 1 << 20:
        return f"{n_bytes / 1024:.2f} KiB"
    if n_bytes < 1 << 30:
        return f"{n_bytes / (1 << 20):.2f} MiB"
    return f"{n_bytes / (1 << 30):.2f} GiB"


def _carets(code: str) -> str | None:
    m = re.match(r"^(return |.*? = )(.*)$", code)
    if not m:
        return None
    expr = m.group(2)
    if not expr.endswith(")") or expr.count("(") != expr.count(")"):
        return None
    return " " * len(m.group(1)) + "^" * len(expr)


def render_traceback(frames, exc_line: str, site: str) -> str:
    """``Traceback (most recent call last):`` ... ``exc_line`` with paths under ``site``."""
    out = ["Traceback (most recent call last):"]
    for path, line, func, code in frames:
        full = path if path.startswith("<") else f"{site}/{path}"
        out.append(f'  File "{full}", line {line}, in {func}')
        if code:
            out.append(f"    {code}")
            caret = _carets(code)
            if caret:
                out.append(f"    {caret}")
    out.append(exc_line)
    return "\n".join(out)


class LogWriter:
    """Writes enveloped lines to ``stream`` (stderr, where SGLang's logging goes)."""

    def __init__(self, stream: TextIO | None = None, prefix: str = ""):
        self.stream = stream or sys.stderr
        self.prefix = prefix

    def log(self, message: str, *, prefix: str | None = None) -> None:
        self.stream.write(envelope(message, self.prefix if prefix is None else prefix) + "\n")
        self.stream.flush()

    def raw(self, text: str) -> None:
        self.stream.write(text if text.endswith("\n") else text + "\n")
        self.stream.flush()


def decode_line(
    version: str,
    *,
    running: int,
    full_tokens: int,
    full_usage: float,
    mamba_num: int,
    mamba_usage: float,
    accept_len: float | None,
    accept_rate: float | None,
    cuda_graph: bool,
    gen_throughput: float,
    queue: int,
) -> str:
    """Decode batch line of a hybrid-mamba pool (§2.2/2.3; 0.5.11 and 0.5.23 share the layout)."""
    parts = [
        f"Decode batch, #running-req: {running}, ",
        f"#full token: {full_tokens}, full token usage: {full_usage:.2f}, mamba num: {mamba_num}, mamba usage: {mamba_usage:.2f}, ",
    ]
    if accept_len is not None:
        parts.append(f"accept len: {accept_len:.2f}, accept rate: {accept_rate:.2f}, ")
    parts.append(f"cuda graph: {cuda_graph}, gen throughput (token/s): {gen_throughput:.2f}, #queue-req: {queue}")
    return "".join(parts)


def prefill_line(
    version: str,
    *,
    new_seq: int,
    new_token: int,
    cached_token: int,
    full_usage: float,
    mamba_usage: float,
    running: int,
    queue: int,
    pending_token: int,
    input_throughput: float,
) -> str:
    """Prefill batch line of a hybrid-mamba pool (§2.6, 0.5.11+ layout)."""
    return (
        f"Prefill batch, #new-seq: {new_seq}, #new-token: {new_token}, #cached-token: {cached_token}, "
        f"full token usage: {full_usage:.2f}, mamba usage: {mamba_usage:.2f}, "
        f"#running-req: {running}, #queue-req: {queue}, #pending-token: {pending_token}, "
        f"cuda graph: False, input throughput (token/s): {input_throughput:.2f}"
    )
