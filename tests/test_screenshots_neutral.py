"""The README's screenshots (issue 17, polish): they show no folder of the machine that made
them, and they render with ``rsvg-convert`` without glued words.

- The sim's GPU process line is its own command line as ``/proc/PID/cmdline`` holds it (the node
  agent reads a real server's there), so a sim started as ``python`` reads ``python -m
  mambaconsole.sim ...``, not this machine's venv path; its traceback frames name
  ``$MAMBACONSOLE_SIM_SITE_PACKAGES`` when set.
- A saved screenshot keeps the spaces that start an SVG ``<text>`` (``xml:space="preserve"``:
  librsvg drops them otherwise) and names a font with the box-drawing glyphs.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from pathlib import Path

from mambaconsole.sim import demo

NEUTRAL = "/home/user/venv/lib/python3.11/site-packages"
ENV_SITE = "MAMBACONSOLE_SIM_SITE_PACKAGES"  # the name the sim's docstring gives


def _path_first() -> dict[str, str]:
    """``python`` on PATH is this python (its folder first, not resolved)."""
    return {"PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}


def test_sim_frames_name_the_given_site_packages(sim_process, free_port):
    run = sim_process("0.5.11", demo.first_failing_argv("0.5.11", port=free_port), python="python",
                      env={**_path_first(), ENV_SITE: NEUTRAL})
    assert run.wait() == -signal.SIGKILL  # the seed's OOM: SGLang's self-SIGKILL
    frames = re.findall(r'File "([^"]+)"', run.text())
    sglang = [f for f in frames if "/sglang/" in f]
    assert sglang and all(f.startswith(NEUTRAL + "/sglang/") for f in sglang), sglang
    assert sys.prefix not in run.text()


def test_sim_gpu_process_is_its_own_command_line(sim_process, free_port):
    argv = demo.working_argv("0.5.11", port=free_port)
    run = sim_process("0.5.11", argv, python="python", env=_path_first())
    run.wait_for("The server is fired up and ready to roll!")
    deadline = time.monotonic() + 10
    while not run.gpu()["gpus"][0]["processes"] and time.monotonic() < deadline:
        time.sleep(0.05)
    (proc,) = run.gpu()["gpus"][0]["processes"]
    # as the node agent joins a real one (node_agent._cmdline_text): NUL-separated argv, spaces
    real = b" ".join(Path(f"/proc/{run.proc.pid}/cmdline").read_bytes().split(b"\0")[:-1]).decode()
    assert proc["cmdline"] == real
    assert proc["cmdline"].startswith("python -m mambaconsole.sim ") and sys.executable not in proc["cmdline"]


async def test_saved_screenshot_renders_outside_a_browser(tmp_path):
    from mambaconsole.node.local import LocalNode
    from mambaconsole.session.settings import HostSettings
    from mambaconsole.ui.app import ConsoleApp
    from mambaconsole.session.feed import Feed

    app = ConsoleApp(Feed(LocalNode("t"), HostSettings()), start_workers=False)  # the console without a node
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.2)
        saved = Path(app.save_screenshot("x.svg", path=str(tmp_path)))
        exported = app.export_screenshot()
    svg = saved.read_text()
    root = re.search(r"<svg\b[^>]*>", svg).group(0)
    assert 'xml:space="preserve"' in root
    family = re.search(r"font-family:\s*([^;]+);", svg[svg.index("-matrix"):]).group(1)
    assert "DejaVu Sans Mono" in family and family.index("DejaVu Sans Mono") < family.index("monospace")
    # the same picture otherwise: strip the two changes and the rest is Textual's export
    body = lambda s: re.sub(r"terminal-\d+", "T", s.split("<style>", 1)[1].split("</style>", 1)[1])  # noqa: E731
    assert body(svg) == body(exported)
