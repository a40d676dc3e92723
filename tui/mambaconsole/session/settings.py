"""Console settings: a TOML file under the platformdirs config dir with one section per host,
overridable by flags.

``~/.config/mambaconsole/config.toml`` (Linux; ``platformdirs.user_config_dir("mambaconsole")``)::

    [hosts.gpu-node]
    python = "/opt/sglang/.venv/bin/python"   # the server's python on the node
    session = "sglang"                        # tmux session
    port = 30000                              # the server's HTTP port on the node
    workdir = "/data/work"                    # cwd of new runs
    env = { HF_HOME = "/data/hf" }            # extra environment of new runs
    launch = "--model-path Qwen/Qwen3.6-27B --tp-size 1"   # SGLang args (string or list)
    log_tail_mib = 4.0                        # MiB of a long log's end read on opening a run

Which wins: a flag, then the host's section, then ``[hosts."*"]``, then the defaults below.
"""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import platformdirs

from mambaconsole.errors import ConsoleError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


@dataclass(frozen=True)
class HostSettings:
    python: str = "python3"
    session: str = "sglang"
    port: int = 30000
    workdir: str | None = None
    env: dict = field(default_factory=dict)
    launch: tuple[str, ...] = ()
    module: str = "sglang.launch_server"
    poll_s: float = 2.0  # seconds between GPU / HTTP / runs polls
    #: MiB of a long log's end read when a run is opened (with its boot, up to the first ready
    #: line); the middle is skipped, the log pane pages back into it on request
    log_tail_mib: float = 4.0
    theme: str | None = None


def config_path() -> Path:
    env = os.environ.get("MAMBACONSOLE_CONFIG")
    if env:
        return Path(env)
    return Path(platformdirs.user_config_dir("mambaconsole")) / "config.toml"


def _coerce(name: str, raw, where: str):
    if name == "port":
        if not isinstance(raw, int) or not 0 < raw < 65536:
            raise ConsoleError(f"{where}: port must be an integer 1-65535, got {raw!r}")
        return raw
    if name in ("poll_s", "log_tail_mib"):
        if isinstance(raw, bool) or not isinstance(raw, (int, float)) or raw <= 0:
            raise ConsoleError(f"{where}: {name} must be a positive number, got {raw!r}")
        return float(raw)
    if name == "env":
        if not isinstance(raw, dict) or not all(isinstance(k, str) and k.isidentifier() for k in raw):
            raise ConsoleError(f"{where}: env must be a table of NAME = \"value\"")
        return {k: str(v) for k, v in raw.items()}
    if name == "launch":
        if isinstance(raw, str):
            return tuple(shlex.split(raw))
        if isinstance(raw, list) and all(isinstance(x, str) for x in raw):
            return tuple(raw)
        raise ConsoleError(f"{where}: launch must be a string or a list of strings")
    if not isinstance(raw, str):
        raise ConsoleError(f"{where}: {name} must be a string, got {raw!r}")
    return raw


def load(host: str, overrides: dict | None = None, path: Path | None = None) -> HostSettings:
    """The settings for ``host``. ``overrides`` (flag values; ``None`` = not given) win.
    Raises ConsoleError (one line) for an unreadable file or a bad value."""
    path = path or config_path()
    data: dict = {}
    if path.exists():
        try:
            data = tomllib.loads(path.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConsoleError(f"{path}: {exc}") from None
    hosts = data.get("hosts", {}) if isinstance(data.get("hosts", {}), dict) else {}
    s = HostSettings()
    known = set(HostSettings.__dataclass_fields__)
    for section in ("*", host):
        sec = hosts.get(section) or {}
        for k, v in sec.items():
            if k not in known:
                raise ConsoleError(f"{path}: [hosts.{section}]: unknown setting '{k}' (known: {', '.join(sorted(known))})")
            s = replace(s, **{k: _coerce(k, v, f"{path}: [hosts.{section}]")})
    for k, v in (overrides or {}).items():
        if v is not None and k in known:
            s = replace(s, **{k: _coerce(k, v, f"--{k}")})
    return s


def host_ports(path: Path | None = None) -> dict[str, int]:
    """Every ``[hosts.NAME]`` of the settings (not ``"*"``) → the server's HTTP port it
    resolves to (its own ``port``, else ``[hosts."*"]``'s, else the default). The fleet view
    maps a worker URL ``http://NAME:PORT`` to the host ``NAME`` through it."""
    path = path or config_path()
    if not path.exists():
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConsoleError(f"{path}: {exc}") from None
    hosts = data.get("hosts", {}) if isinstance(data.get("hosts", {}), dict) else {}
    return {name: load(name, path=path).port for name in hosts if name != "*"}
