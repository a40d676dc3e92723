"""The block fold (``inspect`` of a large log, :mod:`mambaconsole.sglang.block_fold`) leaves the
run fold exactly as the general path does (every line through ``LogParser`` into ``RunFold``,
:func:`~mambaconsole.sglang.inspect.fold_lines`): on every real log of the test data and the
case banks, and on generated mixes (``bench/console_rig.py``'s realistic mix, with lines
each of which must leave the fast path: tracebacks, a new rank, levels, colours, CRLF, non-ASCII,
a long line wrapped onto a line starting with "[", a version named mid-log, serving paths, a
second boot, decode lines of other shapes, text quoting a decode line), cut into blocks at
random line boundaries. The whole fold is compared: counters, ranks, version, and every boot's
fields (decode events, tally, pairs)."""

from __future__ import annotations

import dataclasses
import json
import random
import sys
from pathlib import Path

import pytest
from fixtures.sglang_cases import CASES
from mambaconsole.commands.inspect import _log_blocks
from mambaconsole.sglang import events as E
from mambaconsole.sglang.block_fold import BlockFold
from mambaconsole.sglang.inspect import _log, fold_blocks, fold_lines
from mambaconsole.sglang.run_fold import USAGE_PAIRS_KEEP

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from console_rig import SERVING, mix_lines
from parse_throughput import TEMPLATES

DATA = Path(__file__).parent / "data"
LOGS = sorted(p for p in list((DATA / "logs").glob("*")) + list(CASES.glob("**/input.*"))
              + list((DATA / "multinode").glob("**/*.log")) if p.is_file() and p.suffix in (".log", ".txt"))


def _event(ev) -> tuple:
    return (type(ev).__name__,) + tuple(getattr(ev, f.name) for f in dataclasses.fields(ev))


def _fold_state(fold) -> list:
    """Everything the fold holds, comparable (events by their fields, the tally by its slots)."""
    boots = []
    for b in fold.boots:
        d = dict(vars(b))
        d["decodes"] = [_event(x) for x in d["decodes"]]
        d["spec"] = {k: getattr(b.spec, k) for k in b.spec.__slots__}
        d["spec"]["tail"] = list(d["spec"]["tail"])
        boots.append(repr(sorted(d.items(), key=lambda kv: kv[0])))
    return [fold.n_events, fold.n_sglang, fold.version, sorted(fold.ranks), fold.loaded_ranks, boots]


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _blocks(text: str, rng: random.Random | None) -> list[str]:
    """The text in blocks of whole lines (the last line's newline as the text has it): one
    block, or blocks of 1-40 lines at random."""
    if rng is None:
        return [text]
    parts = text.splitlines(keepends=True)
    out, i = [], 0
    while i < len(parts):
        n = rng.choice((1, 2, 3, 7, 40))
        out.append("".join(parts[i:i + n]))
        i += n
    return out


def _same(text: str, rng: random.Random | None = None) -> BlockFold:
    """Assert both paths agree on ``text``; the block fold used."""
    general = fold_lines(_lines(text))
    folder = BlockFold()
    for block in _blocks(text, rng):
        folder.feed(block)
    fold = folder.close()
    assert _fold_state(fold) == _fold_state(general.fold)
    from mambaconsole.sglang.summary import summary_of
    assert json.dumps(_log(summary_of(fold), None)) == json.dumps(_log(general, None))
    return folder


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(p.parents[2])))
def test_real_logs_fold_the_same(path: Path) -> None:
    text = path.read_bytes().decode("utf-8", "replace")
    _same(text)
    _same(text, random.Random(path.name))


def _with(lines: list[str], extra: list[str], seed: int, share: float) -> str:
    """``lines`` with the templates of ``extra`` put between them at random (``share`` of them)."""
    rng = random.Random(seed)
    out = []
    for ln in lines:
        out.append(ln)
        if rng.random() < share:
            out.append(rng.choice(extra).format(ts="2026-11-29 20:46:41", n=rng.randrange(0, 300),
                                               u=rng.randrange(100)) + "\n")
    return "".join(out)


#: lines that must leave the fast path, or must not fool it
TRICKY = [
    "[{ts} TP0] INFO scheduler.py:1: Decode batch, #running-req: {n}, #token: 5, token usage: 0.01, "
    "cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0",
    "[{ts} TP5] Decode batch, #running-req: {n}, #token: 5, token usage: 0.01, cuda graph: True, "
    "gen throughput (token/s): 1.00, #queue-req: 0",
    "[{ts} TP7] schedule step: running={n}",
    "[{ts} TP9] INFO:     127.0.0.1:5 - \"GET /metrics HTTP/1.1\" 200 OK",
    "\x1b[32m[{ts}] coloured {n}\x1b[0m",
    "[{ts}] crlf line {n}\r",
    "[{ts}] Receive: obj=GenerateReqInput(text='h\u00e9llo {n}')",
    "[{ts}] running sglang==0.5.9 on this node",
    "[{ts}] pulled lmsysorg/SGLanG:v0.5.19 for this node",
    "[{ts}] INFO:     127.0.0.1:5 - \"GET /health HTTP/1.1\" 200 OK",
    "[{ts}] INFO:     127.0.0.1:5 - \"POST /generate?x={n} HTTP/1.1\" 200 OK",
    "[{ts}] INFO:     127.0.0.1:5 - \"GET /health_generate HTTP/1.1\" 503 Service Unavailable",
    "[{ts}] INFO:     Started server process [{n}]",
    "[{ts}] server_args=ServerArgs(model_path='m', max_running_requests={n}, max_mamba_cache_size=40)",
    "[{ts} TP0] Decode batch, #running-req: {n}, #full token: 9, full token usage: 0.10, mamba num: {n}, "
    "mamba usage: 0.{u:02d}, accept len: 2.10, accept rate: 0.50, est uncap acc len: 2.30 [1.90, 2.70], "
    "cuda graph: True, gen throughput (token/s): 10.00, #queue-req: 0",
    "[{ts} TP0] Decode batch [12], #running-req: {n}, #token: 5, token usage: 0.01, cuda graph: True, "
    "gen throughput (token/s): 1.00, #queue-req: 1",
    "[{ts} TP0] Decode batch, #running-req: {n}, accept len: 1.00, accept rate: 0.00, accept len: 3.00, "
    "cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0",
    "[{ts} TP0] Decode batch, #running-req: {n}, #token: 5, token usage: 0.01, cuda graph: True, "
    "gen throughput (token/s): 1.00,\n  #queue-req: 2",
    "[{ts} TP0] Decode batch, #running-req: {n}, #token: 5,  token usage: 0.01, accept len: 1.50, "
    "accept rate: 0.25, cuda graph: True, gen throughput (token/s): 1.00, #queue-req: 0",
    "[{ts} TP0] Decode batch, #running-req: {n}, #full token: 9, full token usage: 0.10, mamba num: 0, "
    "mamba usage: 0.00, cuda graph: True, gen throughput (token/s): 10.00, #queue-req: 0",
    "[{ts}] Receive: obj=GenerateReqInput(text=None) ] Decode batch, #running-req: 999, #token: 5, "
    "token usage: 0.01, accept len: 9.00, accept rate: 0.99, cuda graph: True, gen throughput (token/s): 1.00, "
    "#queue-req: 0",
    "[{ts}] plain text wrapped by the logger\n    continued here {n}",
    # a terminal's wrap: the rest of a long line starts with "[" yet is no envelope
    "[{ts}] a message the terminal wrapped at its width " + "word " * 12 + "end{n}\n[rank0] the rest of it",
    "[{ts} TP0] Mamba Cache is alloca",
    "[{ts}] Received sigquit from a child process. It usually means the child failed.",
    "[{ts}] WARNING x.py:1: [2026-01-01 00:00:00] a doubled envelope",
    "[{ts}] WARNING x.py:1: Decode batch, #running-req: {n}, #queue-req: 0",
    "[{ts} TP0] Prefill batch, #new-seq: 1, #new-token: 5, #cached-token: 0, token usage: 0.01, "
    "#running-req: {n}, #queue-req: 0, ",
    "[{ts}] ERROR:    Exception in ASGI application\nTraceback (most recent call last):\n"
    "  File \"/x/uvicorn/h.py\", line 1, in run_asgi\nValueError: bad {n}",
    "[{ts} TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
    "  File \"/x/sglang/srt/managers/scheduler.py\", line 3277, in event_loop\nRuntimeError: boom {n}",
    "Killed",
    "",
    "[{ts}] line ending with a colon:",
    "[{ts} TP0] Load weight end. elapsed=1.00 s, type=Qwen3NextForCausalLM, avail mem=9.00 GB, mem usage=4.00 GB.",
]


@pytest.mark.parametrize("seed", range(6))
def test_generated_mixes_fold_the_same(seed: int) -> None:
    rng = random.Random(seed)
    templates = SERVING if seed % 2 else TEMPLATES
    lines = mix_lines(6000, seed=seed, t0=1.8e9, templates=templates)
    text = _with(lines, TRICKY, seed, share=(0.002, 0.02, 0.1)[seed % 3])
    _same(text, rng)
    if seed % 3 == 0:  # tricky lines are rare: most lines take the fast path (in one block)
        assert _same(text).bulk_lines > 0.8 * text.count("\n")


def test_serving_mix_takes_the_fast_path() -> None:
    """The bench's mix (``console_rig.write_log``): nearly every line is read in bulk."""
    text = "".join(mix_lines(20000, seed=7, t0=1.8e9, templates=SERVING))
    _same(text, random.Random(1))
    assert _same(text).bulk_lines > 0.9 * text.count("\n")


def test_usage_pairs_cap_in_bulk() -> None:
    """More distinct (mamba num, mamba usage) pairs than the fold keeps: the same first ones."""
    rng = random.Random(3)
    lines = [f"[2026-11-29 20:46:41 TP0] Decode batch, #running-req: {n}, #full token: 9, full token usage: 0.10, "
             f"mamba num: {n}, mamba usage: 0.{u:02d}, cuda graph: True, gen throughput (token/s): 1.00, "
             f"#queue-req: 0\n" for n, u in ((rng.randrange(1, 400), rng.randrange(100)) for _ in range(12000))]
    folder = _same("".join(lines), random.Random(4))
    assert len(folder.fold.last.usage_pairs) == USAGE_PAIRS_KEEP


def test_log_blocks_are_the_lines(tmp_path, monkeypatch) -> None:
    """``inspect``'s reader: blocks of whole lines, invalid UTF-8 replaced as the parser would,
    a line longer than MAX_LINE_BYTES cut there, a last line without its newline kept."""
    import mambaconsole.commands.inspect as cmd

    monkeypatch.setattr(cmd, "MAX_LINE_BYTES", 100)

    def read(raw: bytes) -> list[str]:
        f = tmp_path / "log"
        f.write_bytes(raw)
        with open(f, "rb") as fh:
            blocks = list(_log_blocks(fh, fh.read(7)))
        assert all(b.endswith("\n") for b in blocks[:-1])
        return "".join(blocks).split("\n")

    assert read(b"[2026-11-29 20:46:41] a\n" + b"x" * 250 + b"\nb \xff\xfe c\n" + b"\xe2\x82" + b"\n" * 3
                + b"tail without newline \xe2") == [
        "[2026-11-29 20:46:41] a", "x" * 250, "b \ufffd\ufffd c", "\ufffd", "", "", "tail without newline \ufffd"]
    # a line with no end in sight (longer than MAX_LINE_BYTES at the end of a read): cut there
    assert read(b"a\n" + b"x" * 250) == ["a", "x" * 100, ""]


def test_inspect_of_a_long_log_reads_it_in_blocks(tmp_path) -> None:
    """``inspect --json`` of a log longer than its one-text limit goes through the block fold,
    and says what the general path says."""
    import subprocess

    from mambaconsole.commands.inspect import HEAD_BYTES

    text = "".join(mix_lines(3000, seed=5, t0=1.8e9, templates=SERVING))
    text = text * (HEAD_BYTES // len(text) + 2)
    f = tmp_path / "server.log"
    f.write_text(text)
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-m", "mambaconsole", "inspect", str(f), "--json"], capture_output=True,
                         text=True, check=True, env={"PYTHONPATH": str(root / "tui"), "PATH": "/usr/bin:/bin"})
    assert json.loads(out.stdout)["last_decode"] == _log(fold_lines(_lines(text)), None)["last_decode"]
    assert json.loads(out.stdout) == json.loads(json.dumps(_log(fold_blocks([text]), None)))


def test_unwrap_line_shortcut_for_indented_lines() -> None:
    """An indented line without a line number (a traceback's body) skips the prefix patterns:
    each of them would leave it as it is; an indented line number is still taken off."""
    from mambaconsole.sglang import paste

    for line in ('  File "/x/sglang/srt/a.py", line 3, in f', "    result = await app(", "\t  x | y",
                 "   ", " \u00a0> quoted?", "      (pid=1) x"):
        assert paste.unwrap_line(line) == line
        assert all(rx.match(line) is None or rx.match(line).end() == 0 for rx in paste._PREFIXES)
    assert paste.unwrap_line("   12 | [2026-01-01 00:00:00] x") == "[2026-01-01 00:00:00] x"


@pytest.mark.parametrize(("message", "version"), [
    ("SGLang==0.5.9 on node-a", "0.5.9"), ("image lmsysorg/sglang:v0.5.19", "0.5.19"),
    ("sglang version: 0.5.13.post1 \u00fc", "0.5.13.post1"),  # non-ASCII: case-folded
    ("\u017fglang==0.5.11", "0.5.11"),  # the long s case-folds to s, and re.I matches it so
    ("Sglang is great", None), ("no version here", None)])
def test_version_named_in_a_text_line(message: str, version: str | None) -> None:
    """The fold's version rule on a plain line, ASCII (lower-cased) or not (case-folded)."""
    from mambaconsole.sglang.run_fold import _version_in

    assert _version_in(E.Text(text=message, message=message)) == version
