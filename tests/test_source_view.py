"""``v`` on a ServerArgs row. On the simulated node (Pilot, the demo): the screen says the node
is SIMULATED and has no SGLang source, naming the writer's file:line from the resolver's
output. On a real node (LocalNode): a missing file names the python searched and where its
sglang is (none, or the real 0.5.11 venv's package directory)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from fixtures.console import wait_until
from mambaconsole.errors import ConsoleError
from mambaconsole.node.local import LocalNode
from mambaconsole.session.feed import Feed
from mambaconsole.session.settings import HostSettings
from test_demo_console import demo_app

pytestmark = pytest.mark.timeout(240)


async def test_view_source_on_the_simulated_node(demo_home):
    demo, app = demo_app(demo_home)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_until(pilot, lambda: app.state.rows and app.state.simulated, what="the resolution")
        field = app.state.resolution["fields"]["speculative_algorithm"]
        last = field["writes"][-1]
        await pilot.press("3")
        pane = app.args_pane
        await wait_until(pilot, lambda: any(r.field == "speculative_algorithm" for r in pane._rows))
        i = next(i for i, r in enumerate(pane._rows) if r.field == "speculative_algorithm")
        pane.query_one("DataTable").move_cursor(row=i)
        await pilot.press("v")
        await wait_until(pilot, lambda: type(app.screen).__name__ == "SourceScreen", what="the source screen")
        await pilot.pause(0.3)
        body = str(app.screen.query_one("#src-body").render())
        assert "SIMULATED" in body and "no SGLang source" in body, body
        assert f"{last['file']}:{last['line']}" in body, body
        assert "not found on the node" not in body


async def test_read_source_missing_names_the_python_and_sglang(sglang_python_for):
    feed = Feed(LocalNode(), HostSettings(python=sys.executable))
    with pytest.raises(ConsoleError) as err:
        await feed.read_source("sglang/srt/server_args.py", 10)
    msg = str(err.value)
    assert "not found on the node: sglang/srt/server_args.py" in msg and sys.executable in msg, msg
    assert "no sglang importable" in msg, msg

    py = str(sglang_python_for("0.5.11"))
    feed = Feed(LocalNode(), HostSettings(python=py))
    text = await feed.read_source("sglang/srt/server_args.py", 10)
    assert any(ln.startswith(">   10") for ln in text.splitlines())
    with pytest.raises(ConsoleError) as err:
        await feed.read_source("sglang/srt/no_such_file.py", 10)
    msg = str(err.value)
    assert "not found on the node: sglang/srt/no_such_file.py" in msg and py in msg, msg
    pkg = next(Path(p) for p in Path(py).parent.parent.glob("lib/python*/site-packages/sglang"))
    assert str(pkg) in msg or str(pkg.resolve()) in msg, msg
