"""The history table fits its screen: the argv change column takes what the other columns leave,
shows the changes that fit whole and says how many it left out; where the screen is too narrow,
columns give way (the title names or counts them and says where they are) and the detail line under the table holds every column.
Expected widths and texts are counted by hand from the cells written here."""

from __future__ import annotations

import pytest

from mambaconsole.ui.history import COLUMNS, Summarised, column_layout, fit_changes, left_out_note

pytestmark = pytest.mark.timeout(120)

MAX = "+ --max-mamba-cache-size 24"       # 27 cells
RATIO = "+ --mamba-full-memory-ratio 0.4"  # 31 cells


def test_fit_changes_keeps_whole_changes_and_counts_the_rest():
    assert len(MAX) == 27 and len(RATIO) == 31
    assert fit_changes([MAX, RATIO], 60) == f"{MAX}  {RATIO}"  # 27 + 2 + 31
    assert fit_changes([MAX, RATIO], 59) == f"{MAX} … 1 more"  # 36 cells
    assert fit_changes([MAX, RATIO], 36) == f"{MAX} … 1 more"
    # 35: the first change no longer fits beside " … 1 more": cut to 35 - 7 (" 1 more") cells
    assert fit_changes([MAX, RATIO], 35) == f"{MAX}… 1 more"
    assert fit_changes([MAX, RATIO], 20) == "+ --max-mamb… 1 more"
    assert fit_changes([MAX, RATIO, "- --disable-radix-cache"], 40) == f"{MAX} … 2 more"
    assert fit_changes(["~ --mem-fraction-static 0.85→0.8"], 20) == "~ --mem-fraction-st…"
    assert fit_changes(["first run"], 36) == "first run"
    assert fit_changes([MAX, RATIO], 1) == "…"


# two runs as the snapshot test draws them: widths of each cell counted by hand
ROWS = [("20261130-120830-c3d4", "11-30 11:58:30", "READY", "12 s", "94.8 GiB log", "94.8 GiB", "2.97", (MAX, RATIO)),
        ("20261130-120000-a1b2", "11-30 11:50:00", "OOM exit 137", "-", "51.2 GiB log", "51.2 GiB", "-", ("first run",))]
# each column's widest cell or header and a cell of padding a side: run 22, started 16, outcome 14,
# to ready 10, peak GPU 14, budget (log) 14, accept len 12 (102 in all); the argv change keeps
# min(60, 36) + 2


@pytest.mark.parametrize("width, left, argv", [
    (200, [], 200 - 102 - 2),
    (140, [], 36),                                  # 102 + 38: all fit, the argv change at its floor
    (139, ["started"], 139 - 86 - 2),
    (120, ["started", "budget (log)"], 120 - 72 - 2),
    (80, ["started", "budget (log)", "accept len", "to ready", "peak GPU"], 80 - 36 - 2),
    (60, ["started", "budget (log)", "accept len", "to ready", "peak GPU"], 36),  # sideways
])
def test_columns_give_way_in_order_and_the_argv_change_takes_the_rest(width, left, argv):
    shown, argv_width = column_layout(ROWS, width)
    assert shown == [c for c in COLUMNS if c not in left] and argv_width == argv


@pytest.mark.parametrize("room, note", [
    (46, "  · started, budget (log) in the details below"),  # 4 + 21 + 21 cells
    (45, "  · 2 columns in the details below"),              # 4 + 9 + 21
    (34, "  · 2 columns in the details below"),
    (33, "  · 2 columns left out"),                          # 4 + 9 + 9
    (5, "  · 2 columns left out"),                           # the shortest, clipped by the title
])
def test_the_title_says_which_columns_are_left_out_and_where_they_are(room, note):
    assert left_out_note(["started", "budget (log)"], room) == note


# the title before the note: "Run history  on gpu-node: 2 runs, newest first", 46 cells; the
# note gets the screen's width less 2 (padding) and those 46
@pytest.mark.parametrize("size, cell, left, note", [
    ((80, 24), f"{MAX} … 1 more", ["started", "budget (log)", "accept len", "to ready", "peak GPU"],
     "  · 5 columns left out"),  # 32 cells: "  · 5 columns in the details below" is 34
    ((120, 40), f"{MAX} … 1 more", ["started", "budget (log)"], "  · started, budget (log) in the details below"),
    ((200, 60), f"{MAX}  {RATIO}", [], ""),
], ids=lambda v: f"{v[0]}x{v[1]}" if isinstance(v, tuple) else None)
async def test_the_argv_change_reads_whole_on_screen_and_the_detail_line_holds_the_rest(monkeypatch, size, cell, left, note):
    from test_console_snapshots import _runs, feed_recorded, frozen_app

    app = frozen_app(monkeypatch)
    first, second = _runs()
    app._summaries.update({
        first.run_id: {"outcome": "oom", "time_to_ready": None, "budget_gb": 51.2, "mean_accept_len": None},
        second.run_id: {"outcome": "ready", "time_to_ready": 12.0, "budget_gb": 94.8, "mean_accept_len": 2.97},
    })
    async with app.run_test(size=size) as pilot:
        feed_recorded(app)
        app.action_history()
        await pilot.pause()
        await pilot.pause()
        table = app.screen.query_one("DataTable")
        # what the screen draws: the first run's row as a line of cells, the change in it whole
        drawn = table.render_line(1).text
        assert drawn.startswith(f" {second.run_id} ") and drawn.rstrip().endswith(cell), drawn
        assert not table.show_horizontal_scrollbar and table.virtual_size.width <= table.scrollable_content_region.width
        title = str(app.screen.query_one("#hist-title").render())
        header = table.render_line(0).text
        assert all(c not in header for c in left), header
        assert title == "Run history  on gpu-node: 2 runs, newest first" + note, title
        # the detail line holds every column of the highlighted run and the change whole
        detail = " ".join(str(app.screen.query_one("#hist-detail").render()).split())
        for part in (f"run {second.run_id}", "READY", "started 11-30 11:58:30", "to ready 12 s", "peak 94.8 GiB",
                     "budget (log) 94.8 GiB", "accept len 2.97", f"{MAX} {RATIO}"):
            assert part in detail, (part, detail)


async def test_a_new_size_fits_the_table_again_and_the_highlighted_run_stays(monkeypatch):
    from test_console_snapshots import _runs, feed_recorded, frozen_app

    app = frozen_app(monkeypatch)
    first, second = _runs()
    async with app.run_test(size=(200, 60)) as pilot:
        feed_recorded(app)
        app.action_history()
        await pilot.pause()
        screen = app.screen
        table = screen.query_one("DataTable")
        assert "started" in table.render_line(0).text
        table.move_cursor(row=1)
        await pilot.pause()
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        await pilot.pause()
        assert "started" not in table.render_line(0).text and not table.show_horizontal_scrollbar
        assert table.render_line(1).text.rstrip().endswith(f"{MAX} … 1 more")
        # the older run stays highlighted, through the new fit and a summary that fills a row anew
        assert table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value == first.run_id
        screen.post_message(Summarised(second.run_id, {"outcome": "ready", "time_to_ready": 12.0, "budget_gb": 94.8}))
        await pilot.pause()
        assert table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value == first.run_id
        assert str(table.get_row_at(0)[table.get_column_index("to ready")]) == "12 s"
