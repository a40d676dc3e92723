"""``ConsoleState``'s slices (``mambaconsole.slices``), one by one, and the rule that the panes
read selectors: no module under ``ui/`` or ``commands/`` reads a private attribute of the state
or of a slice. Log lines are written in SGLang's printed formats (shared/reference
sglang-observables.md §2, the rank tag as 0.5.x prints it); expected values are worked out here
from the lines and events given, not read off the code."""

from __future__ import annotations

import ast
from pathlib import Path

from mambaconsole.sglang.events import LogParser
from mambaconsole.sglang.text import envelope_seconds
from mambaconsole.slices.args import ArgsSlice
from mambaconsole.slices.fold import FoldSlice
from mambaconsole.slices.gpu import GPU_HISTORY, GpuSlice
from mambaconsole.slices.link import LinkSlice
from mambaconsole.slices.log import LogSlice
from mambaconsole.slices.runs import RunsSlice
from mambaconsole.slices.server import ServerSlice
from mambaconsole.slices.spec import COLLAPSE_RUN, SpecSlice
from mambaconsole.state import (
    LOG_EVENTS, SLICES, ArgRow, Connection, ConsoleState, GpuReading, GpuSnapshot, LogLine, LogLines,
    MetricsSnapshot, NodeFacts, Phase, Resolution, RunInfo, RunsListed, ServerInfo,
)

PKG = Path(__file__).resolve().parents[1] / "tui" / "mambaconsole"
SIM_READY = Path(__file__).parent / "data" / "console" / "sim-ready.log"  # a 0.5.23-shaped sim boot


class Clock:
    def __init__(self, t: float = 1000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def snap(*used: float, t: float = 0.0, simulated: bool = False) -> GpuSnapshot:
    return GpuSnapshot(tuple(GpuReading(i, "H100", u, 81559.0, t=t) for i, u in enumerate(used)), t=t,
                       simulated=simulated)


def events(*lines: str) -> list:
    p = LogParser()
    out = p.feed_many(list(lines))
    return out + p.flush()


# ----------------------------------------------------------------------------- link


def test_link_keeps_when_it_was_lost_across_failed_reconnects():
    clock = Clock(130.0)
    link = LinkSlice("gpu-node", clock)
    assert link.on_connection(Connection(False, 100.0, "reset by peer")) == set()
    link.on_connection(Connection(False, 112.0, "refused", attempts=2, retry_at=140.0))
    assert (link.connected, link.lost_since, link.reconnect_attempts, link.retry_at) == (False, 100.0, 2, 140.0)
    assert link.lost_for() == 30.0  # 130 - 100: since the first loss, not the last attempt
    link.on_connection(Connection(True, 131.0))
    assert link.connected and link.lost_since is None and link.lost_for() is None


def test_link_node_without_sglang_and_the_servers_own_version():
    link = LinkSlice("", Clock())
    link.on_node_facts(NodeFacts("gpu-node", None, python="/opt/venv/bin/python"))
    assert link.no_sglang and link.host == "gpu-node" and link.python == "/opt/venv/bin/python"
    link.note_version(["0.5.23"])  # not a version string: nothing learned
    assert link.sglang_version is None
    link.note_version("0.5.23")
    assert link.sglang_version == "0.5.23"
    # a later probe that names no python keeps the one known; the simulated node has no sglang to miss
    link.on_node_facts(NodeFacts("gpu-node", None, simulated=True))
    assert link.python == "/opt/venv/bin/python" and link.simulated and not link.no_sglang


# ----------------------------------------------------------------------------- runs


def test_runs_a_new_current_run_resets_once_and_its_end_redraws_its_failure():
    resets: list[str | None] = []
    runs = RunsSlice(Clock(10.0), lambda: resets.append(runs.run.run_id if runs.run else None))
    a, b = RunInfo("a", state="running"), RunInfo("b", state="running", started=4.0)
    assert runs.on_runs_listed(RunsListed((a,), "a")) == {"runs", "log", "spec", "gpu", "args"}
    assert runs.on_runs_listed(RunsListed((a,), "a")) == {"runs"}
    ended = RunInfo("a", state="exited", exit_code=1)
    assert runs.on_runs_listed(RunsListed((ended,), "a")) == {"runs", "spec", "args"}
    assert runs.ended()
    runs.on_runs_listed(RunsListed((ended, b), "b"))
    assert resets == [None, "a"]  # told before the current run changes: the old one is still named
    assert runs.run is b and runs.listed_at == 10.0 and runs.uptime() == 6.0 and not runs.ended()
    runs.on_runs_listed(RunsListed((ended, b), None))  # no current run named: the followed one stays
    assert runs.run is b


def test_runs_data_age_from_history_never_goes_back_and_phase_text_clears():
    runs = RunsSlice(Clock(), lambda: None)
    runs.note_data(100.0, history=True)
    runs.note_data(90.0, history=True)  # an older replayed line
    assert runs.last_data == 100.0
    runs.note_data(95.0)  # a live answer is now
    assert runs.last_data == 95.0
    runs.on_phase(Phase("stop", "stopping r1"))
    assert runs.phase == Phase("stop", "stopping r1")
    runs.on_phase(Phase("done"))
    assert runs.phase is None


def test_runs_server_pids_are_the_recorded_ones_and_the_main_pid():
    runs = RunsSlice(Clock(), lambda: None)
    assert runs.server_pids() == set()
    runs.on_runs_listed(RunsListed((RunInfo("r", pid=40, pids=(41, 42)),), "r"))
    assert runs.server_pids() == {40, 41, 42}


# ----------------------------------------------------------------------------- server


def test_server_keeps_its_last_answer_through_a_failed_poll_and_a_new_run_forgets_it():
    answered: list[float] = []
    clock = Clock(7.0)
    srv = ServerSlice(clock, answered.append)
    info = {"version": "0.5.23", "max_running_requests": 48}
    assert srv.on_info(ServerInfo(info)) == {"args", "spec"}
    assert srv.on_info(ServerInfo(None, "timed out")) == set()
    assert srv.server_info == info and srv.server_info_error == "timed out"
    clock.t = 9.0
    assert srv.on_info(ServerInfo(dict(info))) == {"args", "spec"}  # back after an error: redraw
    assert srv.on_info(ServerInfo(dict(info))) == set()  # the same answer again
    assert answered == [7.0, 9.0, 9.0]  # every answer ages the data anew; the failed poll did not
    assert srv.on_metrics(MetricsSnapshot({}, error="refused")) == set() and srv.metrics_t is None
    assert srv.on_metrics(MetricsSnapshot({"sglang:num_running_reqs": 3.0})) == {"spec"}
    assert srv.on_metrics(MetricsSnapshot({"sglang:num_running_reqs": 3.0})) == set()
    assert srv.metrics_t == 9.0
    srv.new_run()
    assert (srv.server_info, srv.metrics, srv.metrics_t) == (None, {}, None)


# ----------------------------------------------------------------------------- gpu


def _gpu(run: RunInfo | None, clock: Clock | None = None) -> tuple[GpuSlice, list[int]]:
    flagged: list[int] = []
    return GpuSlice(clock or Clock(), lambda: run, lambda: flagged.append(1)), flagged


def test_gpu_history_is_bounded_per_gpu_and_a_same_reading_redraws_nothing():
    g, flagged = _gpu(None)
    for i in range(GPU_HISTORY + 10):
        g.on_snapshot(snap(float(i), 7.0, t=float(i)))
    assert [len(g.history[0]), len(g.history[1])] == [GPU_HISTORY, GPU_HISTORY]
    assert g.history[0][0] == 10.0 and g.history[0][-1] == GPU_HISTORY + 9.0  # the oldest 10 let go
    assert g.on_snapshot(snap(GPU_HISTORY + 9.0, 7.0, t=9999.0)) == set()  # only its time differs
    assert g.on_snapshot(snap(1.0, 7.0)) == {"gpu"}
    assert flagged == []
    g.on_snapshot(snap(1.0, 7.0, simulated=True))
    assert flagged == [1]


def test_gpu_peak_counts_only_while_the_run_is_alive_and_never_zero():
    run = RunInfo("r1", state="running", peak_mem_mib=30000.0)
    g, _ = _gpu(run)
    g.on_snapshot(snap(0.0))
    assert g.peak_mib == {}  # 0 MiB: sampled before it allocated anything
    g.on_snapshot(snap(20000.0, 52000.0))
    g.on_snapshot(snap(41000.0, 10.0))
    assert g.peak_mib == {"r1": 52000.0}  # the fullest GPU of the highest sample
    assert g.peak_of(run) == 52000.0
    assert g.peak_of(RunInfo("r0", peak_mem_mib=30000.0)) == 30000.0  # the record's own
    ended, _ = _gpu(RunInfo("r2", state="exited", exit_code=0))
    ended.on_snapshot(snap(70000.0))
    assert ended.peak_mib == {}


def test_gpu_reading_age_and_when_it_is_stale():
    clock = Clock(100.0)
    g, _ = _gpu(None, clock)
    assert g.age() is None and g.stale_age() is None
    g.on_snapshot(snap(1.0, t=100.0))
    clock.t = 105.0
    assert g.age() == 5.0 and g.stale_age() is None  # 5 s is not past max(5, 2.5 × 2)
    clock.t = 106.0
    assert g.stale_age() == 6.0
    g.interval_s = 10.0  # a slow stream: stale past 2.5 intervals = 25 s
    assert g.stale_age() is None
    clock.t = 126.5
    assert g.stale_age() == 26.5


def test_gpu_budget_is_one_ranks_and_a_new_boot_forgets_it():
    g, _ = _gpu(None)
    tp = "[2026-02-27 17:10:{s} TP{r}] "
    evs = events(
        tp.format(s=27, r=1) + "Load weight end. type=Qwen3NextForCausalLM, dtype=torch.bfloat16, "
                               "avail mem=19.08 GB, mem usage=3.70 GB.",
        tp.format(s=27, r=0) + "Load weight end. type=Qwen3NextForCausalLM, dtype=torch.bfloat16, "
                               "avail mem=19.08 GB, mem usage=3.76 GB.",
        tp.format(s=28, r=0) + "KV Cache is allocated. #tokens: 580364, K size: 4.15 GB, V size: 4.15 GB",
        tp.format(s=28, r=1) + "KV Cache is allocated. #tokens: 580364, K size: 4.00 GB, V size: 4.00 GB",
    )
    handlers = {"WeightsLoaded": g.on_weights, "KVCacheAllocated": g.on_kv}
    for e in evs:
        if type(e).__name__ in handlers:
            handlers[type(e).__name__](e)
    # TP1 spoke first: its numbers, never TP0's mixed in (3.70 weights, 4.00 + 4.00 KV)
    assert g.budget_gb == {"weights": 3.70, "kv": 8.00}
    g.new_boot()
    assert g.budget_gb == {}
    g.on_weights(next(e for e in evs if type(e).__name__ == "WeightsLoaded" and e.rank == "TP0"))
    assert g.budget_gb == {"weights": 3.76}  # the new boot may be led by another rank


# ----------------------------------------------------------------------------- log


class FakeFold:
    """Records what the log slice hands over (the fold slice's two entries)."""

    def __init__(self) -> None:
        self.batches: list[tuple[list[str], float | None]] = []
        self.flushes = 0

    def understand_many(self, texts: list[str], shift: float | None = None) -> set[str]:
        self.batches.append((list(texts), shift))
        return {"spec"}

    def flush(self) -> set[str]:
        self.flushes += 1
        return set()


def _lines(run_id: str, texts: list[str], start: int = 0) -> tuple[LogLine, ...]:
    out, off = [], start
    for t in texts:
        out.append(LogLine(run_id, off, t))
        off += len(t.encode()) + 1
    return tuple(out)


def _log(run_id: str = "r1", keep: int = 5000) -> tuple[LogSlice, RunsSlice, FakeFold]:
    runs = RunsSlice(Clock(500.0), lambda: None)
    runs.on_runs_listed(RunsListed((RunInfo(run_id, state="running"),), run_id))
    fold = FakeFold()
    return LogSlice(Clock(500.0), runs, fold, log_keep=keep), runs, fold  # type: ignore[arg-type]


def test_log_each_byte_once_to_the_fold_and_never_a_line_twice_in_the_pane():
    log, runs, fold = _log(keep=3)
    texts = ["INFO: a", "[2026-11-30 14:13:41] ERROR boom", "c", "d"]
    lines = _lines("r1", texts)
    assert log.on_lines(LogLines("r1", lines[:2])) == {"log", "spec"}
    log.on_lines(LogLines("r1", lines[1:]))  # a reconnect resends from an earlier offset
    assert [r.text for r in log.log] == texts[1:]  # keep=3: the first let go
    assert (log.log_total, log.log_dropped) == (4, 1)
    assert log.first_error_offset == lines[1].offset
    assert log.log_offset == lines[-1].offset + len("d") + 1
    assert [b for b, _ in fold.batches] == [texts[:2], texts[2:]]
    assert runs.last_data == 500.0
    log.show_log_of("r1")  # the run picker re-reads the log from 0: shown again, folded never again
    log.on_lines(LogLines("r1", lines))
    assert log.log_total == 4 and len(fold.batches) == 2
    assert log.on_lines(LogLines("r0", lines)) == set()  # not the shown log


def test_log_replaced_file_and_skipped_middle():
    log, runs, fold = _log()
    log.on_lines(LogLines("r1", _lines("r1", ["a", "b"]), size=100))
    log.on_lines(LogLines("r1", _lines("r1", ["new"]), reset=True))
    assert "truncated or replaced" in runs.notice and [r.text for r in log.log] == ["a", "b", "new"]
    assert fold.batches[-1] == (["new"], None)  # folded again from its start
    log.on_lines(LogLines("r1", _lines("r1", ["head"], start=4), skipped=(9, 5000)))
    assert log.log_skipped == (9, 5000) and log.log_offset == 5000 and fold.flushes == 1
    assert log.page_back_range(1000) == (4000, 5000, False)  # the middle's end first, up to 1000 bytes


def test_log_history_is_dated_by_its_own_timestamps():
    log, runs, fold = _log()
    texts = ["[2026-11-30 14:13:40] Load weight begin.", "[2026-11-30 14:13:41] ready"]
    shift = 1000.0
    log.on_lines(LogLines("r1", _lines("r1", texts), size=200, opened_size=200, time_shift=shift))
    assert fold.batches == [(texts, shift)]
    assert runs.last_data == envelope_seconds("2026-11-30 14:13:41") + shift
    assert log.reading_left() == 200 - log.log_offset


# ----------------------------------------------------------------------------- fold, spec


def _fold_slices(run: RunInfo) -> tuple[FoldSlice, SpecSlice, GpuSlice, list[int], Clock]:
    clock = Clock(42.0)
    runs = RunsSlice(clock, lambda: None)
    runs.on_runs_listed(RunsListed((run,), run.run_id))
    boots: list[int] = []
    slice_of: dict = {}
    fold = FoldSlice(clock, runs, lambda: boots.append(1), LOG_EVENTS, slice_of)
    gpu = GpuSlice(clock, lambda: run, lambda: None)
    spec = SpecSlice(fold.when_time, gpu)
    slice_of.update(fold=fold, gpu=gpu, spec=spec, args=ArgsSlice(ServerSlice(clock, runs.note_data), spec))
    return fold, spec, gpu, boots, clock


def test_fold_ready_once_it_serves_and_a_second_boot_voids_it():
    text = SIM_READY.read_text().splitlines()
    fold, spec, gpu, boots, _ = _fold_slices(RunInfo("r1", state="running"))
    # the first batch served (here the warm-up prefill, before the ready line) makes it ready
    ready = next(i for i, t in enumerate(text) if "Prefill batch" in t or "fired up and ready" in t)
    fold.understand_many(text[:ready])
    fold.flush()
    assert not fold.ready_seen
    fold.understand_many(text[ready:ready + 2], shift=0.0)
    fold.flush()
    # dated by the line (replayed: its own time + shift 0), not by the console's clock (42)
    assert fold.ready_seen and fold.ready_at == envelope_seconds(text[ready][1:20])
    decode = [t for t in text if "Decode batch" in t]
    fold.understand_many(text[ready + 1:])
    fold.flush()
    assert spec.accept_n == len(decode) and spec.mamba_pool_slots == 24 and gpu.budget_gb["weights"] == 51.20
    fold.understand_many(text[:4])  # the same server launched again into the log: a server_args= dump
    fold.flush()
    assert boots == [1] and not fold.ready_seen
    assert fold.failure is None and fold.request_errors == 0


def test_spec_collapse_after_the_run_of_batches_at_one_and_a_mean_over_all():
    fold, spec, _, _, clock = _fold_slices(RunInfo("r1", state="running"))
    line = ("[2026-04-23 07:32:12 TP0] Decode batch, #running-req: 8, #full token: 20480, full token usage: 0.12, "
            "mamba num: 16, mamba usage: 0.03, accept len: {a}, accept rate: 0.70, cuda graph: True, "
            "gen throughput (token/s): 812.05, #queue-req: 0, ")
    fold.understand_many([line.format(a="2.00")] + [line.format(a="1.00")] * (COLLAPSE_RUN - 1))
    assert not spec.collapsed
    fold.understand_many([line.format(a="1.00")])
    assert spec.collapsed and spec.enabled is True
    assert spec.mean_accept() == (2.0 + COLLAPSE_RUN * 1.0) / (COLLAPSE_RUN + 1)
    assert spec.batch_t == 42.0  # a live line: now
    spec.on_server_info(ServerInfo({"speculative_algorithm": None}))
    assert spec.enabled is True  # the batch lines said so first
    spec.new_boot()
    assert not spec.collapsed and len(spec.points) == COLLAPSE_RUN + 1  # one run's points stay
    spec.new_run()
    assert (len(spec.points), spec.enabled, spec.mean_accept()) == (0, None, None)


# ----------------------------------------------------------------------------- args


def test_args_rows_from_the_resolution_and_the_live_values_against_them():
    server = ServerSlice(Clock(), lambda t: None)
    spec = SpecSlice(lambda t, dating=None: 0.0, GpuSlice(Clock(), lambda: None, lambda: None))
    args = ArgsSlice(server, spec)
    result = {"fields": {
        "max_running_requests": {"option": "--max-running-requests", "value": 48, "default": None, "source": "cli"},
        "page_size": {"option": "--page-size", "value": 1, "default": None, "source": "derived",
                      "writes": [{"function": "_handle_page_size", "file": "server_args.py", "line": 812}]},
        "model_config": {"option": "", "value": {}, "source": "derived"},  # internal state: no flag
    }}
    assert args.on_resolution(Resolution(result)) == {"args", "spec"}
    assert [r.flag for r in args.rows] == ["--max-running-requests", "--page-size"]
    assert args.rows[1].changed_by == "_handle_page_size server_args.py:812"
    server.on_info(ServerInfo({"max_running_requests": 48, "page_size": 16}))
    args.on_server_info(ServerInfo(server.server_info))
    assert [(r.field, r.disagrees, r.live_from) for r in args.rows] == [
        ("max_running_requests", False, "/server_info"), ("page_size", True, "/server_info")]
    assert args.flag_values(["--page-size", "--nope"]) == [("--page-size", 1)]
    args.new_run()
    assert args.dumped_args is None and args.runtime_caps == {} and args.rows  # the resolution stays


def test_args_compare_again_only_on_a_new_server_answer(monkeypatch):
    """/server_info is polled every few seconds: the same answer again costs no comparison
    (the server slice takes each answer first; SLICES orders it so)."""
    st = ConsoleState("h")
    compared: list[int] = []
    monkeypatch.setattr(st.slices.args, "_compare_live", lambda: compared.append(1))
    info = {"max_running_requests": 48}
    st.apply(ServerInfo(info))
    st.apply(ServerInfo(dict(info)))
    st.apply(ServerInfo(None, "timed out"))
    st.apply(ServerInfo(dict(info)))  # back after an error: compared again
    st.apply(ServerInfo({"max_running_requests": 16}))
    assert len(compared) == 3


def test_args_a_cap_from_the_log_explains_itself_with_the_pool_size():
    fold, spec, _, _, _ = _fold_slices(RunInfo("r1", state="running"))
    args = fold._slice_of["args"]
    args.rows = [ArgRow("max_running_requests", "--max-running-requests", 48, None, "cli")]
    fold.understand_many(SIM_READY.read_text().splitlines())
    fold.flush()
    (row,) = args.rows
    # the sim's start-up summary logged max_running_requests=4; the resolution said 48
    assert (row.live, row.live_from, row.disagrees) == (4, "log", True)
    why = args.live_explanation(row)
    assert "max_running_requests=4" in why and "24 slots" in why


# ----------------------------------------------------------------------------- the facade


def test_every_event_goes_to_its_slice_and_the_facade_reads_the_slice():
    st = ConsoleState("h", clock=Clock(50.0))
    for cls, (name, handler) in [(k, v) for table in (SLICES, LOG_EVENTS) for k, vs in table.items() for v in vs]:
        owner = st._slice_of[name]
        assert getattr(type(owner), handler.__name__) is handler, (cls, name, handler)
    st.apply(Connection(False, 20.0))
    assert st.slices.link.connected is False and st.lost_for() == 30.0 and st.status == "connection lost"
    st.apply(RunsListed((RunInfo("r1", state="running"),), "r1"))
    st.apply(snap(1234.0))
    assert st.gpu is st.slices.gpu.snapshot and st.gpu_peak_mib == {"r1": 1234.0}
    st.gpu = None  # the panes' tests set fields through the facade
    assert st.slices.gpu.snapshot is None


# ----------------------------------------------------------------------------- selectors only

#: modules that show the state: they read its selectors (public fields, properties, methods)
READERS = ("ui", "commands")


def _private_names() -> set[str]:
    """Private attribute names of ConsoleState and of every slice (class and instance)."""
    st = ConsoleState("h")
    objs = [st, *vars(st.slices).values()]
    names = set()
    for o in objs:
        for n in list(vars(o)) + [n for c in type(o).__mro__ for n in vars(c)]:
            if n.startswith("_") and not n.startswith("__"):
                names.add(n)
    return names


def private_reads(source: str, names: set[str]) -> list[str]:
    """``x._name`` reads in ``source`` where ``_name`` is one of ``names`` and ``x`` is not
    ``self``/``cls``, plus any ``…state._x`` / ``….slices.y._x``."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        v = node.value
        if isinstance(v, ast.Name) and v.id in ("self", "cls"):
            continue
        tail = v.attr if isinstance(v, ast.Attribute) else v.id if isinstance(v, ast.Name) else ""
        via_slices = isinstance(v, ast.Attribute) and isinstance(v.value, ast.Attribute) and v.value.attr == "slices"
        if node.attr in names or tail.lower().endswith("state") or via_slices:
            out.append(f"{node.lineno}: {ast.unparse(node)}")
    return out


def test_the_check_finds_private_reads():
    names = _private_names()
    assert {"_parser", "_gpu", "_slice_of", "_budget_rank", "_understood"} <= names
    src = ("def f(app, st, pane):\n"
           "    a = app.state._understood\n"
           "    b = st._parser\n"
           "    c = app.state.slices.gpu._budget_rank\n"
           "    d = pane._state.run\n"
           "    e = self._parser\n")
    assert [r.split(":")[0] for r in private_reads(src, names)] == ["2", "3", "4"]


def test_panes_read_selectors_not_private_fields():
    names = _private_names()
    found = []
    for sub in READERS:
        for path in sorted((PKG / sub).rglob("*.py")):
            found += [f"{path.relative_to(PKG)}:{r}" for r in private_reads(path.read_text(), names)]
    assert found == []


def test_a_new_run_forgets_the_previous_runs_ranks():
    """The ranks line under the header belongs to the run it was read for: when the node's
    current run becomes another (a single-node relaunch), the previous group's fates go."""
    from mambaconsole.sglang.multinode import RankView
    from mambaconsole.state import ConsoleState, RanksRead, RunInfo, RunsListed

    st = ConsoleState("node-a", clock=lambda: 1000.0)
    st.apply(RunsListed((RunInfo("r1", log_path="/r1.log", state="running", pid=1),), "r1"))
    st.apply(RanksRead("r1", "g1", (RankView(0, "node-a", "r1", "running", alive=True),
                                    RankView(1, "node-b", "r9", "exited", exit_code=137, signal="SIGKILL"))))
    assert st.slices.ranks.line and "rank 1 dead" in st.slices.ranks.line and st.slices.ranks.bad
    st.apply(RunsListed((RunInfo("r1", log_path="/r1.log", state="exited", exit_code=0),
                         RunInfo("r2", log_path="/r2.log", state="running", pid=2)), "r2"))
    assert st.slices.ranks.line is None and st.slices.ranks.views == () and not st.slices.ranks.bad
