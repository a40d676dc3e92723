"""Console start-up: launch to the first full paint of the main screen on the demo set-up, against
``python -c "import textual, asyncssh"`` measured in the same run (goal: within 2x).

"First full paint": the app has composed its four panes, drawn them once and the first
screen update has been written (headless, 120x40). Each side is the median of N runs of a
fresh Python process (wall clock from spawn to its report).

Both sides run from bytecode: the baseline's packages got theirs from pip at install time, and
the console's package is compiled here first (``compileall``, into ``__pycache__``, what Python
writes itself on the first run of the editable install unless ``PYTHONDONTWRITEBYTECODE`` is
set, as it is on some CI images: without it every run would compile ~10,000 lines of source,
~30 ms that no user's second start pays).

    .venv/bin/python bench/startup.py [N]
"""

from __future__ import annotations

import compileall
import statistics
import subprocess
import sys
import time

CHILD = r"""
import asyncio, sys, time
t0 = float(sys.argv[1])
from mambaconsole.node.local import LocalNode
from mambaconsole.ui.app import ConsoleApp
from mambaconsole.ui.feed import Feed
from mambaconsole.ui.settings import HostSettings

async def main():
    feed = Feed(LocalNode("demo"), HostSettings(python=sys.executable, module="mambaconsole.sim"), simulated=True)
    app = ConsoleApp(feed, start_workers=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.screen._compositor.render_update(full=True)  # the first full frame
        print(time.time() - t0, flush=True)
asyncio.run(main())
"""

BASE = "import sys, time; t0 = float(sys.argv[1]); import textual, asyncssh; print(time.time() - t0)"


def once(code: str) -> float:
    t0 = time.time()
    out = subprocess.run([sys.executable, "-c", code, repr(t0)], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> int:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    import mambaconsole

    compileall.compile_dir(mambaconsole.__path__[0], quiet=1)
    once(BASE)
    once(CHILD)  # warm the file cache for both
    base = statistics.median(once(BASE) for _ in range(n))
    app = statistics.median(once(CHILD) for _ in range(n))
    ratio = app / base
    print(f"baseline import textual+asyncssh: {base * 1000:.0f} ms; console first paint: {app * 1000:.0f} ms (median of {n})")
    print(f"startup: ratio to import = {ratio:.2f}x (goal 2.00x) {'PASS' if ratio <= 2.0 else 'FAIL'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
