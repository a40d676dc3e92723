"""History read in bulk (the fold slice's block path: :class:`~mambaconsole.sglang.block_fold.
BlockFold` bound to the console's parser and run fold, decode runs to the spec slice a run at a
time, their events made when read) leaves the whole :class:`~mambaconsole.state.ConsoleState`
as reading every line one at a time does: every slice's public fields (the kept log lines,
the run fold with every boot, readiness and its time, the failure and request errors, the
budget, the spec points, mean, collapse alarm, last batch and its time, the recent batches,
the args rows) and the facade's selectors; live lines in a backlog (a batch of
``LIVE_BULK_MIN`` or more) are read in bulk too. Inputs: every real log of the test data and the
case banks, and generated mixes (``bench/console_rig.py``'s realistic and serving mixes, lines
that must leave the fast path, speculative runs that collapse and recover, boots with and
without speculation), cut into records of random sizes, history then live lines, compared at
the end and (another seed) after random records, which makes the lazy fields settle there."""

from __future__ import annotations

import dataclasses
import random
import sys
from collections import deque
from pathlib import Path
from typing import Any

import pytest
from mambaconsole.node.agent import LineBatch
from mambaconsole.sglang import events as E
from mambaconsole.sglang.run_fold import RunFold
from mambaconsole.slices import fold as fold_slice
from mambaconsole.slices.buffers import TupleBuffer
from mambaconsole.state import LOG_EVENTS, ConsoleState, LogLines, RunInfo, RunsListed
from test_block_fold import LOGS, TRICKY, _fold_state, _with

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from console_rig import SERVING, mix_lines

NOW = 1_900_000_000.0
SHIFT = 3600.0


def _value(v: Any, depth: int = 0) -> Any:
    """``v`` as plain comparable data (events by their fields, buffers and deques as lists)."""
    if depth > 6:
        return repr(v)
    if isinstance(v, RunFold):
        return _fold_state(v)
    if isinstance(v, E.Event):
        return (type(v).__name__,) + tuple(_value(getattr(v, f.name), depth + 1) for f in dataclasses.fields(v))
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return (type(v).__name__,) + tuple(_value(getattr(v, f.name), depth + 1) for f in dataclasses.fields(v))
    if isinstance(v, TupleBuffer):
        return [v.raw(i) for i in range(len(v))]
    if isinstance(v, (list, tuple, deque)):
        return [_value(x, depth + 1) for x in v]
    if isinstance(v, dict):
        return sorted((repr(k), _value(x, depth + 1)) for k, x in v.items())
    if isinstance(v, (set, frozenset)):
        return sorted(map(repr, v))
    if callable(v):
        return None
    return v


def _snapshot(st: ConsoleState) -> dict[str, Any]:
    """Every slice's public fields and properties, the facade's selectors."""
    out: dict[str, Any] = {}
    for name, sl in vars(st.slices).items():
        keys = [k for k in vars(sl) if not k.startswith("_")]
        keys += [k for k in dir(type(sl)) if not k.startswith("_") and isinstance(getattr(type(sl), k), property)]
        for k in keys:
            out[f"{name}.{k}"] = _value(getattr(sl, k))
    out["spec._low_run"] = st.slices.spec._low_run  # what the next lines' collapse alarm counts on
    out["fold.request_error_events"] = _value(st.slices.fold.request_error_events())
    for sel in ("status", "live", "failure_headline"):
        out[sel] = getattr(st, sel)
    for fn in ("status_label", "mean_accept", "reading_left", "behind_bytes", "uptime", "log_is_stale"):
        out[fn] = getattr(st, fn)()
    out["log_since"] = st.log_since(0, raw=True)
    out["live_values"] = _value(st.live_values())
    return out


def _state() -> ConsoleState:
    st = ConsoleState("h", clock=lambda: NOW, log_keep=700)
    run = RunInfo(run_id="r1", argv=("python",), started=NOW - 86400, state="running", log_path="/x")
    st.apply(RunsListed(runs=(run,), current="r1"))
    st.show_log_of("r1")
    return st


def _batch(text: str) -> LineBatch:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    offsets, nbytes, off = [], [], 0
    for ln in lines:
        n = len(ln.encode("utf-8", "surrogateescape"))
        offsets.append(off)
        nbytes.append(n)
        off += n + 1
    return LineBatch(offsets, lines, nbytes)


SIZES = (1, 5, 31, 32, 64, 128, 500, 3000)


def _records(batch: LineBatch, rng: random.Random, sizes: tuple[int, ...] = SIZES) -> list[LogLines]:
    """The batch as the tail hands it over: records of random ``sizes`` (lines); the
    first says the file held ``opened`` bytes when opened (history before, live lines after)."""
    n = len(batch)
    if not n:
        return []
    cut = rng.choice((n, n, n * 3 // 4, n // 2))
    opened = batch.offsets[cut] if cut < n else batch.offsets[-1] + batch.nbytes[-1] + 1
    size = batch.offsets[-1] + batch.nbytes[-1] + 1
    out, i = [], 0
    while i < n:
        k = rng.choice(sizes)
        out.append(LogLines("r1", batch[i:i + k], size=size,
                            opened_size=opened if i == 0 else None, time_shift=SHIFT if i == 0 else None))
        i += k
    return out


def _same(text: str, seed: Any, *, midway: bool, sizes: tuple[int, ...] = SIZES) -> ConsoleState:
    """Feed ``text`` to a state line by line and to one that reads history in bulk, in the same
    random records; assert they agree (at the end; ``midway``: also after random records);
    returns the bulk one. Every pane the line path redraws after a record, the bulk path redraws
    too."""
    rng = random.Random(seed)
    records = _records(_batch(text), rng, sizes)
    checks = {i for i in range(len(records)) if rng.random() < 0.3} if midway else set()
    line, bulk = _state(), _state()
    mp = pytest.MonkeyPatch()
    for i, rec in enumerate(records):
        with mp.context() as m:
            m.setattr(fold_slice, "BULK_MIN", 10**9)  # the line path
            m.setattr(fold_slice, "LIVE_BULK_MIN", 10**9)
            redraw = line.apply(rec)
        assert redraw <= bulk.apply(rec), f"record {i}: a pane the line path redraws is not redrawn"
        if i in checks:
            assert _snapshot(bulk) == _snapshot(line), f"after record {i}"
    line.flush_log()
    bulk.flush_log()
    a, b = _snapshot(bulk), _snapshot(line)
    assert a.keys() == b.keys()
    for k in a:
        assert a[k] == b[k], k
    return bulk


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(p.parents[2])))
def test_real_logs_same_state(path: Path) -> None:
    text = path.read_bytes().decode("utf-8", "replace")
    _same(text, path.name, midway=False)
    _same(text, path.name + "-midway", midway=True)


#: speculative decode lines whose accept length runs at 1.00 long enough to raise the collapse
#: alarm, then recovers (SGLang 0.5.23's segments)
SPEC_LINE = ("[{ts} TP0] Decode batch, #running-req: {r}, #full token: 900, full token usage: 0.05, mamba num: {r}, "
             "mamba usage: 0.10, accept len: {a}, accept rate: 0.{q:02d}, cuda graph: True, "
             "gen throughput (token/s): {g}.25, #queue-req: 0")
PLAIN_LINE = ("[{ts} TP0] Decode batch, #running-req: {r}, #full token: 900, full token usage: 0.05, mamba num: {r}, "
              "mamba usage: 0.10, cuda graph: True, gen throughput (token/s): {g}.50, #queue-req: 0")
BOOT_LINE = "[{ts}] server_args=ServerArgs(model_path='m', max_running_requests={r}, max_mamba_cache_size=40)"


def _spec_mix(n: int, seed: int) -> str:
    """Speculative decode lines in runs at 1.00 (long and short) and above, boots without
    speculation between, prefill and plain lines around them."""
    rng = random.Random(seed)
    out = []
    second = 0
    while len(out) < n:
        second += 1
        ts = f"2026-11-29 20:{second // 60 % 60:02d}:{second % 60:02d}"
        kind = rng.random()
        if kind < 0.02:
            out.append(BOOT_LINE.format(ts=ts, r=rng.randrange(1, 64)))
        elif kind < 0.3:
            out.extend(PLAIN_LINE.format(ts=ts, r=rng.randrange(1, 64), g=rng.randrange(10, 999))
                       for _ in range(rng.choice((1, 10, 300))))
        elif kind < 0.4:
            out.append(f"[{ts}] Prefill batch, #new-seq: 1, #new-token: 5, #cached-token: 0, token usage: 0.01, "
                       f"#running-req: 1, #queue-req: 0")
        else:
            a = rng.choice(("1.00", "1.00", "1.02", "2.31", "3.00"))
            out.extend(SPEC_LINE.format(ts=ts, r=rng.randrange(1, 64), a=a, q=rng.randrange(100),
                                        g=rng.randrange(10, 999)) for _ in range(rng.choice((1, 3, 12, 40, 700))))
    return "\n".join(out[:n]) + "\n"


def _short_runs(n: int, seed: int) -> str:
    """Decode lines in short runs (1-7 lines, between prefill, debug and bare lines), speculative in
    some boots only, a boot every 20-80 lines, a few of another shape (a field after SGLang's
    segments): what the recent batches and the last batch keep of a boot's first lines."""
    rng = random.Random(seed)
    out: list[str] = []
    spec = True
    while len(out) < n:
        ts = f"2026-11-29 21:{len(out) // 60 % 60:02d}:{len(out) % 60:02d}"
        if rng.random() < 0.04:
            out.append(BOOT_LINE.format(ts=ts, r=rng.randrange(1, 64)))
            spec = rng.random() < 0.5
            continue
        for _ in range(rng.randrange(1, 8)):
            r = rng.randrange(1, 64)
            line = (SPEC_LINE.format(ts=ts, r=r, a=rng.choice(("1.00", "2.50")), q=r, g=r) if spec
                    else PLAIN_LINE.format(ts=ts, r=r, g=r))
            if rng.random() < 0.03:  # a field after SGLang's segments: a decode line of another shape
                line += f", future field: {r}"
            out.append(line)
        sep = rng.random()
        out.append(f"[{ts}] Prefill batch, #new-seq: 1, #new-token: 5, #cached-token: 0, token usage: 0.01, "
                   f"#running-req: 1, #queue-req: 0" if sep < 0.3 else f"[{ts} TP0] schedule step {len(out)}"
                   if sep < 0.6 else f"bare line {len(out)}")  # (a bare line ends a run: the line path)
    return "\n".join(out[:n]) + "\n"


@pytest.mark.parametrize("seed", range(4))
def test_generated_mixes_same_state(seed: int) -> None:
    mixes = [
        "".join(mix_lines(6000, seed)),
        "".join(mix_lines(6000, seed, templates=SERVING)),
        _with(mix_lines(4000, seed, templates=SERVING), TRICKY, seed, 0.05),
        _spec_mix(8000, seed),
    ]
    for i, text in enumerate(mixes):
        _same(text, f"{seed}-{i}", midway=seed % 2 == 1)
    # history read in small records, checked after many of them (a boot's first decode lines)
    _same(_short_runs(3000, seed), f"{seed}-short", midway=True, sizes=(32, 40, 64, 100))


def test_bulk_path_reads_history_in_bulk() -> None:
    """History of the serving mix goes through the block fold (most lines in bulk), live lines
    a few at a time one at a time, a live backlog in bulk; a pane reading the spec fields makes
    only the recent batches' lines events (not one a speculative point)."""
    text = "".join(mix_lines(20_000, 5, templates=SERVING))
    batch = _batch(text)
    st = _state()
    size = batch.offsets[-1] + batch.nbytes[-1] + 1
    st.apply(LogLines("r1", batch[:15_000], size=size, opened_size=batch.offsets[15_000], time_shift=SHIFT))
    folder = st.slices.fold._block
    assert folder is not None and folder.bulk_lines > 12_000
    made = []
    real = E.simple_event
    mp = pytest.MonkeyPatch()
    with mp.context() as m:
        m.setattr(E, "simple_event", lambda *a: made.append(1) or real(*a))
        assert st.last_batch is not None and len(st.spec) > 0
    # the recent batches and the last batch: the points come from the runs' rows, the 4k decodes
    # never become events (an event per point made 600 and more)
    assert len(st.spec) == 600 and 0 < len(made) < len(st.spec), len(made)
    bulk = folder.bulk_lines
    for i in range(15_000, 16_000, 10):
        st.apply(LogLines("r1", batch[i:i + 10], size=size))
    assert folder.bulk_lines == bulk  # live lines a few at a time: one at a time
    st.apply(LogLines("r1", batch[16_000:], size=size))
    assert folder.bulk_lines > bulk + 3000  # a live backlog: in bulk


def test_bulk_handlers_cover_the_simple_lines() -> None:
    """A run read in bulk shows only its decode lines (``LOG_DECODE_RUNS``): no pane may take
    another line a simple run holds one at a time, or that pane would miss history's (the fold
    slice then reads history line by line: this test says to give it a run handler)."""
    simple = (E.DecodeBatch, E.PrefillBatch, E.HttpAccess, E.Text)
    taken = {t.__name__ for t in simple if any(k in LOG_EVENTS for k in t.__mro__ if k is not E.Event)}
    assert taken == {"DecodeBatch"}
    assert _state().slices.fold._bulk_allowed()
