"""What the benchmarks that time the whole console share: a run on a loopback-SSH node, a
headless :class:`~mambaconsole.ui.app.ConsoleApp` with its real workers (node agent, feed,
state, panes), and a realistic line mix. Not a benchmark itself.

- :func:`mix_lines`: SGLang log lines in the proportions of ``bench/parse_throughput.py``
  (every format the parser knows: decode and prefill batches of both generations, scheduler
  debug lines, request traces, uvicorn access lines, warnings, memory lines, a scheduler
  traceback, progress bars), with their timestamps; or (:data:`SERVING`) a long-running
  server's: the same without the startup formats, with failed requests' tracebacks.
- :data:`BOOT`: the boot of a real SGLang 0.5.23 server, up to its ready line
  (``tests/data/logs/real-0.5.23-qnext.log``).
- :func:`make_run`: a run record on the node (``runs/<id>/`` with ``argv.json`` and
  ``status.json``) whose "server" is a live ``sleep`` (so the run reads as running), its log
  the given file.
- :func:`console`: the app on ``ssh ALIAS`` (``tests/fixtures/sshd.py``), as ``mambaconsole
  ALIAS`` starts it, headless at a given size.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tui"), str(ROOT / "tests"), str(ROOT / "bench")]

from parse_throughput import TEMPLATES  # noqa: E402

BOOT_LOG = ROOT / "tests" / "data" / "logs" / "real-0.5.23-qnext.log"
_boot = BOOT_LOG.read_text().splitlines(keepends=True)
#: a real boot, up to and with its ready line
BOOT = "".join(_boot[:next(i for i, ln in enumerate(_boot) if "fired up and ready to roll" in ln) + 1])


#: a request that failed in the HTTP handler while the server goes on serving (uvicorn's lines
#: around a traceback; tests/data/logs/request-error.log, its middle frames left out)
REQUEST_ERROR = (
    '[{ts}] INFO:     127.0.0.1:{b} - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'
    "[{ts}] ERROR:    Exception in ASGI application\nTraceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.10/dist-packages/uvicorn/protocols/http/httptools_impl.py", line 399, in run_asgi\n'
    "    result = await app(  # type: ignore[func-returns-value]\n"
    '  File "/usr/local/lib/python3.10/dist-packages/transformers/tokenization_utils_base.py", line 2025, in get_chat_template\n'
    "    raise ValueError(\n"
    "ValueError: Cannot use chat template functions because tokenizer.chat_template is not set and no template "
    "argument was passed!")
#: the startup-only formats (weights, pools, graph capture, a scheduler's crash, progress bars):
#: in a long log they belong to its boot, not to its middle
_STARTUP = ("Load weight end", "Cache is allocated", "CUDA graph end", "Scheduler hit an exception", "Capturing batches")
#: a long-running server's lines: the mix without the startup formats, with request errors
SERVING = [(w, t) for w, t in TEMPLATES if not any(k in t for k in _STARTUP)] + [(0.2, REQUEST_ERROR)]


def mix_lines(n: int, seed: int = 1234, t0: float | None = None, rate: float = 20_000.0,
              templates: list = TEMPLATES) -> list[str]:
    """``n`` lines of the realistic mix (each ending with a newline; a traceback is several
    lines), stamped as if written at ``rate`` lines/s from ``t0`` (unix seconds, default now).
    ``templates``: :data:`TEMPLATES` (every format the parser knows) or :data:`SERVING`."""
    rng = random.Random(seed)
    weights = [w for w, _ in templates]
    tmpls = [t for _, t in templates]
    t0 = time.time() if t0 is None else t0
    out: list[str] = []
    while len(out) < n:
        ts = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t0 + len(out) / rate))
        s = rng.choices(tmpls, weights)[0].format(ts=ts, a=rng.randrange(1, 64), b=rng.randrange(100, 99999),
                                                 c=rng.randrange(100), d=rng.randrange(100), e=rng.randrange(10))
        out.extend(ln + "\n" for ln in s.split("\n"))
    return out[:n]


def write_log(path: Path, nbytes: int, *, seed: int = 7) -> int:
    """A log of about ``nbytes``: :data:`BOOT`, then the serving mix (:data:`SERVING`; 8 MiB of
    it, repeated: writing 1 GiB takes seconds, not minutes), then 2,000 fresh lines; returns
    its size."""
    block = "".join(mix_lines(40_000, seed, t0=time.time() - 2 * 86400, templates=SERVING)).encode()
    tail = "".join(mix_lines(2000, seed + 1, t0=time.time() - 5, templates=SERVING)).encode()
    with open(path, "wb") as f:
        f.write(BOOT.encode())
        left = nbytes - len(BOOT) - len(tail)
        while left > 0:
            piece = block[:left]
            cut = piece.rfind(b"\n") + 1 if len(piece) < len(block) else len(piece)
            f.write(piece[:cut] if cut else piece)
            left -= len(block)
        f.write(tail)
    return path.stat().st_size


def _start_ticks(pid: int) -> int:
    data = Path(f"/proc/{pid}/stat").read_bytes()
    return int(data[data.rindex(b")") + 2:].split()[19])


def make_run(home: Path, log: Path, run_id: str = "20261201-000000-bench") -> tuple[str, subprocess.Popen]:
    """A running run ``run_id`` in the store ``home`` (``$MAMBACONSOLE_HOME``) whose log is
    ``log``; returns the id and its "server" (a ``sleep``: kill it when done)."""
    argv = ["sleep", "3600"]
    proc = subprocess.Popen(argv)
    d = home / "runs" / run_id
    d.mkdir(parents=True, exist_ok=True)
    (d / "argv.json").write_text(json.dumps(argv))
    now = time.time()
    (d / "status.json").write_text(json.dumps({
        "pid": proc.pid, "pid_start_ticks": _start_ticks(proc.pid), "state": "running", "started": now - 2 * 86400,
        "created": now - 2 * 86400, "wrapper_pid": os.getpid(), "log_path": str(log)}))
    return run_id, proc


@contextlib.asynccontextmanager
async def console(alias: str, home: Path, *, size=(120, 40), **settings):
    """The console on ``ssh alias`` with the run store ``home``, headless, its workers running;
    yields ``(app, pilot)``. ``settings``: :class:`HostSettings` fields (``log_tail_mib``, ...).
    As the command line does (``cli.main``), the garbage collector is held from before the app
    is imported until the app releases it (the log's history read, or ``COLLECTOR_HELD_S``)."""
    from mambaconsole.ui import hold_collector, release_collector

    hold_collector()
    try:
        from mambaconsole.node.ssh import SSHNode
        from mambaconsole.ui.app import ConsoleApp
        from mambaconsole.session.feed import Feed
        from mambaconsole.session.settings import HostSettings

        s = HostSettings(python=sys.executable, port=1, **settings)
        feed = Feed(SSHNode(alias), s, home=str(home), agent_python=sys.executable, adopt=False)
        app = ConsoleApp(feed, poll_s=s.poll_s, on_quit=feed.close)
        async with app.run_test(size=size) as pilot:
            yield app, pilot
    finally:
        release_collector()


def state_right(app, run_id: str, size: int) -> bool:
    """The state is right: the run's log is read to ``size`` (its history done), its boot
    facts are in (the ServerArgs dump, the ready line) and the log pane drew the last lines."""
    st = app.state
    return (st.log_run_id == run_id and st.log_offset >= size and st.reading_left() is None
            and st.dumped_args is not None and st.ready_seen
            and getattr(app.log_pane, "_seen_total", -1) == st.log_total)
