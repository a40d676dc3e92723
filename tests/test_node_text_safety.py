"""Text from a node is never markup and never a terminal escape (issue 13 items 4 and 6): an
argv that reads as Rich markup in the run history; another user's GPU process whose command
line holds escape sequences."""

from __future__ import annotations

import pytest
from textual.app import App

from mambaconsole.sglang.text import has_controls
from mambaconsole.state import RunInfo
from mambaconsole.session.feed import gpu_snapshot
from mambaconsole.ui.history import COLUMNS, GIVE_WAY, HistoryScreen

MARKUP = ["--chat-template", "[INST] x [/INST]", "--served-model-name", "[bold red]m[/]", "--tag", "[/]"]


class _Host(App):
    def __init__(self, screen) -> None:
        super().__init__()
        self._first = screen

    def on_mount(self) -> None:
        self.push_screen(self._first)


async def test_history_shows_an_argv_that_reads_as_markup():
    base = ["python", "-m", "sglang.launch_server", "--model-path", "m"]
    runs = [RunInfo("20260101-000000-aaaa", argv=tuple(base), started=1.0e9, state="exited", exit_code=0),
            RunInfo("20260101-000100-bbbb", argv=tuple(base + MARKUP + ["--x", "\x1b]0;title\x07y"]), started=1.0e9 + 60,
                    state="exited", exit_code=1)]
    app = _Host(HistoryScreen(runs, "node", None))
    async with app.run_test(size=(200, 40)) as pilot:
        await pilot.pause()
        table = app.screen.query_one("DataTable")
        cell = str(table.get_row_at(0)[table.get_column_index("argv change")])
        # each value as the node holds it: the brackets are text, not styles
        for value in ("[INST] x [/INST]", "[bold red]m[/]", "[/]"):
            assert value in cell, cell
        assert not has_controls(cell)
        detail = str(app.screen.query_one("#hist-detail").render())
        assert "[INST] x [/INST]" in detail and "\x1b" not in detail and "\x07" not in detail


def test_gpu_process_command_lines_carry_no_escape():
    rec = {"type": "gpu", "gpus": [{"index": 0, "name": "GPU\x1b[2J", "memory_used_mib": 10, "memory_total_mib": 100,
                                    "processes": [{"pid": 7, "used_mib": 5,
                                                   "cmdline": "evil \x1b]0;owned\x07\x1b[2J\x1bc\x9b31m --x"}]}]}
    snap = gpu_snapshot(rec, 0.0)
    (p,) = snap.processes
    assert not has_controls(p.command) and p.command.startswith("evil ") and p.command.endswith(" --x")
    assert not has_controls(snap.gpus[0].name)


async def test_a_refusal_naming_node_text_is_shown_as_text(node_home, no_config):
    """A relaunch refusal whose error and lock holder hold brackets (a holder name, an argv in
    SGLang's message) reaches the notification and the confirmation as text."""
    from fixtures.console import console_for
    from mambaconsole.node.local import LocalNode
    from mambaconsole.ui import messages as M
    from mambaconsole.ui.confirm import ConfirmScreen

    app = console_for(LocalNode(), str(node_home))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        app.post_message(M.RelaunchDone(None, "refused: --chat-template '[INST] x [/INST]'",
                                        lock={"stale": True, "holder": "eve[/]@[bold]host"}, argv=["x"]))
        for _ in range(50):
            await pilot.pause(0.05)
            if isinstance(app.screen, ConfirmScreen):
                break
        assert isinstance(app.screen, ConfirmScreen)
        assert "eve[/]@[bold]host" in str(app.screen.query("Static").first().render())
        await pilot.press("n")


def test_a_one_line_error_quoting_its_input_carries_no_escape(tmp_path):
    """``inspect`` of a file name holding an escape: the one-line error quotes the name."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "mambaconsole", "inspect", str(tmp_path / "x\x1b]0;t\x07\x1b[2J")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "\x1b" not in r.stderr and "\x07" not in r.stderr, repr(r.stderr)


def test_a_shortened_message_says_so_and_keeps_whole_words():
    from mambaconsole.sglang.text import shorten

    msg = "CUDA out of memory. Tried to allocate 2.00 GiB. " * 20
    out = shorten(msg, 300)
    assert out.endswith("…") and len(out) <= 300
    assert msg.startswith(out[:-1]) and msg[len(out) - 1] == " "  # cut where a word ended
    assert shorten("short", 300) == "short"
    assert shorten("x" * 500, 300) == "x" * 299 + "…"  # one long word: cut at the limit, said


def test_inspect_shows_a_long_failure_message_whole(tmp_path):
    """A torch OOM line of ~430 characters was cut at 300 in the middle of a word, no ellipsis."""
    import subprocess
    import sys
    from pathlib import Path

    msg = ("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 95.08 GiB of which "
           "1.27 GiB is free. Including non-PyTorch memory, this process has 93.27 GiB memory in use. Of the "
           "allocated memory 92.83 GiB is allocated by PyTorch, and 5.54 MiB is reserved by PyTorch but "
           "unallocated. If reserved but unallocated memory is large try setting "
           "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.")
    log = tmp_path / "server.log"
    log.write_text("Traceback (most recent call last):\n"
                   '  File "/x/sglang/srt/model_executor/model_runner.py", line 10, in load_model\n'
                   "    self.model = get_model()\n"
                   f"torch.OutOfMemoryError: {msg}\n")
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-m", "mambaconsole", "inspect", str(log)], capture_output=True, text=True,
                         env={"PYTHONPATH": str(root / "tui"), "PATH": "/usr/bin:/bin"}, timeout=60).stdout
    assert msg in out, out


@pytest.mark.parametrize("size", [(120, 40), (200, 60)])
async def test_history_column_headers_are_whole(size):
    """The newcomer read 'argv change f' at the table's right edge: every header is whole."""
    base = ["python", "-m", "sglang.launch_server", "--model-path", "m"]
    runs = [RunInfo("20260101-000000-aaaa", argv=tuple(base), started=1.0e9, state="exited", exit_code=0),
            RunInfo("20260101-000100-bbbb", argv=tuple(base + ["--max-mamba-cache-size", "24"]), started=1.0e9 + 60,
                    state="exited", exit_code=1)]
    app = _Host(HistoryScreen(runs, "node", None))
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        header = app.screen.query_one("DataTable").render_line(0).text
        # a column is whole or left out (in the order they give way), and the title names it
        left = [c for c in COLUMNS if c not in header]
        assert left == list(GIVE_WAY[:len(left)]), header
        assert all(header.count(c) == 1 for c in COLUMNS if c not in left), header
        title = str(app.screen.query_one("#hist-title").render())
        assert all(c in title for c in left), title
        if size[0] >= 200:
            assert left == []
