"""The suite run from inside a user's tmux leaves that tmux alone.

A canary tmux server stands in for the user's: ``$TMUX`` points at it (as in any tmux pane) and
it is also the default server of ``$TMUX_TMPDIR``. The tests that start, drive and kill tmux
servers (one per fixture that owns one: ``node_home``, ``sshd_server``/``ssh_home``,
``demo_home``, ``two_nodes``, and the tests that call ``tmux`` themselves) run in a child pytest with that
environment and without the suite-wide guard (``fixtures/tmux.py``), so each fixture has to name
its own server. Afterwards the canary is alive with exactly the session and window it had.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from mambaconsole.node import tmux_server

ROOT = Path(__file__).resolve().parents[1]

#: one test per fixture that owns a tmux server, and the tests that run ``tmux`` themselves
TMUX_TESTS = [
    "tests/test_runs.py::test_launch_log_from_first_line_exit_code",       # node_home
    "tests/test_runs.py::test_adopt_server_started_by_hand_in_tmux",       # ssh_home, sshd_server
    "tests/test_source_view.py::test_view_source_on_the_simulated_node",   # demo_home, the Demo
    "tests/test_sim_demo_loop.py::test_demo_loop_through_launch_local",    # launch local
    "tests/test_multinode_runs.py::test_a_live_server_on_one_node_starts_no_rank",  # two_nodes
]

pytestmark = [pytest.mark.timeout(600),
              pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")]


def _canary_state(sock: Path) -> str:
    r = subprocess.run(["tmux", "-S", str(sock), "list-windows", "-a", "-F", "#{session_name}:#{window_name}:#{pid}"],
                       env=tmux_server.clean_env(), capture_output=True, text=True, timeout=10)
    return r.stdout if r.returncode == 0 else f"(canary gone: {r.stderr.strip()})"


def test_suite_inside_tmux_leaves_the_users_server_alone():
    base = Path(tempfile.mkdtemp(prefix="mc-canary-"))  # short: socket paths are limited
    sock = tmux_server.socket_path(base)
    try:
        tmux_server.run(base, "new-session", "-d", "-s", "user", "-n", "work", "sleep 3600", check=True)
        before = _canary_state(sock)
        pid = before.strip().rsplit(":", 1)[1]
        assert pid.isdigit(), before
        env = dict(os.environ, TMUX=f"{sock},{pid},0", TMUX_PANE="%0", TMUX_TMPDIR=str(base))
        r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:fixtures.tmux",
                            "-p", "no:cacheprovider", *TMUX_TESTS],
                           cwd=ROOT, env=env, capture_output=True, text=True, timeout=540)
        assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
        assert _canary_state(sock) == before, "the tests touched the user's tmux server"
    finally:
        tmux_server.kill_server(base)
        shutil.rmtree(base, ignore_errors=True)
