"""The console's chrome around the panes: zoom keeps the header, the command palette's entries,
where ctrl+s saves. On the real app without a node."""

from __future__ import annotations

import re

import pytest

from mambaconsole.node.local import LocalNode
from mambaconsole.state import RunInfo, RunsListed
from mambaconsole.ui.app import ConsoleApp
from mambaconsole.session.feed import Feed
from mambaconsole.ui.header import StatusBar
from mambaconsole.session.settings import HostSettings

pytestmark = pytest.mark.timeout(120)


def bare_app(**kw) -> ConsoleApp:
    return ConsoleApp(Feed(LocalNode("t"), HostSettings()), start_workers=False, **kw)


async def test_zoom_keeps_both_header_lines_in_sight():
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        app.state.apply(RunsListed((RunInfo("run-zoom-1", log_path="/x", state="running"),), "run-zoom-1"))
        app.refresh_panes({"header", "log"})
        await pilot.pause(0.05)
        bar = app.query_one(StatusBar)
        before = app.screen._compositor.visible_widgets
        assert bar in before
        for pane_key, pane_id in (("4", "log"), ("1", "gpu"), ("2", "spec"), ("3", "args")):
            await pilot.press(pane_key, "z")
            await pilot.pause(0.05)
            assert app.screen.maximized is app.query_one(f"#{pane_id}")
            assert bar in app.screen._compositor.visible_widgets
            assert bar.region.height == 2 and bar.region.y == 0
            pane = app.query_one(f"#{pane_id}")
            assert pane.region.y >= 2  # below the header, not over it
            assert "run-zoom-1" in app.export_screenshot()
            await pilot.press("z")
            await pilot.pause(0.05)
            assert app.screen.maximized is None


# key names as Textual spells them, never as typed ("key h" is the palette's way to say a key)
RAW_KEY = re.compile(r"\b(question_mark|minus|plus|equals_sign|left_square_bracket|right_square_bracket|ctrl\+p)\b")


async def test_palette_has_one_readable_entry_per_action():
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        cmds = list(app.get_system_commands(app.screen))
        titles = [c.title for c in cmds]
        assert len(titles) == len(set(titles)), titles
        for c in cmds:
            assert not RAW_KEY.search(c.title) and not RAW_KEY.search(c.help), (c.title, c.help)
            assert len(c.title.split()) >= 2, c.title  # not a bare "GPU", "Log", "Args", "Keys"
            assert c.help, c.title
        # every key of the app has its entry (the key is named in the entry's help, as typed)
        helps = " ".join(c.help for c in cmds)
        for b in app.BINDINGS:
            for key in b.key.split(","):
                typed = {"question_mark": "?", "minus": "-", "plus": "+", "equals_sign": "+",
                         "left_square_bracket": "[", "right_square_bracket": "]"}.get(key, key)
                assert re.search(rf"(^|\s){re.escape(typed)}(\s|$)", helps), key
        # an entry runs its action: the log filter box opens
        await pilot.press("ctrl+p")
        await pilot.pause(0.2)
        await pilot.press(*"Log: filter")
        await pilot.pause(0.5)
        await pilot.press("enter")
        await pilot.pause(0.3)
        assert app.query_one("#log-filter-row").display
        assert app.focused is app.query_one("#log-filter")


async def test_ctrl_s_saves_under_the_user_data_dir_and_says_where(tmp_path, monkeypatch):
    data, cwd = tmp_path / "data", tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.setenv("XDG_DATA_HOME", str(data))
    monkeypatch.chdir(cwd)
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("ctrl+s")
        await pilot.pause(0.2)
        saved = list((data / "mambaconsole" / "screenshots").glob("*.svg"))
        assert len(saved) == 1 and saved[0].read_text().lstrip().startswith("<svg")
        assert list(cwd.iterdir()) == []
        assert any(str(saved[0]) in str(n.message) for n in app._notifications), list(app._notifications)


async def test_spec_sparklines_say_their_scale():
    """Each sparkline's label gives the range its bars span (lowest value beside the lowest
    bar, highest beside a full one: not 0..full), how many batches and the time they cover,
    computed here from the decode lines fed in 2 s apart on the console's clock (0.5.11 format,
    sglang-observables §2); with 4 batches each chart is 4 columns from the left, not stretched,
    in a chart as wide as the pane (a width per batch laid the screen out at each batch)."""
    from mambaconsole.state import LogLine, LogLines

    lens, thrs = [2.10, 3.40, 1.80, 2.95], [410.5, 388.0, 512.25, 450.0]
    lines = [f"[2026-04-23 07:32:1{i}] Decode batch, #running-req: 4, #full token: 2048, full token usage: 0.10, "
             f"mamba num: 8, mamba usage: 0.20, accept len: {a:.2f}, accept rate: 0.60, cuda graph: True, "
             f"gen throughput (token/s): {t:.2f}, #queue-req: 0" for i, (a, t) in enumerate(zip(lens, thrs))]
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        now = [1000.0]
        app.state.slices.fold.clock = lambda: now[0]
        app.state.apply(RunsListed((RunInfo("r1", log_path="/x", state="running", pid=1),), "r1"))
        off = 0
        for text in lines:
            app.state.apply(LogLines("r1", (LogLine("r1", off, text),)))
            app.state.flush_log()
            off += len(text) + 1
            now[0] += 2.0
        app.refresh_panes({"spec"})
        await pilot.pause(0.05)
        label = str(app.spec_pane.query_one("#len-label").render())
        assert label == f"accept length ▁{min(lens):.2f} █{max(lens):.2f} · {len(lens)} batches, 6 s"
        thr = str(app.spec_pane.query_one("#thr-label").render())
        assert thr == f"gen throughput token/s ▁{min(thrs):.0f} █{max(thrs):.0f} · {len(thrs)} batches, 6 s"
        for spark in ("#spark-len", "#spark-thr"):
            w = app.spec_pane.query_one(spark)
            drawn = "".join(seg.text for seg in w.render_line(w.size.height - 1))
            # one column per batch from the left (the chart keeps the pane's width: no layout
            # per batch), the rest of the row blank
            assert w.size.width > len(lens) and len(drawn.rstrip()) == len(lens) and " " not in drawn.rstrip()

async def test_spec_charts_are_never_cut_by_the_pane_edge(monkeypatch):
    """At 120x40 the throughput chart fell off the pane and the accept length lost its top row:
    every chart shown lies whole inside the pane (they take one row each where two do not fit)."""
    from test_console_snapshots import feed_recorded, frozen_app

    for size in ((120, 40), (200, 60)):
        app = frozen_app(monkeypatch)
        async with app.run_test(size=size) as pilot:
            feed_recorded(app)
            await pilot.pause()
            await pilot.pause(0.1)
            pane = app.spec_pane
            inside = pane.content_region
            shown = [w for w in pane.children if w.display and w.id and "spark" in w.id]
            assert any(w.id == "spark-len" for w in shown), size
            for w in shown:
                assert inside.contains_region(w.region), (size, w.id, w.region, inside)
