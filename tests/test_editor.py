"""The Mamba parameter editor (``e``) driven by Pilot: Esc with unsaved edits asks before
discarding and a discarded draft is gone on reopening; focus starts at the first field and
Tab/Shift-Tab follow the form's visual order (also out of an open Select); boolean options
show on/off prefilled from the run and add/remove the bare flag. The app reads the simulated
node's parser for real (``python -m mambaconsole.sim --sim-params``, 0.5.11) through LocalNode;
its pollers are off. Expected values are read off the run's argv and the parser's option
list, never off the editor."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from fixtures.screen import shown
import pytest
from textual.widgets import Input, Select, Switch

from fixtures.console import wait_until
from mambaconsole.node.local import LocalNode
from mambaconsole.sim import demo as sim_demo
from mambaconsole.state import NodeFacts, RunInfo, RunsListed
from mambaconsole.ui.app import ConsoleApp
from mambaconsole.sglang.argv_diff import diff, diff_text, split_launch
from mambaconsole.ui.editor import EditorScreen
from mambaconsole.session.feed import Feed
from mambaconsole.session.settings import HostSettings

pytestmark = pytest.mark.timeout(120)

SPECS = Path(__file__).resolve().parents[1] / "tui" / "mambaconsole" / "sim" / "specs"
PROGRAM = [sys.executable, "-m", "mambaconsole.sim", "--sim-version", "0.5.11", "--sim-speed", "1"]
#: the demo's working command plus one store_true flag given
ARGS = sim_demo.working_argv(port=30000) + ["--disable-radix-cache"]


def make_app(argv: list[str]) -> ConsoleApp:
    feed = Feed(LocalNode("gpu-node"), HostSettings(python=sys.executable, module="mambaconsole.sim"), simulated=True)
    app = ConsoleApp(feed, clock=lambda: 1796040000.0, start_workers=False)
    run = RunInfo("20261130-120830-c3d4", argv=tuple(argv), started=1796039900.0, state="running", pid=4242)
    app._initial = (NodeFacts("gpu-node", "0.5.11", simulated=True), RunsListed((run,), run.run_id))
    return app


async def start(pilot, app: ConsoleApp) -> None:
    for ev in app._initial:
        app.state.apply(ev)
    await pilot.pause()


async def open_editor(pilot, app: ConsoleApp) -> EditorScreen:
    await pilot.press("e")
    await wait_until(pilot, lambda: isinstance(app.screen, EditorScreen) and app.screen.params,
                     what="the editor with the sim's parser")
    await pilot.pause()
    return app.screen


def value_after(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


# ------------------------------------------------------------------ Esc and the draft

async def test_escape_without_edits_just_closes():
    app = make_app(PROGRAM + ARGS)
    async with app.run_test(size=(120, 40)) as pilot:
        await start(pilot, app)
        await open_editor(pilot, app)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, EditorScreen) and type(app.screen).__name__ != "DiscardScreen"


async def test_escape_with_edits_asks_and_a_discarded_draft_is_gone():
    app = make_app(PROGRAM + ARGS)
    async with app.run_test(size=(120, 40)) as pilot:
        await start(pilot, app)
        ed = await open_editor(pilot, app)
        ed.query_one("#f-max_mamba_cache_size", Input).value = "7"
        ed.query_one("#f-disable_radix_cache", Switch).value = False
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        ask = app.screen
        assert type(ask).__name__ == "DiscardScreen"
        assert "Discard 2 changed fields?" in ask.question
        await pilot.press("n")  # keep editing: the draft is still there
        await pilot.pause()
        assert app.screen is ed and ed.query_one("#f-max_mamba_cache_size", Input).value == "7"
        await pilot.press("escape")
        await pilot.pause()
        assert type(app.screen).__name__ == "DiscardScreen"
        await pilot.press("escape")  # Esc twice discards
        await pilot.pause()
        assert not isinstance(app.screen, EditorScreen) and type(app.screen).__name__ != "DiscardScreen"
        assert list(app.state.run.argv) == PROGRAM + ARGS  # nothing relaunched
        again = await open_editor(pilot, app)
        assert again is not ed
        assert again.query_one("#f-max_mamba_cache_size", Input).value == value_after(ARGS, "--max-mamba-cache-size")
        assert again.query_one("#f-disable_radix_cache", Switch).value is True
        assert again.changed_fields() == []


# ------------------------------------------------------------------ focus order

async def test_focus_starts_at_the_first_field_and_tab_follows_the_form():
    app = make_app(PROGRAM + ARGS)
    async with app.run_test(size=(120, 40)) as pilot:
        await start(pilot, app)
        ed = await open_editor(pilot, app)
        form = ed.query_one("#ed-form")
        # the visual order: rows top to bottom (their offset in the scrolled form), then the buttons
        rows = sorted(form.query(".row"), key=lambda r: r.virtual_region.y)
        fields = [next(iter(r.query("Input, Select, Switch"))).id for r in rows]
        buttons = [b.id for b in sorted(ed.query("#ed-buttons Button"), key=lambda b: b.region.x) if not b.disabled]
        # a row per parser option, then the run's environment and working folder
        assert len(fields) == len(ed.params) + 2 and len(ed.params) > 10
        assert fields[-2:] == ["f-env", "f-cwd"]
        assert app.focused.id == fields[0]
        seen = [app.focused.id]
        for _ in range(len(fields) + len(buttons) - 1):
            await pilot.press("tab")
            seen.append(app.focused.id)
        assert seen == fields + buttons
        await pilot.press("tab")  # round to the first field again
        assert app.focused.id == fields[0]
        await pilot.press("shift+tab")
        assert app.focused.id == buttons[-1]
        # out of an open Select: Tab goes on to the next field, Shift-Tab back, the menu closes
        i = next(n for n, f in enumerate(fields) if isinstance(ed.query_one(f"#{f}"), Select) and n > 0)
        sel = ed.query_one(f"#{fields[i]}", Select)
        sel.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert sel.expanded
        await pilot.press("tab")
        await pilot.pause()
        assert app.focused.id == fields[i + 1] and not sel.expanded
        sel.focus()
        await pilot.press("enter")
        await pilot.pause()
        assert sel.expanded
        await pilot.press("shift+tab")
        await pilot.pause()
        assert app.focused.id == fields[i - 1] and not sel.expanded


# ------------------------------------------------------------------ boolean options

async def test_boolean_rows_show_on_off_and_add_or_remove_the_bare_flag():
    app = make_app(PROGRAM + ARGS)
    async with app.run_test(size=(120, 40)) as pilot:
        await start(pilot, app)
        ed = await open_editor(pilot, app)
        store_true = [o["option_strings"][0] for o in ed.params if o.get("nargs") == 0]
        assert {"--disable-radix-cache", "--speculative-adaptive"} <= set(store_true)
        for flag in store_true:  # every flag row has a switch, prefilled from the run, and says on/off
            sw = ed.query_one("#f-" + flag[2:].replace("-", "_"), Switch)
            assert sw.value is (flag in ARGS)
            state = shown(ed.query_one(f"#{sw.id}-state"))
            assert state.startswith("on" if flag in ARGS else "off"), (flag, state)
        radix = ed.query_one("#f-disable_radix_cache", Switch)
        radix.focus()
        await pilot.press("space")  # off: the bare flag goes
        await pilot.pause()
        assert shown(ed.query_one("#f-disable_radix_cache-state")).startswith("off")
        adaptive = ed.query_one("#f-speculative_adaptive", Switch)
        adaptive.focus()
        await pilot.press("space")  # on: the bare flag comes
        await pilot.pause()
        new = ed.edited_args()
        want = PROGRAM[3:] + [a for a in ARGS if a != "--disable-radix-cache"] + ["--speculative-adaptive"]
        assert new == want
        diff = shown(ed.query_one("#ed-diff"))
        assert "+ --speculative-adaptive" in diff and "- --disable-radix-cache" in diff
        assert ed.changed_fields() == ["--disable-radix-cache", "--speculative-adaptive"]
        # the sim's resolver reads the edited argv as SGLang would
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: ed.verdict is not None and ed.verdict_for == new, what="pre-flight")
        assert ed.verdict["fields"]["disable_radix_cache"]["value"] is False


async def test_a_boolean_pair_is_a_select_of_its_two_flags():
    """0.5.23's ``--speculative-enable-w4a4-mxfp4-megamoe`` is a BooleanOptionalAction pair."""
    actions = json.loads((SPECS / "sglang-0.5.23.json").read_text())["actions"]
    pair = next(a for a in actions if "BooleanOptional" in str(a.get("action")) and "--speculative-" in a["option_strings"][0])
    on, off = pair["option_strings"]
    args = ["--model-path", "m", off, "--page-size", "64"]
    app = make_app(PROGRAM + args)
    async with app.run_test(size=(120, 40)) as pilot:
        await start(pilot, app)
        ed = EditorScreen(app.feed, PROGRAM + args, params=actions)
        await app.push_screen(ed)
        await wait_until(pilot, lambda: ed.params, what="the form")
        await pilot.pause()
        sel = ed.query_one("#f-" + on[2:].replace("-", "_"), Select)
        assert sel.value == off
        sel.value = on
        await pilot.pause()
        assert ed.edited_args() == PROGRAM[3:] + ["--model-path", "m", "--page-size", "64", on]
        assert diff(PROGRAM + args, PROGRAM[:3] + ed.edited_args(), ed.spec) == [("~", on, off, on)]
        sel.clear()
        await pilot.pause()
        assert ed.edited_args() == PROGRAM[3:] + ["--model-path", "m", "--page-size", "64"]


# ------------------------------------------------------------------ the argv diff

def test_argv_diff_matches_options_by_field_and_keeps_the_launcher():
    prog = ["python3", "-m", "sglang.launch_server"]
    old = prog + ["--model", "m", "--tp", "2", "--disable-radix-cache", "--mamba-scheduler-strategy", "no_buffer"]
    new = prog + ["--model", "m", "--tp-size", "4", "--mamba-radix-cache-strategy", "no_buffer", "--enable-metrics"]
    assert diff(old, new) == [("~", "--tp-size", "2", "4"), ("+", "--enable-metrics", None, None),
                              ("-", "--disable-radix-cache", None, None)]
    assert diff_text(old, new) == "~ --tp-size 2→4  + --enable-metrics  - --disable-radix-cache"
    assert diff_text(old, old) == "unchanged"
    sim = ["py", "-m", "mambaconsole.sim", "--sim-version", "0.5.11", "--model-path", "m"]
    assert split_launch(sim) == (sim[:3], sim[3:])
    assert split_launch(sim[3:]) == ([], sim[3:]) and split_launch([]) == ([], [])
    assert diff_text(sim, ["py", "-m", "mambaconsole.sim", "--sim-version", "0.5.23", "--model-path", "m"]) == \
        "~ --sim-version 0.5.11→0.5.23"
    # a removed option says the value it had (a newcomer read "---max-mamba-cache-size" as a typo)
    assert diff_text(sim + ["--max-mamba-cache-size", "24"], sim) == "- --max-mamba-cache-size 24"


# ------------------------------------------------------------------ values as typed or refused

async def type_into(pilot, ed: EditorScreen, fid: str, text: str) -> Input:
    """Clear the field and type ``text`` key by key, as a user would."""
    inp = ed.query_one(f"#{fid}", Input)
    inp.focus()
    inp.value = ""
    await pilot.pause()
    await pilot.press(*[{" ": "space", ";": "semicolon", "/": "slash", ".": "full_stop", "-": "minus"}.get(c, c)
                        for c in text])
    await pilot.pause()
    return inp


@pytest.mark.parametrize("fid, typed, kind, size", [
    ("f-max_mamba_cache_size", "24.5", "int", (120, 40)),
    ("f-max_mamba_cache_size", "24; rm -rf /", "int", (120, 40)),
    # a newcomer's report: "abc" in an int field (a check: refused and kept, also in the compact editor)
    ("f-max_running_requests", "abc", "int", (120, 40)),
    ("f-max_running_requests", "abc", "int", (80, 24)),
    ("f-mamba_full_memory_ratio", "0.4.4abc", "float", (120, 40)),
])
async def test_a_typed_value_is_kept_as_typed_or_refused_at_the_field(fid, typed, kind, size):
    app = make_app(PROGRAM + ARGS)
    async with app.run_test(size=size) as pilot:
        await start(pilot, app)
        ed = await open_editor(pilot, app)
        inp = await type_into(pilot, ed, fid, typed)
        assert inp.value == typed  # nothing dropped
        assert inp.content_region.height >= 1  # and still seen while refused (no border eating the row)
        # refused where it was typed, in argparse's words (argparse._get_value)
        err = ed.query_one(f"#{fid}-error")
        assert err.display and f"invalid {kind} value: {typed!r}" in shown(err)
        assert err.region.y > inp.region.y and err.region.height >= 1  # shown, under the field
        # no pre-flight, no relaunch with it
        await pilot.press("ctrl+r")
        await pilot.pause()
        assert ed.verdict is None and ed.query_one("#ed-go").disabled
        assert "invalid:" in shown(ed.query_one("#ed-verdict"))
        # a valid value clears the message
        await type_into(pilot, ed, fid, "24")
        assert inp.value == "24" and not err.display


@pytest.mark.parametrize("typed, said", [
    # the sim is 0.5.11: no check of its own (model_runner_kv_cache_mixin.py:94, :713 of 0.5.11)
    ("-1", "SGLang 0.5.11 does not check it: it sizes the Mamba pool to -1 slots"),
    # 1e26 slots at one byte each: 9.31e+16 GiB, more than the 96 GiB GPU (98304 MiB)
    ("99999999999999999999999999", "need at least 9.31e+16 GiB even at one byte a slot, more than the GPU's 96.0 GiB"),
])
async def test_a_max_mamba_cache_size_the_argument_check_passes_says_what_sglang_will_do(typed, said):
    from mambaconsole.state import GpuReading, GpuSnapshot

    app = make_app(PROGRAM + sim_demo.working_argv(port=30000))  # the demo's working command
    async with app.run_test(size=(120, 40)) as pilot:
        await start(pilot, app)
        app.state.apply(GpuSnapshot((GpuReading(0, "RTX PRO 6000 Blackwell", 1000.0, 98304.0, simulated=True),),
                                    simulated=True))
        ed = await open_editor(pilot, app)
        await type_into(pilot, ed, "f-max_mamba_cache_size", typed)
        new = ed.edited_args()
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: ed.verdict is not None and ed.verdict_for == new, what="pre-flight")
        await pilot.pause()
        assert ed.verdict["fields"]["max_mamba_cache_size"]["value"] == int(typed)  # SGLang's parser took it
        verdict = shown(ed.query_one("#ed-verdict"))
        assert "ARGUMENTS OK" in verdict
        assert f"--max-mamba-cache-size {typed}: " in verdict and said in verdict.replace("\n", " ")
