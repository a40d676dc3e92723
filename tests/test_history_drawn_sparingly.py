"""While the console reads a log's history (the header says ``reading N MiB``), the log pane is
redrawn every LOG_DRAW_ALL_S, not every LOG_DRAW_S: each redraw hands the pane up to its kept
lines, so redrawing it often during a long read classified and laid out most of the history's
lines only to drop them at the next redraw. The header goes on every LOG_DRAW_S. Input: the
real SGLang 0.5.23 log's lines (tests/data/logs), repeated into a long run log."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest

from fixtures.console import wait_until
from mambaconsole.node.local import LocalNode
from mambaconsole.session.feed import Feed
from mambaconsole.session.settings import HostSettings
from mambaconsole.ui import app as app_mod
from mambaconsole.ui.app import ConsoleApp
from mambaconsole.ui.header import StatusBar
from mambaconsole.ui.log_pane import LogPane

pytestmark = pytest.mark.timeout(180)

REAL = (Path(__file__).parent / "data" / "logs" / "real-0.5.23-qnext.log").read_bytes().splitlines(keepends=True)


async def test_the_log_pane_is_redrawn_sparingly_while_the_history_is_read(tmp_path, monkeypatch):
    log = tmp_path / "server.log"
    body = b"".join(REAL)
    with open(log, "wb") as f:
        for _ in range(max(1, 80_000 // len(REAL))):
            f.write(body)
    size = log.stat().st_size
    d = tmp_path / "home" / "runs" / "20261201-100000-aaaa"
    d.mkdir(parents=True)
    (d / "argv.json").write_text(json.dumps(["sleep", "1"]))
    (d / "status.json").write_text(json.dumps({"state": "exited", "exit_code": 0, "started": 1000.0,
                                               "log_path": str(log)}))
    drawn: list[tuple[str, float, bool]] = []  # (pane, when, history still being read)

    def noting(cls, name):
        real = cls.refresh_from

        def refresh_from(self, state, *a, **kw):
            drawn.append((name, time.monotonic(), state.reading_left() is not None))
            return real(self, state, *a, **kw)
        monkeypatch.setattr(cls, "refresh_from", refresh_from)

    noting(LogPane, "log")
    noting(StatusBar, "header")
    feed = Feed(LocalNode(), HostSettings(python=sys.executable, log_tail_mib=2 * size / 2**20 + 1),
                home=str(tmp_path / "home"), agent_python=sys.executable, adopt=False)
    app = ConsoleApp(feed, poll_s=0.3, on_quit=feed.close)
    async with app.run_test(size=(120, 40)) as pilot:
        st = app.state
        await wait_until(pilot, lambda: st.log_offset >= size and st.reading_left() is None
                         and app.log_pane._seen_total == st.log_total, timeout=150, what="the whole history read")
        await asyncio.sleep(0.3)
    reading = [(p, t) for p, t, r in drawn if r]
    assert reading, "no redraw while the history was read"
    span = reading[-1][1] - reading[0][1]
    # the read lasted long enough for the header to be redrawn several times at LOG_DRAW_S
    assert span >= 3 * app_mod.LOG_DRAW_S, f"the history was read in {span:.2f} s: too fast to tell"
    log_times = [t for p, t in reading if p == "log"]
    gaps = [b - a for a, b in zip(log_times, log_times[1:])]
    assert all(g >= 0.9 * app_mod.LOG_DRAW_ALL_S for g in gaps), gaps
    head_times = [t for p, t in reading if p == "header"]
    assert len(head_times) >= 3 and len(head_times) > len(log_times)
    # and once read, the log pane shows the end of the history
    assert app.log_pane._seen_total == st.log_total and st.log[-1].text == REAL[-1].decode().rstrip("\n")
