"""Console start-up: launch to the first paint that shows the connected node's data, against the
least any console must do, measured in the same run (goal: within 2x).

Starts its own OpenSSH sshd on 127.0.0.1 (``tests/fixtures/sshd.py``) and a running run in the
node's run store whose log holds a real SGLang 0.5.23 boot and a few thousand serving lines
(``bench/console_rig.py``). Each side is a fresh Python process, wall clock from spawn to its
report, median of N:

- baseline: ``import textual, asyncssh``, connect to ``gpu-node`` with asyncssh and read the
  run log's last 64 KiB (``tail -c``): the imports, the connection and one read;
- console: ``mambaconsole gpu-node`` as the command line starts it (``cli.main``, the host's
  settings from a ``config.toml``: the server's python and port), in a terminal of 120x40 (a
  pty whose output is read), until a screen update is written after the state holds the run, a
  GPU record (here: "no GPU") and the log's lines, and the log pane drew them: the first paint
  with the node's data, not empty panes. The console then quits as ``q`` would.

Both sides run from bytecode (``compileall`` first: what Python writes itself on the first run
of the editable install, unless ``PYTHONDONTWRITEBYTECODE`` is set).

    .venv/bin/python bench/startup.py [N]
"""

from __future__ import annotations

import compileall
import contextlib
import fcntl
import os
import pty
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from console_rig import BOOT, ROOT, make_run, mix_lines  # noqa: E402
from fixtures.sshd import ssh_session  # noqa: E402

GOAL = 2.0

#: the console: ``mambaconsole gpu-node`` (the entry point's own call), watched from the moment
#: the command line loads the app's module; reports the seconds to the file named by argv[2]
CHILD = r"""
import sys, time
t0 = float(sys.argv[1]); report = sys.argv[2]


class Hook:
    # once the command line loads mambaconsole.ui.app (in its own time), watch its app
    def find_spec(self, name, path=None, target=None):
        if name != "mambaconsole.ui.app":
            return None
        sys.meta_path.remove(self)
        spec = next(s for s in (f.find_spec(name, path, target) for f in sys.meta_path) if s is not None)
        load = spec.loader.exec_module

        def exec_module(module):
            load(module)
            watch(module.ConsoleApp)

        spec.loader.exec_module = exec_module
        return spec


def watch(cls):
    display = cls._display
    done = []

    def _display(app, screen, renderable):
        display(app, screen, renderable)
        st = app.state
        if (renderable is not None and not done and st.run is not None and st.gpu is not None
                and st.log_total and app.log_pane._seen_total == st.log_total and st.reading_left() is None):
            done.append(time.time() - t0)
            with open(report, "w") as f:
                f.write(repr(done[0]))
            app.exit()

    cls._display = _display


sys.meta_path.insert(0, Hook())
from mambaconsole.cli import main
sys.exit(main(["gpu-node"]))
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


def _fail(why: str) -> SystemExit:
    return SystemExit(f"failed: {why}\nstartup: ratio = inf (goal {GOAL:.2f}x) FAIL")


def once(code: str, *args: str) -> float:
    """Seconds from spawning ``python -c code t0 *args`` to the time its stdout's last line
    reports."""
    t0 = time.time()
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'tui'}:{ROOT / 'tests'}")
    out = subprocess.run([sys.executable, "-c", code, repr(t0), *args], capture_output=True, text=True, env=env,
                         timeout=120)
    if out.returncode != 0:
        raise _fail(out.stderr[-2000:])
    return float(out.stdout.strip().splitlines()[-1].split()[0])


def once_in_terminal(code: str, report: Path) -> float:
    """Seconds from spawning ``python -c code t0 report`` in a terminal of 120x40 (a pty, its
    output read and let go, as a terminal would) to the time it writes to ``report``."""
    report.unlink(missing_ok=True)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))
    shown = bytearray()  # the terminal's last 4 KiB: said when the console fails

    def read() -> None:
        with contextlib.suppress(OSError):  # EIO: the console and its children closed the pty
            while chunk := os.read(master, 1 << 16):
                shown.extend(chunk)
                del shown[:-4096]

    reader = threading.Thread(target=read, daemon=True)
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'tui'}:{ROOT / 'tests'}", TERM="xterm-256color")
    t0 = time.time()
    try:
        proc = subprocess.Popen([sys.executable, "-c", code, repr(t0), str(report)], stdin=slave, stdout=slave,
                                stderr=slave, env=env, start_new_session=True)
    finally:
        os.close(slave)
    reader.start()
    try:
        rc: int | str = proc.wait(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = f"killed after 120 s (rc {proc.wait()})"
    reader.join(5)
    os.close(master)
    if rc != 0 or not report.exists():
        raise _fail(f"console exit {rc}; its terminal's end: {shown.decode(errors='replace')[-1500:]!r}")
    return float(report.read_text())


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    import mambaconsole

    compileall.compile_dir(mambaconsole.__path__[0], quiet=1)
    tmp = Path(tempfile.mkdtemp(prefix="mc-bench-"))
    proc = None
    try:
        log = tmp / "server.log"
        log.write_text(BOOT + "".join(mix_lines(5000, 3)))
        with ssh_session() as home:
            _, proc = make_run(home.sshd.node_home, log)  # the node's own run store, as a user's
            os.environ["HOME"] = str(home.home)
            os.environ.pop("SSH_AUTH_SOCK", None)
            # the host's settings as a user writes them: the server's python (SGLang's; here this
            # one) and its HTTP port (nothing listens on port 1: the console says so)
            config = tmp / "config.toml"
            config.write_text(f'[hosts.gpu-node]\npython = "{sys.executable}"\nport = 1\n')
            os.environ["MAMBACONSOLE_CONFIG"] = str(config)
            report = tmp / "report"
            once(BASE, str(log))
            once_in_terminal(CHILD, report)  # warm the file cache for both
            base = statistics.median(once(BASE, str(log)) for _ in range(n))
            app = statistics.median(once_in_terminal(CHILD, report) for _ in range(n))
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
