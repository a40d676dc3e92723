"""The console on the simulated node, as a newcomer drives it: picking runs in the log pane
(``r``) never folds the current run's log twice; a stopped run's speculative numbers are
marked last seen; one vocabulary for run states. Expected values are read off the sim's own
log lines (SGLang's formats, sglang-observables §2) or its scenario, never the console's."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from fixtures.console import wait_until
from mambaconsole.sim import demo as sim_demo
from mambaconsole.ui.app import ConsoleApp
from mambaconsole.ui.demo import Demo

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


from test_demo_console import demo_home  # noqa: E402,F401 - the demo tests' set-up (a fixture)


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
