"""The simulated node's GPU readings file, read by the agent's ``sim`` GPU backend.

Shape (agreed with the node/agent side)::

    {"gpus": [{"index": 0, "name": "RTX PRO 6000 Blackwell",
               "memory_total_mib": 98304, "memory_used_mib": 53012,
               "utilization_pct": 87,
               "processes": [{"pid": 4242, "used_mib": 53012,
                              "cmdline": "python -m mambaconsole.sim ..."}]}],
     "simulated": true, "updated_at": 1764500000.25}

Memory in MiB (2**20 bytes), utilisation in percent (0-100), ``updated_at`` in Unix seconds.
``processes`` is empty when no simulated server holds memory. The file is replaced atomically
(write to a temporary file in the same folder, then ``os.replace``).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path

from mambaconsole.sim.model import MiB, SimGPU

#: environment variable naming the GPU file
ENV_GPU_FILE = "MAMBACONSOLE_SIM_GPU_FILE"
DEFAULT_NAME = "sim-gpu.json"


def default_gpu_file() -> Path:
    """``$MAMBACONSOLE_SIM_GPU_FILE``, else ``sim-gpu.json`` in the working directory."""
    env = os.environ.get(ENV_GPU_FILE)
    return Path(env) if env else Path.cwd() / DEFAULT_NAME


def write_atomic(path: Path, data: dict) -> None:
    """Write ``data`` as JSON to ``path`` atomically (tmp file + rename in the same folder)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            json.dump(data, fh)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def gpu_state(gpu: SimGPU, *, used_bytes: int, utilization_pct: int, pid: int | None, cmdline: str) -> dict:
    """The file's content for one GPU held (or not, ``pid=None``) by one simulated server."""
    used_mib = int(used_bytes // MiB)
    processes = [] if pid is None or used_mib <= 0 else [{"pid": pid, "used_mib": used_mib, "cmdline": cmdline}]
    return {
        "gpus": [
            {
                "index": 0,
                "name": gpu.name,
                "memory_total_mib": gpu.total_mib,
                "memory_used_mib": used_mib if processes else 0,
                "utilization_pct": int(utilization_pct) if processes else 0,
                "processes": processes,
            }
        ],
        "simulated": True,
        "updated_at": round(time.time(), 3),
    }


def read_gpu_file(path: Path) -> dict:
    """Parse a GPU file written by :func:`write_atomic`; raises OSError / ValueError."""
    return json.loads(Path(path).read_text())
