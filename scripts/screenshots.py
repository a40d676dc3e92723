"""Save the README's screenshots (SVG) from the real console on the simulated node.

    .venv/bin/python scripts/screenshots.py [OUT_DIR]        # default: screenshots/

Walks the demo's loop with Textual's Pilot at 120x40: the seed scenario's OOM, the editor with
the pre-flight refusing ``no_buffer``, the capped edit relaunched to ready, the history; plus
the main screen in the light and high-contrast themes. Runs the sim 20x faster; its demo home
is a temp folder (never the user's cache dir).

The pictures show no folder of the machine that made them: the sim is started as ``python``
(this python's folder first on PATH), so its command line reads ``python -m mambaconsole.sim
...``, and its traceback frames name :data:`NEUTRAL_SITE` (``$MAMBACONSOLE_SIM_SITE_PACKAGES``).
The SVGs are saved through ``ConsoleApp.save_screenshot``, which makes them render with
``rsvg-convert`` (:func:`mambaconsole.ui.screenshot.portable_svg`).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from mambaconsole.node import tmux_server
from mambaconsole.ui.app import ConsoleApp
from mambaconsole.sim.server import ENV_SITE
from mambaconsole.session.demo import Demo

SIZE = (120, 40)
#: where the pictures' traceback frames say SGLang is installed
NEUTRAL_SITE = f"/home/user/venv/lib/python{sys.version_info.major}.{sys.version_info.minor}/site-packages"


async def wait(pilot, pred, timeout=90.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if pred():
                return
        except Exception:  # noqa: BLE001 - a widget not mounted yet
            pass
        await pilot.pause(0.2)
    raise SystemExit(f"screenshots: timed out waiting for {what}")


async def main(out: Path) -> None:
    home = Path(tempfile.mkdtemp(prefix="mc-shots-"))
    # `python` on the runs' command line is this python (its venv's bin first on PATH, unresolved)
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    demo = Demo(home, speed=20, python="python", extra_env={ENV_SITE: NEUTRAL_SITE})
    app = ConsoleApp(demo.make_feed(), poll_s=0.5, prepare=demo.start, on_quit=demo.stop)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await wait(pilot, lambda: app.state.status == "oom" and app.state.rows, what="the OOM")
            await pilot.pause(1.5)
            app.save_screenshot("oom.svg", path=str(out))
            first = app.state.run.run_id
            await pilot.press("e")
            await wait(pilot, lambda: type(app.screen).__name__ == "EditorScreen" and app.screen.params)
            ed = app.screen
            ed.query_one("#f-mamba_scheduler_strategy").value = "no_buffer"
            await pilot.press("ctrl+r")
            await wait(pilot, lambda: ed.verdict is not None and ed.verdict_for == ed.edited_args(), what="pre-flight")
            await pilot.pause(0.3)
            app.save_screenshot("editor-preflight-error.svg", path=str(out))
            ed.query_one("#f-mamba_scheduler_strategy").value = "extra_buffer"
            ed.query_one("#f-max_mamba_cache_size").value = "24"
            ed.query_one("#f-mamba_full_memory_ratio").value = "0.4"
            await pilot.press("ctrl+r")
            await wait(pilot, lambda: ed.verdict_for == ed.edited_args() and ed.verdict.get("ok"), what="pre-flight ok")
            await pilot.pause(0.3)
            app.save_screenshot("editor-preflight-ok.svg", path=str(out))
            await pilot.press("ctrl+y")
            await wait(pilot, lambda: app.state.run.run_id != first and app.state.status == "ready", what="ready")
            await wait(pilot, lambda: app.state.spec_n >= 25, what="decode batches")
            await pilot.pause(1.0)
            app.save_screenshot("main.svg", path=str(out))
            for theme in ("mamba-light", "mamba-contrast"):
                app.theme = theme
                await pilot.pause(0.5)
                app.save_screenshot(f"main-{theme.split('-')[1]}.svg", path=str(out))
            app.theme = "mamba-dark"
            await pilot.press("h")
            await wait(pilot, lambda: type(app.screen).__name__ == "HistoryScreen")
            await pilot.pause(2.0)
            app.save_screenshot("history.svg", path=str(out))
    finally:
        tmux_server.kill_server(home / "tmux")
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "screenshots").resolve()
    out.mkdir(parents=True, exist_ok=True)
    asyncio.run(main(out))
    print(f"screenshots: saved in {out}")
