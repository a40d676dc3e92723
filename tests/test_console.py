"""The console (Textual Pilot) on a real node: LocalNode and the loopback sshd, runs in tmux,
servers standing in for SGLang that print real SGLang logs (tests/data/cases). Expected values
come from the cases' expected.md or from the stand-ins' own inputs, never from the app."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from fixtures.screen import shown_lines
import pytest

from fixtures.console import console_for, wait_until
from mambaconsole.node import node_for
from mambaconsole.node.local import LocalNode
from mambaconsole.node.runs import RunStore
from mambaconsole.state import LOG_KEEP, ConsoleState, LogLine, LogLines, RunInfo, RunsListed

CASES = Path(__file__).parent / "data" / "cases"
pytestmark = pytest.mark.timeout(120)

# Prints a file (a real SGLang log), then serves until SIGINT (exit 0).
REPLAY = textwrap.dedent("""
    import signal, sys, time
    signal.signal(signal.SIGINT, lambda *a: sys.exit(0))
    sys.stdout.write(open(sys.argv[1], encoding="utf-8", errors="replace").read())
    sys.stdout.flush()
    while True:
        time.sleep(0.05)
""")

# Prints N numbered lines "line 00001 ..." then serves until SIGINT.
NUMBERS = textwrap.dedent("""
    import signal, sys, time
    signal.signal(signal.SIGINT, lambda *a: sys.exit(0))
    n = int(sys.argv[1])
    for i in range(1, n + 1):
        print(f"line {i:05d} value={i * 7}", flush=(i % 100 == 0))
    sys.stdout.flush()
    while True:
        time.sleep(0.05)
""")


def _script(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


async def test_case24_ready_then_crash_local(node_home, tmp_path, no_config):
    log = CASES / "case-24" / "input.log"
    lines = log.read_text().splitlines()
    async with LocalNode() as node:
        run = await RunStore(node).start([sys.executable, _script(tmp_path, "replay.py", REPLAY), str(log)])
        app = console_for(node)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: app.state.log_total == len(lines), what="the whole log")
            await wait_until(pilot, lambda: app.state.failure, what="the failure")
            st = app.state
            assert st.run.run_id == run.run_id
            # expected.md item 3: TP3's scheduler raised this RuntimeError
            assert st.failure.endswith("RuntimeError: moe_sum_reduce CUDA kernel (small-token) launch failed")
            # item 4: not OOM, not an argument error: it crashed after startup
            assert st.status == "crashed"
            header = str(app.bar.render())
            assert run.run_id in header and "CRASHED" in header
            assert "moe_sum_reduce CUDA kernel" in header
            # the log pane says whose log it shows and holds every line
            assert f"log of run {run.run_id}" in str(app.log_pane.query_one("#log-title").render())
            assert [ln.text for ln in app.log_pane._shown] == lines
            # E jumps to the first error: the traceback's first line
            first_err = next(i for i, t in enumerate(lines) if "Traceback" in t)
            app.log_pane.action_first_error()
            assert app.log_pane._match_at == first_err
        await RunStore(node).stop(run.run_id, int_s=5)


async def test_log_filter_search_pause(node_home, tmp_path, no_config):
    n = 3000
    async with LocalNode() as node:
        run = await RunStore(node).start([sys.executable, _script(tmp_path, "numbers.py", NUMBERS), str(n)])
        app = console_for(node)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: app.state.log_total == n, what=f"{n} lines")
            pane = app.log_pane
            assert pane.following
            # filter keeps the lines whose value ends in 49 (computed from the generator)
            want = [f"line {i:05d} value={i * 7}" for i in range(1, n + 1) if str(i * 7).endswith("49")]
            pane.set_filter(r"value=\d*49$")
            assert [ln.text for ln in pane._shown] == want
            # inverted filter keeps the others
            pane.set_filter(r"!value=\d*49$")
            assert len(pane._shown) == n - len(want)
            pane.set_filter("")
            # search: next and previous
            pane.set_search("line 01234 ")
            assert pane._shown[pane._match_at].text.startswith("line 01234 ")
            # scrolled up, the pane pauses and counts new lines
            pane.view.scroll_home(animate=False)
            await pilot.pause(0.2)
            assert not pane.following
        await RunStore(node).stop(run.run_id, int_s=5)


async def test_relaunch_history_shows_both_runs(node_home, tmp_path, no_config):
    async with LocalNode() as node:
        store = RunStore(node)
        argv = [sys.executable, _script(tmp_path, "numbers.py", NUMBERS), "5"]
        first = await store.start(argv)
        app = console_for(node)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait_until(pilot, lambda: app.state.run and app.state.run.run_id == first.run_id)
            await pilot.press("R")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
            await pilot.press("y")
            await wait_until(pilot, lambda: app.state.run and app.state.run.run_id != first.run_id, timeout=40,
                             what="the new run")
            runs = {r.run_id: r for r in await store.list(adopt=False)}
            assert len(runs) == 2 and first.run_id in runs, [(r.run_id, r.state, r.started, r.record.get("launched_by"), r.adopted) for r in runs.values()]
            new = next(r for r in runs.values() if r.run_id != first.run_id)
            assert runs[first.run_id].state == "exited"
            assert new.argv == argv  # relaunched unchanged: the same argv, element for element
            await pilot.press("h")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "HistoryScreen")
            table = app.screen.query_one("DataTable")
            assert table.row_count == 2
            assert str(table.get_row_at(0)[0]) == new.run_id  # newest first
            await pilot.press("escape")
            await wait_until(pilot, lambda: type(app.screen).__name__ != "HistoryScreen")
        await store.stop(new.run_id, int_s=5)


async def test_read_only_hides_every_key_that_changes_the_node(node_home, tmp_path, no_config):
    async with LocalNode() as node:
        app = console_for(node, read_only=True)
        async with app.run_test(size=(120, 40)) as pilot:
            await pilot.pause(0.3)
            shown = {b.binding.action for b in app.screen.active_bindings.values()
                     if app.check_action(b.binding.action, ()) }
            assert not {"edit", "relaunch", "stop"} & shown
            for key in ("e", "R", "S"):
                await pilot.press(key)
                await pilot.pause(0.1)
                assert type(app.screen).__name__ == "Screen"
            # said, not silently ignored: the header's badge, a notice for the key
            assert "READ-ONLY" in shown_lines(app.bar)[0]
            said = [n.message for n in app._notifications]
            assert any("read-only console" in m and "e, R and S" in m for m in said), said
            titles = [c.title for c in app.get_system_commands(app.screen)]
            assert not any(t in ("Edit args", "Relaunch", "Stop") for t in titles)


async def test_console_over_sshd(ssh_home, tmp_path, no_config):
    """The same replay through the loopback sshd (alias gpu-node)."""
    log = CASES / "case-24" / "input.log"
    lines = log.read_text().splitlines()
    node = node_for("gpu-node")
    store = RunStore(node)
    script = _script(tmp_path, "replay.py", REPLAY)
    run = await store.start([sys.executable, script, str(log)])
    app = console_for(node)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.state.log_total == len(lines), what="the whole log over ssh")
        assert app.state.host == "gpu-node"
        # the pane draws what was folded at most a frame later (ui/app.py LOG_FRAME_S)
        await wait_until(pilot, lambda: [ln.text for ln in app.log_pane._shown] == lines, timeout=5,
                         what="the pane showing the whole log")
    node2 = node_for("gpu-node")
    await RunStore(node2).stop(run.run_id, int_s=5)
    await node2.close()


# ------------------------------------------------------------------- state, no UI


def test_log_lines_never_repeat_and_memory_is_bounded():
    st = ConsoleState("h")
    st.apply(RunsListed((RunInfo("r1", log_path="/x"),), "r1"))
    st.show_log_of("r1")
    off, batch = 0, []
    for i in range(LOG_KEEP + 500):
        text = f"n={i}"
        batch.append(LogLine("r1", off, text))
        off += len(text) + 1
    st.apply(LogLines("r1", tuple(batch)))
    # a reconnect resumes from an earlier offset: the overlap is dropped
    st.apply(LogLines("r1", tuple(batch[-50:])))
    assert st.log_total == LOG_KEEP + 500
    assert len(st.log) == LOG_KEEP
    assert [ln.text for ln in st.log][-1] == f"n={LOG_KEEP + 499}"
    assert st.log_offset == off


def test_dead_run_is_never_shown_running():
    st = ConsoleState("h")
    st.apply(RunsListed((RunInfo("r1", state="dead", pid=123),), "r1"))
    assert st.status == "dead"
    st.apply(RunsListed((RunInfo("r1", state="exited", exit_code=137),), "r1"))
    assert st.status == "dead"
