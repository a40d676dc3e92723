"""The fleet screen (Pilot): one row per worker, a disagreement marked, the ServerArgs
differences listed, Enter opens the console on the worker's host (or says why it cannot)."""

from __future__ import annotations

from mambaconsole.session.fleet import Fleet, Snapshot, WorkerRow, disagreements
from mambaconsole.sglang.fleet_args import diff_server_args
from mambaconsole.sglang.latency import Latency
from mambaconsole.ui.fleet import FleetApp

P, D = "http://gpu-a:30000", "http://gpu-b:30001"


def _snapshot() -> Snapshot:
    p = WorkerRow(url=P, role="prefill", host="gpu-a", router_health="healthy", engine_health="healthy",
                  version="0.5.23", version_source="engine", running=4, queued=12, kv_usage=0.31, mamba_usage=0.5,
                  accept_length=2.71, gpu_weights_gib=51.2, gpu_kv_gib=22.1,
                  latency=Latency(ttft_p50=0.35, ttft_p99=0.594, itl_p50=0.021, itl_p99=0.05, window_s=60.0),
                  args={"mamba_ssm_dtype": "float32", "page_size": 1}, data_age_s=0.0)
    d = WorkerRow(url=D, role="decode", host=None, router_health="healthy", engine_health="dead",
                  engine_detail="connection refused", version="0.5.23", version_source="router (at registration)",
                  args={"mamba_ssm_dtype": "bfloat16", "page_size": 1})
    dis = disagreements(d, None, "0.5.23")
    diffs = diff_server_args([(P, "prefill", p.args), (D, "decode", d.args)])
    return Snapshot([p, d], dis, diffs, {}, 0.0)


class StubFleet(Fleet):
    def __init__(self, snap: Snapshot) -> None:
        self.snap = snap
        self.polls = 0

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc) -> None:
        pass

    async def poll(self) -> Snapshot:
        self.polls += 1
        return self.snap


async def test_rows_disagreement_and_differences():
    app = FleetApp(StubFleet(_snapshot()), poll_s=30)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        table = app.query_one("DataTable")
        assert table.row_count == 2
        first = [str(c) for c in table.get_row_at(0)]
        second = [str(c) for c in table.get_row_at(1)]
        assert first[0] == "" and first[1] == "gpu-a:30000" and first[2] == "prefill" and first[11] == "350/594"
        assert second[0] == "!" and second[4] == "dead" and second[3] == "healthy"
        notes = str(app.query_one("#fleet-notes").render())
        assert f"! {D}: health: router says healthy, engine says dead (connection refused)" in notes
        table = app.args_table
        assert list(table[0][:4]) == ["field", "between", "gpu-a:30000", "gpu-b:30001"]
        assert list(table[1][:4]) == ["mamba_ssm_dtype", "prefill/decode", "'float32'", "'bfloat16'"]
        status = str(app.query_one("#fleet-status").render())
        assert "2 workers · 1 disagreements · TTFT/ITL over the last 60 s" in status


async def test_enter_opens_the_console_on_the_workers_host():
    app = FleetApp(StubFleet(_snapshot()), poll_s=30)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("enter")
        await pilot.pause()
    assert app.return_value == ("gpu-a", 30000)


async def test_enter_on_a_worker_without_a_host_says_why():
    app = FleetApp(StubFleet(_snapshot()), poll_s=30)
    async with app.run_test(size=(120, 40)) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("down", "enter")
        await pilot.pause()
        assert app.is_running
        assert any("no [hosts] entry maps to this worker" in n.message for n in app._notifications)


def test_enter_runs_the_console_and_comes_back(monkeypatch):
    """ui.fleet.run: the worker chosen with Enter opens the console on a session made for its
    host and port as ``mambaconsole HOST --port N`` makes one; quitting the console shows the
    fleet again; quitting the fleet ends."""
    import argparse

    from mambaconsole.ui import app as console
    from mambaconsole.ui import fleet as ui_fleet

    choices = [("gpu-a", 30000), None]
    made, opened = [], []
    monkeypatch.setattr(ui_fleet.FleetApp, "run", lambda self: choices.pop(0))
    monkeypatch.setattr("mambaconsole.session.session.for_host",
                        lambda host, overrides: made.append((host, overrides)) or f"session of {host}")
    monkeypatch.setattr(console, "run_session", lambda session: opened.append(session) or 0)
    monkeypatch.setattr("mambaconsole.commands.fleet.fleet_for", lambda args: StubFleet(_snapshot()))
    assert ui_fleet.run(argparse.Namespace(targets=["http://r:1"], via=None, json=False, once=False)) == 0
    assert made == [("gpu-a", {"port": 30000})] and opened == ["session of gpu-a"] and choices == []


async def test_a_failed_poll_is_shown_and_the_next_one_still_comes():
    class Failing(StubFleet):
        async def poll(self):
            self.polls += 1
            if self.polls == 1:
                raise RuntimeError("boom")
            return self.snap

    fleet = Failing(_snapshot())
    app = FleetApp(fleet, poll_s=0.2)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause(0.05)
        assert "poll failed: RuntimeError: boom" in str(app.query_one("#fleet-status").render())
        await pilot.pause(0.5)
        assert fleet.polls >= 2 and app.query_one("#fleet-table").row_count == 2


def test_fleet_screen_snapshot(snap_compare):
    """120x40: the dead decode worker marked and in the error colour, its disagreement in words,
    the SSM dtype difference side by side (looked at as PNG when the baseline was made)."""
    app = FleetApp(StubFleet(_snapshot()), poll_s=3600)

    async def settle(pilot):
        await app.workers.wait_for_complete()
        await pilot.pause()

    assert snap_compare(app, terminal_size=(120, 40), run_before=settle)
