"""``mambaconsole inspect`` refuses JSON that is not SGLang's: a run's own ``status.json``
(written by the run wrapper of a real run in tmux) was read as server info ("kind:
server_info, outcome: unknown", exit 0)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from fixtures.sglang_cases import CASES
from mambaconsole.cli import main
from mambaconsole.node.local import LocalNode
from mambaconsole.node.runs import RunStore


async def test_a_runs_status_json_is_refused_and_server_info_still_read(node_home, capsys):
    async with LocalNode() as node:
        run = await RunStore(node).start([sys.executable, "-c", "print('hello')"])
    status = Path(run.run_dir, "status.json")
    deadline = time.monotonic() + 30
    while json.loads(status.read_text()).get("state") != "exited":
        assert time.monotonic() < deadline, status.read_text()
        time.sleep(0.1)
    keys = list(json.loads(status.read_text()))
    for extra in ([], ["--json"], ["--kind", "server_info"]):
        assert main(["inspect", str(status), *extra]) == 1
        captured = capsys.readouterr()
        assert captured.out == ""
        assert "not SGLang's server info" in captured.err and keys[0] in captured.err
    # a real /server_info body is still read (case-26: 0.5.x server info with internal_states)
    assert main(["inspect", str(CASES / "case-26" / "input.txt"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "server_info"
