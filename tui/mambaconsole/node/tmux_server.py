"""One tmux server named by its socket, never the one ``$TMUX`` points at.

tmux picks its server from ``-S``/``-L`` first, then from ``$TMUX`` (set inside any tmux pane),
and only then from ``$TMUX_TMPDIR``: a ``tmux kill-server`` run from inside the user's tmux with
``TMUX_TMPDIR`` pointing at a private folder still kills the user's server. Whoever starts a
private server (the demo, the tests, the scripts) names it here by its socket path and runs
every command against that path with ``$TMUX`` removed.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

#: the variables tmux reads to find "the current server" (and its pane)
TMUX_VARS = ("TMUX", "TMUX_PANE")


def socket_path(tmux_tmpdir: str | os.PathLike) -> Path:
    """The socket of the default server under ``tmux_tmpdir``, as tmux (>= 1.9) names it:
    ``$TMUX_TMPDIR/tmux-$UID/default``."""
    return Path(tmux_tmpdir) / f"tmux-{os.getuid()}" / "default"


def clean_env(env: Mapping[str, str] | None = None, **extra: str) -> dict[str, str]:
    """``env`` (default ``os.environ``) without ``$TMUX``/``$TMUX_PANE``, plus ``extra``."""
    out = {k: v for k, v in (os.environ if env is None else env).items() if k not in TMUX_VARS}
    out.update(extra)
    return out


def argv(tmux_tmpdir: str | os.PathLike, *args: str) -> list[str]:
    """``tmux -S <the socket under tmux_tmpdir> ARGS``."""
    return ["tmux", "-S", str(socket_path(tmux_tmpdir)), *args]


def run(tmux_tmpdir: str | os.PathLike, *args: str, env: Mapping[str, str] | None = None,
        **kw) -> subprocess.CompletedProcess:
    """Run ``tmux ARGS`` against the server under ``tmux_tmpdir`` (``$TMUX`` removed from ``env``,
    ``TMUX_TMPDIR`` set to it); ``kw`` goes to :func:`subprocess.run`. Creates the socket's
    folder (0700) as tmux does for ``TMUX_TMPDIR``, which it does not for ``-S``."""
    socket_path(tmux_tmpdir).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    kw.setdefault("timeout", 10)
    return subprocess.run(argv(tmux_tmpdir, *args), env=clean_env(env, TMUX_TMPDIR=str(tmux_tmpdir)), **kw)


def kill_server(tmux_tmpdir: str | os.PathLike) -> None:
    """Kill the tmux server under ``tmux_tmpdir`` (nothing when none runs there)."""
    if socket_path(tmux_tmpdir).exists():
        run(tmux_tmpdir, "kill-server", capture_output=True)
