"""A long log opens from its boot and its end (issue 14): the node agent's head + tail read,
the console's state from it, paging back, replayed lines with their own timestamps, the header
while the history is read, and a crash of an earlier boot in the same file.

Inputs: the real SGLang 0.5.23 logs in tests/data/logs (README there); a long log is made by
repeating the real log's serving lines. Expected offsets are computed here from the bytes
written, never from the code under test."""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import sys
from pathlib import Path

from mambaconsole.node.agent import agent_records, log_lines, read_lines
from mambaconsole.node.local import LocalNode
from mambaconsole.sglang.events import READY_MESSAGE
from mambaconsole.state import ConsoleState, LogLine, LogLines, RunInfo, RunsListed
from mambaconsole.session.feed import Feed
from mambaconsole.ui.header import status_text
from mambaconsole.session.settings import HostSettings

LOGS = Path(__file__).parent / "data" / "logs"
QNEXT = (LOGS / "real-0.5.23-qnext.log").read_bytes().splitlines(keepends=True)
QSPEC = (LOGS / "real-0.5.23-qspec_server.log").read_bytes().splitlines(keepends=True)
READY_AT = next(i for i, ln in enumerate(QNEXT) if b"fired up and ready to roll" in ln)  # 0-based
SERVING = [ln for ln in QNEXT[READY_AT + 1:] if b"batch" in ln]  # the real log's prefill/decode lines


def big_log(path: Path, middle_lines: int = 20000, tail: list[bytes] | None = None) -> list[bytes]:
    """The real boot (up to and past the ready line), a long middle of the real serving lines,
    and ``tail``; returns every line (bytes, with the newline) as written."""
    lines = list(QNEXT[:READY_AT + 1]) + [SERVING[i % len(SERVING)] for i in range(middle_lines)]
    lines += tail or [b"[2026-12-01 18:00:00] the tail's own line %d\n" % i for i in range(50)]
    path.write_bytes(b"".join(lines))
    return lines


def starts(lines: list[bytes]) -> list[int]:
    out, off = [], 0
    for ln in lines:
        out.append(off)
        off += len(ln)
    return out


async def _records_until_end(path: Path, size: int, **kw) -> list[dict]:
    recs: list[dict] = []

    async def collect():
        gen = agent_records(LocalNode(), python=sys.executable, follow=str(path), interval=0, **kw)
        try:
            async for rec in gen:
                recs.append(rec)
                if rec["type"] == "log" and rec["end"] >= size:
                    return
        finally:
            await gen.aclose()  # stops the agent

    await asyncio.wait_for(collect(), 60)
    return recs


async def test_agent_reads_the_boot_and_the_tail_and_says_what_it_skipped(tmp_path):
    log = tmp_path / "server.log"
    lines = big_log(log)
    size = log.stat().st_size
    tail_bytes = 64 * 1024
    recs = await _records_until_end(log, size, tail_bytes=tail_bytes, head_until=READY_MESSAGE)
    offs = starts(lines)
    head_end = offs[READY_AT + 1]  # just past the ready line
    tail_start = next(o for o in offs if o >= size - tail_bytes)  # first line start in the last 64 KiB
    kinds = [r["type"] for r in recs]
    opened = recs[kinds.index("log_open")]
    assert (opened["size"], opened["offset"]) == (size, 0)
    assert isinstance(opened["utc_offset"], int) and abs(opened["time"] - dt.datetime.now().timestamp()) < 60
    skip = recs[kinds.index("log_skip")]
    assert (skip["offset"], skip["end"]) == (head_end, tail_start)
    got = [ln for r in recs if r["type"] == "log" for ln in log_lines(r)]
    want_offsets = [o for o in offs if o < head_end or o >= tail_start]
    assert [ln.offset for ln in got] == want_offsets
    assert [ln.raw + b"\n" for ln in got] == [ln for o, ln in zip(offs, lines) if o in set(want_offsets)]
    assert all(r["size"] >= r["end"] for r in recs if r["type"] == "log")


async def test_agent_head_is_bounded_without_a_ready_line(tmp_path):
    log = tmp_path / "server.log"
    lines = list(QSPEC) * 40  # a boot that never got ready, again and again
    log.write_bytes(b"".join(lines))
    size = log.stat().st_size
    recs = await _records_until_end(log, size, tail_bytes=4096, head_bytes=10_000, head_until=READY_MESSAGE)
    offs = starts(lines)
    head_end = max(o for o in offs if o <= 10_000)  # whole lines within the first 10,000 bytes
    skip = next(r for r in recs if r["type"] == "log_skip")
    assert skip["offset"] == head_end and skip["end"] == next(o for o in offs if o >= size - 4096)


async def test_short_log_is_read_whole(tmp_path):
    log = tmp_path / "server.log"
    log.write_bytes(b"".join(QNEXT))
    recs = await _records_until_end(log, log.stat().st_size, tail_bytes=1 << 20, head_until=READY_MESSAGE)
    assert "log_skip" not in [r["type"] for r in recs]
    assert sum(len(r["lines"]) for r in recs if r["type"] == "log") == len(QNEXT)


async def test_read_lines_pages_a_byte_range(tmp_path):
    log = tmp_path / "server.log"
    lines = big_log(log, middle_lines=300)
    offs = starts(lines)
    lo, end = offs[150] - 7, offs[200]  # `lo` inside line 149
    got = await read_lines(LocalNode(), str(log), lo, end, aligned=False)
    assert [ln.offset for ln in got] == offs[150:200]
    assert [ln.raw + b"\n" for ln in got] == lines[150:200]


def _run_dir(home: Path, run_id: str, log: Path) -> RunInfo:
    d = home / "runs" / run_id
    d.mkdir(parents=True)
    (d / "status.json").write_text(json.dumps({"run_id": run_id, "log_path": str(log), "pid": None}))
    return RunInfo(run_id, log_path=str(log), state="running")


async def test_console_opens_a_long_run_from_its_boot_and_tail_and_pages_back(tmp_path):
    log = tmp_path / "server.log"
    lines = big_log(log, middle_lines=40000)
    size, offs = log.stat().st_size, starts(lines)
    run = _run_dir(tmp_path / "home", "r1", log)
    feed = Feed(LocalNode(), HostSettings(python=sys.executable, log_tail_mib=0.0625), home=str(tmp_path / "home"),
                agent_python=sys.executable)
    st = ConsoleState("h")
    st.apply(RunsListed((run,), "r1"))
    st.show_log_of("r1")
    stream = feed.tail(run, 0)
    try:
        async def read():
            async for ev in stream:
                if isinstance(ev, LogLines):
                    st.apply(ev)
                    if st.log_offset >= size:
                        return
        await asyncio.wait_for(read(), 60)
    finally:
        await stream.aclose()
        await feed.close()
    head_end = offs[READY_AT + 1]
    tail_start = next(o for o in offs if o >= size - 65536)
    assert st.log_skipped == (head_end, tail_start)
    # the boot's facts from the head: the ServerArgs dump (line 25 of the real log) and ready
    assert st.dumped_args["mamba_radix_cache_strategy"] == "no_buffer" and st.ready_seen
    assert st.reading_left() is None and st.status == "ready"
    # the tail's lines are kept, the middle's are not
    kept = [ln.offset for ln in st.log]
    assert kept[-1] == offs[-1] and all(o < head_end or o >= tail_start for o in kept)
    # b: the page before the tail's first line comes from the node, in its place
    before = st.log_total
    lo, end, aligned = st.page_back_range(4096)
    assert (end, aligned) == (tail_start, False) and lo == tail_start - 4096
    feed2 = Feed(LocalNode(), HostSettings(python=sys.executable), agent_python=sys.executable)
    try:
        st.apply(await feed2.read_page(run, lo, end, aligned))
    finally:
        await feed2.close()
    page = [o for o in offs if lo < o < tail_start]
    kept = [ln.offset for ln in st.log]
    assert kept[kept.index(page[0]):kept.index(page[0]) + len(page) + 1] == page + [tail_start]
    assert st.log_total == before + len(page)
    assert st.log_skipped == (head_end, lo)  # what is left of the middle


def _feed(st: ConsoleState, lines: list[bytes], **kw) -> None:
    off, batch = 0, []
    for raw in lines:
        text = raw.rstrip(b"\n").decode()
        batch.append(LogLine("r1", off, text, len(raw) - 1))
        off += len(raw)
    st.apply(LogLines("r1", tuple(batch), **kw))


def test_a_crash_of_an_earlier_boot_does_not_mark_the_current_boot_crashed():
    # the same file: a boot that crashed (qspec: NotImplementedError, then SIGQUIT), then a boot
    # that got ready (qnext), read up to its ready line
    st = ConsoleState("h")
    st.apply(RunsListed((RunInfo("r1", log_path="/x", state="running"),), "r1"))
    _feed(st, list(QSPEC) + list(QNEXT[:READY_AT + 1]))
    st.flush_log()
    assert st.failure is None and st.request_errors == 0
    assert st.status == "ready"


def test_replayed_lines_keep_their_own_timestamps():
    now = 2_000_000_000.0
    st = ConsoleState("h", clock=lambda: now)
    st.apply(RunsListed((RunInfo("r1", log_path="/x", state="running"),), "r1"))
    # a real 0.5.x speculative decode line (sglang-observables §2), at two times of the node
    decode = ("[2026-04-23 07:{m}:12 TP0] Decode batch, #running-req: 8, #full token: 20480, full token usage: 0.12, "
              "mamba num: 16, mamba usage: 0.03, accept len: 2.80, accept rate: 0.70, cuda graph: True, "
              "gen throughput (token/s): 812.05, #queue-req: 0, \n")
    lines = [decode.format(m="10").encode(), decode.format(m="31").encode()]
    shift = -7200.0  # the node's local time is UTC+2, clocks agree
    _feed(st, lines, opened_size=10 << 20, size=10 << 20, time_shift=shift)
    st.flush_log()
    utc = dt.timezone.utc
    want = [dt.datetime(2026, 4, 23, 7, m, 12, tzinfo=utc).timestamp() + shift for m in (10, 31)]
    assert [p.t for p in st.spec] == want
    assert st.batch_t == want[1] and st.last_data == want[1]
    # lines written after the console opened the log: now
    st2 = ConsoleState("h", clock=lambda: now)
    st2.apply(RunsListed((RunInfo("r1", log_path="/x", state="running"),), "r1"))
    _feed(st2, lines, opened_size=0, size=10 << 20, time_shift=shift)
    assert [p.t for p in st2.spec] == [now, now]


def test_header_says_reading_then_behind():
    st = ConsoleState("h")
    st.apply(RunsListed((RunInfo("r1", log_path="/x", state="running"),), "r1"))
    # the crashed boot's lines, while 9 MiB more of the history are still to come
    _feed(st, list(QSPEC), opened_size=(9 << 20) + sum(map(len, QSPEC)), size=20 << 20, time_shift=0.0)
    text = status_text(st, {}).plain
    assert "reading 9.0 MiB" in text and "CRASHED" not in text
    assert st.behind_bytes() is None
    read = sum(map(len, QSPEC))
    st.apply(LogLines("r1", (LogLine("r1", read, "x" * ((9 << 20) - 1), 9 << 20),), size=read + (14 << 20)))
    text = status_text(st, {}).plain
    assert "reading" not in text and "behind 5.0 MiB" in text


def test_what_the_skipped_middle_held_comes_from_the_servers_counters_labelled():
    from mambaconsole.sglang.metrics import COUNTERS, parse_metrics
    from mambaconsole.state import MetricsSnapshot
    from mambaconsole.ui.spec_pane import middle_text

    # the real 0.5.23 server's /metrics (shared/reference/cpu-sglang): 3 requests, 48 tokens
    body = (Path(__file__).parent / "data" / "logs" / "real-0.5.23-qnext-metrics.txt").read_text()
    snap = parse_metrics(body)
    totals = {k: v for k, name in COUNTERS.items() if (v := snap.total(name)) is not None}
    assert totals == {"requests": 3.0, "prompt_tokens": 29.0, "generation_tokens": 48.0}
    st = ConsoleState("h")
    st.apply(RunsListed((RunInfo("r1", log_path="/x", state="running"),), "r1"))
    _feed(st, list(QNEXT[:READY_AT + 1]))
    st.apply(LogLines("r1", (), skipped=(sum(map(len, QNEXT[:READY_AT + 1])), 3 << 30)))
    st.apply(MetricsSnapshot({}, totals=totals))
    text = middle_text(st)
    assert "3.0 GiB of its middle not read" in text
    assert "since start (/metrics): 3 requests, 48 tokens generated" in text
