"""What ``mambaconsole --demo`` needs from the simulated node: where the demo lives and which
commands the seed scenario runs.

The seed scenario (design.md §1): Qwen3.6-27B on one 96 GiB RTX PRO 6000, EAGLE/MTP
speculative decoding with the radix cache, 16 running requests, ``--mem-fraction-static 0.9``:

1. ``extra_buffer`` with the default caps → CUDA OOM while allocating the Mamba cache
   (scheduler exception, SIGQUIT, exit 137);
2. ``no_buffer`` → 0.5.11 refuses it with its ValueError (exit 1); on 0.5.23 ``no_buffer``
   needs ``--disable-overlap-schedule`` (AssertionError otherwise) and then starts;
3. ``extra_buffer`` + ``--max-mamba-cache-size 24 --mamba-full-memory-ratio 0.4`` (or
   ``--mem-fraction-static 0.80``) → ready, decode batches with accept length.

Every command here is the SGLang argv a user would type after ``python -m sglang.launch_server``;
:func:`sim_command` puts ``python -m mambaconsole.sim --sim-...`` in front of it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import platformdirs

from mambaconsole.sim.gpu import ENV_GPU_FILE

MODEL = "Qwen/Qwen3.6-27B"
DEFAULT_PORT = 30000


def demo_home() -> Path:
    """The demo's own MAMBACONSOLE_HOME: ``<user cache dir>/mambaconsole/demo``."""
    return Path(platformdirs.user_cache_dir("mambaconsole")) / "demo"


def strategy_flag(version: str) -> str:
    """``--mamba-scheduler-strategy`` (0.5.11) or ``--mamba-radix-cache-strategy`` (0.5.14+)."""
    return "--mamba-scheduler-strategy" if version == "0.5.11" else "--mamba-radix-cache-strategy"


def base_argv(version: str = "0.5.11", *, port: int = DEFAULT_PORT, host: str = "127.0.0.1") -> list[str]:
    """The seed launch without the Mamba strategy."""
    return [
        "--model-path", MODEL,
        "--host", host,
        "--port", str(port),
        "--speculative-algorithm", "NEXTN",
        "--speculative-num-steps", "3",
        "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", "4",
        "--max-running-requests", "16",
        "--mem-fraction-static", "0.9",
        "--enable-metrics",
    ]


def first_failing_argv(version: str = "0.5.11", *, port: int = DEFAULT_PORT, host: str = "127.0.0.1") -> list[str]:
    """The seed scenario's first command: ``extra_buffer`` with default caps (OOMs)."""
    return base_argv(version, port=port, host=host) + [strategy_flag(version), "extra_buffer"]


def no_buffer_argv(version: str = "0.5.11", *, port: int = DEFAULT_PORT, host: str = "127.0.0.1") -> list[str]:
    """The second try: ``no_buffer`` (0.5.11: ValueError; 0.5.23: AssertionError on overlap)."""
    return base_argv(version, port=port, host=host) + [strategy_flag(version), "no_buffer"]


def working_argv(version: str = "0.5.11", *, port: int = DEFAULT_PORT, host: str = "127.0.0.1") -> list[str]:
    """The fix: ``extra_buffer`` capped by ``--max-mamba-cache-size 24 --mamba-full-memory-ratio 0.4``."""
    return first_failing_argv(version, port=port, host=host) + [
        "--max-mamba-cache-size", "24",
        "--mamba-full-memory-ratio", "0.4",
    ]


def sim_command(sglang_argv: list[str], *, version: str = "0.5.11", seed: int = 0, speed: float = 1.0,
                python: str | None = None) -> list[str]:
    """``[python, -m, mambaconsole.sim, --sim-version V, --sim-seed N, --sim-speed X, *sglang_argv]``."""
    return [python or sys.executable, "-m", "mambaconsole.sim", "--sim-version", version,
            "--sim-seed", str(seed), "--sim-speed", str(speed), *sglang_argv]


def demo_env(home: Path | None = None) -> dict[str, str]:
    """Environment for the demo's processes: its MAMBACONSOLE_HOME and the GPU file inside it
    (``MAMBACONSOLE_SIM_GPU_FILE``, read by the sim and the node agent; also under the
    deprecated alias ``MAMBACONSOLE_SIM_GPU``)."""
    home = Path(home) if home else demo_home()
    gpu_file = str(home / "sim-gpu.json")
    return {"MAMBACONSOLE_HOME": str(home), ENV_GPU_FILE: gpu_file, "MAMBACONSOLE_SIM_GPU": gpu_file}


def prepare_home(home: Path | None = None) -> Path:
    """Create the demo home (mode 0700) and return it."""
    home = Path(home) if home else demo_home()
    home.mkdir(parents=True, exist_ok=True)
    os.chmod(home, 0o700)
    return home
