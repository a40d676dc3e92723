"""The console's run state word (``ConsoleState.status``) weighs what follows a traceback.

Inputs are published SGLang logs (tests/data/logs/README.md says where each piece comes from,
tests/data/cases the shared cases); expected values are read off those files."""

from __future__ import annotations

from pathlib import Path

from mambaconsole.state import ConsoleState, LogLine, LogLines, RunInfo, RunsListed

DATA = Path(__file__).parent / "data"
REQUEST_ERROR = DATA / "logs" / "request-error.log"
CASE24 = DATA / "cases" / "case-24" / "input.log"
# a 0.5.x decode line, literal from shared/reference/sglang-observables.md §2 (0.5.11+, speculative)
DECODE = ("[2026-04-23 07:32:12 TP0] Decode batch, #running-req: 8, #full token: 20480, full token usage: 0.12, "
          "mamba num: 16, mamba usage: 0.03, accept len: 2.80, accept rate: 0.70, cuda graph: True, "
          "gen throughput (token/s): 812.05, #queue-req: 0, ")


def _state(lines: list[str], **run) -> ConsoleState:
    st = ConsoleState("h")
    st.apply(RunsListed((RunInfo("r1", log_path="/x", **run),), "r1"))
    off, batch = 0, []
    for text in lines:
        batch.append(LogLine("r1", off, text))
        off += len(text.encode()) + 1
    st.apply(LogLines("r1", tuple(batch)))
    st.flush_log()
    return st


def _exception_line(lines: list[str]) -> str:
    return next(t for t in lines if t.startswith("ValueError: "))


def test_request_error_while_serving_is_not_a_crash():
    lines = REQUEST_ERROR.read_text().splitlines()
    st = _state(lines, state="running", pid=42)
    assert st.ready_seen
    assert st.status == "ready"
    assert st.failure is None
    assert st.request_errors == 1
    assert st.request_error == _exception_line(lines)
    # the decode lines after it still count
    assert st.spec_enabled is False


def test_request_error_then_exit_nonzero_is_a_crash_only_when_nothing_followed():
    lines = REQUEST_ERROR.read_text().splitlines()
    cut = next(i for i, t in enumerate(lines) if t.startswith("ValueError: ")) + 1
    st = _state(lines[:cut], state="running", pid=42)
    assert st.status == "ready" and st.failure is None
    # the process is gone with a non-zero code and no batch line followed the traceback
    st.apply(RunsListed((RunInfo("r1", log_path="/x", state="exited", exit_code=1),), "r1"))
    assert st.status == "crashed"
    assert st.failure == _exception_line(lines)
    # the whole log (the server went on decoding), then an exit: dead with its code, not crashed
    st2 = _state(lines, state="exited", exit_code=137)
    assert st2.status == "dead" and st2.failure is None


def test_scheduler_exception_is_a_crash_while_the_process_lives():
    lines = CASE24.read_text().splitlines()
    st = _state(lines, state="running", pid=42)
    # case-24 expected.md item 3/4: TP3's scheduler raised this RuntimeError; crashed after startup
    assert st.status == "crashed"
    assert st.failure == "Scheduler: RuntimeError: moe_sum_reduce CUDA kernel (small-token) launch failed"
    assert st.request_errors == 0 and st.request_error is None


def test_scheduler_exception_followed_by_decode_lines_is_a_request_error():
    lines = CASE24.read_text().splitlines() + [DECODE]
    st = _state(lines, state="running", pid=42)
    # the excerpt has no "fired up" line, but a decode batch was served after the exception:
    # ready by the batches served (issue 12: ready from the ready line or batches served), not crashed
    assert st.status == "ready"
    assert st.failure is None
    assert st.request_error == "Scheduler: RuntimeError: moe_sum_reduce CUDA kernel (small-token) launch failed"


def test_traceback_then_sigquit_is_the_crash():
    lines = REQUEST_ERROR.read_text().splitlines()
    cut = next(i for i, t in enumerate(lines) if t.startswith("ValueError: ")) + 1
    # reference §4.4: the main process's running-phase SIGQUIT line, then the kill sequence
    tail = ["[2024-12-10 21:23:45] SIGQUIT received. signum=None, frame=None. It usually means one child failed.",
            "[2024-12-10 21:23:45] kill_process_tree called: parent_pid=2393459, include_parent=True, pid=2393459"]
    st = _state(lines[:cut] + tail, state="running", pid=42)
    assert st.status == "crashed"
    assert st.failure == _exception_line(lines)
    assert st.request_errors == 0


# ------------------------------------------------------------- inspect's "outcome" (sglang.summary)


def _inspect(tmp_path, lines: list[str]) -> dict:
    from mambaconsole.sglang.inspect import inspect_text

    return inspect_text("\n".join(lines) + "\n")


def test_inspect_request_error_log_is_ready_with_a_finding(tmp_path):
    lines = REQUEST_ERROR.read_text().splitlines()
    r = _inspect(tmp_path, lines)
    assert r["outcome"] == "ready" and r["failure"] is None
    found = [f for f in r["findings"] if f["code"] == "request_error"]
    assert len(found) == 1 and _exception_line(lines) in found[0]["message"]
    # the last decode line's values (token usage 0.03, 46.40 tok/s, queue 0, read off the log)
    assert (r["last_decode"]["token_usage"], r["last_decode"]["gen_throughput"], r["last_decode"]["queue"]) == (0.03, 46.40, 0)


def test_inspect_request_error_then_crash_lines_is_crashed(tmp_path):
    lines = REQUEST_ERROR.read_text().splitlines()
    cut = next(i for i, t in enumerate(lines) if t.startswith("ValueError: ")) + 1
    tail = ["[2024-12-10 21:23:45] SIGQUIT received. signum=None, frame=None. It usually means one child failed."]
    r = _inspect(tmp_path, lines[:cut] + tail)
    exc, msg = _exception_line(lines).split(": ", 1)
    assert r["outcome"] == "crashed"
    # where: the SGLang frame of the log (tests/data/logs/README.md: adapter.py, line 958, in v1_chat_generate_request)
    assert r["failure"] == {"phase": "runtime", "exception": exc, "message": msg, "rank": None, "oom": None,
                            "where": "sglang/srt/openai_api/adapter.py:958 in v1_chat_generate_request"}
    assert not [f for f in r["findings"] if f["code"] == "request_error"]


def test_inspect_scheduler_exception_then_decode_is_not_the_outcome(tmp_path):
    r = _inspect(tmp_path, CASE24.read_text().splitlines())
    assert r["outcome"] == "crashed"  # case-24 expected.md item 3
    r = _inspect(tmp_path, CASE24.read_text().splitlines() + [DECODE])
    assert r["outcome"] != "crashed" and r["failure"] is None
    assert any(f["code"] == "request_error" and "moe_sum_reduce CUDA kernel (small-token) launch failed" in f["message"]
               for f in r["findings"])


# ------------------------------------------------------------- the console, live (LocalNode, tmux)

# Prints a file (a real SGLang log), then serves until SIGINT (exit 0).
REPLAY = """
import signal, sys, time
signal.signal(signal.SIGINT, lambda *a: sys.exit(0))
sys.stdout.write(open(sys.argv[1], encoding="utf-8").read())
sys.stdout.flush()
while True:
    time.sleep(0.05)
"""


async def test_console_shows_a_request_error_as_a_warning_not_a_crash(node_home, tmp_path, no_config):
    import sys

    import pytest

    from fixtures.console import console_for, wait_until
    from mambaconsole.node.local import LocalNode
    from mambaconsole.node.runs import RunStore

    pytest.importorskip("textual")
    lines = REQUEST_ERROR.read_text().splitlines()
    script = tmp_path / "replay.py"
    script.write_text(REPLAY)
    async with LocalNode() as node:
        run = await RunStore(node).start([sys.executable, str(script), str(REQUEST_ERROR)])
        app = console_for(node)
        async with app.run_test(size=(160, 40)) as pilot:
            await wait_until(pilot, lambda: app.state.log_total == len(lines), what="the whole log")
            await wait_until(pilot, lambda: app.state.request_error, what="the request error")
            await pilot.pause(0.5)
            assert app.state.status == "ready" and app.state.failure is None
            header = str(app.bar.render())
            assert "READY" in header and "CRASHED" not in header
            assert "request error: ValueError: Cannot use chat template functions" in header
        await RunStore(node).stop(run.run_id, int_s=5)


async def test_console_on_a_node_without_sglang_says_watch_only(node_home, tmp_path, no_config):
    import importlib.util
    import sys

    import pytest

    from fixtures.console import console_for, wait_until
    from mambaconsole.node.local import LocalNode
    from mambaconsole.node.runs import RunStore

    if importlib.util.find_spec("sglang") is not None:
        pytest.skip("this test python has sglang")
    script = tmp_path / "replay.py"
    script.write_text(REPLAY)
    async with LocalNode() as node:
        log = DATA / "cases" / "case-01" / "input.log"  # startup lines, no traceback
        run = await RunStore(node).start([sys.executable, str(script), str(log)])
        app = console_for(node, python=sys.executable)
        async with app.run_test(size=(200, 40)) as pilot:
            await wait_until(pilot, lambda: app.state.no_sglang, what="the facts probe")
            await wait_until(pilot, lambda: app.state.log_total > 0, what="the log")
            await pilot.pause(0.3)
            header = str(app.bar.render())
            assert f"{sys.executable} on the node has no sglang: watching only" in header
            assert "--python PATH" in header
            # the editor says why it cannot offer SGLang's parser, without a traceback
            await pilot.press("e")
            await wait_until(pilot, lambda: type(app.screen).__name__ == "EditorScreen", what="the editor")
            from textual.widgets import Static

            await wait_until(pilot, lambda: any("cannot import sglang" in str(w.render())
                                                for w in app.screen.query(Static)), what="the editor's message")
        await RunStore(node).stop(run.run_id, int_s=5)


def test_gpu_peak_ignores_empty_readings():
    """A run sampled only before it allocated anything has no peak ("-" in the history), not
    0.0 GiB; the first non-zero reading is its peak."""
    from mambaconsole.state import GpuReading, GpuSnapshot

    st = _state([], state="running", pid=42)
    run = st.run
    st.apply(GpuSnapshot((GpuReading(0, "GPU", 0.0, 81920.0, 0.0),)))
    assert st.peak_mib(run) is None
    st.apply(GpuSnapshot((GpuReading(0, "GPU", 512.0, 81920.0, 3.0), GpuReading(1, "GPU", 2048.0, 81920.0, 3.0))))
    st.apply(GpuSnapshot((GpuReading(0, "GPU", 100.0, 81920.0, 3.0),)))
    assert st.peak_mib(run) == 2048.0


def test_live_running_request_cap_counts_dp_ranks_as_sglang_does():
    """max_running_requests live = effective_max_running_requests_per_dp × dp_size ×
    attn_dp_size of the scheduler's state (SGLang 0.5.23 benchmark/one_batch_server.py; 0.5.11
    test/bench_one_batch_server_internal.py has no attn_dp_size: × dp_size)."""
    from mambaconsole.state import ArgRow, ServerInfo, dp_ranks

    old = {"dp_size": 4, "internal_states": [{"dp_size": 4, "effective_max_running_requests_per_dp": 12}]}
    new = {"dp_size": 1, "internal_states": [{"dp_size": 1, "attn_dp_size": 8,
                                              "effective_max_running_requests_per_dp": 6}]}
    top_only = {"dp_size": 2, "internal_states": [{"effective_max_running_requests_per_dp": 5}]}
    assert (dp_ranks(old), dp_ranks(new), dp_ranks(top_only), dp_ranks({})) == (4, 8, 2, 1)
    for info, want in ((old, 48), (new, 48), (top_only, 10)):
        st = ConsoleState("h")
        st.rows = [ArgRow("max_running_requests", "--max-running-requests", 48, None, "cli")]
        st.apply(ServerInfo(info))
        row = st.rows[0]
        assert row.live == want and row.live_from == "scheduler"
        assert row.disagrees == (want != 48)


def test_a_run_a_console_stopped_reads_stopped_not_dead():
    """RunInfo.stopped (the node's stopped.json) makes an ended run "stopped", whatever its exit
    code or log outcome; while the server still runs it keeps its live word."""
    from mambaconsole.state import state_label, status_word

    ended = RunInfo("r1", state="exited", exit_code=130, stopped=True)
    assert status_word(ended) == "stopped" and state_label("stopped", 130) == "STOPPED exit 130"
    assert status_word(ended, "crashed") == "stopped"  # a traceback after SIGINT is the stop's doing
    assert status_word(RunInfo("r1", state="exited", exit_code=130)) == "dead"
    assert status_word(RunInfo("r1", state="running", stopped=True), ready=True) == "ready"


def test_oom_numbers_reach_the_gpu_pane():
    """case-19 (shared/cases, expected.md item 2): the run died of a PyTorch OOM; the state keeps
    PyTorch's numbers and the GPU pane says them (the log's budget stops short of the failing
    allocation), numbers read off the case's message."""
    from rich.console import Console

    from mambaconsole.ui.gpu_pane import gpu_renderable

    lines = (DATA / "cases" / "case-19" / "input.log").read_text().splitlines()
    st = _state(lines, state="exited", exit_code=1, pid=42)
    assert st.status == "oom"
    o = st.oom_numbers
    assert (o.tried_gib, o.capacity_gib, o.free_gib, o.in_use_gib, o.allocated_gib) == (2.0, 95.08, 1.27, 93.27, 92.83)
    console = Console(width=100, record=True, color_system=None, file=open("/dev/null", "w"))
    console.print(gpu_renderable(st, 100, {}))
    text = " ".join(console.export_text().split())
    assert "at the OOM: asked 2.00 GiB on GPU 0 with 1.27 GiB of 95.08 GiB free" in text
    assert "this process had 93.27 GiB in use" in text and "not fragmentation" in text
    # a run that did not die of an OOM has none
    assert _state(["[2026-04-23 07:32:12] Load weight begin. avail mem=94.56 GB"], state="running").oom_numbers is None


def test_the_gpu_pane_names_what_pytorch_held_beyond_the_log_s_memory_lines():
    """After an OOM, PyTorch's "allocated" is more than the log's memory lines name: the budget's
    legend says how much more (the log does not say by what), not a silent gap between the
    weights and the process's use. Input: real lines (case-01's TP0 weights line, case-19's OOM); the
    expected numbers read off them here."""
    import re

    import pytest
    from rich.console import Console

    from mambaconsole.ui.gpu_pane import gpu_renderable, unnamed_at_oom

    weights = next(t for t in (DATA / "cases" / "case-01" / "input.log").read_text().splitlines()
                   if "TP0] Load weight end" in t)
    oom = (DATA / "cases" / "case-19" / "input.log").read_text().splitlines()
    weights_gib = float(re.search(r"mem usage=([\d.]+) GB", weights).group(1))
    allocated = float(re.search(r"Of the allocated memory ([\d.]+) GiB", "\n".join(oom)).group(1))
    st = _state([weights, *oom], state="exited", exit_code=1, pid=42)
    assert st.status == "oom"
    assert unnamed_at_oom(st) == pytest.approx(allocated - weights_gib)
    console = Console(width=100, record=True, color_system=None, file=open("/dev/null", "w"))
    console.print(gpu_renderable(st, 100, {}))
    text = " ".join(console.export_text().split())
    assert f"W weights {weights_gib:.2f} + unnamed before the OOM {allocated - weights_gib:.2f}" in text
    # no memory line in the log: nothing to compare, no such row
    assert unnamed_at_oom(_state(oom, state="exited", exit_code=1, pid=42)) is None


def test_a_server_args_dump_is_not_an_error_line_and_E_lands_on_the_traceback():
    """Every ServerArgs dump holds ``custom_sigquit_handler=None``: it is no error line (it was,
    and ``E`` jumped to it instead of the traceback); SGLang's SIGQUIT messages still are.
    The dump is a real one (tests/data/console/sim-ready.log)."""
    from mambaconsole.state import severity

    dump = next(t for t in (DATA / "console" / "sim-ready.log").read_text().splitlines() if "server_args=ServerArgs(" in t)
    assert "custom_sigquit_handler" in dump and severity(dump) != "error"
    for line in ("[2026-04-23 07:32:12] Received sigquit from a child process. It usually means the child failed.",
                 "[2026-04-23 07:32:12] SIGQUIT received. signum=None, frame=None. It usually means one child failed."):
        assert severity(line) == "error"
    lines = [dump, "[2026-04-23 07:32:13] Load weight begin. avail mem=94.56 GB",
             "[2026-04-23 07:32:14] Scheduler hit an exception: Traceback (most recent call last):",
             '  File "/x/scheduler.py", line 3277, in run_scheduler_process',
             "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.56 GiB."]
    st = _state(lines, state="exited", exit_code=1, pid=42)
    first = next(ln for ln in st.log if ln.offset == st.first_error_offset)
    assert "Scheduler hit an exception" in first.text
