"""The console on the simulated node, as a newcomer drives it: picking runs in the log pane
(``r``) never folds the current run's log twice; a stopped run's speculative numbers are
marked last seen; one vocabulary for run states. Expected values are read off the sim's own
log lines (SGLang's formats, sglang-observables §2) or its scenario, never the console's."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from fixtures.screen import shown
import pytest

from fixtures.console import wait_until
from mambaconsole.sglang.capacity import VERDICTS
from mambaconsole.sim import demo as sim_demo
from mambaconsole.ui.app import ConsoleApp
from mambaconsole.session.demo import Demo

pytestmark = pytest.mark.timeout(240)

SPEED = 20

# the sim's (SGLang 0.5.11's) memory lines: "KV Cache is allocated. #tokens: N, K size: X GB, V size: Y GB",
# "Mamba Cache is allocated. ... ssm_state size: X GB ... intermediate_ssm_state_cache size: Y GB ...",
# "Capture cuda graph end. ... mem usage=X GB."
_KV = re.compile(r"KV Cache is allocated\..*K size: ([\d.]+) GB, V size: ([\d.]+) GB")
_SSM = re.compile(r"Mamba Cache is allocated\..* ssm_state size: ([\d.]+)GB")
_SPEC = re.compile(r"Mamba Cache is allocated\..*intermediate_ssm_state_cache size: ([\d.]+)GB "
                   r"intermediate_conv_window_cache size: ([\d.]+)GB")
_GRAPH = re.compile(r"Capture cuda graph end\..*mem usage=([\d.]+) GB")
_DECODE_SPEC = re.compile(r"Decode batch.*accept len: ([\d.]+)")


def budget_from_log(text: str) -> dict[str, float]:
    kv = sum(float(a) + float(b) for a, b in _KV.findall(text))
    ssm = sum(float(x) for x in _SSM.findall(text))
    spec = sum(float(a) + float(b) for a, b in _SPEC.findall(text))
    graphs = sum(float(x) for x in _GRAPH.findall(text))
    return {"kv": round(kv, 2), "mamba ssm": round(ssm, 2), "mamba spec": round(spec, 2), "graphs": round(graphs, 2)}




def two_runs(demo: Demo):
    """A finished run (the seed's OOM) and then the working run, current and serving."""

    async def prepare():
        env = demo.run_env()
        old = await demo.feed.store.start(sim_demo.sim_command(sim_demo.first_failing_argv(port=demo.port), speed=SPEED),
                                          env=env, session="demo")
        for _ in range(600):
            runs = await demo.feed.store.list(adopt=False)
            if runs and not any(r.alive for r in runs):
                break
            await asyncio.sleep(0.1)
        await demo.feed.store.start(sim_demo.sim_command(sim_demo.working_argv(port=demo.port), speed=SPEED),
                                    env=env, session="demo")
        return old

    return prepare


async def pick(pilot, app, run_id: str) -> None:
    app.query_one("#log-view").focus()
    await pilot.press("r")
    await wait_until(pilot, lambda: type(app.screen).__name__ == "RunPicker", what="the run picker")
    ol = app.screen.query_one("OptionList")
    ol.highlighted = next(i for i in range(ol.option_count) if ol.get_option_at_index(i).id == run_id)
    await pilot.press("enter")
    await wait_until(pilot, lambda: type(app.screen).__name__ != "RunPicker", what="the picker closed")


async def test_picking_runs_never_folds_the_current_log_twice(demo_home):
    demo = Demo(demo_home, speed=SPEED)
    app = ConsoleApp(demo.make_feed(), poll_s=0.3, prepare=two_runs(demo), on_quit=demo.stop)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: len(app.state.runs) == 2 and app.state.status == "ready", timeout=90, what="ready")
        await wait_until(pilot, lambda: app.state.spec_n >= 3, timeout=60, what="decode batches")
        cur, old = app.state.run, app.state.runs[0]
        assert old.run_id != cur.run_id
        log = Path(cur.log_path)
        want = budget_from_log(log.read_text())
        assert all(want.values()), want  # the sim logged every item
        await wait_until(pilot, lambda: {k: round(app.state.budget_gb.get(k, 0), 2) for k in want} == want,
                         what=f"the budget {want}")

        for _ in range(2):  # old run, back to the current one: twice
            await pick(pilot, app, old.run_id)
            await wait_until(pilot, lambda: app.state.log_run_id == old.run_id and app.state.log_total > 0,
                             what="the old run's log")
            await pick(pilot, app, cur.run_id)
            await wait_until(pilot, lambda: app.state.log_run_id == cur.run_id
                             and app.state.log_offset >= log.stat().st_size - 4096, what="the current log re-read")
            await pilot.pause(0.5)
            got = {k: round(app.state.budget_gb.get(k, 0), 2) for k in want}
            assert got == want  # never doubled
            # one speculative point per decode line the log holds (read after: the log only grows)
            n_lines = len(_DECODE_SPEC.findall(log.read_text()))
            assert 0 < app.state.spec_n <= n_lines and len(app.state.spec) <= n_lines
            lens = [float(x) for x in _DECODE_SPEC.findall(log.read_text())]
            assert [round(p.accept_len, 2) for p in app.state.spec] == lens[: len(app.state.spec)]


def header(app) -> str:
    return shown(app.bar)


def spec_text(app) -> str:
    return shown(app.spec_pane.query_one("#spec-stats"))


_DECODE_USAGE = re.compile(r"Decode batch, #running-req: (\d+), .*full token usage: ([\d.]+), mamba num: \d+, "
                           r"mamba usage: ([\d.]+), .*#queue-req: (\d+)")


async def test_stopped_run_is_last_seen_and_one_vocabulary(demo_home):
    demo = Demo(demo_home, speed=SPEED)
    app = ConsoleApp(demo.make_feed(), poll_s=0.3, prepare=two_runs(demo), on_quit=demo.stop)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: len(app.state.runs) == 2 and app.state.status == "ready", timeout=90, what="ready")
        await wait_until(pilot, lambda: app.state.spec_n >= 3 and "mamba usage" in spec_text(app), timeout=60,
                         what="decode batches")
        cur, old = app.state.run, app.state.runs[0]
        # live: running / queued / usages of a decode line the log holds, each under its own name
        text = spec_text(app)
        # "queued N (admission cap)" once the batch reaches the cap: under load it may already have
        m = re.search(r"running (\d+)  queued (\d+)(?: \(([^)]*)\))?\s+full token usage ([\d.]+)  mamba usage ([\d.]+)",
                      text)
        assert m, text
        assert m[3] is None or m[3] in VERDICTS, text
        logged = {(r, q, f, mu) for r, f, mu, q in _DECODE_USAGE.findall(Path(cur.log_path).read_text())}
        assert (m[1], m[2], m[4], m[5]) in logged
        assert "throughput " in text and "last seen" not in text
        # one vocabulary: the seed's first run OOMs with exit 137 (sim scenario), the live one is ready
        assert " ● READY " in header(app)
        app.query_one("#log-view").focus()
        await pilot.press("r")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "RunPicker")
        ol = app.screen.query_one("OptionList")

        def labels():
            return {ol.get_option_at_index(i).id: str(ol.get_option_at_index(i).prompt) for i in range(ol.option_count)}

        # the old run's outcome is read from its log (the run store knows only exit 137)
        await wait_until(pilot, lambda: labels()[old.run_id].endswith("  OOM exit 137"), what="the old run's outcome")
        assert labels()[cur.run_id].endswith("  READY ← current")
        await pilot.press("escape")
        await pilot.press("h")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "HistoryScreen")
        table = app.screen.query_one("DataTable")
        await wait_until(pilot, lambda: table.row_count == 2)
        assert [str(table.get_row_at(i)[table.get_column_index("outcome")]) for i in range(2)] == ["READY", "OOM exit 137"]
        await pilot.press("escape")

        # stop it: S, y (SIGINT: exit 130 = 128 + SIGINT)
        await wait_until(pilot, lambda: type(app.screen).__name__ != "HistoryScreen")
        await pilot.press("S")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
        await pilot.press("y")
        await wait_until(pilot, lambda: app.state.status == "stopped" and app.state.run.exit_code == 130, timeout=60,
                         what="the stopped run")
        # a stop is not a crash: STOPPED (this console's stop), the exit code SIGINT gave
        await wait_until(pilot, lambda: app.state.phase is None and " ● STOPPED exit 130 " in header(app))
        assert "stopped by a console" in header(app)
        await pilot.pause(2.5)
        age = lambda: int(re.search(r"data (\d+) s ago", header(app))[1])  # noqa: E731
        a0 = age()
        assert a0 >= 2  # the server gave nothing since it stopped, although the node is polled
        await pilot.pause(1.5)
        app.bar.refresh_from(app.state)
        assert age() > a0
        text = spec_text(app)
        assert re.search(r"last seen \d+ s ago \(STOPPED exit 130\)", text), text
        assert "running " not in text and "queued " not in text and "usage" not in text
        assert "last throughput " in text and "\nthroughput" not in text and not text.startswith("throughput")
        # the same words in the picker and the history
        await pilot.press("r")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "RunPicker")
        ol = app.screen.query_one("OptionList")
        assert labels()[cur.run_id].endswith("  STOPPED exit 130 ← current")
        assert labels()[old.run_id].endswith("  OOM exit 137")
        await pilot.press("escape")
        await pilot.press("h")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "HistoryScreen")
        table = app.screen.query_one("DataTable")
        assert [str(table.get_row_at(i)[table.get_column_index("outcome")]) for i in range(2)] == ["STOPPED exit 130", "OOM exit 137"]
        await pilot.press("escape")
        # relaunching a run that is over only starts a new one
        await wait_until(pilot, lambda: type(app.screen).__name__ != "HistoryScreen")
        await pilot.press("R")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
        said = " ".join(shown(w) for w in app.screen.query("Static"))
        assert "only starts a new run" in said and "Stops run" not in said
        await pilot.press("escape")


def test_one_duration_format():
    from mambaconsole.node.runs import LockHeld
    from mambaconsole.state import fmt_duration

    assert [fmt_duration(s) for s in (0, 32, 81, 3600 + 3 * 60 + 9)] == ["0 s", "32 s", "1 min 21 s", "1 h 03 min"]
    # the node layer's messages write durations the same way
    msg = str(LockHeld({"holder": "bob@desk", "pid": 1, "holder_alive": False, "stale_after_s": 900, "age_s": 819}, "n"))
    assert "can be broken in 1 min 21 s" in msg
