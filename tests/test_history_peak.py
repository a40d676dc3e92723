"""History's "peak GPU" of a run is the largest of what a console sampled, what PyTorch's OOM
message says the process had in use and what the log says was allocated, and says which; its
budget is in GiB like every other memory number on screen. The OOM run is a real log
(shared/cases/case-19), read through Feed.run_summary as the history does; the expected
numbers are read off that log's text here, not off the code."""

from __future__ import annotations

import re
import sys

from fixtures.sglang_cases import CASES
from mambaconsole.node.local import LocalNode
from mambaconsole.state import RunInfo
from mambaconsole.session.feed import Feed
from mambaconsole.ui.history import COLUMNS, history_rows
from mambaconsole.session.settings import HostSettings

LOG = CASES / "case-19" / "input.log"
PEAK, BUDGET = COLUMNS.index("peak GPU"), COLUMNS.index("budget (log)")


async def summary_of(run: RunInfo) -> dict:
    async with LocalNode() as node:
        return await Feed(node, HostSettings(python=sys.executable)).run_summary(run)


async def test_an_oom_runs_peak_is_what_the_oom_message_says_when_the_samples_saw_less():
    in_use = float(re.search(r"this process has ([\d.]+) GiB memory in use", LOG.read_text())[1])  # 93.27
    sampled_mib = 51.7 * 1024  # the console's samples every few seconds missed the last allocation
    run = RunInfo("r1", argv=("python", "-m", "sglang.launch_server"), state="exited", exit_code=1,
                  log_path=str(LOG), peak_mem_mib=sampled_mib)
    s = await summary_of(run)
    [row] = history_rows([run], {"r1": s})
    assert row[PEAK] == f"{in_use:.1f} GiB OOM msg"
    # sampled above it: the samples win, and say so
    higher = RunInfo("r1", argv=run.argv, state="exited", exit_code=1, log_path=str(LOG), peak_mem_mib=95 * 1024)
    [row] = history_rows([higher], {"r1": s})
    assert row[PEAK] == "95.0 GiB seen"


def test_the_budget_is_a_lower_bound_of_the_peak_and_every_memory_cell_is_gib():
    run = RunInfo("r1", argv=("python",), state="exited", exit_code=0, peak_mem_mib=10 * 1024)
    [row] = history_rows([run], {"r1": {"outcome": "exited", "budget_gb": 60.5}})
    assert row[PEAK] == "60.5 GiB log" and row[BUDGET] == "60.5 GiB"
    for cell in (row[PEAK], row[BUDGET]):
        assert re.fullmatch(r"[\d.]+ GiB( \S.*)?", cell), cell
