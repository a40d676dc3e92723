"""Two ``mambaconsole --demo`` on one machine: each has its own folder (run store, tmux server,
sim GPU file) and its own port, their sims run side by side, quitting removes each folder; a
demo whose console was killed is cleaned up by the next one. Real consoles in tmux panes."""

from __future__ import annotations

import json
import os
import shlex
import signal
import sys
import tempfile
import time
from pathlib import Path

import pytest

from mambaconsole.node import tmux_server

pytestmark = pytest.mark.timeout(180)


def wait_for(pred, timeout=60.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def demo_env(tmp_path):
    base = Path(tempfile.mkdtemp(prefix="mc-dd-"))  # short: tmux socket paths are limited
    (base / "tmux").mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAMBACONSOLE_", "TMUX"))}
    env.update(XDG_CACHE_HOME=str(base / "c"), MAMBACONSOLE_CONFIG=str(tmp_path / "config.toml"),
               TMUX_TMPDIR=str(base / "tmux"), TERM="xterm-256color")
    # the session outlives its demo windows (a killed console closes its window)
    tmux(env, "new-session", "-d", "-s", "demos", "-x", "160", "-y", "45", "-n", "hold", "sleep 3600")
    yield base, env
    tmux_server.kill_server(base / "tmux")
    root = base / "c" / "mambaconsole" / "demo"
    for d in root.glob("*/tmux"):  # a demo left behind by a failed test: its own tmux server
        tmux_server.kill_server(d)
    import shutil

    shutil.rmtree(base, ignore_errors=True)


def tmux(env: dict, *args: str) -> None:
    """``tmux ARGS`` on the test's own server (the socket under ``env``'s TMUX_TMPDIR)."""
    tmux_server.run(env["TMUX_TMPDIR"], *args, env=env, check=True)


def _open_demo(env: dict, name: str) -> None:
    """``mambaconsole --demo`` in its own tmux window (a real terminal for the console)."""
    cmd = shlex.join([sys.executable, "-m", "mambaconsole", "--demo"])
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items() if k in ("XDG_CACHE_HOME", "MAMBACONSOLE_CONFIG",
                                                                              "PYTHONPATH", "PATH"))
    tmux(env, "new-window", "-t", "demos", "-n", name, f"env {exports} {cmd}")


def _instances(root: Path) -> list[Path]:
    return sorted(d for d in root.glob("*") if d.is_dir() and (d / "lock").is_file()) if root.exists() else []


def _run_of(folder: Path) -> dict | None:
    runs = sorted((folder / "runs").glob("*/status.json")) if (folder / "runs").exists() else []
    if not runs:
        return None
    st = json.loads(runs[0].read_text() or "{}")
    argv = json.loads((runs[0].parent / "argv.json").read_text())
    return st | {"argv": argv, "log": runs[0].parent / "log"} if st.get("pid") else None


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_two_demos_side_by_side(demo_env):
    base, env = demo_env
    root = base / "c" / "mambaconsole" / "demo"
    _open_demo(env, "one")
    _open_demo(env, "two")
    folders = wait_for(lambda: len(_instances(root)) == 2 and _instances(root), what="two demo folders")
    runs = wait_for(lambda: all(_run_of(f) for f in folders) and [_run_of(f) for f in folders],
                    what="both demos' sims started")
    # own folder, own port, own GPU file for each
    ports = [r["argv"][r["argv"].index("--port") + 1] for r in runs]
    assert ports[0] != ports[1]
    assert all(Path(r["log"]).is_relative_to(f) for r, f in zip(runs, folders))
    # the two sims ran at the same time: each started before the other ended (the seed scenario
    # OOMs after ~8 s of its clock)
    final = wait_for(lambda: all(_run_of(f).get("ended") for f in folders) and [_run_of(f) for f in folders],
                     timeout=90, what="both sims to end (OOM)")
    assert final[0]["started"] < final[1]["ended"] and final[1]["started"] < final[0]["ended"]
    assert [r["exit_code"] for r in final] == [137, 137]  # each its own OOM, none killed by the other
    # each log is its own sim's: it names its own port
    for r, port in zip(final, ports):
        assert f"port={port}" in Path(r["log"]).read_text()
    # q in both: each folder removed
    for w in ("one", "two"):
        tmux(env, "send-keys", "-t", f"demos:{w}", "q")
    wait_for(lambda: not _instances(root), timeout=60, what="both demo folders removed")


def test_killed_demo_is_cleaned_up_by_the_next(demo_env):
    base, env = demo_env
    root = base / "c" / "mambaconsole" / "demo"
    _open_demo(env, "one")
    [first] = wait_for(lambda: _instances(root), what="the first demo's folder")
    run = wait_for(lambda: _run_of(first), what="its sim")
    console_pid = int((first / "lock").read_text().split()[0])
    os.kill(console_pid, signal.SIGKILL)  # the console dies; its sim and tmux server stay
    _open_demo(env, "two")
    wait_for(lambda: not first.exists(), timeout=60, what="the dead demo's folder removed")
    wait_for(lambda: not _alive(run["pid"]), timeout=30, what="the dead demo's sim gone")
    [second] = wait_for(lambda: _instances(root), what="the second demo's folder")
    assert second != first
    tmux(env, "send-keys", "-t", "demos:two", "q")
    wait_for(lambda: not _instances(root), timeout=60, what="the second folder removed")
