"""Opening the console asks the node once (issue 14, start-up): the runs listing and the current
run's log come from one node command (``agent/first_look.py``), not a listing and then a log
agent in a row; the link is not "lost" before its first connection; the node names the
current run by one rule.

Expected values are worked out by hand from the records and the bytes written here."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

import pytest

from mambaconsole.agent.runs_agent import current_run
from mambaconsole.node.agent import first_look
from fixtures.nodes import CountingNode
from mambaconsole.node.local import LocalNode
from mambaconsole.node.supervisor import Supervisor
from mambaconsole.session.feed import Feed
from fixtures.listeners import Folding
from mambaconsole.session.session import Session
from mambaconsole.session.settings import HostSettings

LINES = [b"[2026-12-01 10:00:%02d] line %d of the run's log\n" % (i % 60, i) for i in range(300)]


def _store(home: Path, log: Path, *run_ids: str) -> None:
    """Ended runs (no pid) ``run_ids``, started one second apart in that order, logging to ``log``."""
    for i, rid in enumerate(run_ids):
        d = home / "runs" / rid
        d.mkdir(parents=True)
        (d / "argv.json").write_text(json.dumps(["sleep", "1"]))
        (d / "status.json").write_text(json.dumps({"state": "exited", "exit_code": 0, "started": 1000.0 + i,
                                                   "log_path": str(log)}))


async def test_the_runs_and_the_current_runs_log_come_from_one_node_command(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(b"".join(LINES))
    _store(tmp_path / "home", log, "20261201-100000-aaaa", "20261201-100001-bbbb")
    node = CountingNode()
    feed = Feed(node, HostSettings(python=sys.executable), home=str(tmp_path / "home"), agent_python=sys.executable,
                adopt=False)
    session = Session(feed, poll_s=30.0)
    session.listener = Folding(session)
    st = session.state
    try:
        session.start()
        deadline = time.monotonic() + 60
        while not (st.log_offset >= log.stat().st_size and st.runs):
            assert time.monotonic() < deadline, "the log was not read"
            await asyncio.sleep(0.02)
        asked = list(node.started)
    finally:
        await session.close()
        await feed.close()
    # both runs ended: the newest is current, and its log is the one read
    assert st.run.run_id == "20261201-100001-bbbb" and st.log_run_id == "20261201-100001-bbbb"
    assert [ln.text for ln in st.log][-1] == LINES[-1].decode().rstrip("\n")
    # the commands that listed runs or read the log: one (the GPU stream is the other command)
    listing = [a for a in asked if "list" in a or any('"current": true' in x for x in a)]
    log_readers = [a for a in asked if "--gpu" in a and a[a.index("--gpu") + 1] == "none"]
    assert len(listing) == 1 and log_readers == listing, asked


async def test_first_look_without_runs_lists_and_ends(tmp_path):
    (tmp_path / "home" / "runs").mkdir(parents=True)
    answer, batches = await first_look(LocalNode(), {"adopt": False, "home": str(tmp_path / "home")},
                                       python=sys.executable, interval=0.0, gpu="none")
    assert answer == {"ok": True, "result": {"runs": [], "current": None}, "type": "runs"} and batches is None


def _rec(rid: str, started, alive: bool, adopted: bool = False) -> dict:
    return {"run_id": rid, "started": started, "alive": alive, "adopted": adopted}


def test_the_current_run_is_the_newest_live_one_a_console_launched():
    old_ours = _rec("20261201-090000-aaaa", 100.0, True)
    adopted = _rec("20261201-100000-bbbb", 200.0, True, adopted=True)
    ended = _rec("20261201-110000-cccc", 300.0, False)
    assert current_run([ended, adopted, old_ours]) == "20261201-090000-aaaa"
    # no live run of ours: the newest live adopted one; nothing live: the newest by start time
    assert current_run([ended, adopted]) == "20261201-100000-bbbb"
    assert current_run([ended, dict(adopted, alive=False)]) == "20261201-110000-cccc"
    # a record without a start time sorts first; two of one second by id
    assert current_run([_rec("b", None, False), _rec("a", 5, False)]) == "a"
    assert current_run([_rec("b", 5, False), _rec("a", 5, False)]) == "b"
    assert current_run([]) is None


class NotYetConnected:
    """A node whose connection opens on the first connect() (as SSHNode before its first use)."""

    name = "n"

    def __init__(self) -> None:
        self.connected = False
        self.connects = 0

    async def connect(self, *, backoff: bool = True):
        self.connects += 1
        await asyncio.sleep(0.05)
        self.connected = True
        return self


async def test_a_node_not_connected_yet_is_not_a_lost_link():
    node = NotYetConnected()
    link = Supervisor(node, check_s=0.02)
    seen = []

    async def watch():
        async for st in link.watch():
            seen.append(st.up)

    watcher = asyncio.ensure_future(watch())
    await link.start()
    await asyncio.sleep(0.4)
    await link.close()
    await asyncio.wait_for(watcher, 5)
    # up all along: the header never said "connection lost" at start, nothing re-read the node
    assert node.connected and node.connects == 1 and seen and all(seen), seen


async def test_what_the_first_view_does_not_need_waits_for_its_gpu_answer_too():
    """The node's facts, HTTP polls and resolution start once the log's history is drawn AND
    the GPU stream answered (both are the first view): started earlier, their commands compete
    with the GPU reader's start."""
    from mambaconsole.state import GpuSnapshot, RunsListed

    feed = Feed(LocalNode("t"), HostSettings(python=sys.executable), adopt=False)
    gate = asyncio.Event()

    async def gpu_stream(interval):
        await gate.wait()
        yield GpuSnapshot((), available=False, reason="no GPU on this node", t=time.time())
        await asyncio.sleep(3600)

    async def first_look(on_gpu=None):
        on_gpu(None)  # no current run: no sample
        return RunsListed((), None), None

    async def facts():
        raise OSError("not asked here")

    feed.gpu_stream, feed.first_look, feed.facts = gpu_stream, first_look, facts
    session = Session(feed, poll_s=30.0)
    started: list[str] = []
    try:
        session.start()
        await asyncio.sleep(0.05)
        session.after_first_log(lambda: started.append("http"))
        session.log_shown()  # the log is drawn; the GPU pane still waits for its answer
        await asyncio.sleep(0.2)
        assert started == [] and not session.first_log_shown
        gate.set()
        for _ in range(50):  # well before FIRST_LOG_WAIT_S (1.5 s) would start them anyway
            await asyncio.sleep(0.01)
            if started:
                break
        assert started == ["http"] and session.first_log_shown
    finally:
        await session.close()
        await feed.close()


def _gpu_file(path: Path, used_mib: float) -> Path:
    """A simulated node's GPU file (the shape in ``agent/node_agent.py``): one 96 GiB GPU."""
    path.write_text(json.dumps({"simulated": True, "gpus": [
        {"index": 0, "name": "Sim GPU", "memory_total_mib": 98304.0, "memory_used_mib": used_mib,
         "utilization_pct": 40.0, "processes": []}]}))
    return path


async def test_first_look_takes_the_first_gpu_sample_beside_the_log(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(b"".join(LINES))
    _store(tmp_path / "home", log, "20261201-100000-aaaa")
    gpu = _gpu_file(tmp_path / "gpu.json", 1234.5)
    got: list = []
    answer, batches = await first_look(LocalNode(), {"adopt": False, "home": str(tmp_path / "home")},
                                       on_gpu=got.append, gpu_choice="sim", gpu_sim_file=str(gpu),
                                       home=str(tmp_path / "home"), python=sys.executable, interval=0.0, gpu="none")
    recs: list[dict] = []
    try:
        async for out in batches:
            recs += out
            if got and sum(len(r.get("lines", ())) for r in recs) >= len(LINES):
                break
    finally:
        await batches.aclose()
    assert answer["result"]["current"] == "20261201-100000-aaaa"
    # one sample, the file's values, handed over and never among the log agent's records
    assert len(got) == 1 and got[0]["type"] == "gpu" and got[0]["simulated"] is True
    assert [(g["name"], g["memory_used_mib"], g["memory_total_mib"]) for g in got[0]["gpus"]] == \
        [("Sim GPU", 1234.5, 98304.0)]
    assert recs[0]["type"] == "hello" and not [r for r in recs if r["type"] in ("gpu_sample", "gpu", "no_gpu")]
    assert [ln for r in recs if r["type"] == "log" for ln in r["lines"]] == \
        [ln.decode().rstrip("\n") for ln in LINES]


async def test_a_gpu_python_that_is_missing_gives_no_sample_and_the_log_still_comes(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(b"".join(LINES[:5]))
    _store(tmp_path / "home", log, "20261201-100000-aaaa")
    got: list = []
    answer, batches = await first_look(LocalNode(), {"adopt": False, "home": str(tmp_path / "home")},
                                       on_gpu=got.append, gpu_python=str(tmp_path / "no-such-python"),
                                       home=str(tmp_path / "home"), python=sys.executable, interval=0.0, gpu="none")
    lines: list[str] = []
    try:
        async for out in batches:
            lines += [ln for r in out if r["type"] == "log" for ln in r["lines"]]
            if got and len(lines) >= 5:
                break
    finally:
        await batches.aclose()
    assert got == [None] and lines == [ln.decode().rstrip("\n") for ln in LINES[:5]]


async def test_first_look_without_a_current_run_says_no_gpu_sample_comes(tmp_path):
    (tmp_path / "home" / "runs").mkdir(parents=True)
    got: list = []
    answer, batches = await first_look(LocalNode(), {"adopt": False, "home": str(tmp_path / "home")},
                                       on_gpu=got.append, python=sys.executable, interval=0.0, gpu="none")
    assert batches is None and answer["result"]["current"] is None and got == [None]


class Drawing(Folding):
    """Folds the waiting lines and, once the log's history is in, says it was drawn (as the
    console's log pane does)."""

    def log_waiting(self) -> None:
        def fold() -> None:
            self.session.fold_log()
            if self.session.state.reading_left() is None and self.session.state.log:
                self.session.log_shown()

        asyncio.get_running_loop().call_soon(fold)


@pytest.mark.parametrize("own_gpu_python", [False, True], ids=["agent-python", "server-python"])
async def test_the_first_view_is_one_node_command(tmp_path, own_gpu_python):
    """The runs, the current run's log and the first GPU sample come from the first look, with
    the GPU reader's python (the server's, when it is not the agent's); the GPU stream (a
    second command, paying the node's command start-up again) starts once the first view is
    drawn, and its samples follow the first one."""
    log = tmp_path / "server.log"
    log.write_bytes(b"".join(LINES))
    _store(tmp_path / "home", log, "20261201-100000-aaaa")
    gpu = _gpu_file(tmp_path / "gpu.json", 2048.0)
    gpu_python = sys.executable
    if own_gpu_python:  # another name for a python: the sample must be taken with this one
        gpu_python = str(tmp_path / "server-python")
        Path(gpu_python).symlink_to(sys.executable)
    node = CountingNode()
    feed = Feed(node, HostSettings(python=gpu_python), home=str(tmp_path / "home"), agent_python=sys.executable,
                adopt=False, sim_gpu_file=str(gpu))
    session = Session(feed, poll_s=0.3)
    session.listener = Drawing(session)
    st = session.state
    asked: list[tuple[list[str], bool]] = []
    real = node.stream_line_batches

    def noted(cmd, **kw):
        asked.append((list(cmd), session.first_log_shown))
        return real(cmd, **kw)

    node.stream_line_batches = noted
    try:
        session.start()
        deadline = time.monotonic() + 60
        while not (session.first_log_shown and st.gpu is not None and st.log_offset >= log.stat().st_size):
            assert time.monotonic() < deadline, "the first view did not come"
            await asyncio.sleep(0.02)
        first_sample = st.gpu
        _gpu_file(gpu, 4096.0)
        while not (st.gpu.gpus and st.gpu.gpus[0].used_mib == 4096.0):
            assert time.monotonic() < deadline, "the GPU stream did not follow"
            await asyncio.sleep(0.02)
    finally:
        await session.close()
        await feed.close()
    assert [(g.name, g.used_mib, g.total_mib) for g in first_sample.gpus] == [("Sim GPU", 2048.0, 98304.0)]
    before = [a for a, shown in asked if not shown]
    streams = [a for a, shown in asked if "--gpu" in a and a[a.index("--gpu") + 1] == "sim"]
    # one command before the first view (the first look); the GPU stream only after it
    assert len(before) == 1 and '"current": true' in " ".join(before[0]), asked
    assert len(streams) == 1 and (streams[0], True) in asked and streams[0][0] == gpu_python, asked
    assert before[0][before[0].index("-") + 2].count(gpu_python) == 1, before[0]


class SlowToConnect(LocalNode):
    """This machine behind a connection that opens when the test says so (as an SSHNode's
    first connect, which every command waits for)."""

    def __init__(self) -> None:
        super().__init__("slow")
        self.connected = False
        self.asked = asyncio.Event()
        self.gate = asyncio.Event()

    async def connect(self, *, backoff: bool = True):
        self.asked.set()
        await self.gate.wait()
        self.connected = True
        return self


async def _console_on(node, tmp_path, hold: asyncio.Event, entered: asyncio.Event):
    from fixtures.console import console_for

    app = console_for(node, str(tmp_path / "home"), agent_python=sys.executable)
    async with app.run_test(size=(120, 40)):
        entered.set()
        await hold.wait()
    return app


async def test_the_panes_are_built_once_the_connection_opened(tmp_path, monkeypatch):
    """The app builds its panes after the node's connection opened: on one event loop the
    handshake's round trips (and the first look's command) would wait behind compose, mount
    and the first paint, and the node's answer with them."""
    from mambaconsole.session import session as session_mod

    monkeypatch.setattr(session_mod, "OPEN_WAIT_S", 60.0)
    node, hold, entered = SlowToConnect(), asyncio.Event(), asyncio.Event()
    run = asyncio.ensure_future(_console_on(node, tmp_path, hold, entered))
    try:
        await asyncio.wait_for(node.asked.wait(), 60)
        await asyncio.sleep(0.5)
        assert not entered.is_set(), "the panes were built while the connection was still opening"
        node.gate.set()
        await asyncio.wait_for(entered.wait(), 60)
    finally:
        node.gate.set()
        hold.set()
        app = await asyncio.wait_for(run, 60)
    assert app.log_pane is not None


async def test_a_connection_that_does_not_open_holds_the_panes_only_briefly(tmp_path):
    """A node that does not answer: the panes come after OPEN_WAIT_S (0.25 s), not after the
    connection's timeout, and say it is still connecting."""
    from mambaconsole.session.session import OPEN_WAIT_S

    node, hold, entered = SlowToConnect(), asyncio.Event(), asyncio.Event()
    run = asyncio.ensure_future(_console_on(node, tmp_path, hold, entered))
    try:
        await asyncio.wait_for(node.asked.wait(), 60)
        t = time.monotonic()
        await asyncio.wait_for(entered.wait(), 30)
        waited = time.monotonic() - t
        assert not node.connected
    finally:
        hold.set()
        node.gate.set()
        await asyncio.wait_for(run, 60)
    assert OPEN_WAIT_S == 0.25 and waited < 10, waited


def test_mambaconsole_host_logs_in_once_before_the_first_paint(ssh_home, no_config, monkeypatch):
    """``mambaconsole HOST`` checks that the host can be reached before the app starts; given
    the event loop the console will run on, the check's connection is the console's: one SSH
    handshake and login, not the check's and then the console's."""
    import asyncssh

    from mambaconsole.session.session import for_host

    opened = []
    real = asyncssh.connect

    def counted(*a, **kw):
        opened.append(a[0] if a else kw.get("host"))
        return real(*a, **kw)

    monkeypatch.setattr(asyncssh, "connect", counted)
    loop = asyncio.new_event_loop()
    try:
        session = for_host(ssh_home.alias, {"python": sys.executable}, loop=loop)
        node = session.feed.node
        assert node.connected
        r = loop.run_until_complete(node.run(["echo", "on the same connection"]))
        loop.run_until_complete(session.feed.close())
    finally:
        loop.close()
    assert r.out == "on the same connection\n" and opened == [ssh_home.alias], opened


FIRST_VIEW = r"""
import json, sys, threading, time
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from fixtures.console import console_for, wait_until
from mambaconsole.node.local import LocalNode
home = Path(sys.argv[1])
log = home / "server.log"
log.write_text("".join(f"[2026-12-01 10:00:{i % 60:02d}] INFO: line {i}\n" for i in range(200)))
d = home / "runs" / "20261201-100000-first"
d.mkdir(parents=True)
(d / "argv.json").write_text(json.dumps(["python3", "-m", "sglang.launch_server", "--model-path", "m", "--port", "1"]))
(d / "status.json").write_text(json.dumps({"state": "exited", "exit_code": 0, "started": time.time() - 60,
                                           "log_path": str(log)}))
on_loop = []
class Noting:  # every module imported for the first time on the event loop's thread
    def find_spec(self, name, path=None, target=None):
        if threading.current_thread() is threading.main_thread():
            on_loop.append(name)
        return None
async def main():
    app = console_for(LocalNode("t"), str(home), agent_python=sys.executable)
    sys.meta_path.insert(0, Noting())
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.session.first_log_shown, what="the first view")
        await pilot.pause(1.0)  # its first polls (facts, HTTP, the resolution) went out
    sys.meta_path.pop(0)
import asyncio
asyncio.run(main())
print(" ".join(m for m in ("mambaconsole.resolve", "mambaconsole.sglang.metrics", "prometheus_client", "httpx")
               if m in on_loop or m not in sys.modules))
"""


def test_what_the_first_views_next_second_needs_is_imported_off_the_event_loop(tmp_path):
    """In a fresh interpreter: the resolver client and the /metrics parser (prometheus_client),
    which the polls started after the first view use, and the HTTP client's httpx are imported
    before it, off the event loop's thread (on it they held the first live lines 18-24 ms each)."""
    import os
    import subprocess

    tests = str(Path(__file__).resolve().parent)
    out = subprocess.run([sys.executable, "-c", FIRST_VIEW, str(tmp_path), tests], capture_output=True, text=True,
                         timeout=120, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "", f"imported on the event loop (or not at all): {out.stdout.strip()}"
