"""Fault trials for the run store (issue 13): how often each guarantee held, repeated.

Runs on this machine (the node is ``local``: LocalNode, the real launch CLI, tmux with its own
TMUX_TMPDIR, a throwaway MAMBACONSOLE_HOME per trial):

- ``race``: 10 ``mambaconsole launch`` at once, ``TRIALS`` times: trials that started exactly
  one server (the others refused, naming the lock holder or the live run);
- ``orphan``: a lock request whose agent is orphaned before it runs (the connection cut), with
  and without ``SSH_CONNECTION``, ``TRIALS`` times each: trials that left no lock behind;
- ``cut``: a launch killed 0.1-0.9 s in (its process group: CLI, agent), ``TRIALS`` times:
  trials after which a new launch is never blocked for good (it starts, or names a live
  holder / live run; never a lock whose holder can no longer end).

Last line: ``reliability: trials held = H/T (goal T/T) PASS|FAIL``.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
AGENT = ROOT / "tui" / "mambaconsole" / "agent" / "runs_agent.py"
TRIALS = int(os.environ.get("TRIALS", "5"))
SERVER = "import os, sys, time\nwhile not os.path.exists(sys.argv[1]): time.sleep(0.05)\n"
ORPHAN = textwrap.dedent("""
    import os, sys, time
    agent, req = sys.argv[1], sys.argv[2]
    parent = os.getpid()
    if os.fork() == 0:
        while os.getppid() == parent:
            time.sleep(0.01)
        os.execv(sys.executable, [sys.executable, agent, "lock", req])
    os._exit(0)
""")


def _env(base: Path) -> dict:
    (base / "tmux").mkdir(mode=0o700, exist_ok=True)
    env = {**os.environ, "MAMBACONSOLE_HOME": str(base / "home"), "TMUX_TMPDIR": str(base / "tmux")}
    env.pop("TMUX", None)
    return env


def _launch_argv(base: Path) -> list[str]:
    (base / "standin.py").write_text(SERVER)
    return [sys.executable, "-m", "mambaconsole", "launch", "local", "--python", sys.executable, "--module", "standin",
            "--cwd", str(base), "--check-s", "0", "--", str(base / "stop")]


def _cleanup(base: Path, env: dict) -> None:
    (base / "stop").touch()
    time.sleep(0.3)
    subprocess.run(["tmux", "kill-server"], env=env, capture_output=True)
    shutil.rmtree(base, ignore_errors=True)


def race() -> tuple[int, int]:
    held = 0
    for _ in range(TRIALS):
        base = Path(tempfile.mkdtemp(prefix="mc-race-"))
        env = _env(base)
        try:
            procs = [subprocess.Popen(_launch_argv(base), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True) for _ in range(10)]
            res = [(p.wait(120), *p.communicate()) for p in procs]
            ok = [out for rc, out, _ in res if rc == 0]
            named = all("relaunch lock held by" in err or "already live" in err for rc, _, err in res if rc != 0)
            runs = list((base / "home" / "runs").iterdir())
            held += len(ok) == 1 and len(runs) == 1 and named
        finally:
            _cleanup(base, env)
    return held, TRIALS


def orphan() -> tuple[int, int]:
    held = total = 0
    for ssh in (True, False):
        for _ in range(TRIALS):
            base = Path(tempfile.mkdtemp(prefix="mc-orphan-"))
            env = _env(base)
            if ssh:
                env["SSH_CONNECTION"] = "127.0.0.1 50000 127.0.0.1 22"
            try:
                subprocess.run([sys.executable, "-c", ORPHAN, str(AGENT), json.dumps({"holder": "x"})], env=env,
                               capture_output=True, timeout=30)
                held += not (base / "home" / "relaunch.lock").exists()
                total += 1
            finally:
                _cleanup(base, env)
    return held, total


def cut() -> tuple[int, int]:
    held = 0
    for _ in range(TRIALS):
        base = Path(tempfile.mkdtemp(prefix="mc-cut-"))
        env = _env(base)
        try:
            p = subprocess.Popen(_launch_argv(base), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True)
            time.sleep(random.uniform(0.1, 0.9))
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            time.sleep(0.2)
            r = subprocess.run(_launch_argv(base), env=env, capture_output=True, text=True, timeout=120)
            # started, or refused for a live run / a live holder: fine; a lock of a gone holder
            # must be breakable (stale) and --break-stale must then start or name a live run
            if r.returncode != 0 and "--break-stale" in r.stderr and "can be broken in" not in r.stderr:
                r = subprocess.run(_launch_argv(base)[:-2] + ["--break-stale", "--", str(base / "stop")], env=env,
                                   capture_output=True, text=True, timeout=120)
            lock = base / "home" / "relaunch.lock"
            gone_holder = False
            if r.returncode != 0 and "can be broken in" in r.stderr and lock.exists():
                gone_holder = True  # a gone holder, breakable once old: it clears
            held += r.returncode == 0 or "already live" in r.stderr or gone_holder
        finally:
            _cleanup(base, env)
    return held, TRIALS


def main() -> int:
    total_held = total = 0
    for name, fn in (("race", race), ("orphan", orphan), ("cut", cut)):
        t0 = time.monotonic()
        h, t = fn()
        total_held += h
        total += t
        print(f"{name}: {h}/{t} held ({time.monotonic() - t0:.0f} s)")
    ok = total_held == total
    print(f"reliability: trials held = {total_held}/{total} (goal {total}/{total}) {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
