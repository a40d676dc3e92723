"""What a newcomer found cut off at 80x24 and 120x40 on the demo: each pinned on the real app at
that size, the text read off the screen must be whole."""

from __future__ import annotations

import re
import time

import pytest

from mambaconsole.node.local import LocalNode
from mambaconsole.state import RunInfo, RunsListed
from mambaconsole.ui.app import ConsoleApp
from mambaconsole.session.feed import Feed
from mambaconsole.session.settings import HostSettings

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
        # the run ended: how long it ran (from its start to its end), not an uptime
        assert " ran 4 min 50 s " in first and " up " not in first
        assert " data 12 s ago " in first  # 80 columns hold them too
        assert "…" not in first  # parts give way whole, nothing is cut mid-word


async def test_log_status_keeps_search_filter_and_wrap_whole_at_120x40(monkeypatch):
    from test_console_snapshots import feed_recorded, frozen_app

    app = frozen_app(monkeypatch)
    async with app.run_test(size=(120, 40)) as pilot:
        feed_recorded(app)
        await pilot.pause()
        lp = app.log_pane
        lp.set_filter("Decode batch")
        lp.set_search("accept")
        await pilot.pause()
        # the recorded sim log (tests/data/sim-ready.log): its Decode batch lines, and the
        # search's matches among them (the search counts lines)
        decode = [ln for ln in app.state.log if "Decode batch" in ln.text]
        matches = sum(1 for ln in decode if "accept" in ln.text.lower())
        rows = [w.render_line(0).text for w in lp.query("#log-active, #log-status") if w.display]
        shown = " | ".join(rows)
        # the wrap mode whole (its key "(w)" gives way before the line count, as "(a)" does)
        assert re.search(r"  wrap( \(w\))?(  \+\d more)?$", rows[-1]), rows
        assert f"filter 'Decode batch' {len(decode)} shown" in shown
        assert "search 'accept' " in shown and f"/{matches}" in shown
        # nothing of them cut; what left says so in words ("+N more"), never a "…"
        assert "…" not in shown
        for r in rows:
            assert len(r.rstrip()) <= lp.content_size.width


@pytest.mark.parametrize("which", ["filter", "search"])
async def test_log_box_prompts_are_whole_at_120x40(monkeypatch, which):
    from test_console_snapshots import feed_recorded, frozen_app

    app = frozen_app(monkeypatch)
    async with app.run_test(size=(120, 40)) as pilot:
        feed_recorded(app)
        await pilot.pause()
        await pilot.press("4", "f" if which == "filter" else "slash")
        await pilot.pause()
        box = app.log_pane.query_one(f"#log-{which}")
        assert box.has_focus and box.value == ""
        shown = box.render_line(0).text.strip()
        assert shown == box.placeholder.strip() and "…" not in shown
        assert "Esc" in shown or "empty" in shown  # how to close it or clear it, whole


async def test_narrowed_args_pane_still_names_the_flags(monkeypatch):
    from textual.widgets import DataTable

    from test_console_snapshots import feed_recorded, frozen_app

    app = frozen_app(monkeypatch)
    async with app.run_test(size=(120, 40)) as pilot:
        feed_recorded(app)
        await pilot.pause()
        for _ in range(4):  # "[" four times: the narrowest the app allows (2 tenths of 120)
            await pilot.press("left_square_bracket")
            await pilot.pause()
        table = app.query_one("#args").query_one(DataTable)
        assert table.size.width <= 26
        # the recorded resolution's first rows (tests/data/resolve-working.json, flags given on
        # the command line first): each row's flag is named, not "…"
        first = table.render_line(1).text
        assert "--max-running" in first, first


async def test_80x24_editor_flag_names_stay_on_one_row(monkeypatch):
    from rich.cells import cell_len

    from mambaconsole.ui.editor import EditorScreen
    from test_console_snapshots import _json, feed_recorded, frozen_app

    app = frozen_app(monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        feed_recorded(app)
        params = _json("params-0.5.11.json")  # SGLang 0.5.11's own parser, recorded
        ed = EditorScreen(app.feed, list(app.state.run.argv), params=params)
        await app.push_screen(ed)
        await pilot.pause()
        labels = list(ed.query("#ed-form .row Label"))
        flags = [str(lb.render()) for lb in labels]
        # the longest flags of that parser's Mamba/speculative rows, e.g. --speculative-accept-threshold-acc
        assert max(map(cell_len, flags)) > 30
        for lb, flag in zip(labels, flags):
            assert lb.size.height == 1 and lb.size.width >= cell_len(flag), (flag, lb.size)


async def test_80x24_editor_title_keys_are_whole(monkeypatch):
    from mambaconsole.ui.editor import EditorScreen
    from test_console_snapshots import _json, feed_recorded, frozen_app

    app = frozen_app(monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        feed_recorded(app)
        ed = EditorScreen(app.feed, list(app.state.run.argv), params=_json("params-0.5.11.json"))
        await app.push_screen(ed)
        await pilot.pause()
        title = ed.query_one("#ed-title").render_line(0).text
        assert "Edit the Mamba parameters" in title
        assert "ctrl+r pre-flight" in title and "ctrl+y relaunch" in title  # the editor's own keys, whole
        assert "…" not in title


async def test_80x24_preflight_verdict_is_whole_above_the_buttons(monkeypatch):
    from mambaconsole.ui import messages as M
    from mambaconsole.ui.editor import EditorScreen
    from test_console_snapshots import _json, feed_recorded, frozen_app

    app = frozen_app(monkeypatch)
    async with app.run_test(size=(80, 24)) as pilot:
        feed_recorded(app)
        ed = EditorScreen(app.feed, list(app.state.run.argv), params=_json("params-0.5.11.json"))
        await app.push_screen(ed)
        await pilot.pause()
        ed.query_one("#f-mamba_scheduler_strategy").value = "no_buffer"
        await pilot.pause()
        # SGLang 0.5.11's recorded refusal of no_buffer with speculative decoding
        refusal = _json("resolve-no-buffer.json")
        ed.post_message(M.PreflightDone(ed.edited_args(), refusal))
        await pilot.pause()
        verdict = ed.query_one("#ed-verdict")
        shown = " ".join(verdict.render_line(y).text.strip() for y in range(verdict.size.height))
        tail = refusal["error"]["message"].split()[-1]  # the message's last word: SGLANG_ENABLE_SPEC_V2=1.
        assert tail in shown, shown
        assert verdict.region.bottom <= ed.query_one("#ed-buttons").region.y
