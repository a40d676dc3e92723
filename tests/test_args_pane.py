"""The ServerArgs pane on the simulated node, driven by Pilot: the live server's values next to
the resolved ones (the sim's /server_info and its log, read here with httpx and a regex), the
given value of an overridden field (from the run's argv), and columns sized to the pane's
width (nothing cut when the pane is wide enough)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from fixtures.console import wait_until
from mambaconsole.sim import demo as sim_demo
from mambaconsole.ui.app import ConsoleApp
from mambaconsole.ui.demo import Demo

from test_demo_console import SPEED

pytestmark = pytest.mark.timeout(240)


def _cells(table) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def test_args_pane_shows_live_values_given_values_and_full_width(demo_home):
    demo = Demo(demo_home, speed=SPEED)
    argv = sim_demo.working_argv(port=demo.port)

    async def start_working():
        await demo.feed.store.start(sim_demo.sim_command(argv, speed=SPEED), env=demo.run_env(), session="demo")

    app = ConsoleApp(demo.make_feed(), poll_s=0.3, prepare=start_working, on_quit=demo.stop)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_until(pilot, lambda: app.state.status == "ready", timeout=60, what="ready")
        # what SGLang used, read off the run's own log and the live /server_info
        log = Path(app.state.run.log_path).read_text()
        logged = int(re.search(r"max_running_requests=(\d+), context_len", log).group(1))
        info = httpx.get(f"http://127.0.0.1:{demo.port}/server_info", timeout=10).json()
        effective = info["internal_states"][0]["effective_max_running_requests_per_dp"]
        asked = argv[argv.index("--max-running-requests") + 1]
        assert logged == effective and str(logged) != asked  # the scenario: capped by the Mamba cache
        await wait_until(pilot, lambda: app.state.server_info and app.state.rows, what="server_info and rows")

        await pilot.press("3")  # focus the ServerArgs pane, then zoom it
        await pilot.press("z")
        await pilot.pause(0.3)
        table = app.args_pane.query_one("DataTable")
        rows = _cells(table)
        mrr = next(r for r in rows if r[0] == "--max-running-requests")
        assert re.fullmatch(rf"{asked} → {logged} live", mrr[1]), mrr
        assert "live" in mrr[1] and "·" in mrr[2]  # where the live value was read
        note = str(app.args_pane.query_one("#args-note").render())
        assert re.search(r"\b[1-9]\d* differs? from the live server", note), note
        # the given value of an overridden row (the argv gave NEXTN; SGLang used EAGLE)
        given = argv[argv.index("--speculative-algorithm") + 1]
        algo = next(r for r in rows if r[0] == "--speculative-algorithm")
        assert algo[2].startswith("overridden") and f"given {given}" in algo[1], algo
        # wide enough: no flag, value or writer is cut (no ellipsis anywhere)
        assert table.size.width >= 150
        flags = [r[0] for r in rows]
        assert "--mamba-scheduler-strategy" in flags and "--speculative-num-draft-tokens" in flags
        widths = [c.width for c in table.columns.values()]
        assert sum(widths) + 4 * 2 <= table.size.width
        model = next(r for r in rows if r[0] == "--model-path")
        assert widths[1] >= len(model[1]) and widths[0] >= len("--speculative-num-draft-tokens")
        by = [r[3] for r in rows if r[3]]
        assert by and widths[3] >= max(map(len, by)), (widths, max(by, key=len))
        # the live filter keeps only the disagreeing rows
        while app.args_pane.mode != "live":
            app.args_pane.action_cycle_filter()
        await pilot.pause(0.2)
        live_rows = _cells(table)
        assert live_rows and all("live" in r[1] for r in live_rows)
        # un-zoomed (narrower pane): the columns shrink to fit
        await pilot.press("z")
        await wait_until(pilot, lambda: table.size.width < 150
                         and sum(c.width for c in table.columns.values()) + 4 * 2 <= table.size.width,
                         timeout=10, what="the columns re-laid out for the narrower pane")
        narrow = [c.width for c in table.columns.values()]
        assert sum(narrow) + 4 * 2 <= max(table.size.width, 40)
