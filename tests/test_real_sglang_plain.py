"""The product's commands on a real SGLang 0.5.23 server (plain Qwen3, CPU, dummy weights),
started by ``mambaconsole launch`` over the loopback sshd (tests/fixtures/real_sglang.py).

One server for the whole module; the test that stops it runs last.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from fixtures.real_sglang import _descendants
from fixtures.sshd import ALIAS

pytestmark = [pytest.mark.real_sglang, pytest.mark.sshd]


def test_ready_serves_and_no_stand_in_was_called(real_qwen3):
    """The plain model needs sgl_kernel importable only: after start-up and a request, not one
    stand-in entry point was called (each would have written its name to the calls file)."""
    _node, run = real_qwen3
    out = run.generate("The quick brown fox", max_new_tokens=4)
    assert out["meta_info"]["completion_tokens"] == 4
    calls = Path(run.env["MAMBACONSOLE_SGL_KERNEL_CALLS"])
    assert not calls.exists() or calls.read_text() == ""
    # the stand-in was really imported (else the assertion above proves nothing): SGLang would
    # not have started without it, and its version string is the stand-in's
    assert "SGLANG_USE_CPU_ENGINE" in run.env


def test_runs_lists_the_real_run_running(real_qwen3):
    node, run = real_qwen3
    rows = json.loads(node.cli("runs", ALIAS, "--json", "--no-adopt").stdout)
    (row,) = [r for r in rows if r["run_id"] == run.run_id]
    assert row["state"] == "running"
    assert row["argv"][:3] == [str(node.python), "-m", "sglang.launch_server"]
    assert "--max-mamba-cache-size" in row["argv"] and "--max-total-tokens" in row["argv"]
    env = json.loads((run.run_dir / "env.json").read_text())
    assert env["SGLANG_USE_CPU_ENGINE"] == "1" and env["HF_HUB_OFFLINE"] == "1"


def test_inspect_reads_the_real_log(real_qwen3):
    """inspect on the real log: ready from SGLang's own line; no version, since 0.5.23's log
    never prints one (the version comes from /server_info), so inspect must not claim one."""
    node, run = real_qwen3
    log = run.log_text()
    # what the log itself says, read independently of the product's parser
    assert "The server is fired up and ready to roll!" in log
    out = json.loads(node.cli("inspect", str(run.log_path), "--json").stdout)
    assert out["outcome"] == "ready"
    assert out["sglang_version"] is None
    assert out["failure"] is None


def test_report_on_the_real_run(real_qwen3):
    node, run = real_qwen3
    md = node.cli("report", ALIAS, "--run", run.run_id).stdout
    assert run.run_id in md
    assert "0.5.23" in md


def test_stop_ends_the_whole_tree(real_qwen3):
    """Last: stop ends launcher, scheduler and detokenizer; nothing of the run is left."""
    node, run = real_qwen3
    rec = node.run_record(run.run_id)
    launcher = int(rec["pid"])
    tree = [launcher, *_descendants(launcher)]
    names = {_comm(p) for p in tree}
    # the real launcher's children carry SGLang's process titles
    assert any(n.startswith("sglang::schedul") for n in names), names
    assert any(n.startswith("sglang::detoken") for n in names), names
    node.cli("stop", ALIAS, run.run_id, timeout=180)
    rec = run.wait_ended(60)
    assert rec["state"] != "running"
    left = [p for p in tree if _alive(p)]
    assert left == [], f"left running after stop: {[(p, _comm(p)) for p in left]}"


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z" and os.path.exists(f"/proc/{pid}")


