"""Multi-node runs, the pure part (``mambaconsole.sglang.multinode``): the ranks' argvs checked
against each other, and each rank's log read for where it stands, on the real SGLang 0.5.23
logs of a two-rank run recorded on this machine (``tests/data/multinode/README.md``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mambaconsole.sglang.multinode import (
    LogPhase, MultiNodeError, RankView, assign_ranks, check_ranks, fates_line, log_phase, rank_fate,
)

DATA = Path(__file__).parent / "data" / "multinode"
BASE = ["--model-path", "Qwen/Qwen3.6-27B", "--tp", "2", "--dist-init-addr", "10.0.0.1:5000"]


def _lines(name: str) -> list[str]:
    return (DATA / name).read_text().splitlines()


def _upto(name: str, marker: str) -> list[str]:
    """The log as it stood before its first line holding ``marker`` (a live rank's log)."""
    lines = _lines(name)
    return lines[:next(i for i, line in enumerate(lines) if marker in line)]


def test_assign_ranks_gives_each_node_its_rank_and_nnodes():
    out = assign_ranks(BASE, ["a", "b", "c"])
    assert [a[a.index("--node-rank") + 1] for a in out] == ["0", "1", "2"]
    assert all(a[a.index("--nnodes") + 1] == "3" for a in out)
    assert all(a[:len(BASE)] == BASE for a in out)  # the user's args untouched, in their order


@pytest.mark.parametrize("args, nodes, says", [
    (BASE + ["--nnodes", "3"], ["a", "b"], "--nnodes 3 disagrees with the 2 nodes"),
    (BASE + ["--node-rank", "1"], ["a", "b"], "--node-rank 1 is in the args"),
    (BASE[:-2], ["a", "b"], "no --dist-init-addr"),
    (BASE, ["a"], "two nodes or more"),
    (BASE, ["a", "a"], "node a is given twice"),
])
def test_assign_ranks_refuses(args, nodes, says):
    with pytest.raises(MultiNodeError, match=says.replace("(", r"\(").replace(")", r"\)")):
        assign_ranks(args, nodes)


def _rank(i: int, n: int = 2, extra: list[str] | None = None) -> list[str]:
    return BASE + ["--nnodes", str(n), "--node-rank", str(i)] + (extra or [])


@pytest.mark.parametrize("argvs, says", [
    ([_rank(0), _rank(1, extra=["--mem-fraction-static", "0.8"])],
     "node b's args differ from node a's in more than --node-rank: + --mem-fraction-static 0.8"),
    ([_rank(0), _rank(0)], "rank 0 is given twice: nodes a and b"),
    ([_rank(0, 3), _rank(1, 3)], "rank 2 is missing: --nnodes 3, but no node of a, b has --node-rank 2"),
    ([_rank(0), _rank(1, 3)], "--nnodes disagrees between the nodes: a says 2, b says 3"),
    ([_rank(0), _rank(2)], "node b: --node-rank 2 is outside 0 to 1"),
    ([_rank(0), BASE + ["--nnodes", "2"]], "node b: no --node-rank"),
    ([_rank(0), [a if a != "10.0.0.1:5000" else "10.0.0.2:5000" for a in _rank(1)]],
     "--dist-init-addr differs between the nodes: a 10.0.0.1:5000, b 10.0.0.2:5000"),
])
def test_check_ranks_refuses(argvs, says):
    with pytest.raises(MultiNodeError) as err:
        check_ranks(argvs, ["a", "b"])
    assert says in str(err.value)


def test_check_ranks_matches_options_by_field_not_spelling():
    a = _rank(0)
    b = [x if x != "--tp" else "--tp-size" for x in _rank(1)]
    check_ranks([a, b], ["a", "b"])  # --tp 2 and --tp-size 2 set the same field: one run


# ------------------------------------------------------------------ real logs


def test_rank0_waiting_for_its_peer_reads_as_waiting():
    # real 0.5.23: rank 0 printed "Init parallel begin." and nothing more for 30 s (no peer)
    p = log_phase(_upto("0.5.23-rank0-alone-timeout.log", "Scheduler hit an exception"))
    assert p.dist_wait and p.connect_to is None


def test_rank1_without_rank0_names_the_store_it_cannot_reach():
    p = log_phase(_upto("0.5.23-rank1-alone-timeout.log", "Exception raised from"))
    assert p.dist_wait and p.connect_to == "127.0.0.1:29913"


def test_rank0_timed_out_waiting_is_a_crash_with_torchs_message():
    p = log_phase(_lines("0.5.23-rank0-alone-timeout.log"))
    assert not p.dist_wait and p.outcome == "crashed"
    assert "DistStoreError: Timed out after 31 seconds waiting for clients. 1/2 clients joined." in p.failure


def test_rank0_after_its_peer_died_names_the_closed_peer():
    p = log_phase(_lines("0.5.23-rank0-peer-killed.log"))
    assert p.outcome == "crashed" and p.peer_closed == "127.0.0.1:33159"


def test_joined_rank1_reads_as_joined():
    p = log_phase(_lines("0.5.23-rank1-ready.log"))
    assert p.follower_up and not p.dist_wait


def test_fates_put_the_dead_rank_beside_the_waiting_one():
    dead = RankView(1, "node-b", "r1", "exited", alive=False, exit_code=137, signal="SIGKILL")
    waiting = RankView(0, "node-a", "r0", "running", alive=True, phase=LogPhase("unknown", dist_wait=True))
    assert fates_line([waiting, dead]) == "rank 1 dead (exit 137, SIGKILL) while rank 0 waits at distributed init"


def test_fates_of_ranks_the_console_cannot_reach_say_so():
    v = RankView(1, "node-b", "r1", None, error="connection refused")
    assert rank_fate(v) == "rank 1 unknown (node-b: connection refused)"


def test_a_stopped_rank_is_not_dead():
    v = RankView(0, "a", "r0", "exited", exit_code=130, signal="SIGINT", stopped=True)
    w = RankView(1, "b", "r1", "exited", exit_code=130, signal="SIGINT", stopped=True)
    assert fates_line([v, w]) == "rank 0 stopped (exit 130); rank 1 stopped (exit 130)"


def _inspect(capsys, *argv):
    from mambaconsole.cli import main

    rc = main(["inspect", *argv])
    out, err = capsys.readouterr()
    assert rc == 0, err
    return out


@pytest.mark.parametrize("name, says", [
    ("0.5.23-rank0-peer-killed.log", "rank 0 of 2 (--dist-init-addr 127.0.0.1:29911): ended when its peer "
     "127.0.0.1:33159 closed the connection (gloo): another rank died first"),
    ("0.5.23-rank0-alone-timeout.log", "rank 0 of 2 (--dist-init-addr 127.0.0.1:29912): the ranks never formed a "
     "group: Scheduler: torch.distributed.DistStoreError: Timed out after 31 seconds waiting for clients. 1/2 "
     "clients joined."),
    ("0.5.23-rank1-ready.log", "rank 1 of 2 (--dist-init-addr 127.0.0.1:29911): joined rank 0"),
])
def test_inspect_says_what_a_ranks_log_shows(capsys, name, says):
    assert f"run across nodes: {says}" in _inspect(capsys, str(DATA / name))


def test_inspect_of_a_waiting_rank_and_its_json(capsys, tmp_path):
    log = tmp_path / "rank0.log"
    log.write_text("\n".join(_upto("0.5.23-rank0-alone-timeout.log", "Scheduler hit an exception")) + "\n")
    mn = json.loads(_inspect(capsys, str(log), "--json"))["multinode"]
    assert (mn["nnodes"], mn["node_rank"], mn["dist_init_addr"]) == (2, 0, "127.0.0.1:29912")
    assert mn["says"].startswith("the log stops at distributed init: waiting for the other ranks to join")
    # a log of one node has no such key's value
    one = tmp_path / "one.log"
    one.write_text("[2026-12-01 13:14:03] Init parallel begin.\n")
    assert json.loads(_inspect(capsys, str(one), "--json"))["multinode"] is None


def test_a_ready_rank_beside_a_dead_one_is_not_called_serving():
    dead = RankView(1, "b", "r1", "exited", exit_code=137, signal="SIGKILL")
    ready = RankView(0, "a", "r0", "running", alive=True, phase=LogPhase("ready"))
    assert fates_line([ready, dead]) == ("rank 1 dead (exit 137, SIGKILL) while rank 0 ready by its log (no step "
                                         "completes without rank 1)")


def test_a_joined_rank1_reads_ready_though_it_prints_no_ready_line(capsys):
    # a rank >= 1 never prints "The server is fired up"; its stand-in /health starts once its
    # schedulers are ready: the fold (console, inspect, history) calls it ready from that line
    r = json.loads(_inspect(capsys, str(DATA / "0.5.23-rank1-ready.log"), "--json"))
    assert r["outcome"] == "ready" and r["failure"] is None
