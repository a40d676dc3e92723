"""The log pane's search/filter boxes and its access-line modes, driven with keys on the real
app without a node (lines are folded in as the tail worker delivers them). Expected values come
from the lines written here (their words and paths), never from the pane's own output."""

from __future__ import annotations

import re

import pytest

from mambaconsole.node.local import LocalNode
from mambaconsole.state import LogLine, LogLines, RunInfo, RunsListed
from mambaconsole.ui.app import ConsoleApp
from mambaconsole.session.feed import Feed
from mambaconsole.session.settings import HostSettings

pytestmark = pytest.mark.timeout(120)


def bare_app() -> ConsoleApp:
    return ConsoleApp(Feed(LocalNode("t"), HostSettings()), start_workers=False)


def write(app: ConsoleApp, run_id: str, texts: list[str]) -> None:
    off, batch = 0, []
    for t in texts:
        batch.append(LogLine(run_id, off, t))
        off += len(t.encode()) + 1
    app.refresh_panes(app.state.apply(LogLines(run_id, tuple(batch))))


def show_run(app: ConsoleApp, *run_ids: str) -> None:
    app.state.apply(RunsListed(tuple(RunInfo(r, log_path=f"/{r}.log") for r in run_ids), run_ids[-1]))
    app.state.show_log_of(run_ids[-1])
    app.refresh_panes({"log", "header"})


def status(app: ConsoleApp) -> str:
    """The status area: the search and filter in force (a row of their own, right above, where
    they do not fit beside the rest) and the status line."""
    return "\n".join(str(w.render()) for w in app.log_pane.query("#log-active, #log-status") if w.display)


def shown(app: ConsoleApp, which: str) -> bool:
    return app.log_pane.query_one(f"#log-{which}-row").display


async def test_filter_box_prefilled_enter_empty_clears_and_esc_only_closes():
    app = bare_app()
    texts = [f"[2026-11-30 12:00:00] line {i} " + ("mem pool full" if i % 3 == 0 else "decode") for i in range(120)]
    keep = [t for t in texts if "mem" not in t]
    async with app.run_test(size=(120, 40)) as pilot:
        show_run(app, "r1")
        write(app, "r1", texts)
        await pilot.pause(0.05)
        pane = app.log_pane
        pane.view.focus()
        await pilot.press("z")  # zoomed, as the newcomer had it
        await pilot.pause(0.05)
        assert app.screen.maximized is pane
        await pilot.press("f", *"!mem", "enter")
        await pilot.pause(0.05)
        assert [ln.text for ln in pane._shown] == keep
        assert not shown(app, "filter")  # submitted: the box is gone, no row that looks like a log line
        assert f"filter '!mem' {len(keep)} shown" in status(app)
        assert pane.following
        # f opens the box prefilled with the filter in force, with its label
        await pilot.press("f")
        await pilot.pause(0.05)
        box = pane.query_one("#log-filter")
        assert app.focused is box and box.value == "!mem" and shown(app, "filter")
        assert "filter" in str(pane.query_one("#log-filter-row Label").render())
        # Esc closes the box only: still zoomed, still following, the filter unchanged
        await pilot.press("escape")
        await pilot.pause(0.05)
        assert not shown(app, "filter") and app.focused is pane.view
        assert app.screen.maximized is pane
        assert pane.following
        assert [ln.text for ln in pane._shown] == keep
        # Enter on the emptied box clears the filter
        await pilot.press("f", *["backspace"] * 4, "enter")
        await pilot.pause(0.05)
        assert [ln.text for ln in pane._shown] == texts
        assert "filter" not in status(app)
        assert not shown(app, "filter") and app.screen.maximized is pane


async def test_search_and_filter_live_in_the_status_line_and_across_runs():
    app = bare_app()
    r1 = [f"[2026-11-30 12:00:00] r1 line {i}" + (" OutOfMemory here" if i in (10, 20, 30) else "") for i in range(50)]
    r2 = [f"[2026-11-30 12:01:00] r2 line {i}" + (" OutOfMemory again" if i == 5 else "") for i in range(40)]
    async with app.run_test(size=(240, 40)) as pilot:  # 240: the search and filter fit on the status line
        show_run(app, "r1")
        write(app, "r1", r1)
        await pilot.pause(0.05)
        pane = app.log_pane
        pane.view.focus()
        await pilot.press("slash", *"OutOfMemory", "enter")
        await pilot.pause(0.05)
        assert not shown(app, "search")
        assert "search 'OutOfMemory' 1/3" in status(app)
        await pilot.press("n")
        await pilot.pause(0.05)
        assert "search 'OutOfMemory' 2/3" in status(app)
        await pilot.press("f", *"line [0-3]", "enter")
        await pilot.pause(0.05)
        want = [t for t in r1 if any(f"line {d}" in t for d in "0123")]
        n_kept = sum("OutOfMemory" in t for t in want)
        # the rows changed: the matches are counted again, none is current until n
        assert f"search 'OutOfMemory' {n_kept} matches (Esc: clear) · filter 'line [0-3]'" in status(app)
        await pilot.press("n")
        await pilot.pause(0.05)
        assert re.search(rf"search 'OutOfMemory' [1-{n_kept}]/{n_kept} \(Esc: clear\) · filter 'line \[0-3\]'", status(app)), status(app)
        # shown apart from the log's text: the status line, in its own style; no view row is the query
        chip = pane._texts["#log-status"]  # the Rich Text the status row was given
        assert chip.plain == status(app)
        spans = [chip.plain[sp.start:sp.end] for sp in chip.spans if "reverse" in str(sp.style)]
        assert any("search 'OutOfMemory'" in s and "filter 'line [0-3]'" in s for s in spans), spans
        assert chip.plain.index("search") < chip.plain.rindex("wrap"), chip.plain  # first, before the counts
        assert [ln.text for ln in pane._shown] == want
        # the next run's log: the search and filter stay, still in the status line
        show_run(app, "r1", "r2")
        write(app, "r2", r2)
        await pilot.pause(0.05)
        assert app.state.log_run_id == "r2"
        assert [ln.text for ln in pane._shown] == [t for t in r2 if any(f"line {d}" in t for d in "0123")]
        assert "filter 'line [0-3]'" in status(app) and "search 'OutOfMemory'" in status(app)
        assert not shown(app, "search") and not shown(app, "filter")
        # ... counting r2's own matches (none current yet), nothing said about r1's lines
        n2 = sum("OutOfMemory" in t for t in r2 if any(f"line {d}" in t for d in "0123"))
        assert f"search 'OutOfMemory' {n2} match{'' if n2 == 1 else 'es'} (Esc: clear) · filter" in status(app), status(app)
        # lines arriving later are counted as they come
        write(app, "r2", r2 + ["[2026-11-30 12:02:00] r2 line 1 OutOfMemory late"])
        await pilot.pause(0.05)
        assert f"search 'OutOfMemory' {n2 + 1} match{'' if n2 + 1 == 1 else 'es'} (Esc: clear) · filter" in status(app), status(app)


async def test_notes_about_one_runs_log_do_not_stay_on_the_next_one():
    app = bare_app()
    r1 = [f"[2026-11-30 12:00:00] r1 line {i}" for i in range(20)] + ["ValueError: boom"]
    r2 = [f"[2026-11-30 12:01:00] r2 line {i}" for i in range(20)]
    async with app.run_test(size=(120, 40)) as pilot:
        show_run(app, "r1")
        write(app, "r1", r1)
        await pilot.pause(0.05)
        app.log_pane.view.focus()
        await pilot.press("slash", *"memory_pool", "enter")
        await pilot.pause(0.05)
        assert "'memory_pool' not found" in status(app)
        show_run(app, "r1", "r2")
        write(app, "r2", r2)
        await pilot.pause(0.05)
        assert "not found" not in status(app) and "first error" not in status(app)
        assert "search 'memory_pool' 0 matches" in status(app), status(app)


async def _carried_to_r2(app, pilot, zoomed: bool, key: str, in_r1: str, not_in_r1: str | None = None) -> list[str]:
    """Run r1's log (its line 7 says "CUDA out of memory") in the log pane, focused (and
    zoomed); ``key`` opens the search or the filter box and "out of memory" is entered; the
    status then holds ``in_r1`` (and not ``not_in_r1``); then the next run r2's log, without
    the text, is shown. Returns r2's lines."""
    r1 = [f"[2026-11-30 12:00:00] r1 line {i}" + (" CUDA out of memory" if i == 7 else "") for i in range(30)]
    r2 = [f"[2026-11-30 12:01:00] r2 line {i}" for i in range(30)]
    show_run(app, "r1")
    write(app, "r1", r1)
    await pilot.pause(0.05)
    pane = app.log_pane
    pane.view.focus()
    if zoomed:
        await pilot.press("z")
        await pilot.pause(0.05)
        assert app.screen.maximized is pane
    await pilot.press(key, *"out of memory", "enter")
    await pilot.pause(0.05)
    assert in_r1 in status(app), status(app)
    if not_in_r1 is not None:
        assert not_in_r1 not in status(app)
    show_run(app, "r1", "r2")  # the next run's log, where the text is not
    write(app, "r2", r2)
    await pilot.pause(0.05)
    return r2


@pytest.mark.parametrize("zoomed", [False, True], ids=["pane", "zoomed"])
async def test_a_search_carried_to_a_log_without_it_says_so_and_esc_clears_it(zoomed):
    """The search stays on for the next run's log (where the same text is looked for); where
    that log has none, the status says which search is in force, that it found nothing and the
    key that clears it; Esc on the log then clears it (zoomed: before Esc un-zooms)."""
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.log_pane
        # a match in view says a search is on: the hint may give way to keep the log's rows
        r2 = await _carried_to_r2(app, pilot, zoomed, "slash", "search 'out of memory' 1/1")
        assert app.state.log_run_id == "r2"
        assert "search 'out of memory' 0 matches (Esc: clear)" in status(app), status(app)
        await pilot.press("escape")
        await pilot.pause(0.05)
        assert pane.search_text == "" and "search" not in status(app), status(app)
        assert app.focused is pane.view
        if zoomed:
            assert app.screen.maximized is pane  # the first Esc cleared the search only
        # no search in force: Esc is no longer the log's (zoomed, it un-zooms as before)
        await pilot.press("escape")
        await pilot.pause(0.05)
        assert app.screen.maximized is None
        assert pane.search_text == "" and [ln.text for ln in pane._shown] == r2


async def test_the_search_keeps_its_esc_hint_in_a_narrow_pane_until_its_text_would_be_unreadable():
    """In a row of its own too narrow for it whole, the search text is cut before the hint
    goes; the hint goes before the text is cut below 8 cells."""
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        show_run(app, "r1")
        write(app, "r1", ["[2026-11-30 12:00:00] max_running_requests=8"])
        await pilot.pause(0.05)
        pane = app.log_pane
        pane.set_search("max_running_requests")
        show_run(app, "r1", "r2")  # carried to a log without it
        write(app, "r2", [f"[2026-11-30 12:00:00] line {i}" for i in range(10)])
        await pilot.pause(0.05)
        # "search '" 8 + the text 20 + "'" 1 + " 0 matches" 10 + the hint 13 = 52 cells, 54 with the padding
        assert pane._active_rows("", 54).plain == " search 'max_running_requests' 0 matches (Esc: clear) "
        # 50: 48 for the row, 16 for the text (15 and the ellipsis)
        assert pane._active_rows("", 50).plain == " search 'max_running_req…' 0 matches (Esc: clear) "
        # 42: 8 cells of text and the hint; 41: the hint goes, and the text fits whole without it
        assert pane._active_rows("", 42).plain == " search 'max_run…' 0 matches (Esc: clear) "
        assert pane._active_rows("", 41).plain == " search 'max_running_requests' 0 matches "
        assert pane._active_rows("", 30).plain == " search 'max_runn…' 0 matches "


@pytest.mark.parametrize("zoomed", [False, True], ids=["pane", "zoomed"])
async def test_a_filter_carried_to_a_log_without_its_lines_says_how_to_change_it(zoomed):
    """The filter stays on for the next run's log; where it leaves none of that log's lines,
    the status says which filter is in force, that it shows nothing and the key that changes
    it (``f``: the box opens holding it; Enter on it emptied clears it). Esc does not drop it
    (a filter waiting for lines yet to come is a watch); zoomed, Esc un-zooms as before."""
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        pane = app.log_pane
        # its line in view says a filter is on: no hint
        r2 = await _carried_to_r2(app, pilot, zoomed, "f", "filter 'out of memory' 1 shown", "(f: change)")
        assert app.state.log_run_id == "r2" and len(pane._shown) == 0
        assert "filter 'out of memory' 0 shown (f: change)" in status(app), status(app)
        await pilot.press("escape")
        await pilot.pause(0.05)
        assert pane.filter_text == "out of memory" and "filter 'out of memory' 0 shown (f: change)" in status(app)
        assert app.screen.maximized is None
        # f: the box holds the filter; emptied, Enter clears it
        await pilot.press("f")
        await pilot.pause(0.05)
        assert pane.query_one("#log-filter").value == "out of memory"
        await pilot.press("ctrl+a", "ctrl+k", "enter")
        await pilot.pause(0.05)
        assert pane.filter_text == "" and "filter" not in status(app), status(app)
        assert [ln.text for ln in pane._shown] == r2


async def test_a_search_and_a_filter_that_find_nothing_both_say_their_keys():
    """A filter that leaves no line leaves no match for the search either: both say so, with
    their keys, each on a row of its own where one row is too narrow (the pane at 120x40)."""
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        show_run(app, "r1")
        write(app, "r1", [f"[2026-11-30 12:00:00] line {i}" for i in range(10)])
        await pilot.pause(0.05)
        pane = app.log_pane
        pane.set_filter("Traceback")
        pane.set_search("Error")
        await pilot.pause(0.05)
        rows = status(app).splitlines()
        assert rows[0].strip() == "search 'Error' (Esc: clear)", rows  # the note below: not found
        assert rows[1].strip() == "filter 'Traceback' 0 shown (f: change)", rows
        assert "'Error' not found" in rows[2], rows


async def test_the_filter_keeps_its_change_hint_in_a_narrow_pane_as_the_search_keeps_its_own():
    """The search's rule for a row too narrow (the text is cut before the hint goes, the hint
    goes before the text is cut below 8 cells) holds for a filter that leaves no line."""
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        show_run(app, "r1")
        write(app, "r1", [f"[2026-11-30 12:00:00] line {i}" for i in range(10)])
        await pilot.pause(0.05)
        pane = app.log_pane
        pane.set_filter("max_running_requests")
        await pilot.pause(0.05)
        # "filter '" 8 + the text 20 + "'" 1 + " 0 shown" 8 + " (f: change)" 12 = 49 cells, 51 with the padding
        assert pane._active_rows("", 51).plain == " filter 'max_running_requests' 0 shown (f: change) "
        # 47: 45 for the row, 16 for the text (15 and the ellipsis)
        assert pane._active_rows("", 47).plain == " filter 'max_running_req…' 0 shown (f: change) "
        # 39: 8 cells of text and the hint; 38: the hint goes, the text cut to 19 cells
        assert pane._active_rows("", 39).plain == " filter 'max_run…' 0 shown (f: change) "
        assert pane._active_rows("", 38).plain == " filter 'max_running_reques…' 0 shown "


async def test_status_says_paused_as_soon_as_the_view_scrolls_up():
    app = bare_app()
    lines = [f"[2026-11-30 12:00:00] line {i}" for i in range(300)]
    async with app.run_test(size=(120, 40)) as pilot:
        show_run(app, "r1")
        write(app, "r1", lines)
        await pilot.pause(0.05)
        assert " following " in status(app)
        app.log_pane.view.focus()
        await pilot.press("up", "up", "up")
        await pilot.pause(0.05)  # no new log line, no refresh of the panes: the scroll alone
        assert " paused " in status(app) and " following " not in status(app)
        await pilot.press("end")
        await pilot.pause(0.05)
        assert " following " in status(app)


def access(port: int, path: str, method: str = "GET") -> str:
    return f'INFO:     127.0.0.1:{port} - "{method} {path} HTTP/1.1" 200 OK'


async def test_own_polls_hidden_by_default_other_access_lines_dim_a_cycles():
    app = bare_app()
    own = ["/metrics", "/server_info", "/get_server_info", "/health", "/health_generate"]
    texts = ["[2026-11-30 12:00:00] The server is fired up and ready to roll!"]
    for i in range(30):
        texts.append(access(41000 + i, own[i % len(own)]))
        if i % 10 == 0:
            texts.append(access(42000 + i, "/v1/models"))  # a poll, but not the console's own
            texts.append(f"[2026-11-30 12:00:0{i // 10}] Decode batch, #running-req: {i}")
    n_own = sum(any(f'"GET {p} HTTP' in t for p in own) for t in texts)
    assert n_own == 30
    async with app.run_test(size=(120, 40)) as pilot:
        show_run(app, "r1")
        write(app, "r1", texts)
        await pilot.pause(0.05)
        pane = app.log_pane
        pane.view.focus()
        rows = [ln.text for ln in pane._shown]
        assert rows == [t for t in texts if not any(f'"GET {p} HTTP' in t for p in own)]
        assert f"{n_own} polls hidden (a)" in status(app)  # 120x40: the short forms
        assert len(app.state.log) == len(texts)  # the state keeps them all
        other = next(ln for ln in pane._shown if "/v1/models" in ln.text)
        assert any(sp.start == 0 and sp.end == len(other.text) and "dim" in str(sp.style)
                   for sp in pane.view.line_text(other).spans)
        # new lines: the own polls stay hidden and are counted
        write(app, "r1", texts + [access(43000, "/metrics"), access(43001, "/metrics")])
        await pilot.pause(0.05)
        assert f"{n_own + 2} polls hidden (a)" in status(app)
        await pilot.press("a")  # dim: every line shown, the polls dimmed
        await pilot.pause(0.05)
        assert len(pane._shown) == len(texts) + 2
        assert "polls dimmed (a)" in status(app)
        await pilot.press("a")  # show: plain
        await pilot.pause(0.05)
        assert len(pane._shown) == len(texts) + 2 and "polls shown (a)" in status(app)
        await pilot.press("a")  # back to hide
        await pilot.pause(0.05)
        assert f"{n_own + 2} polls hidden (a)" in status(app)


async def test_the_current_match_stands_out_from_the_others():
    """n/N: the line of the current match draws its match bold and underlined; every other
    match is reverse only (read off the rendered strips' styles)."""
    app = bare_app()
    lines = [f"[2026-11-30 12:00:00] line {i}" + (" OOM here" if i in (3, 6, 9) else "") for i in range(12)]
    async with app.run_test(size=(120, 40)) as pilot:
        show_run(app, "r1")
        write(app, "r1", lines)
        await pilot.pause(0.05)
        view = app.log_pane.view
        view.focus()
        await pilot.press("slash", *"OOM", "enter")
        await pilot.pause(0.05)

        def match_styles(i: int):
            strip = view._row_strip(view.row_of(i), view.rich_style) if not view.wrap else view._wrapped_rows(i, view.rich_style)[0]
            return [(seg.style.bold, seg.style.underline) for seg in strip if seg.text == "OOM"]

        idx = [i for i, ln in enumerate(app.log_pane._shown) if "OOM" in ln.text]
        cur = app.log_pane._match_at
        assert cur in idx and "1/3" in status(app)
        assert match_styles(cur) == [(True, True)]
        assert all(match_styles(i) == [(False, False)] or match_styles(i) == [(None, None)] for i in idx if i != cur)
        await pilot.press("n")
        await pilot.pause(0.05)
        nxt = app.log_pane._match_at
        assert nxt != cur and match_styles(nxt) == [(True, True)]
        assert match_styles(cur) in ([(False, False)], [(None, None)])
