"""Toasts (``saved ...svg``, ``theme ...``, ``started run ...``) sit over the log's text,
inside the log pane's frame: they leave the footer, the pane's border, its status line and the
log's scrollbar uncovered, and the pane beside it, at 80x24 (compact: the log pane alone),
100x30, 120x40 and 200x60. The allowed box is read off the laid-out log pane."""

from __future__ import annotations

import pytest
from textual.widgets._toast import Toast

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("size", [(80, 24), (100, 30), (120, 40), (200, 60)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_toasts_cover_no_border_status_line_or_scrollbar(monkeypatch, size):
    from test_console_snapshots import feed_recorded, frozen_app

    app = frozen_app(monkeypatch)
    async with app.run_test(size=size, notifications=True) as pilot:
        feed_recorded(app)
        await pilot.pause()
        app.notify("saved /root/.local/share/mambaconsole/screenshots/mambaconsole_2026-12-02T11_30_00.svg",
                   timeout=30, markup=False)
        app.notify("started run 20261202-113208-0b54", timeout=30, markup=False)
        await pilot.pause(0.5)
        view = app.log_pane.query_one("#log-view")
        status = app.log_pane.query_one("#log-status")
        assert view.show_vertical_scrollbar  # the column the toasts must leave
        # the log's text: right of the pane's left border and padding, left of the scrollbar,
        # above the status line (and so above the pane's bottom border and the footer)
        text = view.scrollable_content_region
        toasts = list(app.screen.query(Toast))
        assert len(toasts) == 2
        for t in toasts:
            r = t.region
            assert r.width and r.height, r
            assert text.x <= r.x and r.right <= text.right and r.bottom <= status.region.y <= text.bottom, (r, text, status.region)
