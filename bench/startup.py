"""Console start-up: launch to the first paint that shows the connected node's data, against the
least any console must do, measured in the same run (goal: within 2x).

Starts its own OpenSSH sshd on 127.0.0.1 (``tests/fixtures/sshd.py``) and a running run whose
log holds a real SGLang 0.5.23 boot and a few thousand serving lines (``bench/console_rig.py``).
Each side is a fresh Python process, wall clock from spawn to its report, median of N:

- baseline: ``import textual, asyncssh``, connect to ``gpu-node`` with asyncssh and read the
  run log's last 64 KiB (``tail -c``): the imports, the connection and one read;
- console: ``mambaconsole gpu-node`` as a headless app at 120x40 with its real workers, until a
  screen update is written after the state holds the run, a GPU record (here: "no GPU") and the
  log's lines, and the log pane drew them: the first paint with the node's data, not empty panes.

Both sides run from bytecode (``compileall`` first: what Python writes itself on the first run
of the editable install, unless ``PYTHONDONTWRITEBYTECODE`` is set).

    .venv/bin/python bench/startup.py [N]
"""

from __future__ import annotations

import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from console_rig import BOOT, ROOT, make_run, mix_lines  # noqa: E402
from fixtures.sshd import ssh_session  # noqa: E402

GOAL = 2.0

CHILD = r"""
import asyncio, sys, time
t0 = float(sys.argv[1]); store = sys.argv[2]
sys.path.insert(0, sys.argv[3])
from console_rig import console

async def main():
    async with console("gpu-node", store) as (app, pilot):
        done = []
        display = app._display

        def _display(screen, renderable):
            display(screen, renderable)
            st = app.state
            if (renderable is not None and not done and st.run is not None and st.gpu is not None
                    and st.log_total and app.log_pane._seen_total == st.log_total and st.reading_left() is None):
                done.append(time.time() - t0)

        app._display = _display
        while not done:
            await asyncio.sleep(0.005)
        print(done[0], flush=True)
asyncio.run(main())
"""

BASE = r"""
import sys, time
t0 = float(sys.argv[1]); log = sys.argv[2]
import asyncio, asyncssh, textual
async def main():
    async with asyncssh.connect("gpu-node") as c:
        r = await c.run("tail -c 65536 " + log, check=True)
    print(time.time() - t0, len(r.stdout))
asyncio.run(main())
"""


def once(code: str, *args: str) -> float:
    t0 = time.time()
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'tui'}:{ROOT / 'tests'}")
    out = subprocess.run([sys.executable, "-c", code, repr(t0), *args], capture_output=True, text=True, env=env,
                         timeout=120)
    if out.returncode != 0:
        raise SystemExit(f"failed: {out.stderr[-2000:]}\nstartup: ratio = inf (goal {GOAL:.2f}x) FAIL")
    return float(out.stdout.strip().splitlines()[-1].split()[0])


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    import mambaconsole

    compileall.compile_dir(mambaconsole.__path__[0], quiet=1)
    tmp = Path(tempfile.mkdtemp(prefix="mc-bench-"))
    proc = None
    try:
        log = tmp / "server.log"
        log.write_text(BOOT + "".join(mix_lines(5000, 3)))
        run_id, proc = make_run(tmp / "store", log)
        with ssh_session() as home:
            os.environ["HOME"] = str(home.home)
            os.environ.pop("SSH_AUTH_SOCK", None)
            bench = str(Path(__file__).resolve().parent)
            once(BASE, str(log))
            once(CHILD, str(tmp / "store"), bench)  # warm the file cache for both
            base = statistics.median(once(BASE, str(log)) for _ in range(n))
            app = statistics.median(once(CHILD, str(tmp / "store"), bench) for _ in range(n))
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    ratio = app / base
    print(f"baseline import textual+asyncssh, connect, read 64 KiB: {base * 1000:.0f} ms; console first paint with "
          f"the node's data: {app * 1000:.0f} ms (median of {n})")
    print(f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs while measured)")
    print(f"startup: ratio = {ratio:.2f}x (goal {GOAL:.2f}x) {'PASS' if ratio <= GOAL else 'FAIL'}")
    return 0 if ratio <= GOAL else 1


if __name__ == "__main__":
    raise SystemExit(main())
