"""The log's cheap path per line agrees with the general one, on real logs and on the benchmarks'
generated mix: the node agent's records read as parallel lists (``node.agent.log_batch``), the
log slice's cut of consecutive lines by offset (``LogSlice._new_lines`` vs its line-by-line
``_new_lines_each``), and severities worked out when a pane reads the kept lines (``LineBuffer``)
vs each line's own :func:`severity` / :func:`is_poll_access`.

Expected values come from the bytes themselves (offsets and lengths counted over the file's
bytes, text decoded with ``errors="replace"``) or from the one-line rules, never from the code
under test."""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path

import pytest

from mambaconsole.agent import node_agent
from mambaconsole.node.agent import LineBatch, log_batch
from mambaconsole.sglang.log_lines import first_error, is_poll_access, severity
from mambaconsole.state import ConsoleState, LogLine, LogLines, RunInfo, RunsListed

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from console_rig import BOOT, SERVING, mix_lines  # noqa: E402

DATA = ROOT / "tests" / "data"
LOGS = sorted(p for p in DATA.rglob("*.log"))


def _inputs() -> list[tuple[str, bytes]]:
    out = [(str(p.relative_to(DATA)), p.read_bytes()) for p in LOGS]
    out.append(("mix", (BOOT + "".join(mix_lines(6000, 99))).encode()))
    out.append(("serving mix", "".join(mix_lines(3000, 7, templates=SERVING)).encode()))
    # what no real log here holds: invalid UTF-8, a character cut by the line limit, NUL, CR
    odd = (b"[2026-12-01 10:00:00] plain\n\xff\xfe bad bytes \xc3(\n\xe2\x96\x88" * 3 + b" bar\n"
           + b"x" * 300 + b"\n" + b"\xe2\x96\x88" * 200 + b"\nnul\x00 and cr\r\n\n\n")
    out.append(("odd bytes", odd))
    return out


INPUTS = _inputs()


def _records(data: bytes, monkeypatch, max_line: int = 1 << 20) -> list[dict]:
    """The node agent's ``log`` records for ``data`` (its Follower, in this process)."""
    import json

    buf = io.BytesIO()
    monkeypatch.setattr(node_agent, "_out", buf)
    monkeypatch.setattr(node_agent, "MAX_BATCH_BYTES", 4096)  # many records, lines across them
    f = node_agent.Follower("/nowhere", 0, max_line)
    for i in range(0, len(data), 7001):  # arrives in pieces, lines split across them
        f.feed(data[i:i + 7001])
    return [r for r in map(json.loads, buf.getvalue().splitlines()) if r["type"] == "log"]


def _expected(data: bytes, max_line: int) -> list[tuple[int, str, int]]:
    """(offset, text, full length) of each newline-ended line, counted over the bytes."""
    out, off = [], 0
    for raw in data.split(b"\n")[:-1]:
        out.append((off, raw[:max_line].decode("utf-8", "replace"), len(raw)))
        off += len(raw) + 1
    return out


@pytest.mark.parametrize("max_line", [1 << 20, 200])
@pytest.mark.parametrize("name,data", INPUTS, ids=[n for n, _ in INPUTS])
def test_log_batch_offsets_texts_and_lengths_are_the_bytes(name, data, max_line, monkeypatch):
    recs = _records(data, monkeypatch, max_line)
    batch = LineBatch()
    for r in recs:
        batch.extend(log_batch(r))
    want = _expected(data, max_line)
    assert list(zip(batch.offsets, batch.texts, batch.nbytes)) == want
    # the records' lines follow each other in the file, and the batch says so
    assert batch.consecutive and all(o + nb + 1 == nxt for (o, _, nb), (nxt, _, _) in zip(want, want[1:]))
    # the objects made on access say the same, and give back the exact bytes of each line
    lines = data.split(b"\n")
    for i, ln in enumerate(batch):
        assert (ln.offset, ln.text, ln.nbytes) == want[i]
        assert ln.raw == lines[i][:max_line]
        assert ln.truncated == (len(lines[i]) > max_line)
    # a slice (sharing the lists) keeps the odd lines' marks in their place; one extended
    # takes its own lists; the batch it came from stays as it was
    whole = [tuple(x) for x in batch]
    n = len(whole)
    for a, b in ((0, n), (n // 3, n), (1, n // 2), (n // 2, n // 2), (n, n)):
        part = batch[a:b]
        assert [tuple(x) for x in part] == whole[a:b] and len(part) == len(whole[a:b])
        assert list(zip(part.offsets, part.texts, part.nbytes)) == [x[:3] for x in whole[a:b]]
        assert {i for i, x in enumerate(whole[a:b]) if x[4] is not None} == set(part.escaped)
        assert {i for i, x in enumerate(whole[a:b]) if x[3]} == part.truncated
        inner = part[1:4]
        assert [tuple(x) for x in inner] == whole[a:b][1:4]
        part.extend(batch[:3])
        assert [tuple(x) for x in part] == whole[a:b] + whole[:3]
        assert [tuple(x) for x in batch] == whole and [tuple(x) for x in inner] == whole[a:b][1:4]


def _state() -> ConsoleState:
    st = ConsoleState("h", log_keep=300)
    run = RunInfo(run_id="r1", argv=("python",), started=time.time(), state="running", log_path="/x")
    st.apply(RunsListed(runs=(run,), current="r1"))
    st.show_log_of("r1")
    return st


def _pieces(data: bytes, monkeypatch, size: int = 128) -> list[LineBatch]:
    batch = LineBatch()
    for r in _records(data, monkeypatch):
        batch.extend(log_batch(r))
    return [batch[i:i + size] for i in range(0, len(batch), size)]


@pytest.mark.parametrize("name,data", INPUTS, ids=[n for n, _ in INPUTS])
def test_cut_by_offset_agrees_with_line_by_line(name, data, monkeypatch):
    """The log slice's cut of consecutive lines (bisect on the offsets) and its line-by-line
    reading keep the same lines and fold the same texts, from any resume offset."""
    pieces = _pieces(data, monkeypatch, 97)
    offsets = [o for p in pieces for o in p.offsets]
    starts = sorted({0, 1, offsets[len(offsets) // 2], offsets[len(offsets) // 2] + 1, offsets[-1],
                     offsets[-1] + 1, len(data) + 5})
    for seen in starts:
        for understood in (0, seen, offsets[len(offsets) // 3]):
            got = []
            for each in (False, True):
                lg = _state().slices.log
                lg.log_offset, lg._understood = seen, understood
                out = []
                for p in pieces:
                    ev = LogLines("r1", p)
                    if each:
                        o, t, nb = ev.columns()
                        out.append(lg._new_lines_each(o, t, nb, True))
                    else:
                        out.append(lg._new_lines(ev, True))
                got.append((out, lg.log_offset, lg._understood))
            assert got[0] == got[1], (seen, understood)


LONG = [(n, d) for n, d in INPUTS if d.count(b"\n") > 20]


@pytest.mark.parametrize("name,data", LONG, ids=[n for n, _ in LONG])
def test_a_batch_extended_with_lines_that_do_not_follow_is_not_consecutive(name, data, monkeypatch):
    """A batch says its lines are consecutive only while they are: extended with the lines that
    follow it, it still is; with earlier lines, a gap or lines of a file read again, it is not,
    and the log slice then reads it line by line (what the cut by offset would get wrong)."""
    batch = LineBatch()
    for r in _records(data, monkeypatch):
        batch.extend(log_batch(r))
    n = len(batch)
    assert n > 20
    joined = batch[:10]
    joined.extend(batch[10:20])
    assert joined.consecutive
    for a, b in (((10, 20), (0, 10)), ((0, 5), (7, 12)), ((0, 10), (0, 10))):
        odd = batch[a[0]:a[1]]
        odd.extend(batch[b[0]:b[1]])
        assert not odd.consecutive, (a, b)
        got = []
        for each in (False, True):
            lg = _state().slices.log
            if each:
                o, t, nb = LogLines("r1", odd).columns()
                got.append((lg._new_lines_each(o, t, nb, True), lg.log_offset))
            else:
                got.append((lg._new_lines(LogLines("r1", odd), True), lg.log_offset))
        assert got[0] == got[1], (a, b)
    assert not LineBatch(list(batch.offsets), list(batch.texts), list(batch.nbytes)).consecutive  # not said: checked


def test_lines_not_consecutive_are_read_one_by_one():
    """A batch whose offsets do not follow from the lengths (a test's hand-made lines) takes the
    line-by-line path: a line before the offset read so far is never shown twice."""
    st = _state()
    st.apply(LogLines("r1", (LogLine("r1", 0, "a"), LogLine("r1", 10, "b"))))
    st.apply(LogLines("r1", (LogLine("r1", 5, "old"), LogLine("r1", 12, "c"), LogLine("r1", 11, "d"),
                             LogLine("r1", 20, "e"))))
    assert [ln.text for ln in st.log] == ["a", "b", "c", "e"]
    assert st.log_offset == 22


@pytest.mark.parametrize("read_often", [False, True])
@pytest.mark.parametrize("name,data", INPUTS, ids=[n for n, _ in INPUTS])
def test_kept_lines_severity_as_each_line_says(name, data, read_often, monkeypatch):
    """Severities worked out when the kept lines are read (whenever that is) are each line's
    own; the first error's offset is the first line whose severity is ``error``; the counts of
    lines kept and let go add up."""
    st = _state()
    total = 0
    for p in _pieces(data, monkeypatch):
        st.apply(LogLines("r1", p))
        total += len(p)
        if read_often:
            st.log_since(st.log_total - 40, raw=True)
    want = _expected(data, 1 << 20)
    kept = list(st.log)
    assert len(kept) == min(300, len(want)) and st.log_total == total == len(want)
    assert st.log_dropped == len(want) - len(kept)
    assert [(ln.offset, ln.text, ln.severity, ln.access) for ln in kept] == \
        [(o, t, severity(t), is_poll_access(t)) for o, t, _ in want[-300:]]
    errors = [o for o, t, _ in want if severity(t) == "error"]
    assert st.first_error_offset == (errors[0] if errors else None)


@pytest.mark.parametrize("name,data", INPUTS, ids=[n for n, _ in INPUTS])
def test_kept_lines_added_as_lists_are_the_last_lines_whatever_the_sizes_and_reads(name, data):
    """Lines added to the buffer as lists of any size (longer than it, one line, none), read at
    random moments (each read, of any kind, makes the waiting lines records): what it holds is
    always the last ``maxlen`` lines added, each with its own severity, as a deque of them says."""
    import random
    from collections import deque

    from mambaconsole.slices.buffers import LineBuffer

    want_all = [(o, t, severity(t), is_poll_access(t)) for o, t, _ in _expected(data, 1 << 20)]
    for seed in range(8):
        rng = random.Random(seed)
        buf, model, i = LineBuffer(maxlen=300), deque(maxlen=300), 0
        while i < len(want_all):
            k = rng.choice((0, 1, 2, 7, 128, 298, 299, 300, 301, 512, 1000))
            part = want_all[i:i + k]
            buf.add_texts([r[0] for r in part], [r[1] for r in part])
            model.extend(part)
            i += k
            assert len(buf) == len(model) and bool(buf) == bool(model)
            read = rng.choice(("none",) * 6 + ("tail", "index", "iter", "append"))
            if read == "tail":
                n = rng.choice((0, 1, 40, 300))
                assert buf.tail_raw(n) == (list(model)[-n:] if n else [])
            elif read == "index" and model:
                assert tuple(buf[-1]) == model[-1] and buf.raw(0) == model[0]
            elif read == "iter":
                assert [tuple(x) for x in buf] == list(model)
            elif read == "append":
                buf.append(i, "appended", "info", False)
                model.append((i, "appended", "info", False))
        assert [tuple(x) for x in buf] == list(model)
        assert [tuple(x) for x in reversed(buf)] == list(reversed(model))


def test_first_error_is_the_first_line_severity_calls_an_error():
    texts = ["ok", "The server is fired up and ready to roll! (no Error here counts)", "warning: x",
             "ValueError: boom", "RuntimeError: later"]
    assert severity(texts[1]) == "ready"
    assert first_error(texts) == 3
    assert first_error(texts[:3]) is None
    assert first_error(["a\nb", "Traceback (most recent call last):"]) == 1  # a text with a newline in it


def test_history_times_read_once_per_second_are_each_lines_own():
    """The fold slice reads a replayed line's envelope time once per distinct text: every
    event still gets its own time + the shift, across texts and shifts."""
    import datetime as dt

    from mambaconsole.sglang.events import LogParser

    texts = [ln.rstrip("\n") for ln in mix_lines(3000, 5)]
    texts[1500:1500] = ["[2026-12-01 10:00:00.250 TP0] Decode batch, #running-req: 1, #token: 5, token usage: 0.01, "
                        "cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0, "]
    events = [e for i in range(0, len(texts), 64) for e in LogParser().feed_many(texts[i:i + 64]) if e.time]
    fold = _state().slices.fold
    for shift in (0.0, -3600.5, 7200.0):
        fold._shift = shift
        for e in events:
            day, _, frac = e.time.partition(".")
            want = dt.datetime.strptime(day, "%Y-%m-%d %H:%M:%S").replace(tzinfo=dt.timezone.utc).timestamp()
            assert fold.when(e) == want + (float("0." + frac) if frac else 0.0) + shift
