"""Where the log view is and what its status line says about it (a newcomer's faults): after
``E``, ``w`` twice jumped to the end of a short log and the status then said ``following  first
error``; the answer to ``b`` was a toast over the status line; a narrow pane's status dropped the
line count and the poll lines without a trace. Expected rows come from the test's own lines
(``drawn``/``rows_for`` of test_log_wrap, computed character by character)."""

from __future__ import annotations

import pytest
from rich.cells import cell_len

from test_log_view import bare_app, started
from test_log_wrap import decode, drawn, height_of, row_text, status, visible, width_of

pytestmark = pytest.mark.timeout(120)

ERROR = "[2026-11-30 12:00:00 TP0] Traceback (most recent call last): " + "x" * 100


def short_log(n: int = 60, error_at: int = 50) -> list[str]:
    """A log short enough that unwrapped it is under two screens: its error line, unwrapped,
    cannot be put at the top of the view (the end clamps it)."""
    texts = [decode(i) for i in range(n)]
    texts[error_at] = ERROR
    return texts


async def test_E_then_w_twice_keeps_the_error_line_at_the_top_and_says_so():
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        texts = w.write(60, short_log())
        await pilot.pause(0.05)
        pane, view = app.log_pane, app.log_pane.view
        view.focus()
        await pilot.press("E")
        await pilot.pause(0.05)
        assert any(r.startswith(ERROR[:40]) for r in visible(view))
        assert "at line 51/60: first error" in status(app) and "following" not in status(app)
        await pilot.press("w")
        await pilot.pause(0.05)
        # unwrapped, 60 rows in a view ~30 tall: line 51 cannot be at the top; it is in view
        assert not view.wrap and any(row_text(view, y).startswith(ERROR[:40]) for y in range(height_of(view)))
        assert "at line 51/60: first error" in status(app) and "following" not in status(app)
        await pilot.press("w")
        await pilot.pause(0.05)
        assert view.wrap and visible(view)[0] == drawn(texts[50], width_of(view))[0], visible(view)[:3]
        assert "at line 51/60: first error" in status(app) and "following" not in status(app)
        assert not pane.following
        # new lines do not move it; End lets go and follows
        w.write(3)
        await pilot.pause(0.05)
        assert visible(view)[0] == drawn(texts[50], width_of(view))[0]
        assert "▼ 3 new" in status(app)
        await pilot.press("end")
        await pilot.pause(0.05)
        assert pane.following and " following " in status(app) and "first error" not in status(app)


async def test_a_paused_line_near_the_end_stays_at_the_top_across_w_twice():
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        texts = w.write(60, short_log())
        await pilot.pause(0.05)
        view = app.log_pane.view
        width = width_of(view)
        view.focus()
        view.scroll_to(y=sum(len(drawn(t, width)) for t in texts[:45]), animate=False, immediate=True)
        await pilot.pause(0.05)
        assert visible(view)[0] == drawn(texts[45], width)[0]
        assert "paused at line 46/60" in status(app)
        await pilot.press("w", "w")
        await pilot.pause(0.05)
        assert view.wrap and visible(view)[0] == drawn(texts[45], width)[0]
        assert "paused at line 46/60" in status(app) and "following" not in status(app)


async def test_scrolling_the_error_out_of_view_drops_first_error_from_the_status():
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        texts = [decode(i) for i in range(400)]
        texts[150] = ERROR
        w.write(400, texts)
        await pilot.pause(0.05)
        app.log_pane.view.focus()
        await pilot.press("E")
        await pilot.pause(0.05)
        assert "first error" in status(app)
        await pilot.press("home")
        await pilot.pause(0.05)
        assert "first error" not in status(app) and "paused at line 1/400" in status(app), status(app)


async def test_the_answer_to_b_is_in_the_status_line_not_a_toast(monkeypatch):
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        w.write(30)
        await pilot.pause(0.05)
        monkeypatch.setattr(type(app), "start_workers", True, raising=False)
        app.start_workers = True
        monkeypatch.setattr(app.session, "page_back", lambda *a, **k: "the log's first line is shown")
        app.log_pane.view.focus()
        await pilot.press("b")
        await pilot.pause(0.05)
        assert "the log's first line is shown" in status(app)
        assert not app._notifications, list(app._notifications)


async def test_toasts_stay_clear_of_the_log_status_line():
    """A toast's bottom edge is above the log pane's status line (it covered it)."""
    app = bare_app()
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await started(app, pilot)
        app.notify("something", timeout=30)
        await pilot.pause(0.2)
        from textual.widgets._toast import Toast
        toast = app.query(Toast).first()
        line = app.log_pane.query_one("#log-status").region
        assert toast.region.bottom <= line.y or not toast.region.overlaps(line), (toast.region, line)


#: the status row of a followed 1234-line log with no poll lines, worked out by hand: " following "
#: (11 cells), the count (" 1234 lines shown" 17, short " 1234 shown" 11), the poll clause
#: (", 0 poll lines hidden" 21, short ", 0 polls hidden" 16), its key " (a)" (4), "  wrap (w)" (10)
#: (short "  wrap" 6) and, where claims left, "  +N more" (9): the widest form that fits, all
#: parts in one form
NARROW_ROWS = {
    70: " following  1234 lines shown, 0 poll lines hidden (a)  wrap (w)",  # 63: all in full
    60: " following  1234 shown, 0 polls hidden (a)  wrap (w)",  # 52: every part short
    52: " following  1234 shown, 0 polls hidden (a)  wrap (w)",
    48: " following  1234 shown, 0 polls hidden  wrap",  # 44: the keys (a), (w) go
    44: " following  1234 shown, 0 polls hidden  wrap",
    40: " following  1234 shown  wrap  +1 more",  # 37: the poll clause leaves, counted
    36: " following  wrap  +2 more",  # 25: the count leaves too (one space less with it)
}


@pytest.mark.parametrize("width", sorted(NARROW_ROWS))
async def test_a_narrow_status_line_keeps_the_essentials_and_says_how_many_claims_left(width):
    """The essentials whole; the others all in one form (never ``lines`` beside ``ln``), the
    widest that fits; then whole claims leave in the stated order (the poll lines' clause before
    the line count: the count stays while it fits) and ``+N more`` says how many did (a ``…``
    read as cut text, and marked shortened forms too)."""
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        w.write(1234)
        await pilot.pause(0.05)
        pane = app.log_pane
        text = pane._status_row(app.state, width).plain
        assert text == NARROW_ROWS[width]
        assert cell_len(text) <= width and not text.endswith("…")
        assert pane._status_row(app.state, None).plain == NARROW_ROWS[70]


async def _followed_and_focused(app, pilot, n: int):
    """The log followed with ``n`` lines written, its view focused: (writer, pane, view)."""
    w = await started(app, pilot)
    w.write(n)
    await pilot.pause(0.05)
    pane, view = app.log_pane, app.log_pane.view
    view.focus()
    await pilot.pause(0.05)
    return w, pane, view


async def test_the_new_lines_marker_takes_the_rows_form_and_leaves_the_more_whole():
    """A paused log with lines come since: the marker ``▼ N new lines (End: follow)`` (29 cells
    with its spaces) goes short with the row (``▼ 5 new (End: follow)`` 23, then ``▼ 5 new
    (End)`` 15), so that a narrow row still ends in a whole ``+N more`` (at 120x40, beside a
    held line, the full marker pushed it to ``wrap  +2``: the row cut at the pane's edge)."""
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w, pane, view = await _followed_and_focused(app, pilot, 200)
        view.action_scroll_up()  # paused
        await pilot.pause(0.05)
        w.write(5)
        await pilot.pause(0.05)
        full = pane._status_row(app.state, None).plain
        head = full[:full.index(" ▼")]  # " paused at line N/200 "
        assert full == head + " ▼ 5 new lines (End: follow)  205 lines shown, 0 poll lines hidden (a)  wrap (w)", full
        n = cell_len(head)
        # every part short: the marker 23, " 205 shown" 10, ", 0 polls hidden" 16, " (a)" 4, "  wrap (w)" 10
        assert pane._status_row(app.state, n + 63).plain == head + " ▼ 5 new (End: follow)  205 shown, 0 polls hidden (a)  wrap (w)"
        # the tersest: the marker 15, the count gone (" wrap" 5), "  +2 more" 9
        narrow = pane._status_row(app.state, n + 29).plain
        assert narrow == head + " ▼ 5 new (End)  wrap  +2 more", narrow
        for width in range(n + 29, n + 80):
            text = pane._status_row(app.state, width).plain
            assert cell_len(text) <= width and not text.endswith("…") and " ▼ 5 new" in text, (width, text)
            assert ("+" not in text) or text.endswith(" more"), (width, text)


async def test_a_scroll_key_moves_the_view_at_once_without_an_animation():
    """up / down / page up / page down / home / end move the log view in one step, in the
    key's own turn (Textual animates a keyboard scroll: one row took 20 ms and several frames)."""
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        texts = w.write(200, [decode(i) for i in range(200)])
        await pilot.pause(0.05)
        view = app.log_pane.view
        view.focus()
        await pilot.pause(0.05)
        end = view.scroll_y
        assert end == view.max_scroll_y > 100
        height = view.scrollable_content_region.height
        steps = []
        for key, action in (("up", view.action_scroll_up), ("up", view.action_scroll_up),
                            ("down", view.action_scroll_down), ("pageup", view.action_page_up),
                            ("pagedown", view.action_page_down), ("home", view.action_scroll_home),
                            ("end", view.action_scroll_end)):
            before = view.scroll_y
            action()  # what the key's binding runs
            steps.append((key, before - view.scroll_y))  # moved already, no frame in between
            assert not app.animator.is_being_animated(view, "scroll_y"), key
            await pilot.pause(0.02)
        assert steps == [("up", 1), ("up", 1), ("down", -1), ("pageup", height), ("pagedown", -height),
                         ("home", end - 1), ("end", -end)]
        assert visible(view)[-1] == drawn(texts[-1], width_of(view))[-1]


async def test_one_row_up_from_the_end_pauses_the_log_and_new_lines_do_not_undo_it():
    """Under a flood, ``up`` once left the view one row above the end, which still counted as
    "following": the next lines scrolled it back and the key was lost (pressing ``down`` then
    changed nothing)."""
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w, pane, view = await _followed_and_focused(app, pilot, 200)
        assert pane.following and view.scroll_y == view.max_scroll_y
        await pilot.press("up")
        await pilot.pause(0.05)
        top, y = visible(view)[0], view.scroll_y
        assert y == view.max_scroll_y - 1 and not pane.following and "following" not in status(app)
        w.write(5)  # the flood goes on
        await pilot.pause(0.05)
        assert visible(view)[0] == top and view.scroll_y == y < view.max_scroll_y - 5
        assert "▼ 5 new" in status(app)
        await pilot.press("down")
        await pilot.pause(0.05)
        assert view.scroll_y == y + 1 < view.max_scroll_y and not pane.following
        await pilot.press("end")
        await pilot.pause(0.05)
        assert pane.following and " following " in status(app)


async def test_the_status_counts_add_up_and_keep_the_count_in_every_wrap_mode():
    """The newcomer's log (``--demo``): 111 server lines and 102 of the console's own polls. The
    old row said ``at line 101/111 … 213 lines  102 poll lines hidden`` (the first count without
    the polls, the second with them, unlabelled), dropped the count in no-wrap mode at 120x40
    (``following   102 poll lines hidden (a)  no wrap (w)…``, the ``…`` marking a short form
    as if text was cut), and mixed ``ln`` with ``poll lines``. Expected rows worked out by hand
    from the lines written here: 111 shown + 102 hidden = 213 read."""
    from test_log_pane_inputs import access, show_run, write

    texts = []
    for i in range(111):
        texts.append(f"[2026-11-30 12:00:00] Decode batch, #running-req: {i}")
        if i < 102:
            texts.append(access(41000 + i, "/metrics"))
    assert len(texts) == 213
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        show_run(app, "r1")
        write(app, "r1", texts)
        await pilot.pause(0.05)
        pane = app.log_pane
        rows = {}
        for wrap in (True, False):
            pane.view.set_wrap(wrap, follow=True)  # as `w` does (a bare `wrap = ` left the rows cached for the other mode)
            for width in (96, 56):  # the log pane's status row at 200x60 and 120x40
                rows[wrap, width] = pane._status_row(app.state, width).plain
        assert rows == {
            (True, 96): " following  111 of 213 lines shown, 102 poll lines hidden (a)  wrap (w)",
            (False, 96): " following  111 of 213 lines shown, 102 poll lines hidden (a)  no wrap (w)",
            # 120x40 (56 cells): the short forms with their keys are 57 cells; without them they fit
            (True, 56): " following  111/213 shown, 102 polls hidden  wrap",
            (False, 56): " following  111/213 shown, 102 polls hidden  no wrap",
        }
        # paused: the position's "/111" is the count's "111", the row's claims one story
        pane.view.focus()
        await pilot.press("home")
        for _ in range(200):  # the key's own turn; under load a few frames later
            if not pane.following and pane._top_line() == 0:
                break
            await pilot.pause(0.02)
        assert pane._status_row(app.state, 96).plain == (
            " paused at line 1/111  111 of 213 lines shown, 102 poll lines hidden (a)  no wrap (w)")
        assert pane._status_row(app.state, 76).plain == (  # 80x24: short, all of it
            " paused at line 1/111  111/213 shown, 102 polls hidden (a)  no wrap (w)")
        assert pane._status_row(app.state, 56).plain == (  # 120x40: the count stays, the polls leave
            " paused at line 1/111  111/213 shown  no wrap  +1 more")


#: a followed log of 5100 lines (no poll lines), 100 of them gone from memory (LOG_KEEP 5000),
#: worked out by hand: " following " 11, " 5000 of 5100 lines shown" 25 (short 16), " (last 5000
#: kept)" 17 (short 12), ", 0 poll lines hidden" 21 (short 16), " (a)" 4, "  b: earlier lines" 18
#: (short 12, a key hint: goes with the others), "  wrap (w)" 10 (short 6), "  +N more" 9
KEPT_ROWS = {
    120: " following  5000 of 5100 lines shown (last 5000 kept), 0 poll lines hidden (a)  b: earlier lines  wrap (w)",
    90: " following  5000/5100 shown (5000 kept), 0 polls hidden (a)  b: earlier  wrap (w)",  # 81
    70: " following  5000/5100 shown (5000 kept), 0 polls hidden  wrap",  # 61
    60: " following  5000/5100 shown, 0 polls hidden  wrap  +1 more",  # 58: "kept" leaves first
    50: " following  5000/5100 shown  wrap  +2 more",  # 42: then the poll clause
    30: " following  wrap  +3 more",  # 25: the count last
}


async def test_lines_gone_from_memory_leave_first_and_are_counted_in_the_mark():
    from mambaconsole.slices.log import LOG_KEEP

    assert LOG_KEEP == 5000  # the rows above assume it
    app = bare_app()
    async with app.run_test(size=(200, 60)) as pilot:
        w = await started(app, pilot)
        w.write(5100)
        for _ in range(200):
            if app.state.log_total == 5100:
                break
            await pilot.pause(0.02)
        await pilot.pause(0.05)
        pane = app.log_pane
        got = {width: pane._status_row(app.state, width).plain for width in KEPT_ROWS}
        assert got == KEPT_ROWS
