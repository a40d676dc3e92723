"""The headless session (``session/session.py``) driven without Textual: on the simulated node
(the demo's set-up) it follows the seed scenario's first run to its OOM and relaunches it with
a working argv to ready; over the loopback sshd it survives a cut; two sessions are two
independent servers; its polls keep the backoff policy's schedule while they fail and while
they answer nothing new; a failed resolution and a stale relaunch lock mean what they should.

Expected values come from the sim's scenario (exit 137 OOM on the 96 GiB "RTX PRO 6000
Blackwell"), and from the policy's rule worked out by hand (2, 4, 8 intervals while failing;
1, 2, 4, 5 intervals while idle with the runs listing's factor 5)."""

from __future__ import annotations

import asyncio
import sys
import time

import pytest

from fixtures.pairing import UNTIL, sshd_cut, sshd_restart
from mambaconsole.node import node_for
from mambaconsole.node.local import LocalNode
from mambaconsole.node.runs import RunStore
from mambaconsole.session.demo import Demo
from mambaconsole.session.feed import Feed
from mambaconsole.session.session import RUNS_IDLE_FACTOR, Listener, Session
from mambaconsole.session.settings import HostSettings
from mambaconsole.sim import demo as sim_demo
from mambaconsole.state import RunInfo, RunsListed

pytestmark = pytest.mark.timeout(180)


class Recorder(Listener):
    """A headless owner: folds waiting log lines at once and keeps what it was told."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.changes: list[set[str]] = []
        self.notes: list[tuple[str, str]] = []
        self.breakable: list[dict] = []

    def changed(self, panes):
        self.changes.append(set(panes))

    def log_waiting(self):
        asyncio.get_running_loop().call_soon(self.fold)

    def fold(self):
        self.changes.append(self.session.fold_log())

    def notify(self, text, severity="information", timeout=4.0):
        self.notes.append((severity, text))

    def lock_breakable(self, error, lock, argv, run_env):
        self.breakable.append(lock)


async def until(pred, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def test_a_session_follows_the_simulated_run_to_its_oom_without_textual(demo_home):
    demo = Demo(demo_home, speed=20)
    session = Session(demo.make_feed(), poll_s=0.3, prepare=demo.start)
    rec = session.listener = Recorder(session)
    # a second server: another node (here: another run store, empty) is another session
    other = Session(Feed(LocalNode("other"), HostSettings(python="python3"), home=str(demo_home / "empty"),
                         adopt=False), poll_s=0.3)
    other_rec = other.listener = Recorder(other)
    try:
        session.start()
        other.start()
        st = session.state
        await until(lambda: st.status == "oom" and st.run is not None and st.run.exit_code is not None, 90, "the OOM")
        assert st.run.exit_code == 137 and "OutOfMemoryError" in st.failure
        assert st.log_total > 0  # the log came through the intake
        await until(lambda: st.gpu is not None and st.gpu.gpus, 30, "a GPU sample")
        g = st.gpu.gpus[0]
        assert (g.name, g.total_mib, g.simulated) == ("RTX PRO 6000 Blackwell", 96 * 1024, True)
        await until(lambda: st.rows, 60, "SGLang's resolution of the run's argv")
        row = next(r for r in st.rows if r.field == "speculative_algorithm")
        assert (row.value, row.source) == ("EAGLE", "overridden")
        assert any("log" in c for c in rec.changes) or st.log_total
        await until(lambda: any("runs" in c for c in other_rec.changes), 30, "the other node's runs")
        assert other.state.run is None and other.state.status == "no run"
        assert other.state.host == "other" and st.host == "demo"
        # the relaunch loop, headless: a working argv (the sim's capped no_buffer) is followed to ready
        failed = st.run.run_id
        assert session.refusal() is None
        session.relaunch(sim_demo.sim_command(sim_demo.working_argv(port=demo.port), speed=20))
        await until(lambda: st.run.run_id != failed and ("information", f"run {st.run.run_id}: ready") in rec.notes,
                    120, "the relaunched run followed to ready")
        new = st.run.run_id
        assert st.status == "ready" and ("information", f"started run {new}") in rec.notes
        assert not session.relaunching and st.log_run_id == new and st.phase is None  # the follow phase ended
    finally:
        await session.close()
        await other.close()
        await demo.stop()
        await other.feed.close()
    assert all(t.done() for t in session._tasks.values())


async def test_a_session_over_ssh_refuses_to_act_while_cut_off_and_resumes_the_log_exactly(
        ssh_home, tmp_path, no_config):
    """The loopback sshd goes away (listener and sessions) while the node writes; the session
    says the node is unreachable and refuses to act; once sshd is back its log holds every line
    the node wrote, once and in order (read off the node's file itself)."""
    stop_file = tmp_path / "stop-writing"
    script = tmp_path / "counter.py"
    script.write_text(UNTIL)
    async with LocalNode() as local:
        run = await RunStore(local).start([sys.executable, str(script), str(stop_file)])
    session = Session(Feed(node_for("gpu-node"), HostSettings(python=sys.executable), adopt=False), poll_s=0.3)
    session.listener = Recorder(session)
    st = session.state
    try:
        session.start()
        await until(lambda: st.log_total >= 60, 60, "the first lines")
        sshd_cut(ssh_home.sshd)
        await until(lambda: not st.connected, 30, "the link marked down")
        assert session.refusal() == "the node is unreachable: refusing to act on stale data"
        sshd_restart(ssh_home.sshd)
        await until(lambda: st.connected, 30, "the reconnect")
        cut_at = st.log_total
        await until(lambda: st.log_total > cut_at + 50, 30, "lines after the reconnect")
        assert session.refusal() is None
        stop_file.touch()
        await asyncio.sleep(0.5)
        written = open(run.log_path, encoding="utf-8").read().splitlines()
        assert written == ["n %05d" % i for i in range(1, len(written) + 1)]
        await until(lambda: st.log_total >= len(written), 30, f"all {len(written)} lines")
        assert [ln.text for ln in st.log] == written
        assert session.feed.link.reconnects >= 1
    finally:
        await session.close()
        await session.feed.close()
        async with LocalNode() as local:
            await RunStore(local).stop(run.run_id, int_s=5)


class FakeRuns:
    """Stands in for the node's runs listing: fails or answers the same, and notes when."""

    def __init__(self, fail: bool):
        self.fail = fail
        self.at: list[float] = []

    async def __call__(self):
        self.at.append(time.monotonic())
        if self.fail:
            raise OSError("node unreachable")
        return RunsListed(runs=(RunInfo("r1", argv=("x",), state="exited"),), current="r1")

    async def first_look(self, on_gpu=None):
        """The session's first listing (with no log agent: the run has ended, so no GPU sample)."""
        if on_gpu is not None:
            on_gpu(None)
        return await self(), None


async def _poll_times(fail: bool, polls: int) -> list[float]:
    feed = Feed(LocalNode("t"), HostSettings(python="python3"), adopt=False)
    runs = FakeRuns(fail)
    feed.runs, feed.first_look = runs, runs.first_look

    async def no_facts():
        raise OSError("not asked here")

    async def no_gpu(interval):
        await asyncio.sleep(3600)
        yield None

    feed.facts = no_facts
    feed.gpu_stream = no_gpu
    session = Session(feed, poll_s=0.1)
    session.listener = Recorder(session)
    try:
        session.start()
        await until(lambda: len(runs.at) >= polls, 60, f"{polls} runs polls")
    finally:
        await session.close()
        await feed.close()
    return [b - a for a, b in zip(runs.at, runs.at[1:])][:polls - 1]


async def test_a_failing_poll_backs_off_2_4_8_intervals():
    gaps = await _poll_times(True, 4)
    # the policy's waits (0.2, 0.4, 0.8 s) are the least; a loaded machine only adds
    for gap, least in zip(gaps, (0.2, 0.4, 0.8)):
        assert least * 0.95 <= gap < least + 1.5, gaps


async def test_a_poll_that_answers_nothing_new_slows_to_its_factor():
    assert RUNS_IDLE_FACTOR == 5
    gaps = await _poll_times(False, 6)
    # first answer is new; then 1, 2, 4 intervals ... at most 5 (0.1 s each)
    for gap, least in zip(gaps, (0.1, 0.2, 0.4, 0.5, 0.5)):
        assert least * 0.95 <= gap < least + 1.5, gaps
    assert max(gaps) < 0.5 + 1.5


async def test_what_a_failure_means():
    session = Session(Feed(LocalNode("t"), HostSettings()), poll_s=1.0)
    rec = session.listener = Recorder(session)
    session.poll_failed("resolve", "ModuleNotFoundError: No module named 'sglang'")
    assert session.state.resolution == {"error": {"type": "resolver",
                                                  "message": "ModuleNotFoundError: No module named 'sglang'"}}
    assert {"args"} in rec.changes
    assert session.next_poll_in("runs") == 1.0  # resolve failing does not slow the runs listing
    session.poll_failed("runs", "OSError: gone")
    session.poll_failed("runs", "OSError: gone")
    assert session.next_poll_in("runs") == 4.0
    # a stale lock is offered to the owner, never broken; a live one is only said
    session.relaunch_done(None, "held by eve", lock={"stale": True, "holder": "eve@h"}, argv=["x"])
    session.relaunch_done(None, "held by bob", lock={"stale": False, "holder": "bob@h"}, argv=["x"])
    assert [lk["holder"] for lk in rec.breakable] == ["eve@h"]
    assert [s for s, _ in rec.notes] == ["error", "error"]
    assert session.state.notice == "relaunch refused: held by bob"
    await session.feed.close()


async def test_the_source_behind_a_value_is_read_as_the_runs_python_finds_it():
    """``v`` on a ServerArgs row: the session reads the file on the node with the current run's
    python (here this one, which finds the standard library's json package)."""
    import json

    session = Session(Feed(LocalNode("t"), HostSettings(python=sys.executable)), poll_s=1.0)
    try:
        text = await session.read_source("json/__init__.py", 5)
    finally:
        await session.feed.close()
    fifth = open(json.__file__, encoding="utf-8").read().splitlines()[4]
    assert f">    5  {fifth}" in text.splitlines()
