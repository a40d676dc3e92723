"""What the console remembers between starts: the theme and the pane sizes last chosen.

One small JSON file per user, ``ui-state.json`` in ``platformdirs.user_state_dir("mambaconsole")``
(Linux: ``~/.local/state/mambaconsole/ui-state.json``); ``MAMBACONSOLE_STATE_DIR`` names another
folder (the tests point it at a temporary one)::

    {"theme": "mamba-light", "args_cols": 6, "top_rows": 15}

- ``theme``: a theme's name (``themes/*.toml``); a ``--theme`` flag or a host's ``theme``
  setting wins over it;
- ``args_cols``: the ServerArgs pane's share of the panes' width, in tenths (the log pane has
  the rest);
- ``top_rows``: the height of the top row (GPU memory, speculative decoding), in terminal rows.

This is the console's own format (no SGLang file). A missing, unreadable or corrupt file, or a
value of the wrong type, reads as "nothing remembered" (the defaults), never an error at start;
:func:`save` writes a whole new file and renames it over the old one, so a crash mid-write
leaves the previous file intact.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import platformdirs

FILE_NAME = "ui-state.json"


@dataclass(frozen=True)
class UiState:
    """``None``: not remembered (the console's default applies)."""

    theme: str | None = None
    args_cols: int | None = None  # tenths of the width
    top_rows: int | None = None  # terminal rows


def state_path() -> Path:
    """``$MAMBACONSOLE_STATE_DIR/ui-state.json``, else under the platformdirs user state dir."""
    folder = os.environ.get("MAMBACONSOLE_STATE_DIR") or platformdirs.user_state_dir("mambaconsole")
    return Path(folder) / FILE_NAME


def load(path: Path) -> UiState:
    """The state saved at ``path``; each field that is missing or of the wrong type is ``None``
    (a corrupt or unreadable file: every field ``None``)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return UiState()
    if not isinstance(data, dict):
        return UiState()

    def _int(v):
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    theme = data.get("theme")
    return UiState(theme=theme if isinstance(theme, str) and theme else None,
                   args_cols=_int(data.get("args_cols")), top_rows=_int(data.get("top_rows")))


def save(path: Path, state: UiState) -> None:
    """Write ``state`` to ``path`` atomically (a temporary file in the same folder renamed over
    it). Raises OSError when the folder cannot be made or written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{FILE_NAME}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({k: v for k, v in asdict(state).items() if v is not None}, f)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
