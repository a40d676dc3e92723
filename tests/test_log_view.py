"""The log pane's Line API view (ui/log_view.py) and the ConsoleState log path it reads, on the
real app without a node (lines are folded in as the tail worker would deliver them). Expected
values come from the generated lines themselves (their numbers, offsets and words) or from real
SGLang logs (tests/data/cases), never from the view's own output."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import example, given, settings, strategies as st

from mambaconsole.node.local import LocalNode
from mambaconsole.state import LOG_KEEP, LogLine, LogLines, RunInfo, RunsListed, severities, severity
from mambaconsole.ui.app import ConsoleApp
from mambaconsole.session.feed import Feed
from mambaconsole.session.settings import HostSettings

CASES = Path(__file__).parent / "data" / "cases"
pytestmark = pytest.mark.timeout(120)


class Writer:
    """Numbered lines ``n=00001 ...`` with their byte offsets, folded into the app's state."""

    def __init__(self, app: ConsoleApp, run_id: str = "r1") -> None:
        self.app, self.run_id, self.off, self.i = app, run_id, 0, 0

    def text(self, i: int) -> str:
        return f"[2026-11-30 12:00:00] n={i:05d} Decode batch, #running-req: 8, accept len: 2.50, gen throughput (token/s): 80.00"

    def write(self, n: int, texts: list[str] | None = None, reset: bool = False) -> list[str]:
        if reset:
            self.off = 0
        batch, out = [], []
        for k in range(n):
            self.i += 1
            t = texts[k] if texts else self.text(self.i)
            batch.append(LogLine(self.run_id, self.off, t))
            self.off += len(t.encode()) + 1
            out.append(t)
        self.app.refresh_panes(self.app.state.apply(LogLines(self.run_id, tuple(batch), reset=reset)))
        return out


def bare_app() -> ConsoleApp:
    app = ConsoleApp(Feed(LocalNode("t"), HostSettings()), start_workers=False)
    return app


async def started(app, pilot, wrap: bool = True) -> Writer:
    """The app showing run r1's (empty) log; ``wrap=False``: long lines unwrapped (``w``), one
    row per line (tests whose rows are line indices)."""
    app.state.apply(RunsListed((RunInfo("r1", log_path="/x"),), "r1"))
    app.state.show_log_of("r1")
    app.refresh_panes({"log"})
    await pilot.pause(0)
    if not wrap:
        app.log_pane.view.focus()
        await pilot.press("w")
        assert not app.log_pane.view.wrap
    return Writer(app)


async def test_flood_keeps_log_keep_lines_and_renders_only_the_visible_rows():
    """Unwrapped (one row per line); wrapped: tests/test_log_wrap.py."""
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot, wrap=False)
        written = []
        for _ in range(12):
            written += w.write(1000)
            await pilot.pause(0)
        pane, view = app.log_pane, app.log_pane.view
        assert [ln.text for ln in pane._shown] == written[-LOG_KEEP:]
        assert len(app.state.log) == LOG_KEEP
        assert pane.following
        # the rows on screen are the last lines written
        await pilot.pause(0.05)
        rows = view.size.height
        assert 0 < rows < 40
        top = int(view.scroll_y)
        assert view.lines[top].text == written[-LOG_KEEP:][top]
        assert top == LOG_KEEP - rows + (1 if view.show_horizontal_scrollbar else 0)
        # only visible rows were styled and rendered: at most a screenful per repaint (13 of
        # them: one per batch and the first), not the 12,000 lines written
        assert 0 < view._cache.misses <= 13 * rows


async def test_pause_counts_new_lines_keeps_the_rows_and_end_follows():
    """Unwrapped (one row per line); wrapped: tests/test_log_wrap.py."""
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot, wrap=False)
        w.write(LOG_KEEP)
        await pilot.pause(0)
        pane, view = app.log_pane, app.log_pane.view
        view.scroll_to(y=2000, animate=False, immediate=True)
        await pilot.pause(0.05)
        assert not pane.following
        top_line = view.lines[int(view.scroll_y)]
        w.write(37)  # 37 lines fall off the front: the rows on screen stay the same lines
        await pilot.pause(0.05)
        assert view.lines[int(view.scroll_y)] == top_line
        assert "▼ 37 new" in str(pane.query_one("#log-status").render())
        w.write(5)
        await pilot.pause(0.05)
        assert "▼ 42 new" in str(pane.query_one("#log-status").render())
        await pilot.press("G")
        await pilot.pause(0.05)
        assert pane.following and pane._new == 0
        last = w.write(3)[-1]
        await pilot.pause(0.05)
        assert pane.following and view.lines[len(view.lines) - 1].text == last
        assert int(view.scroll_y) == view.max_scroll_y


async def test_search_highlights_only_matches_and_next_prev_move():
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        texts = [w.text(i) for i in range(1, 301)]
        texts[99] = texts[99].replace("Decode batch", "Decode batch NEEDLE here")
        texts[199] = texts[199].replace("Decode batch", "Decode batch needle again")
        w.write(300, texts)
        await pilot.pause(0)
        pane = app.log_pane
        pane.set_search("needle")
        assert pane._match_at == 99  # the first match below the top row (the pane follows the end: wraps)
        pane.action_next_match()
        assert pane._match_at == 199
        pane.action_next_match()
        assert pane._match_at == 99
        pane.action_prev_match()
        assert pane._match_at == 199
        styled = pane.view.line_text(pane._shown[199])
        at = texts[199].lower().index("needle")
        rev = [(sp.start, sp.end) for sp in styled.spans if "reverse" in str(sp.style)]
        assert rev == [(at, at + len("needle"))]
        assert not any("reverse" in str(sp.style) for sp in pane.view.line_text(pane._shown[5]).spans)
        # a new search drops the cached rows: the old highlight is gone
        pane.set_search("n=00006 ")
        assert pane._match_at == 5
        assert not any("reverse" in str(sp.style) for sp in pane.view.line_text(pane._shown[199]).spans)


async def test_severity_colours_follow_the_theme():
    lines = (CASES / "case-24" / "input.log").read_text().splitlines()
    err = next(t for t in lines if "Traceback" in t)
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        w.write(len(lines), lines)
        await pilot.pause(0)
        pane = app.log_pane
        line = next(ln for ln in pane._shown if ln.text == err)
        colour = app.theme_variables["error"].lower()
        assert any(colour in str(sp.style).lower() for sp in pane.view.line_text(line).spans)
        # another theme: the colour changes with it (cached rows dropped)
        await pilot.press("t")
        await pilot.pause(0.2)
        new = app.theme_variables["error"].lower()
        if new != colour:
            assert any(new in str(sp.style).lower() for sp in pane.view.line_text(line).spans)
            assert not any(colour in str(sp.style).lower() for sp in pane.view.line_text(line).spans)


async def test_truncated_log_starts_over_in_the_view():
    """A log truncated or rotated under the tail (reset): its offsets start over at 0 and the
    new lines are shown, although their offsets are below the old ones."""
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        w.write(200)
        fresh = w.write(3, ["after rotation 1", "after rotation 2", "after rotation 3"], reset=True)
        await pilot.pause(0)
        assert [ln.text for ln in app.log_pane._shown][-3:] == fresh


async def test_filter_applies_to_new_lines_and_bad_regex_is_refused():
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        w.write(100)
        pane = app.log_pane
        pane.set_filter(r"n=000[1-3]7 ")
        assert [ln.text for ln in pane._shown] == [w.text(i) for i in (17, 27, 37)]
        w.write(100)  # lines 101..200: the filter keeps none of them; 117 does not match 000[1-3]7
        assert [ln.text for ln in pane._shown] == [w.text(i) for i in (17, 27, 37)]
        # not a regex: refused at the box, with Python's message; the filter in force stays
        bad = "n=0001("
        with pytest.raises(re.error) as why:
            re.compile(bad)
        pane.view.focus()
        await pilot.press("f")
        box = pane.query_one("#log-filter")
        box.value = bad
        await pilot.press("enter")
        await pilot.pause()
        assert [ln.text for ln in pane._shown] == [w.text(i) for i in (17, 27, 37)] and pane.filter_text != bad
        assert str(pane.query_one("#log-filter-row Label").render()) == f"filter: not a regex: {why.value}"
        assert box.has_focus and "not a regex" in pane._note
        await pilot.press("escape")
        pane.set_filter("!n=000")
        assert [ln.text for ln in pane._shown] == [w.text(i) for i in range(100, 201)]  # n=00100 on


_REAL = [t for c in sorted(CASES.glob("case-*/input.log")) for t in c.read_text(errors="replace").splitlines()[:400]]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_REAL), st.text(max_size=80)), max_size=40))
@example(texts=["\n", "  warnings.warn("])  # a text holding a newline shifted every later line
def test_batch_severities_equal_per_line(texts):
    assert severities(texts) == [severity(t) for t in texts]
