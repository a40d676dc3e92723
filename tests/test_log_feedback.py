"""The log's status line puts the answer to a key first, where a pane half a 120-column terminal
wide still shows it: ``E`` with no error in the kept lines said so after the counts, cut off."""

from __future__ import annotations

from rich.cells import cell_len

from test_log_view import bare_app, started


async def test_the_answer_to_E_is_seen_at_120_columns():
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        w = await started(app, pilot)
        w.write(50)  # plain lines: no error among them
        pane = app.log_pane
        pane.set_filter("n=000[1-3]")  # a filter in force too: its text takes room as well
        pane.view.focus()
        await pilot.press("E")
        await pilot.pause()
        status = pane.query_one("#log-status")
        text = status.render().plain
        width = status.size.width
        assert width < 80  # half the terminal
        i = text.index("no error in the kept lines")
        assert cell_len(text[:i + len("no error in the kept lines")]) <= width, (text, width)
