"""The ServerArgs pane on the simulated node, driven by Pilot: the live server's values next to
the resolved ones (the sim's /server_info and its log, read here with httpx and a regex), the
given value of an overridden field (from the run's argv), and columns sized to the pane's
width (nothing cut when the pane is wide enough; a narrow pane leaves changed-by out and the
detail area under the table shows the highlighted row in full). The column choice itself is
checked on the pure :func:`column_widths` at every width from 40 to 260 cells."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from fixtures.console import wait_until
from mambaconsole.sim import demo as sim_demo
from textual.geometry import Region

from mambaconsole.ui.app import ConsoleApp
from mambaconsole.state import ArgRow
from mambaconsole.ui.args_pane import column_widths, detail_text
from mambaconsole.session.demo import Demo

from test_demo_console import SPEED

pytestmark = pytest.mark.timeout(240)


def _cells(table) -> list[list[str]]:
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


def _working_app(demo_home) -> tuple[Demo, list[str], ConsoleApp]:
    """The console on the demo node with the working argv started (it reaches ready)."""
    demo = Demo(demo_home, speed=SPEED)
    argv = sim_demo.working_argv(port=demo.port)

    async def start_working():
        await demo.feed.store.start(sim_demo.sim_command(argv, speed=SPEED), env=demo.run_env(), session="demo")

    return demo, argv, ConsoleApp(demo.make_feed(), poll_s=0.3, prepare=start_working, on_quit=demo.stop)


def _logged_max_running_requests(app) -> int:
    """What SGLang used, read off the run's own log (its ready summary)."""
    log = Path(app.state.run.log_path).read_text()
    return int(re.search(r"max_running_requests=(\d+), context_len", log).group(1))


async def test_args_pane_shows_live_values_given_values_and_full_width(demo_home):
    demo, argv, app = _working_app(demo_home)
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_until(pilot, lambda: app.state.status == "ready", timeout=60, what="ready")
        # what SGLang used, read off the run's own log and the live /server_info
        logged = _logged_max_running_requests(app)
        info = httpx.get(f"http://127.0.0.1:{demo.port}/server_info", timeout=10).json()
        effective = info["internal_states"][0]["effective_max_running_requests_per_dp"]
        asked = argv[argv.index("--max-running-requests") + 1]
        assert logged == effective and str(logged) != asked  # the scenario: capped by the Mamba cache
        await wait_until(pilot, lambda: app.state.server_info and app.state.rows, what="server_info and rows")

        await pilot.press("3")  # focus the ServerArgs pane, then zoom it
        await pilot.press("z")
        await pilot.pause(0.3)
        table = app.args_pane.query_one("DataTable")
        rows = _cells(table)
        mrr = next(r for r in rows if r[0] == "--max-running-requests")
        assert re.fullmatch(rf"{asked} → {logged} live", mrr[1]), mrr
        assert "live" in mrr[1] and "·" in mrr[2]  # where the live value was read
        note = str(app.args_pane.query_one("#args-note").render())
        assert re.search(r"\b[1-9]\d* differs? from the live server", note), note
        # the given value of an overridden row (the argv gave NEXTN; SGLang used EAGLE)
        given = argv[argv.index("--speculative-algorithm") + 1]
        algo = next(r for r in rows if r[0] == "--speculative-algorithm")
        assert algo[2].startswith("overridden") and f"given {given}" in algo[1], algo
        # wide enough: no flag, value or writer is cut (no ellipsis anywhere)
        assert table.size.width >= 150
        flags = [r[0] for r in rows]
        assert "--mamba-scheduler-strategy" in flags and "--speculative-num-draft-tokens" in flags
        widths = [c.width for c in table.columns.values()]
        assert sum(widths) + 4 * 2 <= table.size.width
        model = next(r for r in rows if r[0] == "--model-path")
        assert widths[1] >= len(model[1]) and widths[0] >= len("--speculative-num-draft-tokens")
        by = [r[3] for r in rows if r[3]]
        assert by and widths[3] >= max(map(len, by)), (widths, max(by, key=len))
        # the live filter keeps only the disagreeing rows
        while app.args_pane.mode != "live":
            app.args_pane.action_cycle_filter()
        await pilot.pause(0.2)
        live_rows = _cells(table)
        assert live_rows and all("live" in r[1] for r in live_rows)
        # un-zoomed (narrower pane): the columns shrink to fit
        await pilot.press("z")
        await wait_until(pilot, lambda: table.size.width < 150
                         and sum(c.width for c in table.columns.values()) + 4 * 2 <= table.size.width,
                         timeout=10, what="the columns re-laid out for the narrower pane")
        narrow = [c.width for c in table.columns.values()]
        assert sum(narrow) + 4 * 2 <= max(table.size.width, 40)


# inputs for the column rule: the demo's widest rows, a long default flag, a writer of 58 cells
FLAGS = ["--max-running-requests", "--speculative-algorithm", "--mamba-scheduler-strategy",
         "--speculative-num-draft-tokens", "--constrained-json-whitespace-pattern", "--page-size"]
VALUES = ["16 → 4 live", "EAGLE  given NEXTN", "extra_buffer", "4", "None", "1"]
SOURCES = ["cli · scheduler", "overridden", "cli", "cli", "default", "derived"]
WRITERS = ["", "_handle_speculative_decoding sglang/srt/server_args.py:3311", "", "", "",
           "_handle_page_size sglang/srt/server_args.py:2818"]


def test_column_choice_by_width():
    """Each shown column takes 2 cells of padding and 2 cells stay for the vertical scrollbar.
    Useful widths (the rule): a flag column of 26 (``--mamba-scheduler-strategy`` whole), a
    value of 12, the source whole, a changed-by of 20 (or the longest entry where shorter)."""
    longest = [max(len(x) for x in xs) for xs in (FLAGS, VALUES, SOURCES, WRITERS)]
    useful = [min(longest[0], 26), min(longest[1], 12), longest[2], min(longest[3], 20)]
    four_at = None
    for width in range(40, 261):
        flag_w, value_w, src_w, by_w = column_widths(width, FLAGS, VALUES, SOURCES, WRITERS)
        shown = [w for w in (flag_w, value_w, src_w, by_w) if w]
        assert all(w > 0 for w in shown) and sum(shown) + 2 * len(shown) + 2 <= width, (width, shown)
        if by_w:  # all four: none narrower than useful
            four_at = four_at or width
            assert all(w >= u for w, u in zip((flag_w, value_w, src_w, by_w), useful)), (width, shown)
            assert width >= sum(useful) + 4 * 2 + 2
        else:  # changed-by left out: flag, value and source fill the width exactly
            assert four_at is None, f"four columns at {four_at} cells but three at {width}"
            assert sum(shown) + 3 * 2 + 2 == width, (width, shown)
            if width - 3 * 2 - 2 >= useful[0] + useful[1] + min(longest[2], 10):
                assert flag_w >= useful[0] and value_w >= useful[1] and src_w >= min(longest[2], 10), (width, shown)
        if width >= sum(longest) + 4 * 2 + 2:  # room for everything: nothing is cut
            assert by_w and all(w >= n for w, n in zip((flag_w, value_w, src_w, by_w), longest)), (width, shown)
    # the 120x40 console's ServerArgs pane (56 cells): three columns; a zoomed one: four
    assert column_widths(56, FLAGS, VALUES, SOURCES, WRITERS)[3] == 0
    assert four_at is not None and four_at <= 116


def _visible(widget) -> str:
    """The text a widget shows on screen (wrapped and cut to its size)."""
    strips = widget.render_lines(Region(0, 0, widget.size.width, widget.size.height))
    return "\n".join(s.text.rstrip() for s in strips)


async def test_args_pane_at_120x40_detail_follows_the_cursor(demo_home):
    demo, argv, app = _working_app(demo_home)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_until(pilot, lambda: app.state.status == "ready", timeout=60, what="ready")
        logged = _logged_max_running_requests(app)
        await wait_until(pilot, lambda: app.state.server_info and app.state.rows
                         and any(r.disagrees for r in app.state.rows), what="server_info and rows")
        await pilot.press("3")
        pane = app.args_pane
        table = pane.query_one("DataTable")
        await wait_until(pilot, lambda: table.row_count and len(table.columns) == 3,
                         what="three columns in the narrow pane")
        # no horizontal scrollbar: the columns fit the table
        await pilot.pause(0.2)
        assert table.size.width < 70
        assert [str(c.label) for c in table.columns.values()] == ["flag", "value", "source"]
        assert table.virtual_size.width <= table.scrollable_content_region.width, (table.virtual_size, table.size)
        assert not table.show_horizontal_scrollbar
        rows = _cells(table)
        detail = pane.query_one("#args-detail")

        # the overridden row: its given value (the argv) and its writer (the node's resolution)
        given = argv[argv.index("--speculative-algorithm") + 1]
        # in the table itself, whole: the value, and what was given on the line under it where the
        # 3-column pane has no room for both (issue 17: 'EAGLE  give…' at 120 columns)
        used = app.state.resolution["fields"]["speculative_algorithm"]["value"]
        lines = _visible(table).splitlines()
        k = next(k for k, ln in enumerate(lines) if "--speculative-algorithm" in ln)
        assert f" {used} " in lines[k] + " " and f"given {given}" in (lines[k] + lines[k + 1]), lines[k:k + 2]
        assert "…" not in lines[k] + lines[k + 1]
        last = app.state.resolution["fields"]["speculative_algorithm"]["writes"][-1]
        i = next(i for i, r in enumerate(rows) if r[0] == "--speculative-algorithm")
        table.move_cursor(row=i)
        await wait_until(pilot, lambda: _visible(detail).startswith("--speculative-algorithm"), what="the detail")
        shown = _visible(detail)
        assert 2 <= len(shown.splitlines()) <= 4, shown
        assert f"given {given}" in shown and "overridden" in shown, shown
        assert last["function"] in shown and f"{last['file']}:{last['line']}" in shown, shown
        # the cursor moves: the detail follows to the next row
        await pilot.press("down")
        await wait_until(pilot, lambda: _visible(detail).startswith(rows[i + 1][0] + " "),
                         what=f"the detail of {rows[i + 1][0]}")

        # the row the live server disagrees with: both values, and where the live one was read
        j = next(j for j, r in enumerate(rows) if r[0] == "--max-running-requests")
        table.move_cursor(row=j)
        await wait_until(pilot, lambda: _visible(detail).startswith("--max-running-requests"), what="the detail")
        shown = _visible(detail)
        asked = argv[argv.index("--max-running-requests") + 1]
        assert re.search(rf"= {asked}\b", shown) and re.search(rf"live {logged} \(from (/server_info|scheduler|log)\)", shown), shown
        # the counts stay under it
        n_over = sum(1 for f in app.state.resolution["fields"].values() if f["source"] == "overridden")
        note = str(pane.query_one("#args-note").render())
        assert "filter all" in note and f"{n_over} overridden" in note, note


def test_detail_keeps_the_writer_in_sight_whatever_the_value():
    """A long value (a draft model's path, a JSON override) is cut so that the given value, the
    writer's file:line and the live value still fit the detail area's 4 lines (the 5th it may
    take): this row is overridden, differs from the live server, has a 30-cell flag and a
    59-cell writer."""
    from rich.console import Console

    path = "/models/" + "/".join(f"layer{i:02d}-eagle3-draft-checkpoint" for i in range(12))
    writer = "_handle_speculative_decoding sglang/srt/server_args.py:3290"
    row = ArgRow(field="speculative_draft_model_path", flag="--speculative-draft-model-path", value=path,
                 default=None, source="overridden", changed_by=writer, writer_file="sglang/srt/server_args.py",
                 writer_line=3290, live=path[:40], disagrees=True, live_from="/server_info")
    for width in (56, 80, 96, 150):
        lines = [ln.plain.rstrip() for ln in detail_text(row, "/given" + path, {}, width=width).wrap(Console(width=width), width)]
        assert len(lines) <= (5 if width < 60 else 4), (width, lines)
        assert lines[0].startswith("--speculative-draft-model-path = /models/la"), lines
        text = " ".join(lines)
        assert "given /given/mo" in text and "live /models/la" in text, lines
        assert lines[-1].endswith("sglang/srt/server_args.py:3290") and "_handle_speculative_decoding" in text, lines
        assert "(from /server_info)" in text or width < 60, lines
    # room enough (a 100-character value in a 200-cell pane): the whole value
    row.value = path[:100]
    assert path[:100] in detail_text(row, None, {}, width=200).plain


def _two_row_app() -> ConsoleApp:
    """A console with no workers (nothing polls): the tests below feed its state themselves."""
    from mambaconsole.node.local import LocalNode
    from mambaconsole.session.feed import Feed
    from mambaconsole.session.settings import HostSettings

    return ConsoleApp(Feed(LocalNode("t"), HostSettings()), start_workers=False)


def _two_rows(app: ConsoleApp):
    """The app's state with a running run r1 and a resolution of two rows (a derived
    --page-size 1, a given --max-running-requests 16); returns the state."""
    from mambaconsole.state import RunInfo, RunsListed

    st = app.state
    st.apply(RunsListed((RunInfo("r1", log_path="/x", state="running", pid=1),), "r1"))
    st.resolution = {"fields": {}}
    st.rows = [ArgRow("page_size", "--page-size", 1, None, "derived"),
               ArgRow("max_running_requests", "--max-running-requests", 16, None, "cli")]
    return st


async def test_note_says_why_the_table_is_empty_and_past_tense_once_the_run_is_over():
    """The `live` filter with nothing differing, a search matching nothing: the note says so
    (not a bare 0/N); once the run is over, a difference is what its server said while it ran."""
    from mambaconsole.state import RunInfo, RunsListed

    app = _two_row_app()
    async with app.run_test(size=(120, 40)) as pilot:
        st = _two_rows(app)
        pane = app.args_pane

        def note() -> str:
            app.refresh_panes({"args"})
            return str(pane.query_one("#args-note").render())

        pane.mode = "live"
        assert "0/2 fields" in note() and "no field differs from what the server reports" in note()
        pane.mode, pane.query_text = "all", "zzz"
        assert "no field matches 'zzz' (filter all; Esc: clear the search)" in note()
        pane.query_text = ""
        st.rows[1].live, st.rows[1].live_from, st.rows[1].disagrees = 4, "log", True
        assert "1 differs from the live server" in note()
        st.apply(RunsListed((RunInfo("r1", log_path="/x", state="exited", exit_code=0),), "r1"))
        assert not st.live and "1 differed from the server while it ran" in note()
        await pilot.pause()


async def test_esc_on_the_table_clears_a_kept_search_before_it_unzooms():
    """A search kept with Enter (carried to the next run, it may match nothing there): the note
    says how to clear it; Esc on the table clears it, the rows come back, and only the next Esc
    un-zooms the pane."""
    from textual.widgets import DataTable, Input

    app = _two_row_app()
    async with app.run_test(size=(120, 40)) as pilot:
        _two_rows(app)
        pane = app.args_pane
        app.refresh_panes({"args"})
        await pilot.press("3", "z")
        assert app.screen.maximized is pane
        await pilot.press("slash", *"zzz", "enter")
        await pilot.pause()
        table, box = pane.query_one(DataTable), pane.query_one("#args-search", Input)
        assert app.focused is table and box.value == "zzz" and table.row_count == 0
        assert "no field matches 'zzz' (filter all; Esc: clear the search)" in str(pane.query_one("#args-note").render())
        await pilot.press("escape")
        await pilot.pause()
        assert pane.query_text == "" and box.value == "" and not box.has_class("shown")
        assert table.row_count == 2 and app.focused is table
        assert app.screen.maximized is pane  # the first Esc cleared the search only
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen.maximized is None


def test_the_notes_counts_add_up_to_the_rows_shown():
    """Under the `changed` filter a row that SGLang left alone is shown when it differs from the
    live server or sized the OOM: the note's partition counts it (given / default), so the
    numbers add up to the rows shown instead of "1 overridden · 7 derived" of 9."""
    from mambaconsole.ui.args_pane import shown_counts, visible_rows

    rows = [ArgRow(f"d{i}", f"--d{i}", i, None, "derived") for i in range(7)]
    rows += [ArgRow("o", "--o", 1, None, "overridden"),
             ArgRow("given_live", "--given-live", 8, None, "cli"),
             ArgRow("sizing", "--sizing", 0.9, None, "default"),
             ArgRow("quiet", "--quiet", 1, None, "cli")]
    rows[8].live, rows[8].disagrees = 4, True
    shown = visible_rows(rows, "changed", "", first=("--sizing",))
    # 7 derived + 1 overridden + the disagreeing cli row + the OOM-sizing default; not "quiet"
    assert len(shown) == 10
    counts = dict(shown_counts(shown))
    assert counts == {"overridden": 1, "derived": 7, "given": 1, "default": 1}
    assert sum(counts.values()) == len(shown)
    # every source the resolver writes has a kind
    from mambaconsole.state import SOURCES
    assert sum(n for _, n in shown_counts([ArgRow(s, s, 0, None, s) for s in SOURCES])) == len(SOURCES)


async def test_the_table_is_rebuilt_only_when_its_rows_change():
    """A flood of log lines asks the pane to redraw at every change of the run's failure: the
    same rows leave the table as it is (its row keys, its cursor); a changed row rebuilds it."""
    app = _two_row_app()
    async with app.run_test(size=(120, 40)) as pilot:
        st = _two_rows(app)
        table = app.args_pane.query_one("#args-table")
        app.refresh_panes({"args"})
        await pilot.pause()
        table.move_cursor(row=1)
        keys = list(table.rows)
        app.refresh_panes({"args"})
        await pilot.pause()
        assert list(table.rows) == keys and table.cursor_row == 1
        st.rows[1].live, st.rows[1].live_from, st.rows[1].disagrees = 4, "log", True
        app.refresh_panes({"args"})
        await pilot.pause()
        assert list(table.rows) != keys and any("log" in " ".join(c) for c in _cells(table))
