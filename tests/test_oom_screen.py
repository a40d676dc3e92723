"""The OOM screen says why the server died: the header names the allocation PyTorch could not
make and the flags that size it (with their values), the ServerArgs pane lists those flags
first, the speculative pane (empty: the run never decoded) shows the failure instead. On the
demo's first run (the seed scenario's extra_buffer OOM); the expected names and numbers are
read off that run's log, and the allocation's name off SGLang's own source."""

from __future__ import annotations

import re
from pathlib import Path

from fixtures.screen import shown, shown_lines
import pytest

from fixtures.console import wait_until
from fixtures.sglang_venvs import sglang_python
from mambaconsole.sglang.events import LogParser, Traceback
from mambaconsole.sglang.oom_site import oom_site
from test_demo_console import demo_app

pytestmark = pytest.mark.timeout(240)

#: what sizes the Mamba pool's speculative state, read off SGLang 0.5.11 (oom_site's docstring)
SIZING = ["--max-running-requests", "--speculative-num-draft-tokens", "--max-mamba-cache-size",
          "--mamba-scheduler-strategy", "--mamba-ssm-dtype"]


def test_the_allocation_is_named_from_sglangs_own_source_line():
    """A traceback whose last SGLang frame is MambaPool.__init__ at the line SGLang 0.5.11
    allocates the speculative state (its source line read from the real package)."""
    site_pkgs = next(Path(sglang_python("0.5.11")).parents[1].glob("lib/python3*/site-packages"))
    src = (site_pkgs / "sglang/srt/mem_cache/memory_pool.py").read_text().splitlines()
    line = next(i for i, s in enumerate(src, 1) if s.strip().startswith("intermediate_ssm_state_cache = torch.zeros("))
    path = site_pkgs / "sglang/srt/mem_cache/memory_pool.py"
    text = "\n".join([
        "[2026-11-30 21:12:53] Scheduler hit an exception: Traceback (most recent call last):",
        f'  File "{path}", line {line}, in __init__',
        f"    {src[line - 1].strip()}",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 9.56 GiB. GPU 0 has a total capacity of "
        "96.00 GiB of which 7.98 GiB is free.",
        "[2026-11-30 21:12:54] Received sigquit from a child process. It usually means the child failed.",
    ])
    p = LogParser()
    events = [e for ln in text.splitlines() for e in p.feed(ln)] + list(p.flush())
    [tb] = [e for e in events if isinstance(e, Traceback)]
    site = oom_site(tb.frames)
    assert site is not None and site.name == "intermediate_ssm_state_cache"
    assert list(site.flags) == SIZING and site.line == line and site.file == "srt/mem_cache/memory_pool.py"
    # a frame outside SGLang, or an allocation SGLang does not make there: nothing is guessed
    assert oom_site(tb.frames[:0]) is None


async def test_the_oom_screen_names_the_allocation_and_its_flags(demo_home):
    demo, app = demo_app(demo_home)
    async with app.run_test(size=(200, 60)) as pilot:
        await wait_until(pilot, lambda: app.state.status == "oom" and app.state.rows, timeout=120, what="the OOM")
        await pilot.pause(0.5)
        log = Path(app.state.run.log_path).read_text()
        name = re.findall(r"^\s*(\w+) = torch\.zeros\(", log, re.M)[-1]  # the last allocation before the error
        tried = re.search(r"Tried to allocate ([\d.]+) GiB", log)[1]
        given = {"--max-running-requests": "16", "--mamba-scheduler-strategy": "extra_buffer"}
        argv = app.state.run.argv
        for flag, value in given.items():
            assert argv[argv.index(flag) + 1] == value
        head = shown_lines(app.query_one("StatusBar"))[1]
        assert head.startswith(f" OOM allocating {name} {tried} GiB (Mamba pool, speculative) · sized by "
                               "--max-running-requests 16, --speculative-num-draft-tokens ")
        # ServerArgs: the sizing flags first, in that order
        await pilot.pause(0.3)
        assert [r.flag for r in app.args_pane._rows[:len(SIZING)]] == SIZING
        # the speculative pane gives its room to the failure
        spec = app.query_one("SpecPane")
        assert spec.border_title.startswith("Failure")
        text = shown(spec.query_one("#spec-stats"))
        assert f"OOM allocating {name} ({tried} GiB)" in text and "sized by:" in text
        assert "--mamba-scheduler-strategy extra_buffer" in " ".join(text.split())
        # the same run as predicted from its arguments before the load (issue 18), beside the
        # log's numbers: PyTorch's 'Tried to allocate X GiB ... of which Y GiB is free'
        free = re.search(r"of which ([\d.]+) GiB is free", log)[1]
        await wait_until(pilot, lambda: app.state.memory_plan is not None, timeout=60, what="the prediction")
        await pilot.pause(0.3)
        text = " ".join(shown(spec.query_one("#spec-stats")).split())
        assert (f"predicted before the load: out of memory allocating the Mamba pool: needs {float(tried):.1f} GiB, "
                f"{float(free):.1f} free") in text, text
        assert "--max-mamba-cache-size " in text.split("predicted before the load:")[1]
        # the demo's OOM is the simulator's sizing rule, and the pane says whose rule it is
        assert "by the simulator's sizing rule" in text, text
        # the `live` filter on a run that is over: nothing differs, the sizing flags stay pinned
        # and are counted apart from the filter's own rows
        pane = app.args_pane
        pane.mode = "live"
        app.refresh_panes({"args"})
        await pilot.pause(0.1)
        pinned = [r.flag for r in app.state.rows if r.flag in SIZING and not r.disagrees]
        note = shown(pane.query_one("#args-note"))
        assert f"filter live · {sum(r.disagrees for r in app.state.rows)}/{len(app.state.rows)} fields" in note, note
        assert f"+ {len(pinned)} pinned (sized the OOM)" in note, note
