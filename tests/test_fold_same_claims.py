"""The console and ``inspect`` run one fold (mambaconsole.sglang.run_fold): for every case
input that is a log (both banks), the console's state and ``inspect`` make the same claims —
outcome, failure phase, root cause."""

from __future__ import annotations

import pytest

from mambaconsole.errors import ConsoleError
from mambaconsole.sglang.inspect import inspect_text
from mambaconsole.state import ConsoleState, LogLine, LogLines, RunInfo, RunsListed
from fixtures.sglang_cases import CASES

INPUTS = sorted(p for p in list(CASES.glob("case-*/input.*")) + list((CASES / "bank-2").glob("case-*/input.*"))
                if p.suffix in (".log", ".txt"))
#: inspect's outcome -> the console's state word for a run whose process is gone (exit 1)
ENDED = {"oom": "oom", "crashed": "crashed", "arg_error": "arg error"}


def _log_inputs():
    out = []
    for p in INPUTS:
        try:
            r = inspect_text(p.read_text())
        except ConsoleError:
            continue
        if r["kind"] == "log":
            out.append((p, r))
    return out


LOGS = _log_inputs()


def _state(text: str, **run) -> ConsoleState:
    st = ConsoleState("h")
    st.apply(RunsListed((RunInfo("r1", log_path="/x", **run),), "r1"))
    off, batch = 0, []
    for line in text.split("\n"):
        batch.append(LogLine("r1", off, line))
        off += len(line.encode()) + 1
    st.apply(LogLines("r1", tuple(batch)))
    st.flush_log()
    return st


def test_every_case_log_is_walked():
    assert len(LOGS) >= 25  # 18 of the first bank's logs + 10 of bank 2's


@pytest.mark.parametrize("path,r", LOGS, ids=[f"{p.parent.name}/{p.name}" for p, _ in LOGS])
def test_console_and_inspect_agree(path, r):
    text = path.read_text()
    ended = _state(text, state="exited", exit_code=1)
    f = r["failure"]
    if f is not None:
        assert ended.status == ENDED[r["outcome"]]
        assert (ended.failure_phase, ended.failure_exception) == (f["phase"], f["exception"])
    else:
        assert ended.failure is None and ended.status == "dead"
    live = _state(text, state="running", pid=42)
    if r["outcome"] in ("ready", "starting"):
        assert live.status == r["outcome"]
    if f is not None and live.failure is not None:  # SGLang's crash evidence: no need to see the exit
        assert live.status == ENDED[r["outcome"]] and live.failure_phase == f["phase"]
