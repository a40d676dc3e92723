"""Themes shipped in ``themes/`` (one TOML file per theme, a ``[theme]`` table whose keys are
:class:`textual.theme.Theme`'s fields) plus any in the user's config dir ``themes/``."""

from __future__ import annotations

import sys
from pathlib import Path

import platformdirs
from textual.theme import Theme

from mambaconsole.errors import ConsoleError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def theme_dirs() -> list[Path]:
    here = Path(__file__).resolve()
    return [
        here.parents[3] / "themes",  # a source checkout (editable install)
        here.parents[1] / "themes",  # a wheel (force-included into the package)
        Path(platformdirs.user_config_dir("mambaconsole")) / "themes",
    ]


def load_theme(path: Path) -> Theme:
    try:
        data = tomllib.loads(path.read_text())["theme"]
        return Theme(**data)
    except (OSError, KeyError, TypeError, tomllib.TOMLDecodeError) as exc:
        raise ConsoleError(f"{path}: not a theme file: {exc}") from None


def load_themes() -> list[Theme]:
    """Every theme found, in file-name order, the first of each name winning."""
    seen: dict[str, Theme] = {}
    for d in theme_dirs():
        if d.is_dir():
            for p in sorted(d.glob("*.toml")):
                t = load_theme(p)
                seen.setdefault(t.name, t)
    return list(seen.values())
