"""The one backoff policy (``mambaconsole/backoff.py``): its schedules, worked out by hand, and
a check that no other module of the node, session or UI layers grows a wait of its own."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mambaconsole.backoff import RECONNECT, STREAM, Backoff

PKG = Path(__file__).resolve().parents[1] / "tui" / "mambaconsole"


def test_reconnect_schedule_doubles_from_half_a_second_to_ten():
    assert RECONNECT.schedule(8) == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0, 10.0]


def test_stream_schedule_doubles_from_one_second_to_thirty():
    assert STREAM.schedule(7) == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]


def test_nothing_failed_waits_nothing_and_a_long_outage_stays_at_the_cap():
    assert RECONNECT.delay(0) == 0.0
    assert RECONNECT.delay(-3) == 0.0
    assert RECONNECT.delay(5000) == 10.0  # 0.5 * 2**4999 would overflow a float


def test_a_policy_that_cannot_wait_is_refused():
    with pytest.raises(ValueError):
        Backoff(0.0, 1.0)
    with pytest.raises(ValueError):
        Backoff(2.0, 1.0)


def test_poll_every_interval_slowed_while_idle_up_to_its_factor():
    runs = Backoff.poll(2.0, idle_factor=5)
    # 2 s, then 4, 8, and 10 (5 intervals) however long nothing changes
    assert [runs.next_in(idle=i) for i in range(5)] == [2.0, 4.0, 8.0, 10.0, 10.0]
    assert [Backoff.poll(2.0).next_in(idle=i) for i in range(3)] == [2.0, 2.0, 2.0]


def test_a_failing_poll_backs_off_from_two_intervals_to_thirty_seconds():
    http = Backoff.poll(2.0, idle_factor=4)
    assert [http.next_in(fails=n) for n in range(1, 7)] == [4.0, 8.0, 16.0, 30.0, 30.0, 30.0]
    assert http.next_in(fails=1, idle=3) == 4.0  # a failure outranks idleness


def _own_waits(path: Path) -> list[str]:
    """``x ** n`` with a variable exponent (a home-made exponential wait)."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and not isinstance(node.right, ast.Constant):
            out.append(f"{path.relative_to(PKG)}:{node.lineno}")
    return out


def test_no_other_backoff_in_the_node_session_and_ui_layers():
    found = [w for layer in ("node", "session", "ui") for p in sorted((PKG / layer).rglob("*.py"))
             for w in _own_waits(p)]
    assert found == []
