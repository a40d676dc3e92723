"""The theme and pane sizes chosen are remembered between starts (``session/ui_state.py``), a
``--theme`` wins over the saved one, ``0`` resets the pane sizes; a corrupt or unwritable state
file costs nothing but the memory. On the real app without a node, the state file in tmp_path."""

from __future__ import annotations

import json
import os

import pytest

from mambaconsole.node.local import LocalNode
from mambaconsole.session import ui_state
from mambaconsole.ui.app import ConsoleApp
from mambaconsole.session.feed import Feed
from mambaconsole.session.settings import HostSettings

pytestmark = pytest.mark.timeout(120)

SIZE = (120, 40)


def app_at(path, **kw) -> ConsoleApp:
    return ConsoleApp(Feed(LocalNode("t"), HostSettings()), start_workers=False, ui_state=path, **kw)


def widths(app):
    return app.query_one("#args").region.width, app.query_one("#log").region.width


def test_the_tests_never_touch_the_users_state_dir(tmp_path):
    assert os.environ.get("MAMBACONSOLE_STATE_DIR")
    assert not str(ui_state.state_path()).startswith(os.path.expanduser("~/.local/state"))


async def test_theme_and_pane_sizes_survive_a_restart(tmp_path):
    path = tmp_path / "state" / "ui-state.json"  # the folder does not exist yet
    first = app_at(path)
    async with first.run_test(size=SIZE) as pilot:
        await pilot.pause(0.05)
        start_theme = first.theme
        a0, l0 = widths(first)
        top0 = first.query_one("#gpu").region.height
        await pilot.press("t", "right_square_bracket", "right_square_bracket", "plus")
        await pilot.pause(0.05)
        chosen = first.theme
        a1, l1 = widths(first)
        top1 = first.query_one("#gpu").region.height
    assert chosen != start_theme
    assert a1 > a0 and l1 < l0 and top1 == top0 + 2  # `+`: two rows taller
    saved = json.loads(path.read_text())
    assert saved == {"theme": chosen, "args_cols": 7, "top_rows": 15}  # 5 + 2 tenths, 13 + 2 rows
    assert [p.name for p in path.parent.iterdir()] == ["ui-state.json"]  # no temporary file left

    second = app_at(path)
    async with second.run_test(size=SIZE) as pilot:
        await pilot.pause(0.05)
        assert second.theme == chosen
        assert widths(second) == (a1, l1)
        assert second.query_one("#gpu").region.height == top1

        await pilot.press("0")  # the default layout again; the theme stays
        await pilot.pause(0.05)
        assert widths(second) == (a0, l0)
        assert second.query_one("#gpu").region.height == top0
        assert second.theme == chosen
    assert json.loads(path.read_text()) == {"theme": chosen, "args_cols": 5, "top_rows": 13}


async def test_a_given_theme_wins_over_the_saved_one(tmp_path):
    path = tmp_path / "ui-state.json"
    path.write_text(json.dumps({"theme": "mamba-light"}))
    app = app_at(path, theme="mamba-contrast")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.05)
        assert app.theme == "mamba-contrast"
    restored = app_at(path)
    async with restored.run_test(size=SIZE) as pilot:
        await pilot.pause(0.05)
        assert restored.theme == "mamba-light"


@pytest.mark.parametrize("text", [
    "{not json",
    b"\xff\xfe garbage",
    "[1, 2]",
    json.dumps({"theme": 7, "args_cols": "wide", "top_rows": True}),
    json.dumps({"theme": "a-theme-deleted-since"}),
])
async def test_a_corrupt_state_file_is_ignored(tmp_path, text):
    path = tmp_path / "ui-state.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    app = app_at(path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.05)
        a, l = widths(app)
        assert app.theme == "mamba-dark" and abs(a - l) <= 1
        await pilot.press("right_square_bracket")  # and the next choice overwrites it
        await pilot.pause(0.05)
    assert json.loads(path.read_text())["args_cols"] == 6


async def test_out_of_range_saved_sizes_are_kept_within_the_resize_bounds(tmp_path):
    path = tmp_path / "ui-state.json"
    path.write_text(json.dumps({"args_cols": 99, "top_rows": -4}))
    app = app_at(path)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause(0.05)
        a, l = widths(app)
        assert a > 3 * l  # 8 : 2, the widest `]` gives
        assert app.query_one("#gpu").region.height == 5  # the shortest `-` gives


async def test_an_unwritable_state_dir_warns_once_and_the_console_goes_on(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    app = app_at(blocker / "ui-state.json")  # its folder is a file
    notes = []
    async with app.run_test(size=SIZE) as pilot:
        orig = app.notify
        app.notify = lambda msg, **kw: (notes.append(msg), orig(msg, **kw))
        await pilot.press("right_square_bracket", "right_square_bracket", "t")
        await pilot.pause(0.05)
        a, l = widths(app)
        assert a > l  # the resize itself happened
    warned = [n for n in notes if "not saved" in n]
    assert len(warned) == 1 and str(blocker) in warned[0], notes


def test_save_is_atomic_and_load_reads_it_back(tmp_path):
    path = tmp_path / "ui-state.json"
    path.write_text('{"theme": "old"}')
    ui_state.save(path, ui_state.UiState(theme="mamba-light", args_cols=3))
    assert ui_state.load(path) == ui_state.UiState(theme="mamba-light", args_cols=3, top_rows=None)
    assert json.loads(path.read_text()) == {"theme": "mamba-light", "args_cols": 3}
    assert ui_state.load(tmp_path / "missing.json") == ui_state.UiState()
