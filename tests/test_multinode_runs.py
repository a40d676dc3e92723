"""A run across two nodes, end to end on real parts: two OpenSSH sshd on 127.0.0.1, each its
own node to the console (its own run store, tmux server, GPU file and, for the simulated
servers, its own loopback address), real tmux, simulated SGLang servers honouring
``--nnodes/--node-rank/--dist-init-addr``; everything through the CLI
(``mambaconsole launch node-a node-b -- ARGS``, ``runs``, ``stop``)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from fixtures.sim import pick_free_port
from fixtures.sshd import _require_sshd, make_key, start_sshd
from mambaconsole.cli import main
from mambaconsole.node import tmux_server

SIM = ["--python", sys.executable, "--module", "mambaconsole.sim"]


def cli(capsys, *argv):
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture
def two_nodes(sshd_dir: Path, monkeypatch):
    """``node-a`` and ``node-b``: two sshd, one client HOME reaching both. Yields
    ``{alias: Sshd}``."""
    _require_sshd()
    key = make_key(sshd_dir / "home" / ".ssh" / "id_ed25519", "test-user")
    servers = {}
    try:
        for alias, bind in (("node-a", "127.0.0.1"), ("node-b", "127.0.0.2")):
            base = sshd_dir / alias
            servers[alias] = start_sshd(base, [key], env={
                "MAMBACONSOLE_SIM_BIND_HOST": bind, "MAMBACONSOLE_SIM_GPU_FILE": str(base / "sim-gpu.json")})
        ssh = sshd_dir / "home" / ".ssh"
        known = ssh / "known_hosts"
        known.write_text("".join(f"[127.0.0.1]:{s.port} {s.host_public_key}\n" for s in servers.values()))
        config = ssh / "config"
        config.write_text("".join(
            f"Host {alias}\n  HostName 127.0.0.1\n  Port {s.port}\n  User {s.user}\n  IdentityFile {key}\n"
            f"  IdentitiesOnly yes\n  UserKnownHostsFile {known}\n  StrictHostKeyChecking yes\n"
            for alias, s in servers.items()))
        config.chmod(0o600)
        monkeypatch.setenv("HOME", str(sshd_dir / "home"))
        monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
        for k in tmux_server.TMUX_VARS:
            monkeypatch.delenv(k, raising=False)
        yield servers
    finally:
        for s in servers.values():
            s.stop()


def _args(*extra: str) -> list[str]:
    return ["--model-path", "Qwen/Qwen3.6-27B", "--max-mamba-cache-size", "24", "--mamba-full-memory-ratio", "0.4",
            "--port", str(pick_free_port()), "--dist-init-addr", f"127.0.0.1:{pick_free_port()}", *extra]


def _run_dir(server, run_id: str) -> Path:
    return server.node_home / "runs" / run_id


def _status(server, run_id: str) -> dict:
    return json.loads((_run_dir(server, run_id) / "status.json").read_text())


def _wait_log(server, run_id: str, needle: str, timeout: float = 60) -> str:
    log = _run_dir(server, run_id) / "log"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text(errors="replace") if log.exists() else ""
        if needle in text:
            return text
        time.sleep(0.1)
    raise AssertionError(f"no {needle!r} in {log}:\n{text[-2000:]}")


def _launch(capsys, *args: str):
    rc, out, err = cli(capsys, "launch", "node-a", "node-b", *SIM, "--json", "--", *args)
    assert rc == 0, err
    res = json.loads(out)
    return res["group"], [r["run_id"] for r in res["ranks"]], res["ranks"]


def test_two_node_run_starts_in_rank_order_and_stops_in_rank_order(two_nodes, capsys):
    a, b = two_nodes["node-a"], two_nodes["node-b"]
    gid, (r0, r1), recs = _launch(capsys, *_args("--sim-speed", "20"))
    # each node ran its own rank: the same argv but --node-rank, in its own store
    argv0 = json.loads((_run_dir(a, r0) / "argv.json").read_text())
    argv1 = json.loads((_run_dir(b, r1) / "argv.json").read_text())
    assert argv0[argv0.index("--node-rank") + 1] == "0" and argv1[argv1.index("--node-rank") + 1] == "1"
    assert argv0[argv0.index("--nnodes") + 1] == "2"
    assert [x for x in argv0 if x != "0"] == [x for x in argv1 if x != "1"]
    assert not (a.node_home / "runs" / r1).exists() and not (b.node_home / "runs" / r0).exists()
    # rank 0 was started first (its record was created before rank 1's)
    assert _status(a, r0)["created"] < _status(b, r1)["created"]
    for rec, rank in zip(recs, (0, 1)):
        assert rec["group"]["id"] == gid and rec["group"]["rank"] == rank and rec["group"]["nodes"] == ["node-a", "node-b"]
    # every rank knows the others' run ids
    assert json.loads((_run_dir(b, r1) / "group.json").read_text())["runs"] == [r0, r1]
    _wait_log(a, r0, "The server is fired up and ready to roll!")
    _wait_log(b, r1, "Dummy health check server started in background thread at 127.0.0.2")
    assert (a.node_home / "relaunch.lock").exists() is False and (b.node_home / "relaunch.lock").exists() is False

    rc, out, err = cli(capsys, "runs", "node-b", "--no-adopt")
    assert rc == 0, err
    assert "rank 1/2" in out
    assert f"run across nodes {gid} (node-a, node-b): rank 0 ready; rank 1 joined" in out

    # stop from either node stops both, rank 0 first
    rc, out, err = cli(capsys, "stop", "node-b", r1, "--int-timeout", "10")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].startswith(f"rank 0  node-a  {r0}: exited") and lines[1].startswith(f"rank 1  node-b  {r1}: exited")
    assert lines[2] == f"run across nodes {gid}: rank 0 stopped (exit 130); rank 1 stopped (exit 130)"
    stop0 = json.loads((_run_dir(a, r0) / "stopped.json").read_text())["at"]
    stop1 = json.loads((_run_dir(b, r1) / "stopped.json").read_text())["at"]
    assert stop0 < stop1
    assert not _status(a, r0).get("state") == "running" and not _status(b, r1).get("state") == "running"


def test_lock_is_all_or_none(two_nodes, capsys):
    a, b = two_nodes["node-a"], two_nodes["node-b"]
    (b.node_home / "relaunch.lock").write_text(json.dumps(
        {"holder": "bob@laptop", "pid": 4321, "since": time.time(), "token": "t"}))
    rc, out, err = cli(capsys, "launch", "node-a", "node-b", *SIM, "--", *_args())
    assert rc == 1 and out == ""
    assert "node node-b refused the relaunch lock (relaunch lock held by bob@laptop" in err
    assert "released the locks taken on node-a; nothing was started" in err
    assert not (a.node_home / "relaunch.lock").exists()  # node-a's lock was taken, then released
    for s in (a, b):
        assert not (s.node_home / "runs").exists() or not any((s.node_home / "runs").iterdir())


def test_argv_mismatch_is_refused(two_nodes, capsys):
    a, b = two_nodes["node-a"], two_nodes["node-b"]
    base = _args()
    rc, out, err = cli(capsys, "launch", "node-a", "node-b", *SIM, "--", *base, "--nnodes", "2", "--node-rank", "0",
                       "--", *base, "--nnodes", "2", "--node-rank", "1", "--mem-fraction-static", "0.8")
    assert rc == 1
    assert "node node-b's args differ from node node-a's in more than --node-rank: + --mem-fraction-static 0.8" in err
    rc, out, err = cli(capsys, "launch", "node-a", "node-b", *SIM, "--", *base, "--nnodes", "3")
    assert rc == 1 and "--nnodes 3 disagrees with the 2 nodes given (node-a, node-b)" in err
    for s in (a, b):  # refused before any node was touched
        assert not (s.node_home / "relaunch.lock").exists()
        assert not (s.node_home / "runs").exists() or not any((s.node_home / "runs").iterdir())


def test_killed_rank1_shows_dead_beside_rank0_waiting(two_nodes, capsys):
    a, b = two_nodes["node-a"], two_nodes["node-b"]
    # slow: the simulated distributed init takes 1 s / 0.02 = 50 s, so rank 1 has not joined yet
    gid, (r0, r1), _ = _launch(capsys, *_args("--sim-speed", "0.02"))
    _wait_log(a, r0, "Init torch distributed begin.")
    _wait_log(b, r1, "Init torch distributed begin.")
    pid1 = _status(b, r1)["pid"]
    os.killpg(pid1, signal.SIGKILL)  # the node's rank dies: its whole process group
    deadline = time.monotonic() + 30
    while _status(b, r1).get("state") != "exited":
        assert time.monotonic() < deadline
        time.sleep(0.1)
    rc, out, err = cli(capsys, "runs", "node-a", "--no-adopt")
    assert rc == 0, err
    assert (f"run across nodes {gid} (node-a, node-b): rank 1 dead (exit 137, SIGKILL) while rank 0 waits at "
            "distributed init") in out
    rc, out, err = cli(capsys, "runs", "node-a", "--json", "--no-adopt")
    [rec] = [r for r in json.loads(out) if r.get("run_id") == r0]
    assert rec["group_fates"].endswith("rank 1 dead (exit 137, SIGKILL) while rank 0 waits at distributed init")
    rc, out, err = cli(capsys, "stop", "node-a", "--int-timeout", "10")
    assert rc == 0, err
    assert out.splitlines()[-1] == (f"run across nodes {gid}: rank 1 dead (exit 137, SIGKILL) while rank 0 stopped "
                                    "(exit 130)")


async def test_console_on_rank0_shows_every_rank_and_opens_rank1s_log(two_nodes, capsys, no_config):
    """The console opened on rank 0: the ranks' fates under the header, rank 1's log from its
    node through the run picker, R refused (it would restart rank 0 alone), S stops the run."""
    from fixtures.console import console_for, wait_until
    from mambaconsole.node import node_for
    from mambaconsole.ui.header import status_text
    from mambaconsole.ui.run_picker import RankLogScreen, RunPicker

    a, b = two_nodes["node-a"], two_nodes["node-b"]
    gid, (r0, r1), _ = await asyncio.to_thread(_launch, capsys, *_args("--sim-speed", "0.02"))
    await asyncio.to_thread(_wait_log, b, r1, "Init torch distributed begin.")
    os.killpg(_status(b, r1)["pid"], signal.SIGKILL)
    app = console_for(node_for("node-a"), python=sys.executable, module="mambaconsole.sim")
    app.session.ranks_poll_s = 0.5
    async with app.run_test(size=(120, 40)) as pilot:
        want = "rank 1 dead (exit 137, SIGKILL) while rank 0 waits at distributed init"
        await wait_until(pilot, lambda: app.state.slices.ranks.line == want, what="the ranks' fates")
        assert app.state.run.run_id == r0
        header = status_text(app.state, {}, 120).plain
        assert f"ranks: {want}" in header
        await pilot.press("r")
        picker = await wait_until(pilot, lambda: isinstance(app.screen, RunPicker) and app.screen, what="the picker")
        from textual.widgets import OptionList

        options = picker.query_one(OptionList)
        first = options.get_option_at_index(0)
        assert first.id == "rank:1" and str(first.prompt).startswith(f"rank 1 on node-b  {r1}  rank 1 dead (exit 137")
        options.highlighted = 0
        await pilot.press("enter")
        screen = await wait_until(pilot, lambda: isinstance(app.screen, RankLogScreen) and app.screen,
                                  what="rank 1's log")
        from textual.widgets import RichLog

        log = screen.query_one(RichLog)
        await wait_until(pilot, lambda: any("Init torch distributed begin." in line.text for line in log.lines),
                         what="rank 1's log text")
        await pilot.press("escape")
        # R would restart rank 0 alone: refused, saying how to relaunch the whole run
        await wait_until(pilot, lambda: not isinstance(app.screen, RankLogScreen), what="the log closed")
        await pilot.press("R")
        await pilot.pause(0.3)
        said = [n.message for n in app._notifications]
        assert any(f"run {gid} spans 2 nodes: a relaunch here would restart rank 0 alone" in m
                   and "mambaconsole launch node-a node-b -- ARGS" in m for m in said), said
        # S stops every rank, rank 0 first, after its confirmation
        await pilot.press("S")
        await pilot.pause(0.3)
        assert "Stop the run across nodes" in str(app.screen.query("Static").first().render())
        await pilot.press("y")
        await wait_until(pilot, lambda: (a.node_home / "runs" / r0 / "stopped.json").exists()
                         and _status(a, r0).get("state") == "exited", timeout=60, what="rank 0 stopped")
    # rank 1 was already dead: nothing to signal there, and the run's end reads stopped on node-a
    assert json.loads((_run_dir(a, r0) / "stopped.json").read_text())["signals"][0] == "SIGINT"


def test_unreachable_node_is_named_and_stop_is_all_or_none(two_nodes, capsys):
    a, b = two_nodes["node-a"], two_nodes["node-b"]
    gid, (r0, r1), _ = _launch(capsys, *_args("--sim-speed", "20"))
    _wait_log(b, r1, "Dummy health check server started")
    b.proc.terminate()  # node-b's sshd goes away (its tmux and rank 1 keep running)
    b.proc.wait(10)
    rc, out, err = cli(capsys, "runs", "node-a", "--no-adopt")
    assert rc == 0, err
    line = next(x for x in out.splitlines() if x.startswith(f"run across nodes {gid}"))
    assert "rank 1 unknown (node-b: " in line
    assert line.endswith(" while rank 0 ready"), line
    rc, out, err = cli(capsys, "stop", "node-a", r0, "--int-timeout", "10")
    assert rc == 1 and "node node-b refused the relaunch lock (" in err
    assert "released the locks taken on node-a; nothing was started or stopped" in err
    assert _status(a, r0)["state"] == "running" and not (_run_dir(a, r0) / "stopped.json").exists()
    assert not (a.node_home / "relaunch.lock").exists()


def test_a_live_server_on_one_node_starts_no_rank(two_nodes, capsys):
    a, b = two_nodes["node-a"], two_nodes["node-b"]
    rc, out, err = cli(capsys, "launch", "node-b", *SIM, "--", "--model-path", "Qwen/Qwen3.6-27B",
                       "--port", str(pick_free_port()), "--sim-speed", "20")
    assert rc == 0, err
    alone = out.strip()
    rc, out, err = cli(capsys, "launch", "node-a", "node-b", *SIM, "--", *_args())
    assert rc == 1 and f"node-b: a server is already live there: run {alone}" in err and "nothing was started" in err
    assert not (a.node_home / "runs").exists() or not any((a.node_home / "runs").iterdir())
    assert not (a.node_home / "relaunch.lock").exists() and not (b.node_home / "relaunch.lock").exists()
    rc, out, err = cli(capsys, "stop", "node-b", alone, "--int-timeout", "10")
    assert rc == 0, err
