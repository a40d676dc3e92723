"""What a newcomer found cut off at 80x24 and 120x40 on the demo: each pinned on the real app at
that size, the text read off the screen must be whole."""

from __future__ import annotations

import time

import pytest

from mambaconsole.node.local import LocalNode
from mambaconsole.state import RunInfo, RunsListed
from mambaconsole.ui.app import ConsoleApp
from mambaconsole.ui.feed import Feed
from mambaconsole.ui.settings import HostSettings

pytestmark = pytest.mark.timeout(120)


def bare_app(**kw) -> ConsoleApp:
    return ConsoleApp(Feed(LocalNode("t"), HostSettings()), start_workers=False, **kw)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_header_keeps_the_state_word_with_its_exit_code_and_simulated_whole(size):
    app = bare_app()
    async with app.run_test(size=size) as pilot:
        now = time.time()
        st = app.state
        st.simulated = True
        st.sglang_version = "0.5.23"
        st.apply(RunsListed((RunInfo("20261201-165500-ab12", log_path="/x", state="exited", started=now - 300,
                                     ended=now - 10, exit_code=130, stopped=True),), "20261201-165500-ab12"))
        st.last_data = now - 12
        app.refresh_panes({"header"})
        await pilot.pause(0.05)
        first = app.bar.render_line(0).text
        assert "● STOPPED exit 130 " in first
        assert " SIMULATED " in first
        assert " up 4 min 50 s " in first and " data 12 s ago " in first  # 80 columns hold them too
        assert "…" not in first  # parts give way whole, nothing is cut mid-word
