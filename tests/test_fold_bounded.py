"""The run fold's memory is bounded by what it reads back (issue 14): a log holding many boots
(a server relaunched into the same file, or a flood of startup lines) keeps the decode lines
of its last boot only; every claim read from the fold is the same as before.

Input: the real SGLang 0.5.23 boot and serving lines (tests/data/logs/real-0.5.23-qnext.log),
the whole log written three times into one file (three boots). Expected counts are counted
here from the lines written."""

from __future__ import annotations

from pathlib import Path

from mambaconsole.sglang.events import LogParser
from mambaconsole.sglang.run_fold import KEEP_BOOTS, RunFold
from mambaconsole.sglang.summary import summary_of

REAL = (Path(__file__).parent / "data" / "logs" / "real-0.5.23-qnext.log").read_text().splitlines()


def fold_of(lines: list[str]) -> RunFold:
    p = LogParser()
    fold = RunFold()
    for ev in p.feed_many(lines):
        fold.feed(ev)
    for ev in p.flush():
        fold.feed(ev)
    return fold


def test_earlier_boots_let_their_decode_lines_go():
    decodes_per_boot = sum("Decode batch" in ln for ln in REAL)
    assert decodes_per_boot >= 2
    fold = fold_of(REAL * 3)
    assert len(fold.boots) == 3
    assert [len(b.decodes) for b in fold.boots] == [0, 0, decodes_per_boot]
    assert [len(b.usage_pairs) for b in fold.boots[:-1]] == [0, 0]


def test_a_crash_loop_keeps_the_last_boots_and_counts_them_all():
    # one boot per copy of the real log: its ServerArgs dump starts it (counted from the lines)
    copies = 3 * KEEP_BOOTS
    assert sum("] server_args={" in ln for ln in REAL) == 1
    fold = fold_of(REAL * copies)
    assert fold.n_boots == copies
    assert len(fold.boots) == KEEP_BOOTS  # memory: the last boots only, not one per restart
    s = summary_of(fold)
    assert s.n_boots == copies
    assert f"{copies} server starts in this log" in " ".join(f.message for f in s.findings)
    alone = summary_of(fold_of(REAL))
    assert (s.last_decode(), s.capacity(), s.outcome, s.spec) == \
        (alone.last_decode(), alone.capacity(), alone.outcome, alone.spec)


def test_the_last_boot_reads_the_same_as_a_log_of_that_boot_alone():
    alone, three = summary_of(fold_of(REAL)), summary_of(fold_of(REAL * 3))
    assert three.last_decode() == alone.last_decode()
    assert three.capacity() == alone.capacity()
    assert three.outcome == alone.outcome
    assert three.spec == alone.spec


def test_a_version_named_in_any_case_is_found_past_the_substring_check():
    # the forms _VERSION_IN_TEXT names, in the cases logs and images spell them
    for line, want in (("[2026-10-01 12:00:00] SGLang version: 0.5.9", "0.5.9"),
                       ("pulling image lmsysorg/SGLANG:v0.5.19", "0.5.19"),
                       ("[2026-10-01 12:00:00] installed sglang==0.5.13.post1", "0.5.13.post1"),
                       ("[2026-10-01 12:00:00] schedule step: running=3, waiting=0", None)):
        assert fold_of([line]).version == want, line


def test_a_log_streamed_in_blocks_reads_as_the_same_log_held_whole(tmp_path, capsys):
    """``inspect`` of a log over its 1 MiB head streams it, decoded a block of whole lines at a
    time; a line with invalid UTF-8 and non-ASCII lines read as they do when the text is held
    whole (U+FFFD for the invalid bytes)."""
    import json

    from mambaconsole.cli import main
    from mambaconsole.commands.inspect import HEAD_BYTES
    from mambaconsole.sglang.inspect import inspect_text

    body = "\n".join(REAL).encode()
    odd = (b"[2026-12-01 18:00:00 TP0] bad bytes \xff\xfe here \xe2\x82\n"
           + "[2026-12-01 18:00:01 TP0] caf\u00e9 \u2192 \u6f22\u5b57\n".encode())
    data = body + b"\n" + odd
    while len(data) <= 2 * HEAD_BYTES:
        data += odd + b"\n".join(ln.encode() for ln in REAL if "batch" in ln) + b"\n"
    data += body + b"\n"  # the last boot: the real log again
    path = tmp_path / "big.log"
    path.write_bytes(data)
    assert main(["inspect", str(path), "--json"]) == 0
    streamed = json.loads(capsys.readouterr().out)
    whole = json.loads(json.dumps(inspect_text(data.decode("utf-8", "replace"), kind="log")))
    assert streamed == whole
    assert streamed["boots"] >= 2
