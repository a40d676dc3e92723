"""Line wrapping in the log pane (``w``; on by default): row counts, what the wrapped rows show,
following, pausing, search, ``E``, resize and eviction from the bounded buffer. Expected rows
are computed here from the test's own lines (:func:`rows_of`, character by character: the first
row holds the view's width, each continuation row two cells less, for the dim ``↳ `` mark; a row
ends after the last space that fits, else at the edge); the view's width is read off the
laid-out widget. What a row shows is read from the rendered strips (``render_line``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st
from rich.cells import cell_len

from mambaconsole.ui.app import PALETTE
from mambaconsole.ui.log_view import LogView, row_starts
from test_log_view import bare_app, started

pytestmark = pytest.mark.timeout(120)

MARK = "↳ "


def rows_of(text: str, width: int) -> list[str]:
    """The rows one line (single-width text) is cut into: each takes the rest when it fits,
    else ends just after the last space at or before its edge (a space just past the edge
    counts: it ends the row unseen), else is cut at the edge."""
    rows, s, room = [], 0, width
    while len(text) - s > room:
        spaces = [p for p in range(s + 1, s + room + 1) if text[p] == " "]
        cut = spaces[-1] + 1 if spaces else s + room
        if cut >= len(text):
            break
        rows.append(text[s:cut])
        s, room = cut, width - len(MARK)
    return rows + [text[s:]]


def rows_for(text: str, width: int) -> int:
    """How many rows one line takes (single-width text)."""
    return len(rows_of(text, width))


def drawn(text: str, width: int) -> list[str]:
    """The rows of one line as the view draws them, each padded / cut to ``width``."""
    return [(r if k == 0 else MARK + r).ljust(width)[:width] for k, r in enumerate(rows_of(text, width))]


def decode(i: int) -> str:
    """An SGLang decode line (~250 characters), numbered."""
    return (f"[2026-11-30 18:30:21 TP0] Decode batch, #running-req: 4, #full token: {20000 + i}, full token usage: 0.12, "
            f"mamba num: 16, mamba usage: 0.03, accept len: 2.80, accept rate: 0.60, cuda graph: True, "
            f"gen throughput (token/s): 812.05, #queue-req: 0, n={i:05d}")


def row_text(view: LogView, y: int) -> str:
    return "".join(seg.text for seg in view.render_line(y))


def width_of(view: LogView) -> int:
    return view.scrollable_content_region.width


def height_of(view: LogView) -> int:
    return view.scrollable_content_region.height


def status(app) -> str:
    return str(app.log_pane.query_one("#log-status").render())


def visible(view: LogView) -> list[str]:
    """The rows in view, each cut to the view's width (single-width text: characters = cells)."""
    width = width_of(view)
    return [row_text(view, y)[:width] for y in range(height_of(view))]


async def test_rows_counts_and_a_long_line_shown_whole_across_its_rows():
    app = bare_app()
    async with app.run_test(size=(120, 70)) as pilot:  # tall: every row of these lines in view
        w = await started(app, pilot)
        texts = ["short", "x" * 53, "y" * 54, "z" * 55, decode(1), "é" * 130, decode(2) * 3]
        w.write(len(texts), texts)
        await pilot.pause(0.05)
        view = app.log_pane.view
        width = width_of(view)
        assert 40 < width < 70 and view.wrap and "wrap (w)" in status(app)
        counts = [rows_for(t, width) for t in texts]
        assert counts[0] == 1 and counts[4] >= 4  # the decode line is several rows
        assert view.virtual_size.height == sum(counts)
        assert not view.show_horizontal_scrollbar
        # every line, read back from its rendered rows, is whole; continuation rows are marked
        view.scroll_to(y=0, animate=False, immediate=True)
        await pilot.pause(0.05)
        rows = visible(view)[:sum(counts)] if sum(counts) <= height_of(view) else None
        assert rows is not None, "the lines must fit the view for this test"
        at = 0
        for t, n in zip(texts, counts):
            mine = rows[at:at + n]
            at += n
            assert not mine[0].startswith(MARK) and all(r.startswith(MARK) for r in mine[1:])
            assert mine == drawn(t, width)  # single-width text: drawn() computes it
        assert all(not row_text(view, y)[width:].strip() for y in range(sum(counts)))  # nothing cut off


async def test_w_toggles_wrapping_the_height_and_the_status_line():
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        texts = w.write(40, [decode(i) for i in range(40)])
        await pilot.pause(0.05)
        view, pane = app.log_pane.view, app.log_pane
        width = width_of(view)
        assert view.virtual_size.height == sum(rows_for(t, width) for t in texts)
        view.focus()
        await pilot.press("w")
        await pilot.pause(0.05)
        assert not view.wrap and "no wrap (w)" in status(app)
        assert view.virtual_size.height == len(texts)
        assert view.virtual_size.width == max(cell_len(t) for t in texts)
        assert pane.following and row_text(view, height_of(view) - 1).startswith(texts[-1][:20])
        await pilot.press("w")
        await pilot.pause(0.05)
        assert view.wrap and "wrap (w)" in status(app) and "no wrap" not in status(app)
        assert view.virtual_size.height == sum(rows_for(t, width) for t in texts)
        assert pane.following
        assert ("Log: wrap long lines on/off", "w in the log pane", "log.wrap") in PALETTE
        # paused: the line at the top stays at the top, either way
        view.scroll_to(y=sum(rows_for(t, width) for t in texts[:10]), animate=False, immediate=True)
        await pilot.pause(0.05)
        assert not pane.following and visible(view)[0] == drawn(texts[10], width)[0]
        await pilot.press("w")
        await pilot.pause(0.05)
        assert not view.wrap and int(view.scroll_y) == 10 and row_text(view, 0).startswith(texts[10][:width])
        await pilot.press("w")
        await pilot.pause(0.05)
        assert view.wrap and visible(view)[0] == drawn(texts[10], width)[0]


async def test_following_keeps_the_last_rows_of_the_last_line_in_sight():
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        view = app.log_pane.view
        i = 0
        for batch in (3, 50, 1, 700):
            texts = [decode(i + k) for k in range(batch)]
            i += batch
            w.write(batch, texts)
            await pilot.pause(0.05)
            assert app.log_pane.following
            width = width_of(view)
            n = rows_for(texts[-1], width)
            shown = visible(view)
            while not shown[-1].strip():  # fewer rows than the view: blank rows below
                shown.pop()
            assert shown[-n:] == drawn(texts[-1], width)  # the last line's rows are the last rows on screen


async def test_paused_keeps_the_same_row_in_sight_while_lines_fall_off_the_front():
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        keep = app.log_pane.view.lines.maxlen
        w.write(keep, [decode(i) for i in range(keep)])
        await pilot.pause(0.05)
        pane, view = app.log_pane, app.log_pane.view
        width = width_of(view)
        # to the second row of line 2000 (its first row is row_of(2000), counted here)
        target = sum(rows_for(decode(i), width) for i in range(2000)) + 1
        view.scroll_to(y=target, animate=False, immediate=True)
        await pilot.pause(0.05)
        assert not pane.following
        top = visible(view)[0]
        assert top.startswith(MARK) and top[len(MARK):].rstrip() in decode(2000)
        w.write(37, [decode(keep + i) for i in range(37)])  # 37 lines fall off the front
        await pilot.pause(0.05)
        assert visible(view)[0] == top
        assert "▼ 37 new" in status(app)
        await pilot.press("G")
        await pilot.pause(0.05)
        assert pane.following and visible(view)[-rows_for(decode(keep + 36), width):] == drawn(decode(keep + 36), width)


async def test_search_scrolls_a_match_deep_in_a_wrapped_line_into_view_and_highlights_across_the_wrap():
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        filler = [f"[2026-11-30 12:00:00] line {i}" for i in range(300)]
        long = "[2026-11-30 12:00:00] " + "abcdefghij" * 120 + " NEEDLE at the end"  # ~25 rows at ~55 columns
        texts = filler[:100] + [long] + filler[100:]
        w.write(len(texts), texts)
        await pilot.pause(0.05)
        pane, view = app.log_pane, app.log_pane.view
        assert rows_for(long, width_of(view)) > height_of(view)  # taller than the view
        pane.set_search("needle")
        await pilot.pause(0.05)
        assert pane._match_at == 100
        assert any("NEEDLE" in r for r in visible(view))
        # a match cut by a wrap point: reversed on both rows
        pane.set_search("")
        width = width_of(view)
        split = "q" * (width - 3) + "SPLITME and more " + "r" * 40  # "SPL" ends row 1
        w.write(1, [split])
        await pilot.pause(0.05)
        pane.set_search("splitme")
        await pilot.pause(0.05)
        assert pane._match_at == len(texts)
        y = next(y for y, r in enumerate(visible(view)) if r.startswith("q" * (width - 3)))
        reversed_text = "".join(seg.text for yy in (y, y + 1) for seg in view.render_line(yy)
                                if seg.style is not None and seg.style.reverse)
        assert reversed_text == "SPLITME"


async def test_first_error_in_wrap_mode_is_in_view():
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        texts = [decode(i) for i in range(400)]
        texts[150] = "[2026-11-30 12:00:00 TP0] Traceback (most recent call last): " + "x" * 100
        w.write(len(texts), texts)
        await pilot.pause(0.05)
        assert app.state.first_error_offset is not None
        app.log_pane.view.focus()
        await pilot.press("E")
        await pilot.pause(0.05)
        assert app.log_pane._match_at == 150
        assert any(r.startswith("[2026-11-30 12:00:00 TP0] Traceback") for r in visible(app.log_pane.view))


async def test_resize_rewraps_keeps_the_top_line_when_paused_and_the_end_when_following():
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        texts = [decode(i) for i in range(300)]
        w.write(len(texts), texts)
        await pilot.pause(0.05)
        pane, view = app.log_pane, app.log_pane.view
        await pilot.resize_terminal(160, 40)
        await pilot.pause(0.1)
        width = width_of(view)
        assert view.virtual_size.height == sum(rows_for(t, width) for t in texts)
        assert pane.following and visible(view)[-rows_for(texts[-1], width):] == drawn(texts[-1], width)
        # paused at line 120: still its first row at the top after narrowing
        view.scroll_to(y=sum(rows_for(t, width) for t in texts[:120]), animate=False, immediate=True)
        await pilot.pause(0.05)
        assert visible(view)[0] == drawn(texts[120], width)[0]
        await pilot.resize_terminal(100, 40)
        await pilot.pause(0.1)
        width = width_of(view)
        assert view.virtual_size.height == sum(rows_for(t, width) for t in texts)
        assert not pane.following and visible(view)[0] == drawn(texts[120], width)[0]


async def test_rows_carry_the_line_offsets_for_selection():
    """A wrapped row's text sits at the offset (character, line) Textual's selection reads."""
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        texts = [decode(i) for i in range(5)]
        w.write(5, texts)
        await pilot.pause(0.05)
        view = app.log_pane.view
        view.scroll_to(y=0, animate=False, immediate=True)
        await pilot.pause(0.05)
        seen = 0
        for y in range(height_of(view)):
            for seg in view.render_line(y):
                meta = seg.style.meta if seg.style is not None else {}
                if "offset" in meta and seg.text.strip() and seg.text != MARK:
                    x, line = meta["offset"]
                    assert texts[line][x:x + len(seg.text)] == seg.text
                    seen += 1
        assert seen > 10


def _offsets(view: LogView, y: int) -> list[tuple[int, int, str]]:
    """``(x, line, text)`` of each text segment of row ``y`` as Textual's selection reads it."""
    out = []
    for seg in view.render_line(y):
        meta = seg.style.meta if seg.style is not None else {}
        if "offset" in meta and seg.text.strip() and seg.text != MARK:
            out.append((*meta["offset"], seg.text))
    return out


@pytest.mark.parametrize("wrap", [True, False])
async def test_a_selection_made_after_lines_fell_off_the_front_copies_the_rows_it_covers(wrap):
    """The rows' selection offsets stay right as the bounded buffer drops lines at its front:
    a selection from the top row to the bottom row copies exactly the text those rows show."""
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot, wrap=wrap)
        keep = app.log_pane.view.lines.maxlen
        texts = [decode(i) for i in range(keep + 137)]  # 137 lines fall off the front
        w.write(len(texts), texts)
        await pilot.pause(0.05)
        view = app.log_pane.view
        kept = texts[-keep:]
        top_line = 3000
        view.scroll_to(y=view.row_of(top_line), animate=False, immediate=True)
        await pilot.pause(0.05)
        rows = [_offsets(view, y) for y in range(height_of(view))]
        first, last = rows[0][0], rows[-1][-1]
        # each segment's text is at its offset in its line
        by_line = {}
        for row in rows:
            for x, line, text in row:
                by_line.setdefault(line, []).append((x, text))
        shown = [view.lines[top_line + k].text for k in range(len(by_line))]
        assert [kept.index(t) for t in shown] == list(range(top_line, top_line + len(by_line)))
        for (line, segs), text in zip(sorted(by_line.items()), shown):
            assert all(text[x:x + len(t)] == t for x, t in segs)
        from textual.geometry import Offset
        from textual.selection import Selection
        sel = Selection.from_offsets(Offset(first[0], first[1]), Offset(last[0] + len(last[2]), last[1]))
        copied, _ = view.get_selection(sel)
        end = last[0] + len(last[2])
        expected = "\n".join([shown[0][first[0]:], *shown[1:-1], shown[-1][:end]])
        assert copied == expected


async def test_a_row_drawn_again_lower_or_higher_is_the_same_strip():
    """Rows are made once per line: as the log scrolls (and lines leave the front of the full
    buffer), a row that shows the same part of the same line is the same Strip object."""
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        keep = app.log_pane.view.lines.maxlen
        w.write(keep, [decode(i) for i in range(keep)])  # full: the next lines push some out
        await pilot.pause(0.05)
        view = app.log_pane.view

        def rows() -> dict[tuple[str, int], object]:  # (line, row of it) -> the Strip drawn
            out = {}
            for y in range(height_of(view)):
                i, sub = view.line_at(int(view.scroll_y) + y)
                out[view.lines[i].text, sub] = view.render_line(y)
            return out

        before = rows()
        w.write(1, [decode(keep)])  # one line in, one out: every row moves up
        await pilot.pause(0.05)
        after = rows()
        same = before.keys() & after.keys()
        assert len(same) >= height_of(view) - rows_for(decode(keep), width_of(view)) - 1
        assert all(after[k] is before[k] for k in same)


_ALPHABET = st.characters(min_codepoint=32, max_codepoint=126) | st.sampled_from("é↳—")


@settings(max_examples=80, deadline=None)
@given(width=st.integers(min_value=3, max_value=90), keep=st.integers(min_value=1, max_value=40),
       batches=st.lists(st.lists(st.text(_ALPHABET, max_size=300), max_size=30), min_size=1, max_size=8))
def test_row_mapping_stays_right_as_lines_fall_off_the_front(width, keep, batches):
    view = LogView(max_lines=keep)
    view.wrap_at(width)
    written: list[str] = []
    for batch in batches:
        view.extend([(k, t, "info", False) for k, t in enumerate(batch)], follow=False)
        written += batch
        kept = written[-keep:]
        assert all(cell_len(t) == len(t) for t in kept)  # single-width alphabet
        counts = [rows_for(t, width) for t in kept]
        assert view.row_count == sum(counts) == view.virtual_size.height
        expected = [(i, sub) for i, n in enumerate(counts) for sub in range(n)]
        assert [view.line_at(r) for r in range(len(expected))] == expected
        assert [view.row_of(i) for i in range(len(kept))] == [sum(counts[:i]) for i in range(len(kept))]
        assert [view.rows_of(i) for i in range(len(kept))] == counts
    # another width: every count again
    view.wrap_at(width + 7)
    assert view.row_count == sum(rows_for(t, width + 7) for t in written[-keep:])


@pytest.mark.parametrize("text, width, rows", [
    # between words: the row ends after the last space that fits
    ("alpha beta gamma", 12, ["alpha beta ", "gamma"]),
    # a space just past the edge ends the row (unseen); the next row starts at the word
    ("abcdefghij klm", 10, ["abcdefghij ", "klm"]),
    # no space after the row's first character: cut at the edge (continuation rows: 8 cells)
    ("x" * 30, 10, ["x" * 10, "x" * 8, "x" * 8, "x" * 4]),
    ("word " + "y" * 20, 10, ["word ", "y" * 8, "y" * 8, "y" * 4]),
    # double-width characters (2 cells each) break between words too
    ("日本語 テキスト", 8, ["日本語 ", "テキス", "ト"]),
    ("fits exactly", 12, ["fits exactly"]),
])
def test_rows_break_between_words_where_they_can(text, width, rows):
    starts = row_starts(text, width)
    assert [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)])] == rows


async def test_a_wrapped_sglang_line_breaks_between_its_words_on_screen():
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        text = decode(7)
        w.write(1, [text])
        await pilot.pause(0.05)
        view = app.log_pane.view
        width = width_of(view)
        shown = [r for r in visible(view) if r.strip()]
        assert len(shown) == view.row_count >= 3
        words = text.split(" ")
        for row in shown:
            body = row[len(MARK):] if row.startswith(MARK) else row
            # each row holds whole words (every word of the line is whole on one row)
            assert all(wd in words for wd in body.split()), row
        assert " ".join(r[len(MARK):] if r.startswith(MARK) else r for r in (x.rstrip() for x in shown)) == text
        assert all(len(r) <= width for r in shown)


def _bar_rows(bar) -> list[tuple[str, str | None]]:
    """The scrollbar's rows as drawn: each row's glyph and what a click on it does (the
    thumb: ``grab``; above it ``scroll_up``, below ``scroll_down``)."""
    from textual.geometry import Region

    return [(strip.text, next((seg.style.meta.get("@mouse.down") for seg in strip if seg.style is not None), None))
            for strip in bar.render_lines(Region(0, 0, bar.size.width, bar.size.height))]


def _bar_rows_for(view) -> list[tuple[str, str | None]]:
    """The rows Textual's scrollbar renderer draws for the view's rows, window and scroll
    position (textual 8.2.8 ``ScrollBarRender.render_bar``)."""
    from textual.scrollbar import ScrollBarRender

    virtual, window = view.virtual_size.height, view.container_size.height
    segs = ScrollBarRender.render_bar(size=view.vertical_scrollbar.size.height, virtual_size=virtual,
                                      window_size=window if window < virtual else 0, position=view.scroll_y,
                                      thickness=1, vertical=True).segments
    return [(seg.text, seg.style.meta.get("@mouse.down")) for seg in segs]


@pytest.mark.parametrize("lines_before", [10, 3000])
async def test_the_scrollbar_shows_the_view_after_lines_come_in_while_following(lines_before):
    """While following, each new line moves the view to the end: the scrollbar's thumb is
    never stale. A short log's thumb shrinks and moves as lines come in; a long log's stays a
    cell at the bottom, and the bar is then not repainted at all (it was, every line: 20 rows
    at 120x40). (Lines that change only the log pane: a decode line's sparklines lay the
    screen out while they fill, and a layout repaints the bar anyway.)"""
    texts = [f"[2026-11-30 18:30:21 TP0] Scheduler note {i:05d}: " + "a word or two " * 12 for i in range(lines_before + 8)]
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        w.write(lines_before, texts[:lines_before])
        await pilot.pause(0.05)
        view = app.log_pane.view
        bar = view.vertical_scrollbar
        repaints = []
        refresh = bar.refresh
        bar.refresh = lambda *a, **k: (repaints.append(1), refresh(*a, **k))[1]
        for k in range(8):
            w.write(1, [texts[lines_before + k]])
            await pilot.pause(0.02)
            assert app.log_pane.following and view.scroll_y == view.max_scroll_y
            assert (bar.window_virtual_size, bar.position) == (view.virtual_size.height, view.scroll_y)
            assert _bar_rows(bar) == _bar_rows_for(view)
        if lines_before > 1000:
            assert repaints == []
        else:
            assert repaints  # the thumb moved: repainted
