"""The demo loop without the console: the seed scenario walked with ``mambaconsole launch local``
(runs in tmux, logs in the run store), the sim as the server, ``mambaconsole inspect`` reading
each run's log: first command OOMs (exit 137), the no_buffer try is refused, the capped edit
reaches ready and decodes; ``mambaconsole stop`` ends it and the GPU file shows it gone."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest

from mambaconsole.node import tmux_server
from mambaconsole.sim import demo

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


def cli(env: dict, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "mambaconsole", *args], capture_output=True, text=True,
                          env=env, timeout=120)
    if check:
        assert proc.returncode == 0, proc.stderr
    return proc


def wait_run(env: dict, run_id: str, pred, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        runs = json.loads(cli(env, "runs", "local", "--json", "--no-adopt").stdout)
        run = next(r for r in runs if r["run_id"] == run_id)
        if pred(run):
            return run
        assert time.monotonic() < deadline, run
        time.sleep(0.2)


def test_demo_loop_through_launch_local(tmp_path, free_port):
    version = "0.5.11"
    home = tmp_path / "home"
    session = f"simtest-{uuid.uuid4().hex[:8]}"
    tmux_dir = Path(tempfile.mkdtemp(prefix="mc-loop-"))  # its own tmux server (short: socket paths are limited)
    env = tmux_server.clean_env(**demo.demo_env(home), TMUX_TMPDIR=str(tmux_dir))
    sim = ["--module", "mambaconsole.sim", "--python", sys.executable, "--session", session,
           "--env", f"MAMBACONSOLE_SIM_GPU_FILE={home / 'sim-gpu.json'}", "--json"]
    head = ["--sim-version", version, "--sim-speed", "50"]
    try:
        # 1. the first command: extra_buffer with default caps
        first = json.loads(cli(env, "launch", "local", *sim, "--", *head, *demo.first_failing_argv(version, port=free_port),
                               check=False).stdout)
        run = wait_run(env, first["run_id"], lambda r: r["state"] in ("exited", "gone", "lost"))
        assert run["exit_code"] == 137 or run["signal"] == 9, run
        report = json.loads(cli(env, "inspect", run["log_path"], "--json").stdout)
        assert report["outcome"] == "oom" and report["failure"]["exception"] == "torch.OutOfMemoryError"

        # 2. no_buffer: SGLang 0.5.11 refuses it before loading anything
        second = json.loads(cli(env, "launch", "local", *sim, "--", *head, *demo.no_buffer_argv(version, port=free_port),
                                check=False).stdout)
        run = wait_run(env, second["run_id"], lambda r: r["state"] in ("exited", "gone", "lost"))
        assert run["exit_code"] == 1
        report = json.loads(cli(env, "inspect", run["log_path"], "--json").stdout)
        assert report["outcome"] == "arg_error" and report["failure"]["exception"] == "ValueError"

        # 3. the edit: cap the Mamba cache
        third = json.loads(cli(env, "launch", "local", *sim, "--", *head, *demo.working_argv(version, port=free_port)).stdout)
        deadline = time.monotonic() + 60
        log = third["log_path"]
        while "Decode batch" not in open(log).read():
            assert time.monotonic() < deadline, open(log).read()[-2000:]
            time.sleep(0.2)
        report = json.loads(cli(env, "inspect", log, "--json").stdout)
        assert report["outcome"] == "ready" and report["mamba_slots"] == 24 and report["spec"]["enabled"]
        gpu = json.loads((home / "sim-gpu.json").read_text())
        # weights, pools and graphs: 88.5 GiB (the exact sum is pinned in test_sim.py)
        assert gpu["simulated"] and gpu["gpus"][0]["processes"][0]["used_mib"] > 88 * 1024
        cli(env, "stop", "local", third["run_id"], "--int-timeout", "10")
        run = wait_run(env, third["run_id"], lambda r: r["state"] != "running")
        assert json.loads((home / "sim-gpu.json").read_text())["gpus"][0]["processes"] == []
    finally:
        tmux_server.kill_server(tmux_dir)
        shutil.rmtree(tmux_dir, ignore_errors=True)
