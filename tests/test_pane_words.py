"""Words a newcomer found wrong: the 80x24 pane switcher said ``2 spec`` under a pane titled
``Failure (no decode batch)``; ``?`` listed the panes 1, 3, 4, 2; the palette showed a bare
``h`` for "History of the runs". Expected words are read off the titles and the bindings; the
failure comes from a real OOM log (tests/data/cases/case-19)."""

from __future__ import annotations

import re
from pathlib import Path

from textual.binding import Binding

from mambaconsole.state import RunInfo, RunsListed
from mambaconsole.ui.app import PALETTE, ConsoleApp
from mambaconsole.ui.args_pane import ArgsPane
from mambaconsole.ui.help import HelpScreen
from mambaconsole.ui.log_pane import LogPane
from test_log_view import Writer, bare_app

OOM_LOG = Path(__file__).parent / "data" / "cases" / "case-19" / "input.log"


async def test_the_switcher_names_the_pane_by_its_current_title():
    app = bare_app()
    async with app.run_test(size=(80, 24)) as pilot:
        app.state.apply(RunsListed((RunInfo("r1", log_path="/x", state="running", pid=1),), "r1"))
        app.state.show_log_of("r1")
        app.refresh_panes({"spec", "log"})
        await pilot.pause(0.05)
        assert app.log_pane.border_subtitle == "1 gpu · 2 spec · 3 args · 4 log"
        # the run dies of an OOM before any decode batch: pane 2 is the failure now
        app.state.apply(RunsListed((RunInfo("r1", log_path="/x", state="dead", exit_code=1),), "r1"))
        texts = OOM_LOG.read_text().splitlines()
        Writer(app).write(len(texts), texts)
        app.state.flush_log()
        app.refresh_panes({"spec", "header"})
        await pilot.pause(0.05)
        title = app.spec_pane.border_title
        assert title.startswith("Failure (no decode batch)")
        assert app.log_pane.border_subtitle == "1 gpu · 2 failure · 3 args · 4 log"
        await pilot.press("2")
        await pilot.pause(0.05)
        assert app.spec_pane.border_subtitle == "1 gpu · 2 failure · 3 args · 4 log"


async def test_help_lists_the_panes_in_the_order_of_their_keys():
    app = bare_app()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        await pilot.pause(0.05)
        assert isinstance(app.screen, HelpScreen)
        titles = [t for t, _ in app.screen.groups]
        by_key = {}
        for b in Binding.make_bindings(ConsoleApp.BINDINGS):
            m = re.match(r"focus_pane\('(\w+)'\)", b.action)
            if m:
                by_key[b.key] = re.sub(r"\s*\[\d+\]$", "", str(app.main_screen.query_one(f"#{m[1]}").border_title))
        want = [by_key[k] for k in sorted(by_key)]
        assert [t for t in titles if t in want] == want, titles


async def test_every_palette_command_shows_its_key():
    app = bare_app()
    async with app.run_test(size=(120, 40)):
        helps = {c.title: c.help for c in app.get_system_commands(app.screen)}
    bound = {}
    for cls, prefix in ((ConsoleApp, ""), (LogPane, "log."), (ArgsPane, "args.")):
        for b in Binding.make_bindings(cls.BINDINGS):
            bound.setdefault(prefix + b.action, []).extend(b.key.split(","))
    checked = 0
    for title, _, action in PALETTE:
        keys = bound.get(action) or bound.get(action.split(".")[-1])
        if not keys:
            continue
        h = helps[title]
        assert h.startswith("key "), (title, h)
        shown = h[4:].split(" ")[0]
        assert any(shown in (k, app.get_key_display(Binding(k, "x"))) or shown.lower() == k.lower()
                   for k in keys), (title, h, keys)
        checked += 1
    assert helps["History of the runs"] == "key h"
    assert checked >= 20
