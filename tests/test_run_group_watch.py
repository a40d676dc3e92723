"""``GroupWatch``: the console's reader of a run across nodes reconnects to a node it could not
reach, and reads a plain run's group only once (stand-in stores; the real path is in
test_multinode_runs.py)."""

from __future__ import annotations

import asyncio

from mambaconsole.node.base import NodeError
from mambaconsole.node.run_group import GroupWatch
from mambaconsole.node.runs import Run

GROUP = {"id": "mn-1", "rank": 0, "nnodes": 2, "nodes": ["a", "b"], "runs": ["r0", "r1"]}


def _run(rid: str, group: dict | None) -> Run:
    return Run.from_record({"run_id": rid, "state": "running", "alive": True, "argv": ["x"], "run_dir": "/d",
                            **({"group": group} if group else {})})


class Store:
    def __init__(self, runs: dict[str, Run]) -> None:
        self.runs, self.python, self.gets = runs, "python3", 0

    async def get(self, rid: str) -> Run:
        self.gets += 1
        return self.runs[rid]

    async def tail(self, rid: str, n: int) -> str:
        return "[2026-12-01 17:48:03 TP0] Init parallel begin.\n"


class Node:
    name = "b"

    async def close(self) -> None:
        pass


def test_a_node_that_comes_back_is_read_again(monkeypatch):
    import mambaconsole.node.run_group as rg

    here = Store({"r0": _run("r0", GROUP)})
    there = Store({"r1": _run("r1", dict(GROUP, rank=1))})
    monkeypatch.setattr(rg, "RunStore", lambda node, python="python3": there)
    tries = []

    async def connect(host):
        tries.append(host)
        if len(tries) == 1:
            raise NodeError(f"{host}: connection refused")
        return Node()

    async def go():
        w = GroupWatch("a", Node(), here, connect)
        first = await w.read("r0")
        second = await w.read("r0")
        return first, second

    (g1, v1), (g2, v2) = asyncio.run(go())
    assert g1 == g2 == "mn-1" and tries == ["b", "b"]
    assert v1[1].state is None and v1[1].error == "connection refused"  # the node named once, by rank_fate
    assert v2[1].state == "running" and v2[1].phase.dist_wait


def test_a_plain_run_is_asked_for_its_group_once():
    here = Store({"r9": _run("r9", None)})

    async def go():
        w = GroupWatch("a", Node(), here, None)
        return [await w.read("r9") for _ in range(3)]

    assert asyncio.run(go()) == [(None, [])] * 3 and here.gets == 1
