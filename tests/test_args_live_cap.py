"""``v`` on a ServerArgs row whose live value SGLang set at runtime (``--max-running-requests 16``
given, 4 live: the scheduler's ready summary) explains it with the log line it came from; it
said "no SGLang code wrote this value". The app is fed the recorded simulated run of the
snapshot tests (tests/data/console/sim-ready.log); the expected line is read off that file."""

from __future__ import annotations

import re

from fixtures.console import wait_until
from test_console_snapshots import DATA, feed_recorded, frozen_app


async def test_v_on_a_runtime_cap_shows_the_log_line(monkeypatch):
    log = (DATA / "sim-ready.log").read_text().splitlines()
    [line] = [ln for ln in log if re.search(r"\bmax_running_requests=\d+, context_len=", ln)]
    live = int(re.search(r"max_running_requests=(\d+)", line)[1])
    app = frozen_app(monkeypatch)
    async with app.run_test(size=(120, 40)) as pilot:
        feed_recorded(app)
        await pilot.pause()
        row = next(r for r in app.state.rows if r.field == "max_running_requests")
        assert row.value == 16 and row.live == live == 4 and row.disagrees
        await pilot.press("3")
        pane = app.args_pane
        await wait_until(pilot, lambda: any(r.field == "max_running_requests" for r in pane._rows))
        pane.query_one("DataTable").move_cursor(row=next(i for i, r in enumerate(pane._rows)
                                                         if r.field == "max_running_requests"))
        await pilot.press("v")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "SourceScreen", what="the explanation")
        await pilot.pause()
        body = " ".join(str(app.screen.query_one("#src-body").render()).split())
        assert " ".join(line.split()) in body  # the log line itself
        assert "at runtime" in body and "srt/managers/scheduler.py" in body
        assert "no SGLang code wrote this value" not in body
