"""The header's "data N s ago" belongs to the run the console follows: after a relaunch it does
not carry the previous run's last line (a newcomer saw "data 26 s ago" beside "up 8 s")."""

from __future__ import annotations

from mambaconsole.state import ConsoleState, LogLine, LogLines, RunInfo, RunsListed
from mambaconsole.ui.header import status_text

STYLES: dict[str, str] = {}


def _line(run: str, off: int, text: str) -> LogLines:
    return LogLines(run, (LogLine(run, off, text),))


def test_data_age_starts_over_with_the_new_run():
    now = [1000.0]
    st = ConsoleState("gpu-node", clock=lambda: now[0])
    st.apply(RunsListed((RunInfo("r1", log_path="/a", state="running", started=900.0),), "r1"))
    st.show_log_of("r1")
    st.apply(_line("r1", 0, "[2026-12-01 10:00:00] Decode batch, #running-req: 1"))
    assert st.last_data == 1000.0
    # the server dies; 26 s later the relaunch's run is the node's current one
    now[0] = 1026.0
    st.apply(RunsListed((RunInfo("r1", log_path="/a", state="exited", exit_code=137, started=900.0, ended=1000.0),
                         RunInfo("r2", log_path="/b", state="running", started=1018.0)), "r2"))
    assert st.run.run_id == "r2"
    # r2's server has said nothing yet: no data age at all, not r1's 26 s
    assert st.last_data is None
    head = status_text(st, STYLES, 200).plain
    assert " up 8 s " in head and " data " not in head
    # its first line: data 0 s ago
    st.show_log_of("r2")
    st.apply(_line("r2", 0, "[2026-12-01 10:00:27] Load weight begin"))
    assert st.last_data == 1026.0
    assert " data 0 s ago " in status_text(st, STYLES, 200).plain


def test_same_run_listed_again_keeps_its_data_age():
    now = [1000.0]
    st = ConsoleState("gpu-node", clock=lambda: now[0])
    run = RunInfo("r1", log_path="/a", state="running", started=900.0)
    st.apply(RunsListed((run,), "r1"))
    st.show_log_of("r1")
    st.apply(_line("r1", 0, "x"))
    now[0] = 1030.0
    st.apply(RunsListed((run,), "r1"))  # a poll, not a new run
    assert st.last_data == 1000.0
    assert " data 30 s ago " in status_text(st, STYLES, 200).plain


def test_an_ended_run_s_data_age_says_it_is_the_last_and_why():
    """A newcomer saw "data 43 s ago", "1 min 04 s", "1 min 30 s" on an ended run while the GPU
    bar kept updating: the console looked stalled. Once the run has ended the header says the
    age is of the server's last data and that the run ended; while it runs, the plain word;
    where the row is narrow, the short form keeps "last"."""
    from mambaconsole.state import GpuReading, GpuSnapshot

    now = [1000.0]
    st = ConsoleState("gpu-node", clock=lambda: now[0])
    st.apply(RunsListed((RunInfo("r1", log_path="/a", state="running", started=900.0),), "r1"))
    st.show_log_of("r1")
    st.apply(_line("r1", 0, "[2026-12-01 10:00:00] Decode batch, #running-req: 1"))
    now[0] = 1004.0
    head = status_text(st, STYLES, 200).plain
    assert " data 4 s ago " in head and "last data" not in head and "run ended" not in head
    # it dies (exit 137); the node's GPU is still sampled
    st.apply(RunsListed((RunInfo("r1", log_path="/a", state="exited", exit_code=137, started=900.0,
                                 ended=1001.0),), "r1"))
    now[0] = 1064.0
    st.apply(GpuSnapshot((GpuReading(0, "H100", 0.0, 81559.0),), t=now[0]))
    head = status_text(st, STYLES, 200).plain
    assert " last data 1 min 04 s ago (run ended) " in head, head
    assert " data 1 min 04 s ago " not in head.replace(" last data", "")
    # narrow: the short form, still "last"
    width = len(" ● DEAD exit 137 ") + len(" last data 1 min 04 s ago ") + 2  # the state word stays whole
    narrow = status_text(st, STYLES, width).plain.split("\n")[0]
    assert " last data 1 min 04 s ago " in narrow and "(run ended)" not in narrow, narrow
