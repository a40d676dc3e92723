"""The product on real SGLang 0.5.23 servers on CPU, through its own paths: ``mambaconsole
launch`` over the loopback sshd, tmux, the node's real python, the run's own environment
(tests/fixtures/real_sglang.py). One node and one first server for the module, in order:

1. the commands on the plain Qwen3 run: no sgl_kernel stand-in called, ``runs``, ``inspect``,
   ``report``, then ``stop`` ends the whole tree (launcher, scheduler, detokenizer);
2. the console (Pilot) on that stopped run: ``R`` relaunches it unchanged (its env.json and
   folder kept), then ready, version, the real resolution against the live server, the log, the
   GPU pane; the editor's relaunch loop (--max-mamba-cache-size 32 -> 16, pre-flight by the real
   resolver); the history;
3. SIGKILL to the real scheduler: crashed, from the launcher's own line;
4. a real refusal (the hybrid config with extra_buffer, which 0.5.23 asserts needs platform
   support): argument error with SGLang's message and file:line.
Three server starts and one refusal: about 5 minutes on a loaded 2-core machine.
"""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path

import pytest
from fixtures.console import console_for, wait_until
from fixtures.real_sglang import ALIAS, QNEXT_ARGS, Launched, _descendants, real_node
from mambaconsole.node import node_for

pytestmark = [pytest.mark.real_sglang, pytest.mark.sshd, pytest.mark.timeout(1200)]


def _flag_values(text: str, field: str) -> list[str]:
    """Every value of ``field`` in the log's ``server_args=`` dumps (SGLang's repr of the dataclass)."""
    return re.findall(rf"'{field}': ([^,}}]+)", text)


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


async def test_console_on_the_real_server_and_the_relaunch_loop(real_qwen3, monkeypatch):
    node, first = real_qwen3
    node.apply_env(monkeypatch)
    app = console_for(node_for(ALIAS), python=str(node.python), poll_s=1.0)
    async with app.run_test(size=(160, 50)) as pilot:
        st = app.state
        await wait_until(pilot, lambda: st.run and st.run.run_id == first.run_id, what="the run", timeout=60)
        await wait_until(pilot, lambda: st.status not in ("ready", "starting"), what="the stopped run", timeout=60)
        # R: relaunch unchanged, with the run's own environment and folder (no host settings here)
        await pilot.press("R")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", what="the confirmation")
        await pilot.press("y")
        await wait_until(pilot, lambda: st.run and st.run.run_id != first.run_id, what="the relaunched run", timeout=120)
        run_dir = node.sshd.node_home / "runs" / st.run.run_id
        run = Launched(node, st.run.run_id, {}, first.port, list(first.argv), dict(first.env))
        assert json.loads((run_dir / "env.json").read_text()) == first.env
        assert json.loads((run_dir / "status.json").read_text())["cwd"] == str(node.base)
        assert json.loads((run_dir / "argv.json").read_text()) == json.loads((first.run_dir / "argv.json").read_text())
        await wait_until(pilot, lambda: st.status == "ready", what="ready", timeout=420)
        info = run.get("/server_info").json()
        # the version: the real /server_info's (the 0.5.23 log prints none)
        await wait_until(pilot, lambda: st.sglang_version == info["version"] == "0.5.23", what="the version")
        # the real resolver, in the run's own environment, resolved the run's argv
        await wait_until(pilot, lambda: st.resolution is not None, what="the resolution", timeout=180)
        assert st.resolution["ok"], st.resolution.get("error")
        await wait_until(pilot, lambda: st.server_info, what="/server_info")
        # no false differences: every row the console says differs, really differs between
        # the resolver's field and the real /server_info
        for r in [r for r in st.rows if r.disagrees and r.live_from == "/server_info"]:
            assert info.get(r.field) != st.resolution["fields"][r.field]["value"], r
        flags = {r.flag for r in st.rows}
        assert not [f for f in flags if f.startswith("---")]
        by_field = {r.field: r for r in st.rows}
        assert by_field["max_total_tokens"].value == 4096 == info["max_total_tokens"]
        assert not by_field["max_total_tokens"].disagrees
        # the log pane tails the real log
        log_lines = run.log_text().splitlines()
        ready_line = next(ln for ln in log_lines if "The server is fired up and ready to roll!" in ln)
        await wait_until(pilot, lambda: any(ln.text == ready_line for ln in app.log_pane._shown), what="the ready line")
        # the GPU pane: no GPU here, said as such, not as an error
        await wait_until(pilot, lambda: st.gpu is not None, what="a GPU sample", timeout=60)
        assert not st.gpu.available and "pynvml" in (st.gpu.reason or ""), st.gpu
        assert "not importable" not in st.gpu.reason  # read by the server's python, which has pynvml

        # the relaunch loop: --max-mamba-cache-size 32 -> 16, pre-flight by the real resolver
        await pilot.press("e")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "EditorScreen", what="the editor")
        ed = app.screen
        await wait_until(pilot, lambda: ed.query("#f-max_mamba_cache_size"), what="the form", timeout=120)
        env_field = ed.query_one("#f-env")
        assert "SGLANG_USE_CPU_ENGINE=1" in env_field.value  # the run's own environment, prefilled
        field = ed.query_one("#f-max_mamba_cache_size")
        assert field.value == "32"
        field.value = "16"
        await pilot.pause(0.2)
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: ed.verdict is not None or ed.verdict_error, what="the pre-flight", timeout=180)
        assert ed.verdict_error is None and ed.verdict["ok"], ed.verdict_error or ed.verdict.get("error")
        assert ed.verdict["fields"]["max_mamba_cache_size"]["value"] == 16
        await pilot.press("ctrl+y")
        await wait_until(pilot, lambda: st.run and st.run.run_id != run.run_id, what="the new run", timeout=240)
        new_id = st.run.run_id
        await wait_until(pilot, lambda: st.status == "ready", what="the new run ready", timeout=420)
        new_log = (node.sshd.node_home / "runs" / new_id / "log").read_text()
        assert _flag_values(new_log, "max_mamba_cache_size") == ["16"]
        assert _flag_values(run.log_text(), "max_mamba_cache_size") == ["32"]
        # the new run kept the old one's environment and folder
        assert json.loads((node.sshd.node_home / "runs" / new_id / "env.json").read_text()) == run.env
        # the history: both runs, the argv change, outcomes
        await pilot.press("h")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "HistoryScreen", what="the history")
        table = app.screen.query_one("DataTable")
        await wait_until(pilot, lambda: table.row_count == 3, what="three runs in the history")
        rows = [" ".join(str(c) for c in table.get_row_at(i)) for i in range(3)]
        assert rows[0].startswith(new_id) and rows[1].startswith(run.run_id) and rows[2].startswith(first.run_id), rows
        assert "--max-mamba-cache-size" in rows[0] and "16" in rows[0], rows[0]
        await pilot.press("escape")



def test_sigkill_of_the_real_scheduler_is_a_crash(real_qwen3):
    """The current run (the relaunched one, or the fixture's when run alone): SIGKILL to its
    ``sglang::scheduler``; the launcher logs the death and exits; the console's reading of that
    log (inspect, the same fold) says crashed, from those lines."""
    node, _first = real_qwen3
    rows = json.loads(node.cli("runs", ALIAS, "--json", "--no-adopt").stdout)
    cur = [r for r in rows if r["state"] == "running"][-1]
    sched = [p for p in _descendants(int(cur["pid"])) if _comm(p).startswith("sglang::schedul")]
    assert len(sched) == 1, [(p, _comm(p)) for p in _descendants(int(cur["pid"]))]
    os.kill(sched[0], signal.SIGKILL)
    run = Launched(node, cur["run_id"], cur, 0, cur["argv"], {})
    rec = run.wait_ended(180)
    log = run.log_text()
    # what the real launcher wrote about it (read off the log, not off the product)
    # 0.5.23: "Subprocess scheduler_0 (pid=N) crashed with exit code -9. Triggering SIGQUIT for cleanup..."
    death = [ln for ln in log.splitlines() if f"(pid={sched[0]}) crashed with exit code -9" in ln]
    assert death, log[-3000:]
    out = json.loads(node.cli("inspect", str(run.log_path), "--json").stdout)
    assert out["outcome"] == "crashed", (out["outcome"], out["failure"], rec)
    assert rec["state"] == "exited"


def test_a_real_refusal_is_an_argument_error():
    """extra_buffer on CPU: SGLang 0.5.23 asserts platform support while resolving the arguments;
    the run ends at once; inspect says argument error with SGLang's message and file:line.
    On a node of its own: the module's Qwen3 server may still be live on the shared one (the
    console starts one server per node), whatever order the tests run in."""
    args = [a for a in QNEXT_ARGS]
    i = args.index("--mamba-radix-cache-strategy")
    args[i + 1] = "extra_buffer"
    with real_node() as node:
        run = node.launch("qwen3-next-tiny", args, wait=False)
        run.wait_ended(300)
        log = run.log_text()
        out = json.loads(node.cli("inspect", str(run.log_path), "--json").stdout)
    assert "extra_buffer requires platform support for Mamba cache state snapshots." in log, log[-3000:]
    assert out["outcome"] == "arg_error", out
    text = json.dumps(out["failure"])
    assert "extra_buffer requires platform support" in text
    assert "mamba_hook.py" in text and "120" in text, text


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


