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


async def test_what_a_history_redraw_left_is_drawn_though_no_more_history_comes(monkeypatch):
    """The history's lines stop coming mid-read (a slow or stalled link): the lines already
    folded reach the log pane at the other panes' next turn (LOG_DRAW_ALL_S after their last
    redraw), not only when more of the history arrives. Lines: SGLang 0.5.23's own (REAL)."""
    from mambaconsole.state import LogLine, LogLines, RunInfo, RunsListed
    from mambaconsole.ui import messages as M

    monkeypatch.setattr(app_mod, "LOG_DRAW_S", 0.05)
    monkeypatch.setattr(app_mod, "LOG_DRAW_ALL_S", 0.6)
    app = ConsoleApp(Feed(LocalNode("t"), HostSettings()), start_workers=False)
    texts = [ln.decode().rstrip("\n") for ln in REAL[:40]]
    offsets, off = [], 0
    for t in texts:
        offsets.append(off)
        off += len(t.encode()) + 1
    opened = 10 * off  # the file held ten times these lines when it was opened: history left

    def piece(i: int, j: int) -> LogLines:
        return LogLines("r1", tuple(LogLine("r1", offsets[k], texts[k], len(texts[k].encode())) for k in range(i, j)),
                        size=opened, opened_size=opened if i == 0 else None, time_shift=0.0 if i == 0 else None)

    async with app.run_test(size=(120, 40)) as pilot:
        st = app.state
        st.apply(RunsListed((RunInfo("r1", log_path="/x", state="running"),), "r1"))
        st.show_log_of("r1")
        await pilot.pause(0)
        app.session.intake.put(piece(0, 20))
        app.post_message(M.LogPending())
        await wait_until(pilot, lambda: app.log_pane._seen_total == 20, timeout=10, what="the first piece drawn")
        app.session.intake.put(piece(20, 40))  # the last piece before the link stalls
        app.post_message(M.LogPending())
        await wait_until(pilot, lambda: st.log_total == 40, timeout=10, what="the second piece folded")
        assert st.reading_left() is not None  # still reading: nothing more comes
        await wait_until(pilot, lambda: app.log_pane._seen_total == 40, timeout=3 * app_mod.LOG_DRAW_ALL_S,
                         what="the second piece drawn without more history")
