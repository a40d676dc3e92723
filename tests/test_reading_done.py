"""The header's "reading N" ends once the log's history is read, also when the log ends with a
line that has no newline yet (a progress bar redrawn with ``\\r`` while SGLang captures CUDA
graphs, a line half written): the node agent's ``log_open`` says where its whole lines end
(``lines_end``) and that, not the file's size, is the history to read. Before, such a log left
the header on "reading 92 B" with no state word for as long as the bar ran, and the first view
never counted as drawn."""

from __future__ import annotations

import asyncio
import io
import json
import sys
import time

import pytest

from mambaconsole.agent import node_agent
from mambaconsole.node.local import LocalNode
from mambaconsole.session.feed import Feed
from fixtures.listeners import Folding
from mambaconsole.session.session import Session
from mambaconsole.session.settings import HostSettings
from mambaconsole.ui.header import status_text

LINES = "".join(f"[2026-12-01 10:00:{i % 60:02d}] INFO: line {i} of the run's log\n" for i in range(200))
#: tqdm's bar as SGLang 0.5.23 writes it while capturing CUDA graphs: redrawn with \r, no newline
BAR = "Capturing batches (bs=4 avail_mem=20.50 GB):  45%|####5     | 9/20 [00:02<00:02,  4.10it/s]\r"


@pytest.mark.parametrize("data", [
    b"", b"no newline at all", b"a\n", b"a\nb\n", b"a\nhalf a line", b"x" * 70_000 + b"\n" + b"y" * 100_000,
    b"a\n" + b"z" * (1 << 16) * 2 + b"\r", LINES.encode() + BAR.encode(),
], ids=["empty", "no-newline", "one-line", "two-lines", "half-line", "long-half-line", "bar-over-blocks", "log+bar"])
def test_lines_end_is_just_past_the_last_newline(data):
    assert node_agent._lines_end(io.BytesIO(data), len(data)) == data.rfind(b"\n") + 1


def test_a_last_line_longer_than_the_search_counts_as_read(monkeypatch):
    monkeypatch.setattr(node_agent, "LINES_END_SEARCH", 1 << 17)
    data = b"a\n" + b"z" * (1 << 18)
    assert node_agent._lines_end(io.BytesIO(data), len(data)) == len(data)


async def _until(pred, what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.02)


async def test_a_log_ending_in_a_progress_bar_is_read_and_the_header_says_so(tmp_path):
    log = tmp_path / "server.log"
    log.write_text(LINES + BAR)
    home = tmp_path / "home"
    d = home / "runs" / "20261201-100000-bar"
    d.mkdir(parents=True)
    (d / "argv.json").write_text(json.dumps(["sleep", "1"]))
    (d / "status.json").write_text(json.dumps({"state": "exited", "exit_code": 0, "started": time.time() - 60,
                                               "log_path": str(log)}))
    feed = Feed(LocalNode("t"), HostSettings(python=sys.executable), home=str(home), agent_python=sys.executable,
                adopt=False)
    session = Session(feed, poll_s=0.3)
    session.listener = Folding(session)
    st = session.state
    try:
        session.start()
        await _until(lambda: st.log_total == 200, "the log's 200 whole lines")
        assert st.reading_left() is None
        header = status_text(st, {}, 200).plain.splitlines()[0]
        assert "reading" not in header and "● " in header, header
        # the bar's line ends: it comes as a line (once), now, not as history
        with log.open("a") as f:
            f.write("\n[2026-12-01 10:01:00] INFO: The server is fired up and ready to roll!\n")
        await _until(lambda: st.log_total == 202, "the bar's line and the next")
        assert [ln.text for ln in st.log][-2:] == [BAR, "[2026-12-01 10:01:00] INFO: The server is fired up and "
                                                        "ready to roll!"]
    finally:
        await session.close()
        await feed.close()
