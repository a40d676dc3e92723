"""Redraw only what changed (issue 14): a text box's height steadies under a flood, so a number
whose width crosses the box's edge does not lay out the whole screen every few frames."""

from __future__ import annotations

from types import SimpleNamespace

from rich.text import Text

from mambaconsole.ui.redraw import SHRINK_AFTER_S, steady_height


def test_a_box_grows_at_once_and_shrinks_only_after_its_height_went_unused():
    box = SimpleNamespace()
    two, three = Text("a\nb"), Text("a\nb\nc")
    assert steady_height(box, two, 2, 0.0) == (two, True)  # first: laid out
    assert steady_height(box, three, 3, 0.1) == (three, True)  # grows at once
    shown, layout = steady_height(box, two, 2, 0.2)  # needs less: keeps its 3 rows, blank last
    assert not layout and shown.plain == "a\nb\n" and shown.plain.count("\n") + 1 == 3
    assert two.plain == "a\nb"  # the caller's text is not changed
    assert steady_height(box, three, 3, 0.3) == (three, False)  # the kept rows are used again
    assert steady_height(box, two, 2, 0.3 + SHRINK_AFTER_S * 0.9)[1] is False
    assert steady_height(box, two, 2, 0.31 + SHRINK_AFTER_S) == (two, True)  # unused long enough: shrinks
    assert steady_height(box, two, 2, 10.0) == (two, False)


def test_the_pacer_lets_a_redraw_start_at_once_unless_the_last_is_unshown_or_dear():
    from mambaconsole.ui.redraw import FramePacer

    p = FramePacer(share=0.5, longest=1 / 30, unshown=0.25, burst=0.010)
    assert p.due() == float("-inf")  # nothing drawn yet: at once
    p.begin(10.0)
    # not on screen yet: a redraw now would go out with it; unshown 0.25 s on: taken as shown
    assert p.in_flight and p.due() == 10.25
    # on screen 4 ms later: 10 ms saved (full), 2 ms earned meanwhile (kept to 10), 4 spent: 6 left
    p.shown(10.004)
    assert p.due() <= 10.004
    p.begin(10.004)
    p.shown(10.012)  # 8 ms: 6 + 4 earned - 8 = 2 left: the next at once
    assert p.due() <= 10.012
    p.begin(10.012)
    p.shown(10.020)  # 8 ms: 2 + 4 - 8 = -2 owed: earned back at half speed in 4 ms
    assert abs(p.due() - 10.024) < 1e-9
    p.begin(10.024)  # 0 saved
    p.shown(10.524)  # a dear redraw (a flood's folding in between): never more than 1/30 s
    assert abs(p.due() - (10.024 + 1 / 30)) < 1e-9
    # the debt kept is what 1/30 s earns (1/60 s): a quiet spell of 60 ms pays it and saves the
    # rest up to `burst`, so the next ones go at once again
    p.begin(10.524 + 1 / 30 + 0.060)
    p.shown(10.524 + 1 / 30 + 0.064)  # 10 - 4 = 6 left
    assert p.due() <= 10.524 + 1 / 30 + 0.064
    p.begin(11.0)
    p.shown(10.999)  # a clock that went back costs and earns nothing
    assert p.due() <= 11.0 and not p.in_flight


def test_the_pacer_keeps_the_redraws_share_over_time_and_lets_early_lines_go_at_once():
    """Lines about 10 ms apart (their arrival jitters by up to 2 ms), each redraw 4.5 ms: a
    share of 0.45, under the pacer's 0.5, so no line waits; redraws of 8 ms for lines 10 ms apart
    (0.8) are held to the share over the run: each waits, and the redraws take no more than
    half the time plus the saved burst."""
    import random

    from mambaconsole.ui.redraw import FramePacer

    def run(cost: float) -> tuple[list[float], float, float]:
        rng = random.Random(7)
        p = FramePacer(share=0.5, longest=1 / 30)
        t, free, waits, spent, first = 100.0, 0.0, [], 0.0, None
        for _ in range(400):
            t += 0.010 + rng.uniform(-0.002, 0.002)  # the line comes in
            start = max(t, free, p.due())  # (the loop is busy with the last redraw until `free`)
            waits.append(start - max(t, free))
            first = start if first is None else first
            p.begin(start)
            free = start + cost
            p.shown(free)
            spent += cost
        return waits, spent, free - first

    waits, _, _ = run(0.0045)
    assert max(waits) == 0.0
    waits, spent, span = run(0.008)
    assert sum(w > 0 for w in waits) > 300
    assert spent <= 0.5 * span + 0.5 / 30 + 1e-9


def test_textual_is_told_to_write_a_frame_within_a_millisecond_of_a_change():
    """The console's ui package sets Textual's frame rate before Textual reads it (once, at
    import): its update timer's period is 1 ms, not 1/60 s; a TEXTUAL_FPS of the user's wins."""
    import os
    import subprocess
    import sys

    code = "import mambaconsole.ui.app, textual.screen as s; print(s.UPDATE_PERIOD)"
    env = {k: v for k, v in os.environ.items() if k != "TEXTUAL_FPS"}
    env["PYTHONPATH"] = os.pathsep.join(sys.path)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert float(out.stdout) == 0.001
    out = subprocess.run([sys.executable, "-c", code], env={**env, "TEXTUAL_FPS": "50"}, capture_output=True,
                         text=True, check=True)
    assert float(out.stdout) == 0.02
